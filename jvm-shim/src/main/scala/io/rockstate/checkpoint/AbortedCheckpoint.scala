package io.rockstate.checkpoint

/**
 * A checkpoint that will never complete, and why: the one value of an abort. The coordinator
 * keeps it for the live view, the [[CheckpointAborted]] event carries it to the event log and
 * the UI (which stores it as a [[org.apache.spark.ui.rockstate.CheckpointEntry]] like every
 * other status), and [[AbortedCheckpointFile]] is its file in the checkpoint location.
 */
final case class AbortedCheckpoint(
    version: Long,
    reason: String,
    countsAsFailure: Boolean,
    abortedAtMs: Long,
    acknowledged: Int,
    expected: Int)
