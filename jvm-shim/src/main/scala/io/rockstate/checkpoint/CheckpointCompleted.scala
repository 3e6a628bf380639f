package io.rockstate.checkpoint

/**
 * Checkpoint `version` of a run completed: its `_metadata` is written. Its stores came in
 * `CheckpointAcknowledged` events; the totals sum the acknowledgements it kept (a store's
 * landed attempt where a batch ran twice).
 */
final case class CheckpointCompleted(
    queryId: String,
    runId: String,
    checkpointRoot: String,
    version: Long,
    triggeredAtMs: Long,
    completedAtMs: Long,
    totals: CheckpointTotals) extends CheckpointEvent
