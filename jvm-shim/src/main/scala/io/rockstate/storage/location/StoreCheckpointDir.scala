package io.rockstate.storage.location

import java.io.{File, FileInputStream, FileOutputStream, InputStream, OutputStream}
import java.nio.file.Files
import java.util.UUID
import java.util.zip.CRC32

import scala.util.Using

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}

import io.rockstate.storage.format.{CheckpointJson, CheckpointPath, ChecksummedCopy,
  CorruptCheckpointException, FileKind, MissingVersionException, RemoteFile, SnapshotManifest,
  VersionEntry, VersionFile, VersionManifest}

/**
 * One store's directory in the query's checkpoint location (any Hadoop file system):
 *
 *   <store>/versions/<version>-<uuid>.rsv  a commit: its lineage and its changes (format 3)
 *   <store>/snapshots/<version>-<uuid>.json a snapshot's manifest, written after its files
 *   <store>/sst/<name>-<uuid>.sst          SST files, uploaded once and shared by snapshots
 *   <store>/sst/<version>-<uuid>.pack      format 5: small SSTs of one upload, end to end
 *   <store>/meta/<version>-<uuid>/...      RocksDB's small per-snapshot files (MANIFEST...)
 *   <store>/manifests/<version>.json       format 1 and 2: a version's manifest (read only)
 *   <store>/changelog/<version>-<uuid>.log format 2: a batch's changes (read only)
 *
 * Unique names mean two attempts of one batch (retry, speculation, a zombie task) never
 * overwrite each other's files. Of several attempts of one version, the one written last
 * (`VersionEntry.landed`) is the version, as a rename over the same name would have decided.
 *
 * Every file is read through `CheckpointReader`, whose link rule starts at `location`: the
 * query's checkpoint location the store directory lies in (by default the directory itself).
 */
