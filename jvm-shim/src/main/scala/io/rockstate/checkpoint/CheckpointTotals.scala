package io.rockstate.checkpoint

/** Sums over every store of a checkpoint. */
final case class CheckpointTotals(
    stores: Int,
    stateBytes: Long,
    numKeys: Long,
    bytesUploaded: Long,
    bytesReused: Long,
    maxSyncMs: Long,
    maxAsyncMs: Long)
