package io.rockstate.state

import java.io.{File, FileInputStream, FileOutputStream, InputStream, OutputStream}
import java.nio.file.Files
import java.util.UUID
import java.util.zip.CRC32

import scala.util.Using

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}

/**
 * One store's directory in the query's checkpoint location (any Hadoop file system):
 *
 *   <store>/manifests/<version>.json       a version's manifest, written last and atomically
 *   <store>/changelog/<version>-<uuid>.log a batch's changes
 *   <store>/snapshots/<version>-<uuid>.json a snapshot's manifest, written after its files
 *   <store>/sst/<name>-<uuid>.sst          SST files, uploaded once and shared by snapshots
 *   <store>/meta/<version>-<uuid>/...      RocksDB's small per-snapshot files (MANIFEST...)
 *
 * Unique upload names mean two attempts of one batch (retry, speculation, a zombie task) never
 * overwrite each other's files; the manifest that lands decides which files the version uses.
 */
final class StoreCheckpointDir(val root: Path, hadoopConf: Configuration) {
  private val fs: FileSystem = root.getFileSystem(hadoopConf)
  private val writer = new LocationWriter(fs, root, hadoopConf)

  val manifestsDir = new Path(root, "manifests")
  val snapshotsDir = new Path(root, "snapshots")

  def manifestPath(version: Long): Path = new Path(manifestsDir, s"$version.json")

  def resolve(relative: String): Path = new Path(root, relative)

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
   * Copies a file down and checks it against the manifest; a missing, short or altered file
   * fails with the file and what needs it named, never passing as empty state.
   */
  def download(path: String, expectedSize: Long, expectedCrc: Long, neededBy: String,
      local: File): Unit = {
    val source = resolve(path)
    val tmp = new File(local.getParentFile, local.getName + ".part")
    val crc = new CRC32()
    val size = try {
      Using.resources(fs.open(source), new FileOutputStream(tmp)) { (in, out) =>
        copy(in, out, crc)
      }
    } catch {
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
    if (size != expectedSize || crc.getValue != expectedCrc) {
      tmp.delete()
      throw new CorruptCheckpointException(
        s"rockstate: file $source of $neededBy is damaged: expected $expectedSize " +
          s"bytes with CRC32 $expectedCrc, found $size bytes with CRC32 ${crc.getValue}. " +
          "Restore the file or restart the query from an earlier version.")
    }
    Files.move(tmp.toPath, local.toPath, java.nio.file.StandardCopyOption.REPLACE_EXISTING)
  }

  def writeManifest(m: VersionManifest): Long =
    writer.writeAtomic(manifestPath(m.version), VersionManifest.toJson(m))

  /** Writes a snapshot's manifest, returning its path relative to the store directory. */
  def writeSnapshotManifest(m: SnapshotManifest): String = {
    val relative = s"snapshots/${m.version}-${UUID.randomUUID()}.json"
    writer.writeAtomic(resolve(relative), VersionManifest.toJson(m))
    relative
  }

  def readSnapshotManifest(relative: String, neededBy: String): SnapshotManifest = {
    val path = resolve(relative)
    val bytes = try Using.resource(fs.open(path))(_.readAllBytes()) catch {
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
    if (!fs.exists(snapshotsDir)) return Seq.empty
    fs.listStatus(snapshotsDir).toSeq.flatMap { st =>
      val name = st.getPath.getName
      val version = name.takeWhile(_ != '-')
      if (name.endsWith(".json") && version.nonEmpty && version.forall(_.isDigit)) {
        Some((s"snapshots/$name", version.toLong, st.getModificationTime))
      } else None
    }.sortBy(_._2)
  }

  def readManifest(version: Long): VersionManifest = {
    val path = manifestPath(version)
    val bytes = try {
      Using.resource(fs.open(path))(_.readAllBytes())
    } catch {
      case e: java.io.FileNotFoundException =>
        throw new CorruptCheckpointException(
          s"rockstate: the manifest of version $version ($path) is missing, so this store's " +
            s"state at version $version cannot be restored. If the query ran on another state " +
            "store provider before, it must keep that provider (Spark does not convert state " +
            "between providers); otherwise restore the file or start from a new checkpoint " +
            "location.", e)
    }
    val m = VersionManifest.fromJson(bytes, path.toString)
    if (m.version != version) {
      throw new CorruptCheckpointException(
        s"rockstate: manifest $path says version ${m.version}, expected $version; the " +
          "checkpoint is corrupt.")
    }
    m
  }

  /** Committed versions, from the manifests present, in ascending order. */
  def listVersions(): Seq[Long] = listVersionStatuses().map(_._1)

  /** Committed versions with their manifest's status (a rewritten manifest changes it). */
  def listVersionStatuses(): Seq[(Long, FileStatus)] = {
    if (!fs.exists(manifestsDir)) return Seq.empty
    fs.listStatus(manifestsDir).toSeq.flatMap { st =>
      val name = st.getPath.getName
      val digits = name.stripSuffix(".json")
      if (name.endsWith(".json") && digits.nonEmpty && digits.forall(_.isDigit)) {
        Some(digits.toLong -> st)
      } else None
    }.sortBy(_._1)
  }

  /** Whether a file named relative to the store directory exists. */
  def exists(relative: String): Boolean = fs.exists(resolve(relative))

  /**
   * Temporary files of atomic writes (`.<name>.<uuid>.tmp`, CheckpointFileManager's naming)
   * under manifests/ and snapshots/, with their modification times: a writer that crashed
   * mid-write leaves one behind.
   */
  def listTempFiles(): Seq[(String, Long)] = Seq(manifestsDir, snapshotsDir).flatMap { d =>
    if (!fs.exists(d)) Nil
    else fs.listStatus(d).toSeq.collect {
      case st if st.isFile && st.getPath.getName.startsWith(".") &&
          st.getPath.getName.endsWith(".tmp") =>
        (s"${d.getName}/${st.getPath.getName}", st.getModificationTime)
    }
  }

  /** Every data file under sst/, meta/ and changelog/, with its modification time. */
  def listDataFiles(): Seq[(String, FileStatus)] = {
    def walk(dir: Path, rel: String): Seq[(String, FileStatus)] = {
      if (!fs.exists(dir)) Seq.empty
      else fs.listStatus(dir).toSeq.flatMap { st =>
        val name = if (rel.isEmpty) st.getPath.getName else s"$rel/${st.getPath.getName}"
        if (st.isDirectory) walk(st.getPath, name) else Seq(name -> st)
      }
    }
    Seq("sst", "meta", "changelog").flatMap(d => walk(resolve(d), d))
      .filterNot(_._1.endsWith(".crc")) // Hadoop's local file system's checksum sidecars
  }

  /** Deletes a file (and the checksum sidecar Hadoop's local file system keeps beside it). */
  def delete(relative: String): Unit = fs.delete(resolve(relative), false)

  def deleteManifest(version: Long): Unit = fs.delete(manifestPath(version), false)

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

  private def copy(in: InputStream, out: OutputStream, crc: CRC32): Long = {
    val buf = new Array[Byte](1 << 16)
    var total = 0L
    var n = in.read(buf)
    while (n >= 0) {
      if (n > 0) {
        out.write(buf, 0, n)
        crc.update(buf, 0, n)
        total += n
      }
      n = in.read(buf)
    }
    total
  }
}
