package io.rockstate.state

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.hadoop.fs.FileStatus

import org.apache.spark.internal.Logging

/** What one cleanup run did. */
final case class CleanupStats(
    versionsExpired: Int, snapshotsExpired: Int, filesDeleted: Int, orphansDeleted: Int)

/**
 * Keeps the checkpoint location of one store to what the retained versions need, through the
 * store's shared-file registry. Safe to interrupt anywhere, in this order:
 *
 *  1. manifests of versions past retention are deleted (a version without its manifest no
 *     longer exists), and their references dropped;
 *  2. snapshot manifests nothing references any more are deleted, unless they are of a retained
 *     version or newer (a later commit may still rebase onto them) or younger than the grace;
 *  3. snapshot manifests written since step 1's listing are registered (a new snapshot may
 *     reuse files of a dropped one: its writer checks its sources after writing its manifest,
 *     this step looks for new manifests after dropping, so one of the two always sees the
 *     other), then files whose reference count reached zero are deleted;
 *  4. orphans, files no manifest references (uploads that never got their manifest), and
 *     temporary files of crashed atomic writes are deleted once older than the grace.
 *
 * Time is the storage's, never this machine's clock: "older than the grace" means older than
 * the newest manifest this cleanup listed, minus `orphanFileGraceMs`. Every manifest written
 * after the listing is younger than that, and a writer publishes a manifest only when at most
 * half the grace passed since its first new file (checked after the write, on its own
 * monotonic clock, so a pause anywhere is counted). So a skewed clock or a paused writer never
 * sees its files swept (docs/checkpoint-format.md, "Orphans and paused writers").
 *
 * `pinned` versions (those completed checkpoints still reference) are retained as well.
 */
final class RetentionCleaner(dir: StoreCheckpointDir, conf: RockstateConf) extends Logging {
  private val registry = new SharedFileRegistry
  // A version manifest can be rewritten in place (a retried or re-run batch): what its
  // registration was read from, so a rewrite is read again.
  private val versionStamps = mutable.Map.empty[Long, ManifestStamp]

  /** Runs one cleanup; returns its figures and every checkpoint path still referenced. */
  def clean(pinned: Set[Long] = Set.empty): (CleanupStats, Set[String]) = {
    val versionStatuses = dir.listVersionStatuses()
    val snapshots = dir.listSnapshots()
    if (versionStatuses.isEmpty) return (CleanupStats(0, 0, 0, 0), registry.referenced)
    val versions = versionStatuses.map(_._1)
    val storageNow = (versionStatuses.map(_._2.getModificationTime) ++ snapshots.map(_._3)).max
    val graceStart = storageNow - conf.orphanFileGraceMs
    val retained = (versions.takeRight(conf.minVersionsToRetain) ++ pinned.filter(versions.contains))
      .toSet
    sync(versionStatuses, snapshots.map(_._1), retained, storageNow)

    val expired = versions.filterNot(retained.contains)
    val freed = Seq.newBuilder[String]
    expired.foreach { v =>
      dir.deleteManifest(v)
      versionStamps.remove(v)
      freed ++= registry.unregister(versionOwner(v))
    }
    if (expired.nonEmpty && conf.testCleanupDelayMs > 0) Thread.sleep(conf.testCleanupDelayMs)
    // Snapshots from the oldest pinned version on stay even when that version's own manifest
    // is gone: a completed checkpoint names a snapshot manifest, not a version manifest.
    val oldestRetained = (retained ++ pinned).min
    val dropped = snapshots.filter { case (path, version, mtime) =>
      registry.count(path) == 0 && version < oldestRetained && mtime < graceStart
    }
    dropped.foreach { case (path, _, _) =>
      dir.delete(path)
      freed ++= registry.unregister(path)
    }
    if (dropped.nonEmpty) registerSnapshots(dir.listSnapshots().map(_._1))
    val deletable = freed.result().distinct.filter(p => registry.count(p) == 0 && !isSnapshot(p))
    deletable.foreach(dir.delete)
    val orphans = dir.listDataFiles().collect {
      case (path, status) if registry.count(path) == 0 && !deletable.contains(path) &&
          status.getModificationTime < graceStart => path
    }
    orphans.foreach(dir.delete)
    val temps = dir.listTempFiles().collect { case (path, mtime) if mtime < graceStart => path }
    temps.foreach(dir.delete)
    dir.deleteEmptyMetaDirs(graceStart)
    val kept = snapshots.map(_._1).filterNot(p => dropped.exists(_._1 == p))
    (CleanupStats(expired.size, dropped.size, deletable.size, orphans.size + temps.size),
      registry.referenced ++ kept)
  }

  /**
   * Brings the registry in line with the manifests present: forgets owners deleted meanwhile,
   * registers new ones and reads rewritten ones again (their old references fall to the
   * orphan sweep). A retained version's manifest that cannot be read stops the cleanup
   * (never delete on a doubt); an unreadable expired one is registered as referencing nothing,
   * so its files fall to the orphan sweep.
   */
  private def sync(versions: Seq[(Long, FileStatus)], snapshotPaths: Seq[String],
      retained: Set[Long], storageNow: Long): Unit = {
    val present = versions.map(v => versionOwner(v._1)).toSet ++ snapshotPaths
    (registry.registeredOwners -- present).foreach(registry.unregister)
    versionStamps.keySet.filterNot(v => present.contains(versionOwner(v))).foreach(versionStamps.remove)
    versions.foreach { case (v, status) =>
      val stamp = ManifestStamp(status.getModificationTime, status.getLen, storageNow)
      val current = versionStamps.get(v).forall(_.stillDescribes(stamp))
      if (!registry.isRegistered(versionOwner(v)) || !current) {
        registry.unregister(versionOwner(v))
        val refs = try dir.readManifest(v).references catch {
          case NonFatal(e) if !retained.contains(v) =>
            logWarning(s"rockstate: expired manifest of version $v in ${dir.root} is " +
              "unreadable; its files are left to the orphan sweep", e)
            Nil
        }
        registry.register(versionOwner(v), refs)
        versionStamps(v) = stamp
      }
    }
    registerSnapshots(snapshotPaths)
  }

  private def registerSnapshots(paths: Seq[String]): Unit =
    paths.filterNot(registry.isRegistered).foreach { p =>
      registry.register(p, dir.readSnapshotManifest(p, "cleanup").files.map(_.path))
    }

  private def versionOwner(v: Long): String = s"manifests/$v.json"
  private def isSnapshot(path: String): Boolean = path.startsWith("snapshots/")
}

/**
 * What a version manifest's registration was read from: its modification time and length,
 * and the storage time when it was read.
 */
private final case class ManifestStamp(mtime: Long, length: Long, readAt: Long) {
  /**
   * Whether a manifest now listed as `seen` is still the one read. A rewrite within the file
   * system's timestamp granularity can keep both mtime and length, so a manifest read while
   * it was that young is read once more.
   */
  def stillDescribes(seen: ManifestStamp): Boolean =
    seen.mtime == mtime && seen.length == length && readAt - mtime > ManifestStamp.SameTickMs
}

private object ManifestStamp {
  val SameTickMs = 2000L
}
