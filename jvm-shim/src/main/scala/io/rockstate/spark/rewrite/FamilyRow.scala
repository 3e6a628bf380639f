package io.rockstate.spark.rewrite

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * One key of a transformWithState column family with its value, or a list state's values, as
 * UnsafeRow bytes: the form in which a rewrite moves such state between providers (rockstate
 * and Spark's RocksDB provider encode a family's rows alike, but each provider's store is
 * written and read only through Spark's state store API).
 */
final case class FamilyRow(family: String, key: Array[Byte], values: Seq[Array[Byte]])
