package io.rockstate.spark.line

import io.rockstate.spark.SparkStateStoreProvider

/** Spark 4.2's StateStore: every member 4.2 gives a default is one 4.3 has too. */
final class LineStateStore(
    provider: SparkStateStoreProvider,
    version: Long,
    baseCheckpointId: Option[String],
    readOnly: Boolean,
    lease: Long,
    forceSnapshot: Boolean)
  extends ScanningStateStore(provider, version, baseCheckpointId, readOnly, lease, forceSnapshot)
