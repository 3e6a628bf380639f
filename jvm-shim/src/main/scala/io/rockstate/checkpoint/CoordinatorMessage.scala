package io.rockstate.checkpoint

/**
 * The messages from executors to the driver's checkpoint coordinator, over Spark's plugin RPC
 * (Java-serialized): sealed, so the coordinator's end matches every one. Each is a handful of
 * fields whatever the partition's size: an acknowledgement names its snapshot manifest, never
 * the files in it (Flink's lesson with acks that outgrew the RPC frame). The coordinator
 * answers a poll with `Outcomes`, as JSON text.
 */
sealed trait CoordinatorMessage extends Serializable

/** A partition's snapshot is durable, both parts done (Flink's AcknowledgeCheckpoint). */
final case class SnapshotAck(
    source: AckSource,
    storeDir: String, // the store's directory, relative to the checkpoint root
    snapshotManifest: String, // relative to the store's directory
    versionManifest: String, // relative to the store's directory
    stateId: String, // the commit attempt whose state the snapshot holds (its changelog)
    figures: SnapshotAckStats,
    ackedAtMs: Long) extends CoordinatorMessage

/** A partition cannot provide the checkpoint's snapshot (Flink's DeclineCheckpoint). */
final case class SnapshotDecline(source: AckSource, reason: String, countsAsFailure: Boolean)
    extends CoordinatorMessage

/** An executor asks what became of the checkpoints it acknowledged. */
final case class PollOutcomes(executorId: String, checkpointRoots: Seq[String])
    extends CoordinatorMessage
