package io.rockstate.checkpoint

/** A checkpoint that will never complete, and why. */
final case class AbortedCheckpoint(
    version: Long,
    reason: String,
    countsAsFailure: Boolean,
    abortedAtMs: Long,
    acknowledged: Int,
    expected: Int)
