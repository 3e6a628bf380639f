package io.rockstate.spark.line

import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec
import org.apache.spark.sql.types.StructType

import io.rockstate.spark.SparkStateStoreProvider

/** Spark 4.3's StateStore: registering a column family, which 4.3 adds, binds to rockstate's. */
final class LineStateStore(
    provider: SparkStateStoreProvider,
    version: Long,
    baseCheckpointId: Option[String],
    readOnly: Boolean,
    lease: Long,
    forceSnapshot: Boolean)
  extends ScanningStateStore(provider, version, baseCheckpointId, readOnly, lease, forceSnapshot) {

  override def registerColFamily(colFamilyName: String, keySchema: StructType,
      valueSchema: StructType, keyStateEncoderSpec: KeyStateEncoderSpec,
      useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit =
    registerFamily(colFamilyName, keySchema, valueSchema, keyStateEncoderSpec,
      useMultipleValuesPerKey, isInternal)
}
