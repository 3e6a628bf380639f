package io.rockstate.spark

import org.apache.spark.sql.execution.streaming.state.{StateStoreCustomMetric, StateStoreCustomSizeMetric, StateStoreCustomSumMetric, StateStoreCustomTimingMetric}

import io.rockstate.storage.local.BlockReads
import io.rockstate.storage.{CommitStats, LoadStats}

/**
 * Custom state store metrics, summed over partitions by Spark and shown in
 * `query.lastProgress.stateOperators[i].customMetrics` under these names. Each batch reports
 * its own commit and the snapshot uploads that finished since the store's previous commit, so
 * sums over batches count every snapshot once.
 */
object RockstateMetrics {
  val CommitBytes = StateStoreCustomSizeMetric(
    "rockstateCommitBytes", "rockstate: bytes the commit wrote on the task's path " +
      "(changelog and version manifest)")
  val ChangelogRecords = StateStoreCustomSumMetric(
    "rockstateChangelogRecords", "rockstate: changes the commit logged")
  val SnapshotSyncMs = StateStoreCustomTimingMetric(
    "rockstateSnapshotSyncMs", "rockstate: time to flush and checkpoint snapshots locally " +
      "(after their commits, or on the commit path)")
  val SnapshotAsyncMs = StateStoreCustomTimingMetric(
    "rockstateSnapshotAsyncMs", "rockstate: background time to upload snapshots")
  val SnapshotsCompleted = StateStoreCustomSumMetric(
    "rockstateSnapshotsCompleted", "rockstate: snapshot uploads finished")
  val SnapshotsFailed = StateStoreCustomSumMetric(
    "rockstateSnapshotsFailed", "rockstate: snapshot uploads that failed")
  val BytesUploaded = StateStoreCustomSizeMetric(
    "rockstateBytesUploaded", "rockstate: bytes of new files snapshots uploaded")
  val BytesReused = StateStoreCustomSizeMetric(
    "rockstateBytesReused", "rockstate: bytes of earlier snapshots' files referenced again")
  val FilesUploaded = StateStoreCustomSumMetric(
    "rockstateFilesUploaded", "rockstate: new files snapshots uploaded")
  val FilesReused = StateStoreCustomSumMetric(
    "rockstateFilesReused", "rockstate: earlier snapshots' files referenced again")
  val LoadMs = StateStoreCustomTimingMetric(
    "rockstateLoadMs", "rockstate: time to load the version the batch started from")
  val BytesDownloaded = StateStoreCustomSizeMetric(
    "rockstateBytesDownloaded", "rockstate: bytes downloaded to load the version")
  val ChangelogsReplayed = StateStoreCustomSumMetric(
    "rockstateChangelogsReplayed", "rockstate: changelogs replayed to load the version")
  val InstancesReopened = StateStoreCustomSumMetric(
    "rockstateInstancesReopened", "rockstate: loads that reopened an instance closed for " +
      "maxOpenStores from its local directory")
  // Spark's own name (its HDFS provider's; its RocksDB provider says rocksdbForceSnapshotCount).
  val ForceSnapshotCount = StateStoreCustomSumMetric(
    "forceSnapshotCount", "rockstate: snapshots Spark forced on commit (forceSnapshotOnCommit, " +
      "for stores its coordinator saw lagging)")
  // Spark's own name (its HDFS provider's; its RocksDB provider says
  // rocksdbNumSnapshotsAutoRepaired).
  val SnapshotsAutoRepaired = StateStoreCustomSumMetric(
    "numSnapshotsAutoRepaired", "rockstate: loads that rebuilt their version past a damaged " +
      "snapshot (autoSnapshotRepair)")
  val StateBytes = StateStoreCustomSizeMetric(
    "rockstateStateBytes", "rockstate: size of the version's SST files")
  // What the batch's reads cost in RocksDB blocks, from RocksDB's per-thread counters: summed
  // over a task's stores they are exact; between two stores of one task (a join's), shared
  // out by commit order. Many index or filter blocks read means the cache is too small for
  // the state's index and filters (rocksdbMemoryMB).
  val BlockCacheHits = StateStoreCustomSumMetric(
    "rockstateBlockCacheHits", "rockstate: blocks the batch's reads found in the block cache")
  val BlocksRead = StateStoreCustomSumMetric(
    "rockstateBlocksRead", "rockstate: blocks the batch's reads read from SST files")
  val IndexBlocksRead = StateStoreCustomSumMetric(
    "rockstateIndexBlocksRead", "rockstate: index blocks the batch's reads read from SST files")
  val FilterBlocksRead = StateStoreCustomSumMetric(
    "rockstateFilterBlocksRead",
    "rockstate: filter blocks the batch's reads read from SST files")
  val BlockBytesRead = StateStoreCustomSizeMetric(
    "rockstateBlockBytesRead", "rockstate: bytes of blocks the batch's reads read from SST files")

  val all: Seq[StateStoreCustomMetric] = Seq(CommitBytes, ChangelogRecords, SnapshotSyncMs,
    SnapshotAsyncMs, SnapshotsCompleted, SnapshotsFailed, BytesUploaded, BytesReused,
    FilesUploaded, FilesReused, LoadMs, BytesDownloaded, ChangelogsReplayed, InstancesReopened,
    ForceSnapshotCount, SnapshotsAutoRepaired, StateBytes, BlockCacheHits, BlocksRead,
    IndexBlocksRead, FilterBlocksRead, BlockBytesRead)

  def values(c: CommitStats, l: LoadStats, stateBytes: Long,
      reads: BlockReads): Map[StateStoreCustomMetric, Long] =
    Map(
      CommitBytes -> c.commitBytes,
      ChangelogRecords -> c.changelogRecords,
      SnapshotSyncMs -> (c.snapshotSyncMs + c.completed.syncMs),
      SnapshotAsyncMs -> c.completed.asyncMs,
      SnapshotsCompleted -> c.snapshotsCompleted.toLong,
      SnapshotsFailed -> c.snapshotsFailed.toLong,
      BytesUploaded -> c.completed.bytesUploaded,
      BytesReused -> c.completed.bytesReused,
      FilesUploaded -> c.completed.filesUploaded.toLong,
      FilesReused -> c.completed.filesReused.toLong,
      LoadMs -> l.loadMs,
      BytesDownloaded -> l.bytesDownloaded,
      ChangelogsReplayed -> l.changelogsReplayed.toLong,
      InstancesReopened -> l.reopened.toLong,
      ForceSnapshotCount -> c.forcedSnapshots.toLong,
      SnapshotsAutoRepaired -> l.snapshotsRepaired.toLong,
      StateBytes -> stateBytes,
      BlockCacheHits -> reads.cacheHits,
      BlocksRead -> reads.blocksRead,
      IndexBlocksRead -> reads.indexBlocksRead,
      FilterBlocksRead -> reads.filterBlocksRead,
      BlockBytesRead -> reads.bytesRead)
}
