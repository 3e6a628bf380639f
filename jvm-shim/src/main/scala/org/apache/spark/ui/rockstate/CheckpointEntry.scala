package org.apache.spark.ui.rockstate

import scala.annotation.meta.getter

import org.apache.spark.util.kvstore.KVIndex

import io.rockstate.checkpoint.{AcknowledgedStore, CheckpointTotals}

/**
 * A checkpoint of a query run as the rockstate tab shows it, in the application's status store
 * (the History Server's too): pending from its first acknowledgement, then completed or
 * aborted. `stores` are the acknowledgements counted, in arrival order.
 */
final case class CheckpointEntry(
    @(KVIndex @getter) key: String,
    queryId: String,
    runId: String,
    checkpointRoot: String,
    version: Long,
    status: String,
    triggeredAtMs: Long,
    endedAtMs: Long, // -1 while pending
    expected: Int,
    stores: Seq[AcknowledgedStore],
    totals: Option[CheckpointTotals], // once completed
    reason: Option[String], // once aborted
    countsAsFailure: Boolean) {

  def durationMs: Long = if (endedAtMs < 0) -1L else endedAtMs - triggeredAtMs
  def acknowledged: Int = stores.size
  def batchId: Long = io.rockstate.storage.format.StateVersion.batchOf(version)
}

object CheckpointEntry {
  val Pending = "pending"
  val Completed = "completed"
  val Aborted = "aborted"

  // Zero-padded so that the natural index sorts a run's checkpoints by version.
  def keyOf(runId: String, version: Long): String = f"$runId/$version%019d"
}
