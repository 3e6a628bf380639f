package io.rockstate.checkpoint

import org.apache.spark.scheduler.SparkListenerEvent

/**
 * What the coordinator tells Spark's listener bus, so that the event log carries it and the
 * rockstate tab (live, and in the History Server from the log) shows it: sealed, so every
 * reader matches all of them. The event log names each event by its class name: renaming one
 * or changing a field's meaning breaks the tab for older logs (docs/observability.md lists
 * them).
 */
sealed trait CheckpointEvent extends SparkListenerEvent {
  def queryId: String
  def runId: String
  def version: Long
}

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

/** Checkpoint `version` of a run will never complete, and why. */
final case class CheckpointAborted(
    queryId: String,
    runId: String,
    checkpointRoot: String,
    version: Long,
    triggeredAtMs: Long,
    aborted: AbortedCheckpoint) extends CheckpointEvent
