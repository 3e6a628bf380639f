package io.rockstate.storage.restore

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{CorruptCheckpointException, SnapshotRef, VersionManifest}
import io.rockstate.storage.location.StoreCheckpointDir

/**
 * Opening a version whose snapshot cannot be restored (Spark's autoSnapshotRepair,
 * SPARK-54121, on by default here). The open is tried `repairAfterFailures` times; then the
 * version is rebuilt from an older snapshot of its lineage (newest first), or from empty state,
 * plus every change since, replaying at most `repairMaxReplay` versions. Every file is checked
 * against its size and CRC32 first, so a repair never reads damage as state.
 *
 * It decides which manifest to open and holds no state of the store's: the store opens each
 * candidate (`openFresh`, which fails with `UnreadableSnapshot` when a snapshot cannot be restored)
 * and, after a repair, owes a snapshot on its next commit.
 */
private[storage] final class SnapshotRepair(storeId: String, checkpointDir: StoreCheckpointDir,
    restore: SnapshotRestore, conf: RockstateConf) extends Logging {

  /**
   * Opens `m` from its snapshot, repairing it if that cannot be restored (or rethrowing the
   * cause with repair off). Returns the changelogs replayed and the repairs made (0 or 1).
   */
  def open(m: VersionManifest, path: Option[String], fetched: CheckpointFetch)(
      openFresh: VersionManifest => Int): (Int, Int) = {
    def attempt(): Either[UnreadableSnapshot, Int] =
      try Right(openFresh(m)) catch { case e: UnreadableSnapshot => Left(e) }
    @scala.annotation.tailrec
    def retried(left: Int): Either[UnreadableSnapshot, Int] = attempt() match {
      case Left(e) if left > 1 =>
        logWarning(s"rockstate: loading version ${m.version} of $storeId: ${e.getMessage}; " +
          "trying again", e)
        retried(left - 1)
      case other => other
    }
    retried(if (conf.autoSnapshotRepair) conf.repairAfterFailures else 1) match {
      case Right(replayed) => (replayed, 0)
      case Left(e) if !conf.autoSnapshotRepair => throw e.getCause
      case Left(e) => (repair(m, path, e, fetched, openFresh), 1)
    }
  }

  private def repair(end: VersionManifest, endPath: Option[String], damaged: UnreadableSnapshot,
      fetched: CheckpointFetch, openFresh: VersionManifest => Int): Int = {
    val bad = damaged.ref.version
    val eligible = (checkpointDir.listSnapshots().map(_._2).filter(_ < bad).distinct
      .sorted.reverse :+ 0L).toList
    val selected = eligible.filter(v => end.version - v <= conf.repairMaxReplay)
    logWarning(s"rockstate: the snapshot of version $bad of $storeId (${damaged.ref.path}) " +
      s"cannot be restored (${damaged.getCause}); rebuilding version ${end.version} from an " +
      s"older one (of versions ${selected.mkString(", ")}; 0: empty state)")
    @scala.annotation.tailrec
    def from(candidates: List[Long], failed: List[String]): Int = candidates match {
      case Nil =>
        throw new CorruptCheckpointException(s"rockstate: version ${end.version} of $storeId " +
          s"cannot be loaded: its snapshot of version $bad (${damaged.ref.path}) cannot be " +
          s"restored (${damaged.getCause.getMessage}), and no older one rebuilds it within " +
          s"${conf.repairMaxReplay} versions of changes (${RockstateConf.RepairMaxReplay}). " +
          s"Snapshots of versions ${eligible.mkString(", ")} were eligible; tried: " +
          s"${if (failed.isEmpty) "none" else failed.reverse.mkString("; ")}. Restore the " +
          "snapshot's files, or restart the query from an earlier checkpoint.", damaged.getCause)
      case v :: rest =>
        (try Right(openFresh(rebuilt(v, end, endPath, fetched))) catch {
          case NonFatal(e) => Left(e)
        }) match {
          case Right(replayed) =>
            logWarning(s"rockstate: version ${end.version} of $storeId rebuilt from " +
              s"${if (v == 0) "empty state" else s"the snapshot of version $v"} and $replayed " +
              s"versions of changes, past the damaged snapshot of version $bad")
            replayed
          case Left(e) => from(rest, s"$v: ${e.getMessage}" :: failed)
        }
    }
    from(selected, Nil)
  }

  /**
   * The manifest of `end` rebuilt from the snapshot of `snapshotVersion` on its lineage (0:
   * from empty state) and the changes after it.
   */
  def rebuilt(snapshotVersion: Long, end: VersionManifest, endPath: Option[String],
      fetched: CheckpointFetch): VersionManifest = {
    val feed = new ChangeFeed(checkpointDir, restore, fetched)
    if (snapshotVersion == 0) {
      end.copy(snapshot = None, changelogs = feed.lineage(1, end, endPath))
    } else {
      val lineage = feed.lineage(snapshotVersion, end, endPath)
      // The snapshot taken from the lineage's own version file of `snapshotVersion`.
      val taken = lineage.head.path
      val present = checkpointDir.listSnapshots().filter(_._2 == snapshotVersion).map(_._1)
      // Without a checkpoint id the lineage names the attempt that landed; a snapshot whose
      // state id is of an older format (a format 2 changelog) is then the one of its version.
      val snapshot = present.find(p =>
        checkpointDir.readSnapshotManifest(p, fetched.neededBy).stateId == taken)
        .orElse(present.headOption.filter(_ => endPath.isEmpty && present.size == 1))
        .getOrElse {
          val others = checkpointDir.listSnapshots().map(_._2).distinct
          throw new IllegalStateException(s"rockstate: $storeId has no snapshot of version " +
            s"$snapshotVersion on the lineage of version ${end.version} (snapshots exist of " +
            s"versions ${if (others.isEmpty) "none" else others.mkString(", ")}); pick one " +
            "of those.")
        }
      end.copy(snapshot = Some(SnapshotRef(snapshotVersion, snapshot)),
        changelogs = lineage.tail)
    }
  }
}
