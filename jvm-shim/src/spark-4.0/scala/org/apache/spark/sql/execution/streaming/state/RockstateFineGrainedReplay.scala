package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.util.NextIterator

import io.rockstate.spark.ChangeRow

/**
 * Spark's SupportsFineGrainedReplay (Spark 4.0 signatures, without checkpoint ids): the
 * `statestore` source's change feed (`readChangeFeed`) and its `snapshotStartBatchId`, served
 * by rockstate's provider. In Spark's package because the change feed's iterator type is
 * private to it.
 */
trait RockstateFineGrainedReplay extends SupportsFineGrainedReplay {

  protected def openFromSnapshot(snapshotVersion: Long, endVersion: Long, readOnly: Boolean,
      endCheckpointId: Option[String]): StateStore

  protected def changeRows(startVersion: Long, endVersion: Long, family: Option[String],
      endCheckpointId: Option[String]): Iterator[ChangeRow]

  override def replayStateFromSnapshot(snapshotVersion: Long, endVersion: Long): StateStore =
    openFromSnapshot(snapshotVersion, endVersion, readOnly = false, None)

  override def getStateStoreChangeDataReader(startVersion: Long, endVersion: Long,
      colFamilyNameOpt: Option[String])
      : NextIterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)] =
    new RockstateChangeDataReader(changeRows(startVersion, endVersion, colFamilyNameOpt, None))
}
