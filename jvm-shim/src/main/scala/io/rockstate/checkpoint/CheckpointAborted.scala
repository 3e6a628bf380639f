package io.rockstate.checkpoint

/** Checkpoint `version` of a run will never complete, and why. */
final case class CheckpointAborted(
    queryId: String,
    runId: String,
    checkpointRoot: String,
    version: Long,
    triggeredAtMs: Long,
    aborted: AbortedCheckpoint) extends CheckpointEvent
