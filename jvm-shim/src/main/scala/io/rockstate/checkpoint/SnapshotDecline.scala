package io.rockstate.checkpoint

/** A partition cannot provide the checkpoint's snapshot (Flink's DeclineCheckpoint). */
final case class SnapshotDecline(source: AckSource, reason: String, countsAsFailure: Boolean)
