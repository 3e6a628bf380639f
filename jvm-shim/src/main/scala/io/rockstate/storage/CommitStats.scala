package io.rockstate.storage

import io.rockstate.storage.format.SnapshotStats

/** What the last commit did, for the batch's metrics. */
final case class CommitStats(
    commitBytes: Long, // written to the checkpoint location on the task's path
    changelogRecords: Long,
    snapshotSyncMs: Long, // a snapshot this commit took on its own path (0: none)
    completed: SnapshotStats, // snapshots whose upload ended since the previous commit, summed
    snapshotsCompleted: Int,
    snapshotsFailed: Int,
    forcedSnapshots: Int = 0) // 1: this commit began a snapshot Spark forced (forceSnapshotOnCommit)

object CommitStats {
  val Zero: CommitStats = CommitStats(0, 0, 0, SnapshotStats.Zero, 0, 0)
}
