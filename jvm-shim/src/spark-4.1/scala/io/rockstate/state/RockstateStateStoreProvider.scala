package io.rockstate.state

import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, RockstateFineGrainedReplay, StateStore}

import io.rockstate.spark.{SparkStateStore, SparkStateStoreProvider}
import io.rockstate.spark.line.LineStateStore

/**
 * rockstate's provider on Spark 4.1. Its name is what users configure and what Spark records in
 * every checkpoint's offset log, so it never changes.
 */
class RockstateStateStoreProvider extends SparkStateStoreProvider
  with RockstateFineGrainedReplay {

  override def getStore(version: Long, uniqueId: Option[String]): StateStore =
    openWrite(version, uniqueId, forceSnapshotOnCommit = false, loadEmpty = false)

  override def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long,
      uniqueId: Option[String]): StateStore =
    upgradeToWrite(readStore, version, uniqueId, forceSnapshotOnCommit = false)

  override protected def newStore(version: Long, uniqueId: Option[String], readOnly: Boolean,
      lease: Long, forceSnapshotOnCommit: Boolean): SparkStateStore =
    new LineStateStore(this, version, uniqueId, readOnly, lease, forceSnapshotOnCommit)
}
