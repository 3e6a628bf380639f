package io.rockstate.storage.location

import java.io.{File, OutputStream}
import java.nio.file.{Files, StandardCopyOption, StandardOpenOption}
import java.util.UUID

import scala.util.Using

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileContext, FileSystem, LocalFileSystem, Options, Path}

/**
 * How rockstate creates files under `root` in a checkpoint location: a new file, a new file
 * published all or nothing under its final name, or a small file replaced all or nothing.
 * Stores and the driver's checkpoint files both write through it.
 *
 * Object stores (S3 through s3a, GCS) make an object visible only when its upload completes,
 * so there a new file is published by writing it under its final name: one request, no copy
 * (a rename there is a copy plus a delete). Elsewhere a temporary file and a rename.
 *
 * On the local file system Hadoop forks a process for every file it creates (chmod) and two
 * more for every FileContext rename (readlink) unless its native library is loaded: most of a
 * small commit's time. There java.nio writes the same files with the same atomicity, no fork.
 *
 * Any other file system (HDFS, ABFS, ...) gets what Spark's default CheckpointFileManager does
 * there, with Hadoop's own API: a temporary file, then FileContext's atomic rename (or, where a
 * file system has no FileContext, FileSystem's). Spark's `checkpointFileManagerClass` setting
 * is not consulted: this layer knows nothing of Spark.
 */
final class LocationWriter(fs: FileSystem, root: Path, hadoopConf: Configuration) {
  private lazy val fileContext: Option[FileContext] =
    try Some(FileContext.getFileContext(root.toUri, hadoopConf)) catch {
      case _: org.apache.hadoop.fs.UnsupportedFileSystemException => None
    }

  private val onLocalDisk: Boolean = fs.isInstanceOf[LocalFileSystem] &&
    Option(root.toUri.getScheme).contains("file")

  private val atomicCreate: Boolean =
    Option(root.toUri.getScheme).exists(LocationWriter.AtomicCreateSchemes.contains)

  private def localPath(path: Path): Option[java.nio.file.Path] =
    if (onLocalDisk) Some(new File(path.toUri.getPath).toPath) else None

  /**
   * A new file (its directory created as needed). Callers give every file a name of its own
   * (a UUID), so nothing rests on refusing an existing one: that check is exact on a local
   * disk and best effort elsewhere (s3a probes, then uploads: docs/object-stores.md).
   */
  def create(path: Path): OutputStream = localPath(path) match {
    case Some(file) =>
      Files.createDirectories(file.getParent)
      Files.newOutputStream(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)
    case None => fs.create(path, false)
  }

  /**
   * Writes a new file under its final name, visible only once complete (never a partial file
   * under that name, even if the writer dies); returns the bytes written. `write` may be
   * called once only. As with `create`, the name is the caller's own: an existing file is not
   * reliably refused (a local rename(2) replaces it).
   */
  def publish(path: Path)(write: OutputStream => Long): Long = localPath(path) match {
    case Some(file) => atomicLocal(file, replace = false)(write)
    case None if atomicCreate =>
      // Closing the stream completes the upload; a failed write must not complete it.
      val out = fs.create(path, false)
      val n = try write(out) catch {
        case e: Throwable =>
          abortUpload(out)
          throw e
      }
      out.close()
      n
    case None => atomicHadoop(path, overwrite = false)(write)
  }

  /** Abandons an object store upload without completing it, where the stream can. */
  private def abortUpload(out: OutputStream): Unit = out match {
    // FSDataOutputStream passes abort() to s3a's stream (Hadoop 3.3+).
    case a: org.apache.hadoop.fs.Abortable => a.abort()
    case _ => // cannot abort: closing would complete the upload, so the stream stays open
  }

  /** Writes a whole small file atomically, replacing any earlier one; returns its size. */
  def writeAtomic(path: Path, bytes: Array[Byte]): Long = {
    def write(out: OutputStream): Long = {
      out.write(bytes)
      bytes.length
    }
    localPath(path) match {
      case Some(file) => atomicLocal(file, replace = true)(write)
      case None =>
        fs.mkdirs(path.getParent)
        atomicHadoop(path, overwrite = true)(write)
    }
  }

  /**
   * The local file system's atomic write: the temporary file is named as CheckpointFileManager
   * names it (so cleanup sweeps a crashed writer's), and moved into place by one rename(2).
   * Replacing, a checksum file Hadoop wrote for an earlier content of the same path is dropped
   * first: it would fail every later read of the new content.
   */
  private def atomicLocal(file: java.nio.file.Path, replace: Boolean)(
      write: OutputStream => Long): Long = {
    val dir = file.getParent
    Files.createDirectories(dir)
    val name = file.getFileName.toString
    val tmp = dir.resolve(s".$name.${UUID.randomUUID()}.tmp")
    try {
      val n = Using.resource(Files.newOutputStream(tmp, StandardOpenOption.CREATE_NEW,
        StandardOpenOption.WRITE))(write)
      if (replace) {
        Files.deleteIfExists(dir.resolve(s".$name.crc"))
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
      } else Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE)
      n
    } finally Files.deleteIfExists(tmp)
  }

  /**
   * A temporary file (named as CheckpointFileManager names its own, so cleanup sweeps a crashed
   * writer's) renamed into place; a failed write leaves nothing under the final name.
   */
  private def atomicHadoop(path: Path, overwrite: Boolean)(write: OutputStream => Long): Long = {
    val tmp = new Path(path.getParent, s".${path.getName}.${UUID.randomUUID()}.tmp")
    var renamed = false
    try {
      val n = Using.resource(fs.create(tmp, false))(write)
      fileContext match {
        case Some(fc) =>
          fc.rename(tmp, path, if (overwrite) Options.Rename.OVERWRITE else Options.Rename.NONE)
        case None =>
          if (overwrite) fs.delete(path, false)
          if (!fs.rename(tmp, path)) {
            throw new java.io.IOException(s"rockstate: could not rename $tmp to $path " +
              "(does it exist already?)")
          }
      }
      renamed = true
      n
    } finally if (!renamed) fs.delete(tmp, false)
  }
}

object LocationWriter {
  /**
   * File systems whose new files appear only once complete (an object store's upload), so a
   * file written under its final name needs no rename to be all or nothing.
   */
  val AtomicCreateSchemes: Set[String] = Set("s3a", "s3", "gs")
}
