package io.rockstate.spark.rewrite

import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, GetStructField, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, RangeKeyScanStateEncoderSpec}
import org.apache.spark.sql.types.{DataType, StructType}

import com.fasterxml.jackson.databind.ObjectMapper

import io.rockstate.spark.ColumnFamilySpec

/**
 * One column family of a transformWithState store (a state variable, a timer or TTL index), as
 * Spark's state schema file records it, and where its keys hold the grouping key: the
 * operator's partition key for every family. `groupingPath` is the field ordinals from the key
 * to the grouping key (a struct), empty when the key is the grouping key itself (value and list
 * state); Python finds it from the key encoding (`rockstate.tws.grouping_key_path`).
 * `multipleValues`: a list state's family (several values per key). `inSource`: the old
 * store holds this family, so every new partition has it too; a family only the schema names
 * (one Spark declares but never creates) is read, holding no rows, and not created.
 */
final case class FamilyLayout(
    name: String,
    keySchema: StructType,
    valueSchema: StructType,
    keySpec: KeyStateEncoderSpec,
    groupingPath: Seq[Int],
    multipleValues: Boolean = false,
    inSource: Boolean = true) {

  /** Spark's internal families (timers, TTL indexes, list counters) start with '$'. */
  def isInternal: Boolean = name.startsWith("$")

  /** The grouping key's schema, as found in this family's keys. */
  val groupingKeySchema: StructType = groupingPath.foldLeft(keySchema) { (struct, i) =>
    require(i >= 0 && i < struct.length,
      s"rockstate: column family '$name' has no key field $i in $struct")
    struct(i).dataType match {
      case s: StructType => s
      case t => throw new IllegalArgumentException(s"rockstate: column family '$name' keeps " +
        s"$t in key field $i where its grouping key (a struct) belongs")
    }
  }

  /** How rockstate encodes the family when its rows move as stored (values kept as bytes). */
  def storedSpec: ColumnFamilySpec = ColumnFamilySpec(keySchema, valueSchema, keySpec,
    multipleValues = false)
}

object FamilyLayouts {
  /**
   * Layouts from the JSON array Python sends: each with `name`, `keySchema` and `valueSchema`
   * (Spark's schema JSON) and `keyEncoder` (the key encoder spec as Spark's state schema file
   * records it: `keyStateEncoderType`, `numColsPrefixKey`, `orderingOrdinals`), and
   * optionally `multipleValues` and `inSource` (default false and true).
   */
  def fromJson(json: String): Seq[FamilyLayout] = {
    val nodes = new ObjectMapper().readTree(json)
    (0 until nodes.size).map { i =>
      val node = nodes.get(i)
      val name = node.get("name").asText
      val key = DataType.fromJson(node.get("keySchema").toString).asInstanceOf[StructType]
      val value = DataType.fromJson(node.get("valueSchema").toString).asInstanceOf[StructType]
      val encoder = node.get("keyEncoder")
      val spec = encoder.get("keyStateEncoderType").asText match {
        case "NoPrefixKeyStateEncoderSpec" => NoPrefixKeyStateEncoderSpec(key)
        case "PrefixKeyScanStateEncoderSpec" =>
          PrefixKeyScanStateEncoderSpec(key, encoder.get("numColsPrefixKey").asInt)
        case "RangeKeyScanStateEncoderSpec" =>
          val ordinals = encoder.get("orderingOrdinals")
          RangeKeyScanStateEncoderSpec(key, (0 until ordinals.size).map(ordinals.get(_).asInt))
        case other => throw new IllegalArgumentException(
          s"rockstate: column family '$name' has key encoding $other, which a rewrite cannot place")
      }
      val path = node.get("groupingPath")
      def flag(field: String, default: Boolean): Boolean =
        Option(node.get(field)).map(_.asBoolean).getOrElse(default)
      FamilyLayout(name, key, value, spec, (0 until path.size).map(path.get(_).asInt),
        flag("multipleValues", default = false), flag("inSource", default = true))
    }
  }
}

/**
 * Places the rows of one family: computes Spark's `HashPartitioning` of the grouping key's
 * fields (found in each key) for `partitions` partitions, the expression the restarted query's
 * shuffle evaluates on the same values.
 */
final class FamilyPlacement(layout: FamilyLayout, partitions: Int) {

  private val partitionId = {
    val grouping = layout.groupingKeySchema
    val fields: Seq[Expression] = layout.groupingPath match {
      case Seq() => grouping.fields.toSeq.zipWithIndex.map { case (f, i) =>
        BoundReference(i, f.dataType, f.nullable)
      }
      case first +: rest =>
        val top = layout.keySchema(first)
        val struct = rest.foldLeft[Expression](BoundReference(first, top.dataType, top.nullable)) {
          (e, i) => GetStructField(e, i)
        }
        grouping.indices.map(i => GetStructField(struct, i))
    }
    // The expression Spark's shuffle evaluates: pmod(murmur3(fields), partitions).
    UnsafeProjection.create(Seq(HashPartitioning(fields, partitions).partitionIdExpression))
  }

  /** The new partition of a (decoded) key of this family. */
  def partitionOf(key: UnsafeRow): Int = partitionId(key).getInt(0)
}
