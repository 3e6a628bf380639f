package io.rockstate.storage.snapshot

import java.io.File
import java.util.UUID

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{CheckpointPath, MetaPack, PackSlice, SnapshotManifest,
  StateFile}
import io.rockstate.storage.local.{Elapsed, LocalStoreFiles, SstPacks}
import io.rockstate.storage.location.StoreCheckpointDir

/**
 * The asynchronous part of a snapshot (Flink's AsyncSnapshotCallable): upload the SST files of
 * a local checkpoint that no confirmed snapshot has (small ones packed, `SstPacks`), then the
 * snapshot manifest, last, with RocksDB's small files packed inside it (`MetaPack`). The
 * synchronous part (flush and hard-link checkpoint) happened on the task, at `takenAtNanos`;
 * the orphan grace is counted from there, queueing included.
 *
 * After the manifest is written the job checks what it relied on: that the manifests owning
 * the files it reused still exist, and that the whole upload stayed within half the orphan
 * grace. If not, its manifest is withdrawn and the snapshot fails; nothing references it yet.
 */
final case class SnapshotJob(
    manifest: SnapshotManifest, // files and stats are filled in by the upload
    checkpoint: File, // the local checkpoint, owned by the job and deleted when it ends
    remote: StoreCheckpointDir,
    local: LocalStoreFiles,
    confirmed: ConfirmedFiles,
    conf: RockstateConf,
    takenAtNanos: Long) {

  /** Runs the upload; returns the written manifest and its path. */
  def run(): (SnapshotManifest, String) = {
    val version = manifest.version
    val files = Option(checkpoint.listFiles()).getOrElse(Array.empty[File]).toSeq.sortBy(_.getName)
    // A checkpoint without RocksDB's CURRENT and MANIFEST cannot be opened: never publish it.
    if (!files.exists(_.getName == "CURRENT") || !files.exists(_.getName.startsWith("MANIFEST-"))) {
      throw new java.io.IOException(s"rockstate: the local checkpoint of version $version in " +
        s"$checkpoint has no RocksDB CURRENT or MANIFEST file (found " +
        s"${files.map(_.getName).take(8).mkString(", ")}); it is not uploaded.")
    }
    // Reuse only files whose owner manifest is still there; the others are uploaded again.
    val candidates = files.flatMap(f =>
      if (f.getName.endsWith(".sst")) confirmed.reusable(f.getName, f.length) else None)
    val goneOwners = candidates.map(_._2).distinct.filterNot(remote.exists)
    goneOwners.foreach(confirmed.forgetOwner)
    val start = System.nanoTime()
    val (ssts, small) = files.partition(_.getName.endsWith(".sst"))
    val reusable = ssts.flatMap(f => confirmed.reusable(f.getName, f.length).map(f.getName -> _))
      .toMap
    val fresh = ssts.filterNot(f => reusable.contains(f.getName))
    val uploadedFiles = upload(fresh)
    // (entry, the owner it is reused from) per SST, in name order
    val entries = ssts.map { f =>
      reusable.get(f.getName) match {
        case Some((shared, owner)) => (shared, Some(owner))
        case None => (uploadedFiles(f.getName), None)
      }
    }
    // RocksDB's small files go inside the manifest: no object of their own (an object store
    // charges per request and per listed file).
    val metaPack = MetaPack.inline(small)
    // An upload that outlived half the orphan grace period may have lost files to another
    // executor's orphan sweep; abandon it rather than write a manifest naming them.
    if (conf.outlivedGrace(Elapsed.sinceMs(takenAtNanos))) throw outlived(version)
    val (reused, uploaded) = entries.partition(_._2.isDefined)
    val stats = manifest.stats.copy(
      asyncMs = Elapsed.sinceMs(start),
      bytesUploaded = uploaded.map(_._1.size).sum + metaPack.size,
      bytesReused = reused.map(_._1.size).sum,
      filesUploaded = uploaded.size,
      filesReused = reused.size)
    val written = manifest.copy(files = entries.map(_._1), stats = stats,
      createdAtMs = System.currentTimeMillis(), metaPack = Some(metaPack))
    val path = remote.writeSnapshotManifest(written)
    // Published; now check what it relied on (see the class comment).
    val lostOwners = reused.flatMap(_._2).distinct.filterNot(remote.exists)
    if (lostOwners.nonEmpty || conf.outlivedGrace(Elapsed.sinceMs(takenAtNanos))) {
      remote.delete(path)
      lostOwners.foreach(confirmed.forgetOwner)
      if (lostOwners.nonEmpty) {
        throw new java.io.IOException(s"rockstate: snapshot of version $version reused files " +
          s"of ${lostOwners.mkString(", ")}, deleted by cleanup meanwhile; its manifest is " +
          "withdrawn and the next snapshot uploads those files again.")
      }
      throw outlived(version)
    }
    uploaded.foreach { case (e, _) =>
      local.adopt(CheckpointPath.localFile(checkpoint, e.localName,
        s"the local checkpoint of version $version, file ${e.path}"), e.remote.cacheKey, e.crc32)
    }
    // The shared files are cached already; a cleanup that listed before this manifest landed
    // may have freed their older owner, and must leave the cached copies to this snapshot.
    reused.foreach { case (e, _) => local.touch(e.remote.cacheKey) }
    (written, path)
  }

  /**
   * Uploads new SSTs, small ones packed (`SstPacks`, up to `sstPackMB` each); returns each
   * one's manifest entry by local name.
   */
  private def upload(fresh: Seq[File]): Map[String, StateFile] = {
    val (packs, alone) = SstPacks.plan(fresh, conf.sstPackMB * 1024 * 1024)
    val packed = packs.flatMap { members =>
      val path = SstPacks.pathFor(manifest.version)
      val sent = remote.uploadPack(members, path)
      val offsets = sent.scanLeft(0L)(_ + _._1)
      members.zip(sent).zip(offsets).map { case ((f, (size, crc)), offset) =>
        StateFile(f.getName, path, size, crc, "sst", Some(PackSlice(offset, offsets.last)))
      }
    }
    val single = alone.map { f =>
      val path = s"sst/${f.getName.stripSuffix(".sst")}-${UUID.randomUUID()}.sst"
      val (size, crc) = remote.upload(f, path)
      StateFile(f.getName, path, size, crc, "sst")
    }
    (packed ++ single).map(e => e.localName -> e).toMap
  }

  private def outlived(version: Long) = new java.io.IOException(s"rockstate: snapshot of " +
    s"version $version took ${Elapsed.sinceMs(takenAtNanos)} ms from its local checkpoint " +
    s"(queueing included), more than half of orphanFileGraceMs (${conf.orphanFileGraceMs}); abandoned, " +
    "its files are left to the orphan sweep. Raise orphanFileGraceMs.")
}
