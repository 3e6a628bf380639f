package io.rockstate.spark

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * One change of the state change feed, decoded: `op` is one of `storage.Changelog`'s record
 * kinds; `value` is null for a delete and the range's end key for a range delete; `batchId` is
 * the batch that made it (the version it committed, minus one).
 */
final case class ChangeRow(op: Byte, key: UnsafeRow, value: UnsafeRow, batchId: Long)
