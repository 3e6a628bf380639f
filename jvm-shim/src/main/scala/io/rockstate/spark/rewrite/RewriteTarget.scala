package io.rockstate.spark.rewrite

import org.apache.spark.sql.execution.streaming.state.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec}
import org.apache.spark.sql.types.StructType

/**
 * One store of one stateful operator whose whole state a rewrite (rescale, migration) writes,
 * the same for every new partition; shipped to each writing task.
 *
 * @param stateRoot        the query's `<checkpoint>/state` folder
 * @param stagingRoot      where partitions `newFrom` and up are written instead (new partition
 *                         folders appear under `stateRoot` only once every store is written)
 * @param version          the version loaded empty: each partition's commit writes `version + 1`
 * @param providerClass    the state store provider that writes (and will read) the state
 * @param numColsPrefixKey the key's prefix columns (session windows), or 0
 * @param confs            the session confs the provider is created with (the offset log's)
 * @param families         a transformWithState store's column families (their rows are moved
 *                         as stored), or empty: a store without column families
 * @param schemaFiles      a transformWithState operator's state schema files (Spark's
 *                         `_stateSchema/`), oldest first: Spark builds its providers' schema
 *                         provider from them, which Avro-encoded rows are read and written by
 */
final case class RewriteTarget(
    stateRoot: String,
    stagingRoot: String,
    newFrom: Int,
    operatorId: Long,
    storeName: String,
    version: Long,
    providerClass: String,
    keySchema: StructType,
    valueSchema: StructType,
    numColsPrefixKey: Int,
    confs: Map[String, String],
    families: Seq[FamilyLayout] = Nil,
    schemaFiles: Seq[String] = Nil) {

  def useColumnFamilies: Boolean = families.nonEmpty

  /** The folder partition `partition`'s store is written under. */
  def rootOf(partition: Int): String = if (partition >= newFrom) stagingRoot else stateRoot

  def keyEncoderSpec: KeyStateEncoderSpec =
    if (numColsPrefixKey > 0) PrefixKeyScanStateEncoderSpec(keySchema, numColsPrefixKey)
    else NoPrefixKeyStateEncoderSpec(keySchema)
}
