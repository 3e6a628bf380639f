package io.rockstate.state

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.{FileAlreadyExistsException, Files, StandardCopyOption}
import java.security.MessageDigest
import java.util.UUID

import scala.util.control.NonFatal

import org.apache.commons.io.FileUtils

import org.apache.spark.SparkFiles

/**
 * An executor's local files for one store, found again by the store's checkpoint path: every
 * provider instance of that store on this executor (the restarted query's too, since Spark
 * keys providers by run id) shares them. This is rockstate's task-local recovery: `cache/`
 * holds every immutable checkpoint file (SST, snapshot meta file, changelog) this executor
 * uploaded or downloaded, under its checkpoint path, so a load downloads only what it lacks.
 * Work directories (a live DB, a local checkpoint, a changelog being written) are private to
 * one instance and carry a unique suffix.
 */
final class LocalStoreFiles private (val dir: File) {
  private val cacheDir = new File(dir, "cache")
  Files.createDirectories(cacheDir.toPath)

  def cached(path: String): File = new File(cacheDir, path.replace('/', '_'))

  /** A fresh private directory or file name under the store's local directory. */
  def newWorkPath(prefix: String): File = new File(dir, s"$prefix-${UUID.randomUUID()}")

  /** Puts a local file into the cache under its checkpoint path; hard link, no copy. */
  def adopt(local: File, path: String): Unit = {
    val target = cached(path)
    try Files.createLink(target.toPath, local.toPath) catch {
      case _: FileAlreadyExistsException => // the same immutable file, cached already
    }
  }

  /**
   * The cached copy of a checkpoint file, downloaded and checked first when absent; returns it
   * with the number of bytes downloaded (0 on a cache hit).
   */
  def fetch(remote: StoreCheckpointDir, path: String, size: Long, crc32: Long,
      neededBy: String): (File, Long) = {
    val target = cached(path)
    if (target.isFile && target.length == size) (target, 0L)
    else {
      val part = newWorkPath("download")
      try {
        remote.download(path, size, crc32, neededBy, part)
        Files.move(part.toPath, target.toPath, StandardCopyOption.REPLACE_EXISTING,
          StandardCopyOption.ATOMIC_MOVE)
      } finally part.delete()
      (target, size)
    }
  }

  /** Drops cached files whose checkpoint path is not in `keep`. */
  def prune(keep: Set[String]): Unit = {
    val names = keep.map(_.replace('/', '_'))
    Option(cacheDir.listFiles()).getOrElse(Array.empty[File]).foreach { f =>
      if (!names.contains(f.getName)) f.delete()
    }
  }

  def deleteAll(): Unit = FileUtils.deleteQuietly(dir)
}

object LocalStoreFiles {
  /**
   * The local files of the store at `storePath` (its checkpoint directory's URI), under
   * `localDir`, or Spark's per-application directory when it is empty.
   */
  def forStore(storePath: String, label: String, localDir: String): LocalStoreFiles = {
    val digest = MessageDigest.getInstance("SHA-256")
      .digest(storePath.getBytes(StandardCharsets.UTF_8)).take(8).map("%02x".format(_)).mkString
    val base = if (localDir.nonEmpty) new File(localDir) else defaultRoot
    val dir = new File(new File(base, "stores"), s"$label-$digest")
    Files.createDirectories(dir.toPath)
    new LocalStoreFiles(dir)
  }

  /** Executor-local scratch space: Spark's per-application files dir, else java.io.tmpdir. */
  private def defaultRoot: File = {
    val base = try new File(SparkFiles.getRootDirectory()) catch {
      case NonFatal(_) => new File(System.getProperty("java.io.tmpdir"))
    }
    new File(base, "rockstate")
  }
}
