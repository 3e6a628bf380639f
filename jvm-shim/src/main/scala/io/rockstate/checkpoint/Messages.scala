package io.rockstate.checkpoint

import com.fasterxml.jackson.databind.annotation.JsonDeserialize

/**
 * The messages between executors and the driver's checkpoint coordinator, sent over Spark's
 * plugin RPC (Java-serialized). Each is a handful of fields whatever the partition's size: an
 * acknowledgement names its snapshot manifest, never the files in it (Flink's lesson with acks
 * that outgrew the RPC frame).
 */

object AckSource {
  /** The task property holding a job's group: a streaming query's run id (private in Spark). */
  val JobGroupProperty = "spark.jobGroup.id"
}

/** One store instance of a query: what a checkpoint expects an acknowledgement from. */
final case class StoreKey(operatorId: Long, storeName: String, partitionId: Int) {
  override def toString: String = s"operator $operatorId store $storeName partition $partitionId"
}

/** Who acknowledges: the store, the query run and the state version. */
final case class AckSource(
    queryId: String,
    runId: String,
    checkpointRoot: String, // the query's checkpoint location, qualified
    snapshotInterval: Int, // checkpoints are the versions that are multiples of it
    settings: CoordinatorSettings, // the query's own, from its SQL conf
    store: StoreKey,
    version: Long,
    executorId: String)

/** The figures of one partition's snapshot, as its snapshot manifest records them. */
final case class SnapshotFigures(
    syncMs: Long,
    asyncMs: Long,
    bytesUploaded: Long,
    bytesReused: Long,
    filesUploaded: Int,
    filesReused: Int,
    stateBytes: Long, // every file of the snapshot, new and shared
    numKeys: Long)

/** A partition's snapshot is durable, both parts done (Flink's AcknowledgeCheckpoint). */
final case class SnapshotAck(
    source: AckSource,
    storeDir: String, // the store's directory, relative to the checkpoint root
    snapshotManifest: String, // relative to the store's directory
    versionManifest: String, // relative to the store's directory
    stateId: String, // the commit attempt whose state the snapshot holds (its changelog)
    figures: SnapshotFigures,
    ackedAtMs: Long)

/** A partition cannot provide the checkpoint's snapshot (Flink's DeclineCheckpoint). */
final case class SnapshotDecline(source: AckSource, reason: String, countsAsFailure: Boolean)

/** An executor asks what became of the checkpoints it acknowledged. */
final case class PollOutcomes(executorId: String, checkpointRoots: Seq[String])

/**
 * What the coordinator decided for one checkpoint location: the newest completed checkpoint
 * (every older pending one is subsumed), the retained ones, and recently aborted versions.
 */
final case class RootOutcome(
    checkpointRoot: String,
    latestCompleted: Long,
    // Erased element types: without these Jackson reads small numbers as Integers.
    @JsonDeserialize(contentAs = classOf[java.lang.Long]) retained: Seq[Long],
    @JsonDeserialize(contentAs = classOf[java.lang.Long]) aborted: Seq[Long])

final case class Outcomes(roots: Seq[RootOutcome])

object Outcomes {
  private val mapper = io.rockstate.storage.VersionManifest.mapper
  def toJson(o: Outcomes): String = mapper.writeValueAsString(o)
  def fromJson(json: String): Outcomes = mapper.readValue(json, classOf[Outcomes])
}
