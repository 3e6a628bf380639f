package io.rockstate.checkpoint

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import io.rockstate.storage.format.{FileKind, SnapshotManifest, StateVersion, VersionFile,
  VersionManifest}
import io.rockstate.storage.location.StoreListing

/**
 * What the checkpoint location says of a fully acknowledged checkpoint, read before its
 * metadata is written: a checkpoint names only a batch Spark committed, for every store the
 * snapshot of the attempt whose version landed, and snapshots whose files are all there. Each
 * store costs one listing of its directory and a read of its snapshot manifest, whatever the
 * snapshot's file count (a request per file made a 200-partition checkpoint thousands of
 * requests on an object store).
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

  /**
   * Checks `p` against the checkpoint location, its stores on `pool` in parallel (each costs
   * requests, which on an object store take their latency each).
   */
  def of(files: CheckpointFiles, p: PendingCheckpoint,
      pool: java.util.concurrent.ExecutorService): CompletionCheck = try {
    if (!files.batchCommitted(StateVersion.batchOf(p.version))) BatchNotCommitted
    else {
      val keys = p.expected.toSeq.sortBy(k => (k.operatorId, k.storeName, k.partitionId))
      val recorded = files.recordedStateIds(StateVersion.batchOf(p.version))
      val tasks = keys.map(k => new java.util.concurrent.Callable[StoreCheck] {
        def call(): StoreCheck = checkStore(files, p, k, recorded.flatMap(_.of(k)))
      })
      val perStore = keys.zip(pool.invokeAll(tasks.asJava).asScala.map { f =>
        try f.get() catch { case e: java.util.concurrent.ExecutionException => throw e.getCause }
      })
      perStore.collectFirst { case (_, StoreCheck(Left(reason), _)) => reason } match {
        case Some(reason) => Broken(reason)
        case None =>
          val stale = perStore.collect {
            case (k, StoreCheck(Right(None), _)) => k -> p.acknowledgementsOf(k)
          }
          if (stale.nonEmpty) Stale(stale.toMap)
          else perStore.collectFirst { case (_, StoreCheck(_, Some(r))) => r } match {
            case Some(reason) => Broken(reason)
            case None => Ready(perStore.collect { case (_, StoreCheck(Right(Some(a)), _)) => a })
          }
      }
    }
  } catch {
    case NonFatal(e) => Broken(s"the checkpoint's files cannot be checked: ${e.getMessage}")
  }

  /**
   * One store's part: the acknowledgement of its committed attempt (Left: why there cannot be
   * one; None: none acknowledged yet) and, for that one, why its snapshot cannot be named.
   */
  private final case class StoreCheck(chosen: Either[String, Option[SnapshotAck]],
      missing: Option[String])

  private def checkStore(files: CheckpointFiles, p: PendingCheckpoint, k: StoreKey,
      recordedId: Option[String]): StoreCheck = {
    val acks = p.acknowledgementsOf(k)
    lazy val listing = files.storeListing(acks.head.storeDir)
    val chosen = recordedId match {
      // Checkpoint format 2: the attempt Spark recorded is the one the next batch loads.
      case Some(id) =>
        val path = VersionFile.pathOf(p.version, id)
        Right(acks.find(_.stateId == path))
      case None => landedAttempt(files, listing, p.version, acks)
    }
    StoreCheck(chosen, chosen.toOption.flatten.flatMap(missingFile(files, listing, _)))
  }

  /** The acknowledgement whose snapshot holds the store's committed version, if any. */
  private def landedAttempt(files: CheckpointFiles, listing: StoreListing, version: Long,
      acks: Seq[SnapshotAck]): Either[String, Option[SnapshotAck]] = {
    val storeDir = acks.head.storeDir
    listing.landed(version) match {
      case None => Left(s"version $version of $storeDir is missing at completion")
      case Some(entry) if !entry.isManifest =>
        // A version file's path is its commit's unique id, the state id its snapshots carry.
        Right(acks.find(_.stateId == entry.path))
      case Some(entry) =>
        val path = s"$storeDir/${entry.path}"
        files.readBytes(path, FileKind.Document, s"checkpoint $version") match {
          case None => Left(s"version manifest $path is missing at completion")
          case Some(bytes) =>
            val m = VersionManifest.fromJson(bytes, path)
            Right(acks.find(a => m.isStateOf(a.snapshotManifest, a.stateId)))
        }
    }
  }

  /** Why a snapshot cannot be named by a checkpoint, if it cannot. */
  private def missingFile(files: CheckpointFiles, listing: StoreListing,
      a: SnapshotAck): Option[String] = {
    val path = s"${a.storeDir}/${a.snapshotManifest}"
    files.readBytes(path, FileKind.Document, s"the checkpoint of ${a.storeDir}") match {
      case None => Some(s"snapshot manifest $path is missing at completion")
      case Some(bytes) =>
        val snapshot: SnapshotManifest = VersionManifest.snapshotFromJson(bytes, path)
        // A packed SST is checked by its pack's size: the listing has objects, not members.
        snapshot.files.find(f =>
          !listing.length(f.path).contains(f.inPack.fold(f.size)(_.packSize)))
          .map(f => s"file ${a.storeDir}/${f.path} of snapshot $path is missing or has the " +
            "wrong size at completion")
    }
  }
}
