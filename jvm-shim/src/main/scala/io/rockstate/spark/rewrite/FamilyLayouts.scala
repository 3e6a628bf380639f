package io.rockstate.spark.rewrite

import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, RangeKeyScanStateEncoderSpec}
import org.apache.spark.sql.types.{DataType, StructType}

import com.fasterxml.jackson.databind.ObjectMapper

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
