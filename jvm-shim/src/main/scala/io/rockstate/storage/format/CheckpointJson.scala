package io.rockstate.storage.format

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.{JsonFactoryBuilder, JsonParser, StreamReadConstraints}
import com.fasterxml.jackson.databind.{DeserializationContext, DeserializationFeature, JsonNode}
import com.fasterxml.jackson.databind.{MapperFeature, ObjectMapper}
import com.fasterxml.jackson.databind.cfg.{CoercionAction, CoercionInputShape}
import com.fasterxml.jackson.databind.cfg.MutableCoercionConfig
import com.fasterxml.jackson.databind.deser.std.StdDeserializer
import com.fasterxml.jackson.databind.json.JsonMapper
import com.fasterxml.jackson.databind.module.SimpleModule
import com.fasterxml.jackson.databind.`type`.LogicalType
import com.fasterxml.jackson.databind.util.AccessPattern
import com.fasterxml.jackson.module.scala.DefaultScalaModule

/**
 * JSON read from a checkpoint file, as untrusted input: the JVM's twin of Python's
 * `rockstate/checkpoint/json_text.py`. Every JSON document the JVM takes from a checkpoint (a
 * version file's header, a version or snapshot manifest, a completed checkpoint's `_metadata`,
 * Spark's operator metadata) is parsed by `parse` and bound by `bind`, which refuse what no
 * writer produces with the `CorruptCheckpointException` the caller words (naming the file):
 *
 *  - `NaN` and `Infinity` (Jackson's default), a number past a double's range (`1e400`, which
 *    Jackson would read as infinity) and an integer past a long (`99999999999999999999999`);
 *  - nesting deeper than `MaxDepth` (Jackson's `StreamReadConstraints`, 2.15+; every Spark
 *    line rockstate supports ships 2.18 or later), refused while parsing, before a tree of it
 *    is built;
 *  - a value of the wrong JSON type where a case class is bound: `"5"` or `1.5` or `null` for
 *    a whole number, `5` for a string, `1` or `"true"` for a boolean (Jackson would convert
 *    each), an array or a string for an object.
 *
 * Anything else Jackson throws while parsing or binding is refused the same way: none of its
 * exceptions leaves a parser.
 */
object CheckpointJson {
  /** The caller's refusal: why, and Jackson's exception (null when the tree was refused). */
  type Refusal = (String, Throwable) => CorruptCheckpointException

  /** Deeper than any document Spark or rockstate writes; Python's `MAX_DEPTH`. */
  val MaxDepth = 64

  /** `value` as indented JSON: the files a person may open (manifests, checkpoints). */
  def pretty(value: AnyRef): Array[Byte] =
    mapper.writerWithDefaultPrettyPrinter().writeValueAsBytes(value)

  /** `value` as one line of JSON: the files written per commit and per snapshot. */
  def compact(value: AnyRef): Array[Byte] = mapper.writeValueAsBytes(value)

