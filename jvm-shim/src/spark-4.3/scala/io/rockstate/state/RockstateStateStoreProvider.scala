package io.rockstate.state

import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, RockstateFineGrainedReplay, StateStore}

import io.rockstate.spark.{SparkStateStore, SparkStateStoreProvider}
import io.rockstate.spark.line.LineStateStore

/**
 * rockstate's provider on Spark 4.3. Its name is what users configure and what Spark records in
 * every checkpoint's offset log, so it never changes.
 */
class RockstateStateStoreProvider extends SparkStateStoreProvider
  with RockstateFineGrainedReplay {

  override def getStore(version: Long, uniqueId: Option[String], forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean): StateStore =
    openWrite(version, uniqueId, forceSnapshotOnCommit, loadEmpty)

  override def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long,
      uniqueId: Option[String], forceSnapshotOnCommit: Boolean): StateStore =
    upgradeToWrite(readStore, version, uniqueId, forceSnapshotOnCommit)

  // 4.3 runs the two halves of maintenance on separate schedules: only cleanup has work.
  override def doSnapshotMaintenance(): Unit = ()

  override def doCleanupMaintenance(): Unit = cleanup()

  override protected def newStore(version: Long, uniqueId: Option[String], readOnly: Boolean,
      lease: Long, forceSnapshotOnCommit: Boolean): SparkStateStore =
    new LineStateStore(this, version, uniqueId, readOnly, lease, forceSnapshotOnCommit)
}
