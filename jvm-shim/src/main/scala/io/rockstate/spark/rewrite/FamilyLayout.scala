package io.rockstate.spark.rewrite

import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, GetStructField, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, RangeKeyScanStateEncoderSpec}
import org.apache.spark.sql.types.{DataType, StructType}

import com.fasterxml.jackson.databind.ObjectMapper

import io.rockstate.spark.{ColumnFamilyCodec, ColumnFamilySpec}

/**
 * One column family of a transformWithState store (a state variable, a timer or TTL index), as
 * Spark's state schema file records it, and where its keys hold the grouping key: the
 * operator's partition key for every family. `groupingPath` is the field ordinals from the key
 * to the grouping key (a struct), empty when the key is the grouping key itself (value and list
 * state); Python finds it from the key encoding (`rockstate.tws.grouping_key_path`).
 */
final case class FamilyLayout(
    name: String,
    keySchema: StructType,
    valueSchema: StructType,
    keySpec: KeyStateEncoderSpec,
    groupingPath: Seq[Int]) {

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

  def spec: ColumnFamilySpec = ColumnFamilySpec(keySchema, valueSchema, keySpec,
    multipleValues = false)
}

object FamilyLayouts {
  /**
   * Layouts from the JSON array Python sends: each with `name`, `keySchema` and `valueSchema`
   * (Spark's schema JSON) and `keyEncoder` (the key encoder spec as Spark's state schema file
   * records it: `keyStateEncoderType`, `numColsPrefixKey`, `orderingOrdinals`).
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
      FamilyLayout(name, key, value, spec, (0 until path.size).map(path.get(_).asInt))
    }
  }
}

/**
 * Places the rows of one family of one old partition: decodes each stored key and computes
 * Spark's `HashPartitioning` of the grouping key's fields for `partitions` partitions, the
 * expression the restarted query's shuffle evaluates on the same values.
 */
final class FamilyPlacement(layout: FamilyLayout, familyId: Int, partitions: Int) {
  private val codec = new ColumnFamilyCodec(layout.name, familyId, true, layout.spec)

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

  /** The new partition of a key as `SparkStateStore.storedRows` returns it. */
  def partitionOf(storedKey: Array[Byte]): Int =
    partitionId(codec.decodeStoredKey(storedKey)).getInt(0)
}
