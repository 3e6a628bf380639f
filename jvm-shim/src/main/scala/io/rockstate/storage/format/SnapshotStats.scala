package io.rockstate.storage.format

/** Figures of one snapshot: the synchronous part on the task and the asynchronous upload. */
final case class SnapshotStats(
    syncMs: Long, // after the commit, before the next load: flush and local checkpoint
    asyncMs: Long, // in the background: upload of new files and the snapshot manifest
    bytesUploaded: Long,
    bytesReused: Long,
    filesUploaded: Int,
    filesReused: Int) {
  /** Both figures summed (the snapshots of one reporting period). */
  def +(o: SnapshotStats): SnapshotStats = SnapshotStats(syncMs + o.syncMs, asyncMs + o.asyncMs,
    bytesUploaded + o.bytesUploaded, bytesReused + o.bytesReused,
    filesUploaded + o.filesUploaded, filesReused + o.filesReused)
}

object SnapshotStats {
  val Zero: SnapshotStats = SnapshotStats(0, 0, 0, 0, 0, 0)
}
