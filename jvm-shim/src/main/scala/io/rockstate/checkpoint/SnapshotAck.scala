package io.rockstate.checkpoint

/**
 * A partition's snapshot is durable, both parts done (Flink's AcknowledgeCheckpoint).
 *
 * The messages between executors and the driver's checkpoint coordinator (this, `AckSource`,
 * `SnapshotDecline`, `PollOutcomes`, `Outcomes`) go over Spark's plugin RPC (Java-serialized).
 * Each is a handful of fields whatever the partition's size: an acknowledgement names its
 * snapshot manifest, never the files in it (Flink's lesson with acks that outgrew the RPC
 * frame).
 */
final case class SnapshotAck(
    source: AckSource,
    storeDir: String, // the store's directory, relative to the checkpoint root
    snapshotManifest: String, // relative to the store's directory
    versionManifest: String, // relative to the store's directory
    stateId: String, // the commit attempt whose state the snapshot holds (its changelog)
    figures: SnapshotAckStats,
    ackedAtMs: Long)
