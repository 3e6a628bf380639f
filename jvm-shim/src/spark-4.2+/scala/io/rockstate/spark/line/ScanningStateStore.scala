package io.rockstate.spark.line

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStoreIterator, UnsafeRowPair}

import io.rockstate.spark.{SparkStateStore, SparkStateStoreProvider}

/**
 * The StateStore members Spark 4.2 and later give defaults (multi-get, existence checks,
 * range scans and range deletes, release), bound to rockstate's: each line's LineStateStore
 * extends it and adds what only that line has.
 */
abstract class ScanningStateStore(
    provider: SparkStateStoreProvider,
    version: Long,
    baseCheckpointId: Option[String],
    readOnly: Boolean,
    lease: Long,
    forceSnapshot: Boolean)
  extends SparkStateStore(provider, version, baseCheckpointId, readOnly, lease, forceSnapshot) {

  override def multiGet(keys: Array[UnsafeRow], colFamilyName: String): Iterator[UnsafeRow] =
    getMany(keys, colFamilyName)

  override def keyExists(key: UnsafeRow, colFamilyName: String): Boolean =
    contains(key, colFamilyName)

  override def rangeScan(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow],
      colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    scanRange(startKey, endKey, colFamilyName)

  override def rangeScanWithMultiValues(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow],
      colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    scanRangeWithMultiValues(startKey, endKey, colFamilyName)

  override def deleteRange(beginKey: UnsafeRow, endKey: UnsafeRow, colFamilyName: String): Unit =
    deleteKeyRange(beginKey, endKey, colFamilyName)

  override def release(): Unit = releaseStore()
}
