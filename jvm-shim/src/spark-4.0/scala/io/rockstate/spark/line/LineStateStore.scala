package io.rockstate.spark.line

import io.rockstate.spark.{SparkStateStore, SparkStateStoreProvider}

/** Spark 4.0's StateStore: every member 4.0 has is common to all lines (it has no release()). */
final class LineStateStore(
    provider: SparkStateStoreProvider,
    version: Long,
    baseCheckpointId: Option[String],
    readOnly: Boolean,
    lease: Long,
    forceSnapshot: Boolean)
  extends SparkStateStore(provider, version, baseCheckpointId, readOnly, lease, forceSnapshot)
