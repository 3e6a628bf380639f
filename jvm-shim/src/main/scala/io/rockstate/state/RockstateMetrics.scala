package io.rockstate.state

import org.apache.spark.sql.execution.streaming.state.{StateStoreCustomMetric, StateStoreCustomSizeMetric, StateStoreCustomSumMetric, StateStoreCustomTimingMetric}

/**
 * Custom state store metrics, summed over partitions by Spark and shown in
 * `query.lastProgress.stateOperators[i].customMetrics` under these names.
 */
object RockstateMetrics {
  val SnapshotSyncMs = StateStoreCustomTimingMetric(
    "rockstateSnapshotSyncMs", "rockstate: time on the task to flush and checkpoint locally")
  val SnapshotAsyncMs = StateStoreCustomTimingMetric(
    "rockstateSnapshotAsyncMs", "rockstate: time to upload new files and the manifest")
  val BytesUploaded = StateStoreCustomSizeMetric(
    "rockstateBytesUploaded", "rockstate: bytes uploaded by the last commit", false)
  val BytesReused = StateStoreCustomSizeMetric(
    "rockstateBytesReused", "rockstate: bytes of earlier versions' files referenced again", false)
  val FilesUploaded = StateStoreCustomSumMetric(
    "rockstateFilesUploaded", "rockstate: files uploaded by the last commit")
  val FilesReused = StateStoreCustomSumMetric(
    "rockstateFilesReused", "rockstate: files of earlier versions referenced again")
  val LoadMs = StateStoreCustomTimingMetric(
    "rockstateLoadMs", "rockstate: time to load the version the batch started from")
  val BytesDownloaded = StateStoreCustomSizeMetric(
    "rockstateBytesDownloaded", "rockstate: bytes downloaded to load the version", false)
  val StateBytes = StateStoreCustomSizeMetric(
    "rockstateStateBytes", "rockstate: size of the version's SST files", false)

  val all: Seq[StateStoreCustomMetric] = Seq(SnapshotSyncMs, SnapshotAsyncMs, BytesUploaded,
    BytesReused, FilesUploaded, FilesReused, LoadMs, BytesDownloaded, StateBytes)
}
