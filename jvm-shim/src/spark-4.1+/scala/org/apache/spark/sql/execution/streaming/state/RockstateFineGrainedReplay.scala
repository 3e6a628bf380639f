package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.util.NextIterator

import io.rockstate.spark.ChangeRow

/**
 * Spark's SupportsFineGrainedReplay (Spark 4.1+ signatures): the `statestore` source's change
 * feed (`readChangeFeed`) and its `snapshotStartBatchId`, served by rockstate's provider. In
 * Spark's package because the change feed's iterator type is private to it.
 */
trait RockstateFineGrainedReplay extends SupportsFineGrainedReplay {

  protected def openFromSnapshot(snapshotVersion: Long, endVersion: Long, readOnly: Boolean,
      endCheckpointId: Option[String]): StateStore

  protected def changeRows(startVersion: Long, endVersion: Long, family: Option[String],
      endCheckpointId: Option[String]): Iterator[ChangeRow]

  // The snapshot is found on the end version's lineage, which names its attempt exactly.
  override def replayStateFromSnapshot(snapshotVersion: Long, endVersion: Long,
      readOnly: Boolean, startCheckpointId: Option[String],
      endCheckpointId: Option[String]): StateStore =
    openFromSnapshot(snapshotVersion, endVersion, readOnly, endCheckpointId)

  override def getStateStoreChangeDataReader(startVersion: Long, endVersion: Long,
      colFamilyNameOpt: Option[String], endVersionStateStoreCkptId: Option[String])
      : NextIterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)] =
    new RockstateChangeDataReader(
      changeRows(startVersion, endVersion, colFamilyNameOpt, endVersionStateStoreCkptId))
}
