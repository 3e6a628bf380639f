package io.rockstate.checkpoint

import io.rockstate.storage.format.SnapshotStats

/**
 * One partition's snapshot as its acknowledgement and a completed checkpoint's `_metadata`
 * record it (under `figures`): its `SnapshotStats`, flat, and the snapshot's whole size and
 * key count. Flat because that is the `_metadata` format.
 */
final case class SnapshotAckStats(
    syncMs: Long,
    asyncMs: Long,
    bytesUploaded: Long,
    bytesReused: Long,
    filesUploaded: Int,
    filesReused: Int,
    stateBytes: Long, // every file of the snapshot, new and shared
    numKeys: Long)

object SnapshotAckStats {
  def of(s: SnapshotStats, stateBytes: Long, numKeys: Long): SnapshotAckStats = SnapshotAckStats(
    s.syncMs, s.asyncMs, s.bytesUploaded, s.bytesReused, s.filesUploaded, s.filesReused,
    stateBytes, numKeys)
}
