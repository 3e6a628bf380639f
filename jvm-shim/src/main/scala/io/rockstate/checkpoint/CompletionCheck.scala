package io.rockstate.checkpoint

import scala.util.control.NonFatal

import io.rockstate.storage.{SnapshotManifest, VersionFile, VersionManifest}

/**
 * What the checkpoint location says of a fully acknowledged checkpoint, read before its
 * metadata is written: a checkpoint names only a batch Spark committed, for every store the
 * snapshot of the attempt whose version landed, and snapshots whose files are all there.
 */
sealed trait CompletionCheck

object CompletionCheck {
  /** Spark's commit log does not have the batch yet (it may fail, or the driver may die). */
  case object BatchNotCommitted extends CompletionCheck

  /**
   * These stores acknowledged only snapshots of attempts whose version manifest was replaced
   * (a retried or re-run batch): they must acknowledge their landed attempt's snapshot.
   */
  final case class Stale(acks: Map[StoreKey, Seq[SnapshotAck]]) extends CompletionCheck

  /** A file the checkpoint would name is missing or damaged: it must not complete. */
  final case class Broken(reason: String) extends CompletionCheck

  /** The acknowledgement each store's checkpoint entry records. */
  final case class Ready(acks: Seq[SnapshotAck]) extends CompletionCheck

  def of(files: CheckpointFiles, p: PendingCheckpoint): CompletionCheck = try {
    if (!files.batchCommitted(p.version - 1)) BatchNotCommitted
    else {
      val keys = p.expected.toSeq.sortBy(k => (k.operatorId, k.storeName, k.partitionId))
      val recorded = files.recordedStateIds(p.version - 1)
      val perStore = keys.map(k => k -> (recorded.flatMap(_.of(k)) match {
        // Checkpoint format 2: the attempt Spark recorded is the one the next batch loads.
        case Some(id) =>
          val path = VersionFile.pathOf(p.version, id)
          Right(p.acknowledgementsOf(k).find(_.stateId == path))
        case None => landedAttempt(files, p.version, p.acknowledgementsOf(k))
      }))
      perStore.collectFirst { case (_, Left(reason)) => reason } match {
        case Some(reason) => Broken(reason)
        case None =>
          val stale = perStore.collect { case (k, Right(None)) => k -> p.acknowledgementsOf(k) }
          if (stale.nonEmpty) Stale(stale.toMap)
          else {
            val chosen = perStore.collect { case (_, Right(Some(a))) => a }
            chosen.iterator.map(missingFile(files, _)).collectFirst { case Some(r) => r } match {
              case Some(reason) => Broken(reason)
              case None => Ready(chosen)
            }
          }
      }
    }
  } catch {
    case NonFatal(e) => Broken(s"the checkpoint's files cannot be checked: ${e.getMessage}")
  }

  /** The acknowledgement whose snapshot holds the store's committed version, if any. */
  private def landedAttempt(files: CheckpointFiles, version: Long,
      acks: Seq[SnapshotAck]): Either[String, Option[SnapshotAck]] = {
    val storeDir = acks.head.storeDir
    files.landedVersion(storeDir, version) match {
      case None => Left(s"version $version of $storeDir is missing at completion")
      case Some(entry) if !entry.isLegacy =>
        // A version file's path is its commit's unique id, the state id its snapshots carry.
        Right(acks.find(_.stateId == entry.path))
      case Some(entry) =>
        val path = s"$storeDir/${entry.path}"
        files.readBytes(path) match {
          case None => Left(s"version manifest $path is missing at completion")
          case Some(bytes) =>
            val m = VersionManifest.fromJson(bytes, path)
            Right(acks.find(a => m.isStateOf(a.snapshotManifest, a.stateId)))
        }
    }
  }

  /** Why a snapshot cannot be named by a checkpoint, if it cannot. */
  private def missingFile(files: CheckpointFiles, a: SnapshotAck): Option[String] = {
    val path = s"${a.storeDir}/${a.snapshotManifest}"
    files.readBytes(path) match {
      case None => Some(s"snapshot manifest $path is missing at completion")
      case Some(bytes) =>
        val snapshot: SnapshotManifest = VersionManifest.snapshotFromJson(bytes, path)
        snapshot.files.find(f => !files.length(s"${a.storeDir}/${f.path}").contains(f.size))
          .map(f => s"file ${a.storeDir}/${f.path} of snapshot $path is missing or has the " +
            "wrong size at completion")
    }
  }
}
