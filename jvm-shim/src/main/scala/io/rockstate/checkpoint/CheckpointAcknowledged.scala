package io.rockstate.checkpoint

/**
 * A store's acknowledgement counted towards checkpoint `version` of a run (the first one of a
 * version triggers it). `expected` is how many stores the checkpoint waits for.
 */
final case class CheckpointAcknowledged(
    queryId: String,
    runId: String,
    checkpointRoot: String,
    version: Long,
    triggeredAtMs: Long,
    expected: Int,
    store: AcknowledgedStore) extends CheckpointEvent
