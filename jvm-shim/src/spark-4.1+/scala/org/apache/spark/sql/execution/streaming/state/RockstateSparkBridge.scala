package org.apache.spark.sql.execution.streaming.state

import java.util.UUID

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration

import org.apache.spark.internal.Logging

/**
 * The few calls rockstate makes into Spark's package-private state store API, in Spark's
 * package (the one place that does): what a provider outside Spark cannot reach otherwise.
 */
object RockstateSparkBridge extends Logging {
  /**
   * Tells Spark's StateStoreCoordinator that a store uploaded a snapshot of `version`, as
   * Spark's own providers do. Since Spark 4.1 the coordinator tracks every store's newest
   * snapshot and, for a store it believes lags, asks for a snapshot on every commit
   * (`forceSnapshotOnCommit`): unreported, every rockstate store would look lagging. Best
   * effort: a failure only costs extra snapshots.
   */
  def reportSnapshotUploaded(id: StateStoreId, hadoopConf: Configuration, version: Long): Unit =
    try {
      val runId = UUID.fromString(StateStoreProvider.getRunId(hadoopConf))
      StateStoreProvider.coordinatorRef.foreach(
        _.snapshotUploaded(StateStoreProviderId(id, runId), version, System.currentTimeMillis()))
    } catch {
      case NonFatal(e) => logDebug(s"rockstate: could not report snapshot $version of $id", e)
    }
}
