package io.rockstate.storage.retention

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.spark.internal.Logging

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{VersionEntry, VersionFile}
import io.rockstate.storage.location.{ManifestStamp, StoreCheckpointDir}

/**
 * Keeps the checkpoint location of one store to what the retained versions need, through the
 * store's shared-file registry. Safe to interrupt anywhere, in this order:
 *
 *  1. versions past retention are expired (at most `maxVersionsToDeletePerMaintenance` of them
 *     a run, oldest first, when Spark's cap is set): a format 1/2 manifest is deleted at once
 *     (a version without its manifest no longer exists); a version file once no other version
 *     file's lineage names it (its changes are a link of that lineage), so expired versions go
 *     oldest first and every version file present stays loadable. Each drops its references;
 *  2. snapshot manifests nothing references any more are deleted, unless they are of a retained
 *     version or newer (a later commit may still rebase onto them) or younger than the grace;
 *  3. snapshot manifests written since step 1's listing are registered (a new snapshot may
 *     reuse files of a dropped one: its writer checks its sources after writing its manifest,
 *     this step looks for new manifests after dropping, so one of the two always sees the
 *     other), then files whose reference count reached zero are deleted;
 *  4. orphans, files step 1's listing found that no manifest references (uploads that never
 *     got their manifest), and temporary files of crashed atomic writes are deleted once
 *     older than the grace.
 *
 * Time is the storage's, never this machine's clock: "older than the grace" means older than
 * the newest version or snapshot file this cleanup listed, minus `orphanFileGraceMs`. Every
 * such file written after the listing is younger than that, and a writer publishes only when
 * at most half the grace passed since its first new file (checked after the write, on its own
 * monotonic clock, so a pause anywhere is counted). So a skewed clock or a paused writer never
 * sees its files swept (docs/checkpoint-format.md, "Orphans and paused writers").
 *
 * `pinned` versions (those completed checkpoints still reference) are retained as well.
 */
final class RetentionCleaner(dir: StoreCheckpointDir, conf: RockstateConf) extends Logging {
  private val registry = new SharedFileRegistry
  // A format 1/2 manifest can be rewritten in place (a retried or re-run batch): what its
  // registration was read from, so a rewrite is read again. Version files never change.
  private val manifestStamps = mutable.Map.empty[String, ManifestStamp]

  /** Runs one cleanup; returns its figures and every checkpoint path still referenced. */
  def clean(pinned: Set[Long] = Set.empty): (CleanupStats, Set[String]) = {
    // One listing of the store directory decides it all (on an object store, a request per
    // thousand files, not a listing and a probe per folder); what it missed waits for the next.
    val listing = dir.listAll()
    val entries = listing.allVersionEntries
    val snapshots = listing.snapshots
    if (entries.isEmpty) return (CleanupStats(0, 0, 0, 0), registry.referenced)
    val versions = entries.map(_.version).distinct.sorted
    val storageNow = (entries.map(_.mtime) ++ snapshots.map(_._3)).max
    val graceStart = storageNow - conf.orphanFileGraceMs
    val retained = (versions.takeRight(conf.minVersionsToRetain) ++ pinned.filter(versions.contains))
      .toSet
    sync(entries, snapshots.map(_._1), retained, storageNow)

    val freed = Seq.newBuilder[String]
    // Spark's cap on one run's deletions: the oldest versions past retention go first, the
    // rest wait for the next run (every version file present stays loadable either way).
    val pastRetention = versions.filterNot(retained.contains)
    val expiring = (if (conf.maxVersionsToDeletePerMaintenance > 0) {
      pastRetention.take(conf.maxVersionsToDeletePerMaintenance)
    } else pastRetention).toSet
    val expired = entries.filter(e => expiring.contains(e.version))
    val (manifests, versionFiles) = expired.partition(_.isManifest)
    manifests.foreach { e =>
      dir.delete(e.path)
      manifestStamps.remove(e.path)
      freed ++= registry.unregister(e.path)
    }
    val goneFiles = expireVersionFiles(versionFiles, freed)
    // Snapshots from the oldest pinned version on stay even when that version's own manifest
    // is gone: a completed checkpoint names a snapshot manifest, not a version.
    val oldestRetained = (retained ++ pinned).min
    val dropped = snapshots.filter { case (path, version, mtime) =>
      registry.count(path) == 0 && version < oldestRetained && mtime < graceStart
    }
    dropped.foreach { case (path, _, _) =>
      dir.delete(path)
      freed ++= registry.unregister(path)
    }
    if (dropped.nonEmpty) registerSnapshots(dir.listSnapshots().map(_._1))
    // Version files go only through expiry above: a retained one may be referenced by none.
    val deletable = freed.result().distinct
      .filter(p => registry.count(p) == 0 && !isSnapshot(p) && !VersionFile.isVersionFile(p))
    deletable.foreach(dir.delete)
    val orphans = listing.dataFiles.collect {
      case (path, mtime) if registry.count(path) == 0 && !deletable.contains(path) &&
          mtime < graceStart => path
    }
    orphans.foreach(dir.delete)
    val temps = listing.tempFiles.collect { case (path, mtime) if mtime < graceStart => path }
    temps.foreach(dir.delete)
    // A snapshot's meta folder empties only when its files are deleted.
    if ((deletable ++ orphans).exists(_.startsWith("meta/"))) dir.deleteEmptyMetaDirs(graceStart)
    val kept = snapshots.map(_._1).filterNot(p => dropped.exists(_._1 == p))
    val versionsKept = entries.map(_.path).toSet -- goneFiles -- manifests.map(_.path)
    (CleanupStats(manifests.size + goneFiles.size, dropped.size, deletable.size,
      orphans.size + temps.size), registry.referenced ++ kept ++ versionsKept)
  }

