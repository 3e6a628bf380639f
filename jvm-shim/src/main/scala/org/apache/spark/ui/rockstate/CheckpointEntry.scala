package org.apache.spark.ui.rockstate

import scala.annotation.meta.getter

import org.apache.spark.util.kvstore.KVIndex

import io.rockstate.checkpoint.CheckpointTotals

/**
 * A checkpoint of a query run as the rockstate tab shows it, in the application's status store
 * (the History Server's too): pending from its first acknowledgement, then completed or
 * aborted. `acknowledged` counts the stores that acknowledged it; `acksKept` of them are in
 * the store as `AckEntry`s (fewer once `UiLimits.retainedAcknowledgements` dropped some).
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
    acknowledged: Int,
    acksKept: Int,
    totals: Option[CheckpointTotals], // once completed
    reason: Option[String], // once aborted
    countsAsFailure: Boolean) {

  def durationMs: Long = if (endedAtMs < 0) -1L else endedAtMs - triggeredAtMs
  def batchId: Long = io.rockstate.storage.format.StateVersion.batchOf(version)
  /** Whether every acknowledgement counted is kept (so a store's second one can be told). */
  def keepsEveryAck: Boolean = acksKept == acknowledged
}

object CheckpointEntry {
  val Pending = "pending"
  val Completed = "completed"
  val Aborted = "aborted"

  // Zero-padded so that the natural index sorts a run's checkpoints by version.
  def keyOf(runId: String, version: Long): String = f"$runId/$version%019d"
}
