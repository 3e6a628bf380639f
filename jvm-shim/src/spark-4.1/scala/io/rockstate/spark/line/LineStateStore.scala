package io.rockstate.spark.line

import io.rockstate.spark.{SparkStateStore, SparkStateStoreProvider}

/** Spark 4.1's StateStore: release(), which 4.1 gives a default, binds to rockstate's. */
final class LineStateStore(
    provider: SparkStateStoreProvider,
    version: Long,
    baseCheckpointId: Option[String],
    readOnly: Boolean,
    lease: Long,
    forceSnapshot: Boolean)
  extends SparkStateStore(provider, version, baseCheckpointId, readOnly, lease, forceSnapshot) {

  override def release(): Unit = releaseStore()
}