  /** The one mapper rockstate reads and writes its JSON with. */
  val mapper: ObjectMapper = {
    def strict(c: MutableCoercionConfig): Unit = Seq(CoercionInputShape.Integer,
      CoercionInputShape.Float, CoercionInputShape.Boolean)
      .foreach(c.setCoercion(_, CoercionAction.Fail))
    JsonMapper.builder(new JsonFactoryBuilder()
        .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MaxDepth).build())
        .build())
      .addModule(DefaultScalaModule)
      .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false)
      // A value of the wrong JSON type is damage, never converted: "5" or "true" for 5 or
      // true, 1.5 for 1, null for 0 (an absent field stays 0, as before), 5 or true for "5".
      .configure(MapperFeature.ALLOW_COERCION_OF_SCALARS, false)
      .configure(DeserializationFeature.ACCEPT_FLOAT_AS_INT, false)
      .addModule(NoNullPrimitives)
      .withCoercionConfig(LogicalType.Textual, (c: MutableCoercionConfig) => strict(c))
      .build()
  }

  /**
   * Jackson's reading of `long`, `int` and `boolean` fields, but an explicit `null` refused.
   * (`FAIL_ON_NULL_FOR_PRIMITIVES` would refuse an absent field too, and fields no reader needs
   * may be absent: Python's hand-made fixtures leave out `createdAtMs`.)
   */
  private object NoNullPrimitives extends SimpleModule("rockstate-no-null-primitives") {
    Seq(java.lang.Long.TYPE, java.lang.Integer.TYPE, java.lang.Boolean.TYPE).foreach { cls =>
      addDeserializer(cls.asInstanceOf[Class[AnyRef]], new NoNull(cls))
    }
  }

  private final class NoNull(cls: Class[_]) extends StdDeserializer[AnyRef](cls) {
    private val zero: AnyRef =
      if (cls == java.lang.Long.TYPE) java.lang.Long.valueOf(0L)
      else if (cls == java.lang.Integer.TYPE) java.lang.Integer.valueOf(0)
      else java.lang.Boolean.FALSE

    override def deserialize(p: JsonParser, ctxt: DeserializationContext): AnyRef =
      if (cls == java.lang.Long.TYPE) java.lang.Long.valueOf(_parseLongPrimitive(p, ctxt))
      else if (cls == java.lang.Integer.TYPE) java.lang.Integer.valueOf(_parseIntPrimitive(p, ctxt))
      else java.lang.Boolean.valueOf(_parseBooleanPrimitive(p, ctxt))

    override def getNullAccessPattern: AccessPattern = AccessPattern.DYNAMIC

    override def getNullValue(ctxt: DeserializationContext): AnyRef =
      ctxt.reportInputMismatch[AnyRef](this, s"null where a ${cls.getName} belongs")

    override def getAbsentValue(ctxt: DeserializationContext): AnyRef = zero

    override def getEmptyValue(ctxt: DeserializationContext): AnyRef = zero
  }

  /**
   * The JSON value of `bytes`, or `corrupt(why)`: invalid JSON, `NaN` or `Infinity`, a number
   * past a double or an integer past a long, or nesting past `MaxDepth`.
   */
  def parse(bytes: Array[Byte], corrupt: Refusal): JsonNode = {
    val tree = try mapper.readTree(bytes) catch {
      case e: com.fasterxml.jackson.core.exc.StreamConstraintsException
          if message(e).contains("nesting depth") =>
        throw corrupt(s"it is nested more than $MaxDepth deep", e)
      case NonFatal(e) if message(e).contains("ALLOW_NON_NUMERIC_NUMBERS") =>
        throw corrupt(s"${message(e).takeWhile(_ != ':')}, not a number a checkpoint holds", e)
      case NonFatal(e) => throw corrupt(message(e), e)
    }
    pathology(tree).foreach(why => throw corrupt(why, null))
    tree
  }

  /** `tree` as a `cls`, or `corrupt(why)` when it does not fit (wrong types included). */
  def bind[T](tree: JsonNode, cls: Class[T], corrupt: Refusal): T =
    try mapper.treeToValue(tree, cls) catch {
      case NonFatal(e) => throw corrupt(message(e), e)
    }

  /** Jackson's message, its first line (the rest is a location in the input). */
  private def message(e: Throwable): String =
    Option(e.getMessage).map(_.takeWhile(_ != '\n')).filter(_.nonEmpty)
      .getOrElse(e.getClass.getSimpleName)

  /**
   * What `tree` holds that no writer produces, if anything: a number that is not finite
   * (Jackson reads `1e400` as infinity), an integer past a long, nesting past `MaxDepth`
   * (checked again after Jackson's own cap). Walked without recursion.
   */
  private def pathology(tree: JsonNode): Option[String] = {
    val stack = scala.collection.mutable.Stack[(JsonNode, Int)]((tree, 0))
    while (stack.nonEmpty) {
      val (node, depth) = stack.pop()
      if (node.isContainerNode) {
        if (depth + 1 > MaxDepth) return Some(s"it is nested more than $MaxDepth deep")
        node.iterator().asScala.foreach(child => stack.push((child, depth + 1)))
      } else if (node.isBigInteger) {
        return Some(s"the integer ${node.asText.take(40)} is past a long's range")
      } else if (node.isNumber && !node.isIntegralNumber &&
        !java.lang.Double.isFinite(node.doubleValue)) {
        return Some(s"the number ${node.asText.take(40)} is out of range")
      }
    }
    None
  }
}
