package io.rockstate.state

import java.io.{File, FileInputStream, FileOutputStream, InputStream, OutputStream}
import java.nio.file.Files
import java.util.zip.CRC32

import scala.util.Using

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}

import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager

/**
 * One store's directory in the query's checkpoint location (any Hadoop file system):
 *
 *   <store>/manifests/<version>.json   the version's manifest, written last and atomically
 *   <store>/sst/<name>-<uuid>.sst      SST files, uploaded once and shared by later versions
 *   <store>/meta/<version>-<uuid>/...  RocksDB's small per-version files (MANIFEST, OPTIONS...)
 *
 * Unique upload names mean two attempts of one batch (retry, speculation, a zombie task) never
 * overwrite each other's files; the manifest that lands decides which files the version uses.
 */
final class StoreCheckpointDir(val root: Path, hadoopConf: Configuration) {
  private val fs: FileSystem = root.getFileSystem(hadoopConf)
  private lazy val fileManager = CheckpointFileManager.create(root, hadoopConf)

  val manifestsDir = new Path(root, "manifests")

  def manifestPath(version: Long): Path = new Path(manifestsDir, s"$version.json")

  def resolve(relative: String): Path = new Path(root, relative)

  /** Copies a local file up, returning its size and CRC32 computed on the bytes sent. */
  def upload(local: File, relative: String): (Long, Long) = {
    val target = resolve(relative)
    val crc = new CRC32()
    val size = Using.resources(new FileInputStream(local), fs.create(target, false)) { (in, out) =>
      copy(in, out, crc)
    }
    (size, crc.getValue)
  }

  /**
   * Copies a file down and checks it against the manifest; a missing, short or altered file
   * fails with the file and version named, never passing as empty state.
   */
  def download(entry: StateFile, version: Long, local: File): Unit = {
    val source = resolve(entry.path)
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
          s"rockstate: file $source, needed by version $version, is missing from the " +
            "checkpoint location. The checkpoint is incomplete; restore the file or restart " +
            "the query from an earlier version (`rockstate verify` lists every damaged version).",
          e)
      case e: java.io.IOException =>
        tmp.delete()
        throw new CorruptCheckpointException(
          s"rockstate: file $source of version $version cannot be read (${e.getMessage}); it " +
            "is damaged. Restore the file or restart the query from an earlier version.", e)
    }
    if (size != entry.size || crc.getValue != entry.crc32) {
      tmp.delete()
      throw new CorruptCheckpointException(
        s"rockstate: file $source of version $version is damaged: expected ${entry.size} " +
          s"bytes with CRC32 ${entry.crc32}, found $size bytes with CRC32 ${crc.getValue}. " +
          "Restore the file or restart the query from an earlier version.")
    }
    Files.move(tmp.toPath, local.toPath, java.nio.file.StandardCopyOption.REPLACE_EXISTING)
  }

  def writeManifest(m: VersionManifest): Unit = {
    fs.mkdirs(manifestsDir)
    val out = fileManager.createAtomic(manifestPath(m.version), true)
    try {
      out.write(VersionManifest.toJson(m))
      out.close()
    } catch {
      case e: Throwable =>
        out.cancel()
        throw e
    }
  }

  def manifestExists(version: Long): Boolean = fs.exists(manifestPath(version))

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
  def listVersions(): Seq[Long] = {
    if (!fs.exists(manifestsDir)) return Seq.empty
    fs.listStatus(manifestsDir).toSeq
      .map(_.getPath.getName)
      .filter(n => n.endsWith(".json") && n.stripSuffix(".json").forall(_.isDigit))
      .map(_.stripSuffix(".json").toLong)
      .sorted
  }

  /** Every data file under sst/ and meta/, with its modification time. */
  def listDataFiles(): Seq[(String, FileStatus)] = {
    def walk(dir: Path, rel: String): Seq[(String, FileStatus)] = {
      if (!fs.exists(dir)) Seq.empty
      else fs.listStatus(dir).toSeq.flatMap { st =>
        val name = if (rel.isEmpty) st.getPath.getName else s"$rel/${st.getPath.getName}"
        if (st.isDirectory) walk(st.getPath, name) else Seq(name -> st)
      }
    }
    walk(resolve("sst"), "sst") ++ walk(resolve("meta"), "meta")
  }

  def delete(relative: String): Unit = fs.delete(resolve(relative), false)

  def deleteManifest(version: Long): Unit = fs.delete(manifestPath(version), false)

  /** Removes meta/<dir>/ folders that have become empty. */
  def deleteEmptyMetaDirs(): Unit = {
    val meta = resolve("meta")
    if (fs.exists(meta)) {
      fs.listStatus(meta).filter(_.isDirectory).foreach { st =>
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
