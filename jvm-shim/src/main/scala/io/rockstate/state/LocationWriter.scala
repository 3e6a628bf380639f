package io.rockstate.state

import java.io.{File, OutputStream}
import java.nio.file.{Files, StandardCopyOption, StandardOpenOption}
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, LocalFileSystem, Path}

import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager

/**
 * How rockstate creates files under `root` in a checkpoint location: a new file, or a small
 * file written all or nothing (a temporary file and a rename). Stores and the driver's
 * checkpoint files both write through it.
 *
 * On the local file system Hadoop forks a process for every file it creates (chmod) and two
 * more for every FileContext rename (readlink) unless its native library is loaded: most of a
 * small commit's time. There java.nio writes the same files with the same atomicity, no fork.
 */
final class LocationWriter(fs: FileSystem, root: Path, hadoopConf: Configuration) {
  private lazy val fileManager = CheckpointFileManager.create(root, hadoopConf)

  private val onLocalDisk: Boolean = fs.isInstanceOf[LocalFileSystem] &&
    Option(root.toUri.getScheme).contains("file")

  private def localPath(path: Path): Option[java.nio.file.Path] =
    if (onLocalDisk) Some(new File(path.toUri.getPath).toPath) else None

  /** A new file (its directory created as needed); fails if it exists. */
  def create(path: Path): OutputStream = localPath(path) match {
    case Some(file) =>
      Files.createDirectories(file.getParent)
      Files.newOutputStream(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)
    case None => fs.create(path, false)
  }

  /** Writes a whole small file atomically, replacing any earlier one; returns its size. */
  def writeAtomic(path: Path, bytes: Array[Byte]): Long = localPath(path) match {
    case Some(file) => writeAtomicLocal(file, bytes)
    case None => writeAtomicHadoop(path, bytes)
  }

  /**
   * The local file system's atomic write: the temporary file is named as CheckpointFileManager
   * names it (so cleanup sweeps a crashed writer's), and replaced into place by one rename(2).
   * A checksum file Hadoop wrote for an earlier content of the same path is dropped first: it
   * would fail every later read of the new content.
   */
  private def writeAtomicLocal(file: java.nio.file.Path, bytes: Array[Byte]): Long = {
    val dir = file.getParent
    Files.createDirectories(dir)
    val name = file.getFileName.toString
    val tmp = dir.resolve(s".$name.${UUID.randomUUID()}.tmp")
    try {
      Files.write(tmp, bytes, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)
      Files.deleteIfExists(dir.resolve(s".$name.crc"))
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
    } finally Files.deleteIfExists(tmp)
    bytes.length
  }

  private def writeAtomicHadoop(path: Path, bytes: Array[Byte]): Long = {
    fs.mkdirs(path.getParent)
    val out = fileManager.createAtomic(path, true)
    try {
      out.write(bytes)
      out.close()
    } catch {
      case e: Throwable =>
        out.cancel()
        throw e
    }
    bytes.length
  }
}
