package io.rockstate.spark.rewrite

import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec
import org.apache.spark.sql.types.StructType

import io.rockstate.spark.ColumnFamilySpec

/**
 * One column family of a transformWithState store (a state variable, a timer or TTL index), as
 * Spark's state schema file records it, and where its keys hold the grouping key: the
 * operator's partition key for every family. `groupingPath` is the field ordinals from the key
 * to the grouping key (a struct), empty when the key is the grouping key itself (value and list
 * state); Python finds it from the key encoding (`rockstate.checkpoint.tws.grouping_key_path`).
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
