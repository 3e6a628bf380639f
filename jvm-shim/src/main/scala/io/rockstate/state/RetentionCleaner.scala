package io.rockstate.state

import scala.util.control.NonFatal

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
 *  3. files whose reference count reached zero are deleted;
 *  4. orphans, files no manifest references (uploads that never got their manifest), are
 *     deleted once older than `orphanFileGraceMs`, so an upload under way is never one.
 *
 * `pinned` versions (those completed checkpoints still reference) are retained as well.
 */
final class RetentionCleaner(dir: StoreCheckpointDir, conf: RockstateConf) extends Logging {
  private val registry = new SharedFileRegistry

  /** Runs one cleanup; returns its figures and every checkpoint path still referenced. */
  def clean(nowMs: Long, pinned: Set[Long] = Set.empty): (CleanupStats, Set[String]) = {
    val versions = dir.listVersions()
    val snapshots = dir.listSnapshots()
    if (versions.isEmpty) return (CleanupStats(0, 0, 0, 0), registry.referenced)
    val retained = (versions.takeRight(conf.minVersionsToRetain) ++ pinned.filter(versions.contains))
      .toSet
    sync(versions, snapshots.map(_._1), retained)

    val expired = versions.filterNot(retained.contains)
    val freed = Seq.newBuilder[String]
    expired.foreach { v =>
      dir.deleteManifest(v)
      freed ++= registry.unregister(versionOwner(v))
    }
    if (expired.nonEmpty && conf.testCleanupDelayMs > 0) Thread.sleep(conf.testCleanupDelayMs)
    // Snapshots from the oldest pinned version on stay even when that version's own manifest
    // is gone: a completed checkpoint names a snapshot manifest, not a version manifest.
    val oldestRetained = (retained ++ pinned).min
    val graceStart = nowMs - conf.orphanFileGraceMs
    val dropped = snapshots.filter { case (path, version, mtime) =>
      registry.count(path) == 0 && version < oldestRetained && mtime < graceStart
    }
    dropped.foreach { case (path, _, _) =>
      dir.delete(path)
      freed ++= registry.unregister(path)
    }
    val deletable = freed.result().distinct.filter(p => registry.count(p) == 0 && !isSnapshot(p))
    deletable.foreach(dir.delete)
    val orphans = dir.listDataFiles().collect {
      case (path, status) if registry.count(path) == 0 && !deletable.contains(path) &&
          status.getModificationTime < graceStart => path
    }
    orphans.foreach(dir.delete)
    dir.deleteEmptyMetaDirs(graceStart)
    val kept = snapshots.map(_._1).filterNot(p => dropped.exists(_._1 == p))
    (CleanupStats(expired.size, dropped.size, deletable.size, orphans.size),
      registry.referenced ++ kept)
  }

  /**
   * Brings the registry in line with the manifests present: forgets owners deleted meanwhile,
   * registers new ones. A retained version's manifest that cannot be read stops the cleanup
   * (never delete on a doubt); an unreadable expired one is registered as referencing nothing,
   * so its files fall to the orphan sweep.
   */
  private def sync(versions: Seq[Long], snapshotPaths: Seq[String], retained: Set[Long]): Unit = {
    val present = versions.map(versionOwner).toSet ++ snapshotPaths
    (registry.registeredOwners -- present).foreach(registry.unregister)
    versions.filterNot(v => registry.isRegistered(versionOwner(v))).foreach { v =>
      val refs = try dir.readManifest(v).references catch {
        case NonFatal(e) if !retained.contains(v) =>
          logWarning(s"rockstate: expired manifest of version $v in ${dir.root} is unreadable; " +
            "its files are left to the orphan sweep", e)
          Nil
      }
      registry.register(versionOwner(v), refs)
    }
    snapshotPaths.filterNot(registry.isRegistered).foreach { p =>
      registry.register(p, dir.readSnapshotManifest(p, "cleanup").files.map(_.path))
    }
  }

  private def versionOwner(v: Long): String = s"manifests/$v.json"
  private def isSnapshot(path: String): Boolean = path.startsWith("snapshots/")
}
