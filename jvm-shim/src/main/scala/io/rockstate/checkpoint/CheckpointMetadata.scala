package io.rockstate.checkpoint

import scala.util.Try
import scala.util.control.NonFatal

import io.rockstate.storage.{CorruptCheckpointException, VersionManifest}

/**
 * `<checkpointLocation>/rockstate/checkpoints/<version>/_metadata`, written once, atomically,
 * when every expected store acknowledged `version` (docs/checkpoint-format.md describes it).
 */
final case class CheckpointMetadata(
    formatVersion: Int,
    version: Long, // the state version; the micro-batch is version - 1
    batchId: Long,
    queryId: String,
    runId: String,
    triggeredAtMs: Long, // the first acknowledgement
    completedAtMs: Long,
    stores: Seq[AcknowledgedStore], // sorted by operator, store name, partition
    totals: CheckpointTotals,
    writer: String)

object CheckpointMetadata {
  val FormatVersion = 1

  def build(version: Long, queryId: String, runId: String, triggeredAtMs: Long,
      completedAtMs: Long, acks: Seq[SnapshotAck]): CheckpointMetadata = {
    val stores = acks.map(AcknowledgedStore.of)
      .sortBy(s => (s.operatorId, s.storeName, s.partitionId))
    val f = stores.map(_.figures)
    CheckpointMetadata(FormatVersion, version, version - 1, queryId, runId, triggeredAtMs,
      completedAtMs, stores,
      CheckpointTotals(stores.size, f.map(_.stateBytes).sum, f.map(_.numKeys).sum,
        f.map(_.bytesUploaded).sum, f.map(_.bytesReused).sum,
        (0L +: f.map(_.syncMs)).max, (0L +: f.map(_.asyncMs)).max),
      VersionManifest.Writer)
  }

  def toJson(m: CheckpointMetadata): Array[Byte] = VersionManifest.toJson(m)

  def fromJson(bytes: Array[Byte], where: String): CheckpointMetadata = {
    val tree = try VersionManifest.mapper.readTree(bytes) catch {
      case NonFatal(e) => throw new CorruptCheckpointException(
        s"rockstate: checkpoint metadata $where is not valid JSON; the completed checkpoint " +
          "is corrupt. Delete its directory to drop it from retention.", e)
    }
    val format = tree.path("formatVersion").asInt(0)
    if (format > FormatVersion) {
      throw new CorruptCheckpointException(s"rockstate: checkpoint metadata $where has format " +
        s"version $format, newer than this rockstate reads ($FormatVersion); upgrade rockstate.")
    }
    val m = Try(VersionManifest.mapper.treeToValue(tree, classOf[CheckpointMetadata])).toOption
    if (format <= 0 || m.isEmpty || m.get.stores == null || m.get.totals == null) {
      throw new CorruptCheckpointException(s"rockstate: checkpoint metadata $where is missing " +
        "required fields; the completed checkpoint is corrupt.")
    }
    m.get
  }
}
