package io.rockstate.checkpoint

/** Everything the coordinator knows of one query run. */
final case class RunView(
    queryId: String,
    runId: String,
    checkpointRoot: String,
    snapshotInterval: Int,
    expectedStores: Int,
    untrackedReason: Option[String],
    pending: Seq[PendingView],
    completed: Seq[CheckpointMetadata],
    aborted: Seq[AbortedCheckpoint],
    consecutiveFailures: Int,
    failure: Option[String])
