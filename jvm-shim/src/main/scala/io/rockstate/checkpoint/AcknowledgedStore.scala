package io.rockstate.checkpoint

/** One partition's acknowledgement as a completed checkpoint records it. */
final case class AcknowledgedStore(
    operatorId: Long,
    storeName: String,
    partitionId: Int,
    executorId: String,
    storeDir: String, // relative to the checkpoint root
    snapshotManifest: String, // relative to storeDir
    versionManifest: String, // relative to storeDir
    figures: SnapshotAckStats,
    ackedAtMs: Long)

object AcknowledgedStore {
  def of(ack: SnapshotAck): AcknowledgedStore = AcknowledgedStore(
    ack.source.store.operatorId, ack.source.store.storeName, ack.source.store.partitionId,
    ack.source.executorId, ack.storeDir, ack.snapshotManifest, ack.versionManifest,
    ack.figures, ack.ackedAtMs)
}
