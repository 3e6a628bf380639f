package io.rockstate.checkpoint

import io.rockstate.storage.format.{CheckpointJson, CheckpointPath, CorruptCheckpointException,
  StateVersion, VersionManifest}

/**
 * `<checkpointLocation>/rockstate/checkpoints/<version>/_metadata`, written once, atomically,
 * when every expected store acknowledged `version` (docs/checkpoint-format.md describes it).
 */
final case class CheckpointMetadata(
    formatVersion: Int,
    version: Long, // the state version (`StateVersion`)
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
    CheckpointMetadata(FormatVersion, version, StateVersion.batchOf(version), queryId, runId,
      triggeredAtMs, completedAtMs, stores,
      CheckpointTotals(stores.size, f.map(_.stateBytes).sum, f.map(_.numKeys).sum,
        f.map(_.bytesUploaded).sum, f.map(_.bytesReused).sum,
        (0L +: f.map(_.syncMs)).max, (0L +: f.map(_.asyncMs)).max),
      VersionManifest.Writer)
  }

  def toJson(m: CheckpointMetadata): Array[Byte] = CheckpointJson.pretty(m)

  /**
   * Parses a completed checkpoint's `_metadata` (untrusted: `CheckpointJson`); anything but a
   * whole document, each store named with its paths contained, is a
   * `CorruptCheckpointException` naming `where`.
   */
  def fromJson(bytes: Array[Byte], where: String): CheckpointMetadata = {
    val tree = CheckpointJson.parse(bytes, (why, e) => new CorruptCheckpointException(
      s"rockstate: checkpoint metadata $where is not valid JSON ($why); the completed " +
        "checkpoint is corrupt. Delete its directory to drop it from retention.", e))
    // A whole number: Jackson would read "1" or 1.5 as format 1.
    val format = if (tree.path("formatVersion").isInt) tree.path("formatVersion").intValue else 0
    if (format > FormatVersion) {
      throw new CorruptCheckpointException(s"rockstate: checkpoint metadata $where has format " +
        s"version $format, newer than this rockstate reads ($FormatVersion); upgrade rockstate.")
    }
    if (format <= 0) throw missingFields(where)
    val m = CheckpointJson.bind(tree, classOf[CheckpointMetadata], (why, e) =>
      new CorruptCheckpointException(s"rockstate: checkpoint metadata $where does not match " +
        s"its schema ($why); the completed checkpoint is corrupt.", e))
    if (m == null || m.stores == null || m.totals == null) throw missingFields(where)
    m.stores.zipWithIndex.foreach { case (s, i) =>
      if (s == null || s.storeName == null || s.executorId == null || s.figures == null) {
        throw missingFields(where)
      }
      // Relative to the checkpoint root and to the store's folder, as the tools read them.
      Seq("storeDir" -> s.storeDir, "snapshotManifest" -> s.snapshotManifest,
        "versionManifest" -> s.versionManifest).foreach { case (field, path) =>
        CheckpointPath.relative(path, s"checkpoint metadata $where, stores[$i].$field")
      }
    }
    m
  }

  private def missingFields(where: String) = new CorruptCheckpointException(
    s"rockstate: checkpoint metadata $where is missing required fields; the completed " +
      "checkpoint is corrupt.")
}