final class StoreCheckpointDir(val root: Path, hadoopConf: Configuration,
    location: Option[Path] = None) {
  import ChecksummedCopy.copy

  private val fs: FileSystem = root.getFileSystem(hadoopConf)
  private val writer = new LocationWriter(fs, root, hadoopConf)
  private val reader = new CheckpointReader(fs, location.getOrElse(root))

  val manifestsDir = new Path(root, "manifests")
  val snapshotsDir = new Path(root, "snapshots")
  val versionsDir = new Path(root, "versions")

  def manifestPath(version: Long): Path = new Path(manifestsDir, s"$version.json")

  /**
   * A file named relative to the store directory: every download, delete and existence check
   * goes through here, so a name from a checkpoint file never reaches outside the store.
   */
  def resolve(relative: String): Path =
    CheckpointPath.within(root, relative, s"a file name of the store in $root")

  /** Copies a local file up, returning its size and CRC32 computed on the bytes sent. */
  def upload(local: File, relative: String): (Long, Long) = {
    val target = resolve(relative)
    val crc = new CRC32()
    val size = Using.resources(new FileInputStream(local), writer.create(target)) { (in, out) =>
      copy(in, out, crc)
    }
    (size, crc.getValue)
  }

  /**
   * Copies local files up one after another as one object (a pack, `SstPacks`); returns each
   * one's size and CRC32, computed on the bytes sent, in order.
   */
  def uploadPack(members: Seq[File], relative: String): Seq[(Long, Long)] = {
    val target = resolve(relative)
    Using.resource(writer.create(target)) { out =>
      members.map { f =>
        val crc = new CRC32()
        val size = Using.resource(new FileInputStream(f))(in => copy(in, out, crc))
        (size, crc.getValue)
      }
    }
  }

  /**
   * Copies a file (or a pack member's bytes) down and checks it against the manifest; a
   * missing, short or altered file fails with the file and what needs it named, never passing
   * as empty state.
   */
  def download(file: RemoteFile, neededBy: String, local: File): Unit =
    downloadChecked(file.path, file.offset.map(o => (o, file.size)),
      Some((file.size, file.crc32)), neededBy, local)

  /**
   * Copies a file whose size and CRC32 nobody recorded (a version file found by listing with
   * `listedSize` bytes; it carries its own checksum) down; returns the size and CRC32 of the
   * bytes received.
   */
  def downloadSelfChecked(path: String, listedSize: Long, neededBy: String,
      local: File): (Long, Long) = {
    reader.checkLength(resolve(path), FileKind.Data, listedSize, neededBy)
    downloadChecked(path, None, None, neededBy, local)
  }

  /** `range`: (offset, length) of a pack member, read with one ranged request. */
  private def downloadChecked(path: String, range: Option[(Long, Long)],
      expected: Option[(Long, Long)], neededBy: String, local: File): (Long, Long) = {
    val source = resolve(path)
    val tmp = new File(local.getParentFile, local.getName + ".part")
    val crc = new CRC32()
    // A recorded size bounds the copy, one byte past it showing a longer file; a file nobody
    // recorded, its kind's limit.
    val bound = expected.fold(FileKind.Data.limit)(_._1)
    if (range.isEmpty) reader.checkAsked(source, FileKind.Data, bound, neededBy)
    val size = try {
      Using.resources(reader.open(source, FileKind.Data, neededBy, range),
          new FileOutputStream(tmp)) { (in, out) =>
        range match {
          case None => copy(in, out, crc, bound + 1)
          case Some((offset, length)) =>
            in.seek(offset)
            // A pack cut short ends the copy early: the size check below names it.
            copy(in, out, crc, length)
        }
      }
    } catch {
      case e: CorruptCheckpointException =>
        tmp.delete()
        throw e
      case e: java.io.FileNotFoundException =>
        tmp.delete()
        throw new CorruptCheckpointException(
          s"rockstate: file $source, needed by $neededBy, is missing from the " +
            "checkpoint location. The checkpoint is incomplete; restore the file or restart " +
            "the query from an earlier version (`rockstate verify` lists every damaged version).",
          e)
      case e: java.io.IOException =>
        tmp.delete()
        throw new CorruptCheckpointException(
          s"rockstate: file $source of $neededBy cannot be read (${e.getMessage}); it " +
            "is damaged. Restore the file or restart the query from an earlier version.", e)
    }
    val what = range.fold(s"file $source")(r => s"the SST at offset ${r._1} of pack $source")
    expected.foreach { case (expectedSize, expectedCrc) =>
      if (size != expectedSize || crc.getValue != expectedCrc) {
        tmp.delete()
        val found = if (size > expectedSize) s"more than $expectedSize bytes"
          else s"$size bytes with CRC32 ${crc.getValue}"
        throw new CorruptCheckpointException(
          s"rockstate: $what of $neededBy is damaged: expected $expectedSize " +
            s"bytes with CRC32 $expectedCrc, found $found. " +
            "Restore the file or restart the query from an earlier version.")
      }
    }
    if (expected.isEmpty) {
      try reader.checkLength(source, FileKind.Data, size, neededBy) catch {
        case e: CorruptCheckpointException =>
          tmp.delete()
          throw e
      }
    }
    Files.move(tmp.toPath, local.toPath, java.nio.file.StandardCopyOption.REPLACE_EXISTING)
    (size, crc.getValue)
  }

  /**
   * Publishes a version file under its final unique name in one write (all or nothing, see
   * `LocationWriter.publish`); returns its size and CRC32.
   */
  def publishVersion(local: File, relative: String): (Long, Long) = {
    val crc = new CRC32()
    val size = writer.publish(resolve(relative)) { out =>
      Using.resource(new FileInputStream(local))(in => copy(in, out, crc))
    }
    (size, crc.getValue)
  }

  /** The version files and manifests of one version (several: attempts), or of all. */
  def listVersionEntries(version: Option[Long] = None): Seq[VersionEntry] = {
    val files = version match {
      case Some(v) => Option(fs.globStatus(new Path(versionsDir, s"$v-*.rsv"))).toSeq.flatten
      case None => if (fs.exists(versionsDir)) fs.listStatus(versionsDir).toSeq else Nil
    }
    val current = files.filter(_.isFile).flatMap(st => VersionEntry.parse(
      s"versions/${st.getPath.getName}", st.getModificationTime, st.getLen))
    val legacy = version match {
      case Some(v) =>
        Option(fs.globStatus(manifestPath(v))).toSeq.flatten.map(st =>
          VersionEntry(v, s"manifests/$v.json", st.getModificationTime, st.getLen))
      case None => listVersionStatuses().map { case (v, st) =>
        VersionEntry(v, s"manifests/$v.json", st.getModificationTime, st.getLen)
      }
    }
    (current ++ legacy).sortBy(e => (e.version, e.mtime, e.path))
  }

  /**
   * Every file under the store directory, from one listing: on an object store (or HDFS) one
   * recursive listing, a request per thousand objects; on the local file system a walk of its
   * folders, because Hadoop's recursive listing there reads every file's permissions, which
   * without Hadoop's native library forks a process per file.
   */
  def listAll(): StoreListing = {
    val prefix = fs.makeQualified(root).toUri.getPath.stripSuffix("/") + "/"
    val statuses = if (Option(fs.getUri.getScheme).contains("file")) walk(root) else {
      val it = try fs.listFiles(root, true) catch {
        case _: java.io.FileNotFoundException => return StoreListing(Map.empty)
      }
      Iterator.continually(it).takeWhile(_.hasNext).map(_.next(): FileStatus)
    }
    val found = statuses.flatMap { st =>
      val path = st.getPath.toUri.getPath
      // Hadoop's local checksum files are not the checkpoint's.
      if (path.startsWith(prefix) && !path.endsWith(".crc")) {
        Some(path.stripPrefix(prefix) -> StoreListing.Entry(st.getLen, st.getModificationTime))
      } else None
    }.toMap
    StoreListing(found)
  }

  /**
   * The files under `dir`, a folder at a time; one deleted meanwhile holds nothing. A folder
   * that is a symbolic link is refused, not listed (`CheckpointReader.checkFolder`): cleanup
   * deletes what a listing holds, and never through a link.
   */
  private def walk(dir: Path): Iterator[FileStatus] = {
    val here = try {
      reader.checkFolder(dir, s"the listing of the store in $root")
      fs.listStatus(dir).toSeq
    } catch {
      case _: java.io.FileNotFoundException => Nil
    }
    here.iterator.flatMap(st => if (st.isDirectory) walk(st.getPath) else Iterator(st))
  }

  /** The version file at `relative` (an exact attempt of `version`), if it exists. */
  def versionEntry(version: Long, relative: String): Option[VersionEntry] =
    try {
      val st = fs.getFileStatus(resolve(relative))
      Some(VersionEntry(version, relative, st.getModificationTime, st.getLen))
    } catch {
      case _: java.io.FileNotFoundException => None
    }

  /** The landed attempt of `version`, if the version exists. */
  def findVersion(version: Long): Option[VersionEntry] =
    VersionEntry.landed(listVersionEntries(Some(version)))

  /**
   * The manifest a version file or manifest holds, for cleanup and audits: a version file's
   * header only, listing its lineage without the file itself.
   */
  def readEntryManifest(entry: VersionEntry): VersionManifest =
    if (entry.isManifest) readManifest(entry.version)
    else {
      val path = resolve(entry.path)
      // Only the header is read (at most VersionFile's header bound).
      val m = try Using.resource(reader.open(path, FileKind.Data,
          s"the lineage of version ${entry.version}"))(in =>
        VersionFile.readHeader(in, path.toString)) catch {
        case e: java.io.FileNotFoundException => throw new CorruptCheckpointException(
          s"rockstate: version file $path vanished while it was read", e)
      }
      if (m.version != entry.version) {
        throw new CorruptCheckpointException(s"rockstate: version file $path says version " +
          s"${m.version}, its name ${entry.version}; the checkpoint is corrupt.")
      }
      m
    }

  /**
   * Writes a snapshot's manifest, returning its path relative to the store directory. Its name
   * is new, so it is published (on an object store one PUT, as a version file is), not
   * replaced: a replacing write there is a temporary object, a copy and a delete, and the
   * directory marker it makes first is one more object in every listing.
   */
  def writeSnapshotManifest(m: SnapshotManifest): String = {
    val relative = s"snapshots/${m.version}-${UUID.randomUUID()}.json"
    val bytes = CheckpointJson.compact(m)
    writer.publish(resolve(relative)) { out =>
      out.write(bytes)
      bytes.length.toLong
    }
    relative
  }

  def readSnapshotManifest(relative: String, neededBy: String): SnapshotManifest = {
    val path = resolve(relative)
    val bytes = try reader.readAll(path, FileKind.Document, neededBy) catch {
      case e: java.io.FileNotFoundException =>
        throw new CorruptCheckpointException(
          s"rockstate: snapshot manifest $path, needed by $neededBy, is missing; the " +
            "checkpoint is incomplete. Restore the file or restart the query from an earlier " +
            "version (`rockstate verify` lists every damaged version).", e)
    }
    VersionManifest.snapshotFromJson(bytes, path.toString)
  }

  /** Snapshot manifests present: path relative to the store, version, modification time. */
  def listSnapshots(): Seq[(String, Long, Long)] = {
    val found = try fs.listStatus(snapshotsDir).toSeq catch {
      case _: java.io.FileNotFoundException => Nil
    }
    found.flatMap { st =>
      val relative = s"snapshots/${st.getPath.getName}"
      StoreListing.snapshotVersion(relative).map(v => (relative, v, st.getModificationTime))
    }.sortBy(s => (s._2, s._1))
  }

  /** A version that has neither a version file nor a manifest. */
  def missingVersion(version: Long, which: String = "",
      cause: Throwable = null): MissingVersionException = {
    val expected = new Path(versionsDir, s"$version-<id>.rsv")
    new MissingVersionException(
      s"rockstate: version $version$which of the store in $root does not exist: it has no " +
        s"version file ($expected) nor manifest, so this store's state at version $version " +
        "cannot be restored. If the query ran on another state store provider before, it " +
        "must keep that provider (Spark does not convert state between providers); otherwise " +
        "restore the file or start from a new checkpoint location.", version, expected.toString,
      cause)
  }

  /** A format 1 or 2 version manifest. */
  def readManifest(version: Long): VersionManifest = {
    val path = manifestPath(version)
    val bytes = try reader.readAll(path, FileKind.Document, s"version $version") catch {
      case e: java.io.FileNotFoundException => throw missingVersion(version, cause = e)
    }
    val m = VersionManifest.fromJson(bytes, path.toString)
    if (m.version != version) {
      throw new CorruptCheckpointException(
        s"rockstate: manifest $path says version ${m.version}, expected $version; the " +
          "checkpoint is corrupt.")
    }
    m
  }

  /** Format 1 and 2 manifests with their status (a rewritten manifest changes it). */
  private def listVersionStatuses(): Seq[(Long, FileStatus)] = {
    if (!fs.exists(manifestsDir)) return Seq.empty
    fs.listStatus(manifestsDir).toSeq.flatMap { st =>
      VersionEntry.parse(s"manifests/${st.getPath.getName}", st.getModificationTime, st.getLen)
        .map(_.version -> st)
    }.sortBy(_._1)
  }

  /** Whether a file named relative to the store directory exists. */
  def exists(relative: String): Boolean = fs.exists(resolve(relative))

  /** Deletes a file (and the checksum sidecar Hadoop's local file system keeps beside it). */
  def delete(relative: String): Unit = fs.delete(resolve(relative), false)

  /**
   * Removes empty snapshot meta directories created before `beforeMs`: a younger one may be
   * the directory an upload under way just made for its first file.
   */
  def deleteEmptyMetaDirs(beforeMs: Long): Unit = {
    val meta = resolve("meta")
    if (fs.exists(meta)) {
      fs.listStatus(meta).filter(st => st.isDirectory && st.getModificationTime < beforeMs)
        .foreach { st =>
          if (fs.listStatus(st.getPath).isEmpty) fs.delete(st.getPath, false)
        }
    }
  }

}
