package io.rockstate.storage.restore

import java.io.{File, FileInputStream}
import java.nio.file.{Files, LinkOption}

import org.apache.commons.io.FileUtils

import io.rockstate.storage.format.{Changelog, ChangelogRef, CheckpointPath,
  CorruptCheckpointException, MetaPack, RemoteFile, SnapshotManifest, SnapshotRef, SnapshotStats,
  VersionFile, VersionManifest}
import io.rockstate.storage.local.LocalRocksDB
import io.rockstate.storage.location.StoreCheckpointDir
import io.rockstate.storage.snapshot.ConfirmedFiles

/**
 * The restore operation of one store (Flink's RocksDB restore operations): finds a version's
 * manifest, rebuilds its snapshot in a fresh work directory from the executor's local files
 * (downloading only what is missing), and replays changelogs into an open instance. It holds no
 * state of the store's: `VersionedRocksDB` decides what to restore and adopts the result.
 */
final class SnapshotRestore(operatorId: Long, partitionId: Int, storeName: String,
    remote: StoreCheckpointDir) {

  /**
   * A version's manifest: the landed version file's header (the file is fetched and checked
   * whole, its own changes are replayed from it next), or a format 1 or 2 manifest. A format 1
   * manifest (a full snapshot listing its files) is turned into a snapshot manifest once, so
   * it joins the lineage like any other snapshot. `path`: exactly that commit attempt.
   */
  def readVersion(version: Long, path: Option[String], fetch: CheckpointFetch): VersionManifest = {
    val entry = path match {
      case Some(p) => remote.versionEntry(version, p).getOrElse(
        throw remote.missingVersion(version, s" (attempt $p)"))
      case None => remote.findVersion(version).getOrElse(throw remote.missingVersion(version))
    }
    val m = if (!entry.isManifest) {
      val (file, crc) = fetch.selfChecked(entry.path, entry.length)
      val where = remote.resolve(entry.path).toString
      val parsed = VersionFile.read(file, entry.path, where, entry.length, crc)
      if (parsed.manifest.version != version) {
        throw new CorruptCheckpointException(s"rockstate: version file $where says version " +
          s"${parsed.manifest.version}, its name $version; the checkpoint is corrupt.")
      }
      parsed.manifest
    } else remote.readManifest(version)
    if (!m.isFormat1) m
    else {
      // A format 2 snapshot manifest: it lists the small files one by one, as format 1 did.
      val snapshot = SnapshotManifest(2, version, operatorId,
        partitionId, storeName, m.stateId, m.numKeys, m.useColumnFamilies, m.columnFamilies,
        m.files, SnapshotStats.Zero, System.currentTimeMillis(), VersionManifest.Writer)
      val written = remote.writeSnapshotManifest(snapshot)
      m.copy(formatVersion = VersionManifest.FormatVersion,
        snapshot = Some(SnapshotRef(version, written)), files = Nil)
    }
  }

  /**
   * Rebuilds `manifest`'s snapshot in `workDir` (emptied first): every file it needs, and its
   * changelogs, fetched in parallel first (each checked against its size and CRC32: on an
   * object store a load is bound by request latency, not bandwidth), then SSTs linked and
   * RocksDB's small files copied or unpacked. Without a manifest: empty state. `read`: the
   * manifest of `manifest`'s snapshot when the caller has read it already (it is not read
   * again).
   */
  def restoreSnapshot(manifest: Option[VersionManifest], workDir: File,
      fetch: CheckpointFetch, read: Option[SnapshotManifest] = None): RestoredSnapshot = {
    FileUtils.deleteDirectory(workDir)
    Files.createDirectories(workDir.toPath)
    val snapshotRef = manifest.flatMap(_.snapshot)
    val snapshot = snapshotRef.map(ref =>
      read.getOrElse(remote.readSnapshotManifest(ref.path, fetch.neededBy)))
    fetch.prefetch(snapshot.toSeq.flatMap(_.files.map(_.remote)) ++
      manifest.toSeq.flatMap(_.changelogs.map(c => RemoteFile(c.path, c.size, c.crc32))))
    for (ref <- snapshotRef; s <- snapshot) {
      for (f <- s.files) {
        val cached = fetch(f.remote)
        // The manifest is checkpoint input: its names stay inside the work directory, and
        // what is linked or copied is the cache's own regular file, never through a symlink.
        val where = s"snapshot manifest ${remote.resolve(ref.path)}, file ${f.path}"
        val target = CheckpointPath.localFile(workDir, f.localName, where)
        if (!Files.isRegularFile(cached.toPath, LinkOption.NOFOLLOW_LINKS)) {
          throw new CorruptCheckpointException(s"rockstate: the cached copy $cached of " +
            s"${f.path} ($where) is not a regular file; delete the executor's local store files.")
        }
        // SSTs are immutable: link them. RocksDB rewrites its small files: copy those.
        if (f.kind == "sst") Files.createLink(target.toPath, cached.toPath)
        else Files.copy(cached.toPath, target.toPath)
      }
      // Format 3: the small files are packed inside the snapshot manifest.
      s.metaPack.foreach(MetaPack.unpackInline(_, workDir, remote.resolve(ref.path).toString))
      // RocksDB would open a directory without CURRENT as a new, empty database: never that.
      if (!new File(workDir, "CURRENT").isFile) {
        throw new CorruptCheckpointException(s"rockstate: the snapshot of ${fetch.neededBy} " +
          s"(${ref.path}) has no RocksDB CURRENT file; it is damaged, and is never read as " +
          "empty state. Restore it or restart the query from an earlier version.")
      }
    }
    val ssts = snapshot.toSeq.flatMap(_.files.filter(_.kind == "sst"))
    RestoredSnapshot(snapshot, new ConfirmedFiles(ssts, snapshotRef.map(_.path).getOrElse("")))
  }

  /** The state id a snapshot holds (read from its manifest); empty state's without one. */
  def stateIdOf(snapshot: Option[SnapshotRef], neededBy: String): String =
    snapshot.map(ref => remote.readSnapshotManifest(ref.path, neededBy).stateId)
      .getOrElse(SnapshotRestore.EmptyState)

  /** Replays one changelog (or a version file's own changes) into `target`. */
  def replay(c: ChangelogRef, fetch: CheckpointFetch, target: LocalRocksDB): Unit = {
    val file = fetch(RemoteFile(c.path, c.size, c.crc32))
    val where = remote.resolve(c.path).toString
    // The whole file was just checked against the lineage's CRC32.
    val (changes, length) = if (!VersionFile.isVersionFile(c.path)) {
      (new FileInputStream(file), file.length)
    } else {
      val parsed = VersionFile.read(file, c.path, where, c.size, c.crc32, checkCrc = false)
      (VersionFile.changes(file, parsed), parsed.changesLength)
    }
    Changelog.replay(changes, length, where, new Changelog.Target {
      def put(k: Array[Byte], v: Array[Byte]): Unit = target.put(k, v)
      def merge(k: Array[Byte], v: Array[Byte]): Unit = target.merge(k, v)
      def delete(k: Array[Byte]): Unit = target.delete(k)
      def deleteRange(b: Array[Byte], e: Array[Byte]): Unit = target.deleteRange(b, e)
    })
  }
}

object SnapshotRestore {
  /** The state id of empty state (version 0, or a loadEmpty before its first commit). */
  val EmptyState = "empty"
}