  /**
   * Deletes expired version files no version file's lineage names, and again as deleting
   * them frees their own lineage's links; returns the paths deleted. A held one stays (with
   * its lineage) until the version holding it expires or rebases past it.
   */
  private def expireVersionFiles(expired: Seq[VersionEntry],
      freed: mutable.Builder[String, Seq[String]]): Set[String] = {
    val gone = mutable.Set.empty[String]
    var free = expired.filter(e => registry.count(e.path) == 0)
    while (free.nonEmpty) {
      free.foreach { e =>
        dir.delete(e.path)
        gone += e.path
        freed ++= registry.unregister(e.path)
      }
      free = expired.filter(e => !gone.contains(e.path) && registry.count(e.path) == 0)
    }
    gone.toSet
  }

  /**
   * Brings the registry in line with the files present: forgets owners deleted meanwhile,
   * registers new ones and reads rewritten format 1/2 manifests again (their old references
   * fall to the orphan sweep). A retained version's file that cannot be read stops the
   * cleanup (never delete on a doubt); an unreadable expired one is registered as referencing
   * nothing, so its files fall to the orphan sweep.
   */
  private def sync(entries: Seq[VersionEntry], snapshotPaths: Seq[String],
      retained: Set[Long], storageNow: Long): Unit = {
    val present = entries.map(_.path).toSet ++ snapshotPaths
    (registry.registeredOwners -- present).foreach(registry.unregister)
    manifestStamps.keySet.filterNot(present.contains).foreach(manifestStamps.remove)
    entries.foreach { e =>
      val stamp = ManifestStamp(e.mtime, e.length, storageNow)
      val current = !e.isManifest || manifestStamps.get(e.path).forall(_.stillDescribes(stamp))
      if (!registry.isRegistered(e.path) || !current) {
        registry.unregister(e.path)
        val refs = try dir.readEntryManifest(e).references.filterNot(_ == e.path) catch {
          case NonFatal(err) if !retained.contains(e.version) =>
            logWarning(s"rockstate: expired ${e.path} in ${dir.root} is unreadable; its " +
              "files are left to the orphan sweep", err)
            Nil
        }
        registry.register(e.path, refs)
        if (e.isManifest) manifestStamps(e.path) = stamp
      }
    }
    registerSnapshots(snapshotPaths)
  }

  private def registerSnapshots(paths: Seq[String]): Unit =
    paths.filterNot(registry.isRegistered).foreach { p =>
      registry.register(p, dir.readSnapshotManifest(p, "cleanup").files.map(_.path))
    }

  private def isSnapshot(path: String): Boolean = path.startsWith("snapshots/")
}
