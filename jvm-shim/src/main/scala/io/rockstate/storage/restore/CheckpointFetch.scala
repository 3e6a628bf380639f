package io.rockstate.storage.restore

import java.io.File
import java.util.concurrent.{Callable, ExecutionException}

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.RemoteFile
import io.rockstate.storage.local.{DownloadPool, LocalStoreFiles}
import io.rockstate.storage.location.StoreCheckpointDir

/**
 * One load's fetches of checkpoint files through the executor's local files, counting what was
 * downloaded (the load's metrics). `neededBy` names what the files are for, in errors.
 */
final class CheckpointFetch(local: LocalStoreFiles, remote: StoreCheckpointDir,
    conf: RockstateConf, val neededBy: String) {
  private var downloadedBytes = 0L // under this
  private var downloadedFiles = 0 // under this

  def bytes: Long = synchronized(downloadedBytes)
  def files: Int = synchronized(downloadedFiles)

  /** The local copy of `file`, checked against its size and CRC32. */
  def apply(file: RemoteFile): File = {
    val (copy, downloaded) = local.fetch(remote, file, neededBy)
    count(downloaded)
    copy
  }

  /**
   * Fetches files on `downloadThreads` threads; the first failure (a missing or damaged file)
   * is rethrown as it is once every fetch has ended.
   */
  def prefetch(wanted: Seq[RemoteFile]): Unit = {
    val distinct = wanted.distinctBy(_.cacheKey)
    if (distinct.size <= 1 || conf.downloadThreads <= 1) {
      distinct.foreach(apply)
    } else {
      val futures = distinct.map { f =>
        DownloadPool.pool(conf.downloadThreads).submit(new Callable[Long] {
          def call(): Long = local.fetch(remote, f, neededBy)._2
        })
      }
      val results = futures.map { f =>
        try Right(f.get()) catch {
          case e: ExecutionException => Left(e.getCause)
        }
      }
      results.foreach(_.foreach(count))
      results.collectFirst { case Left(e) => throw e }
    }
  }

  /** A file found by listing: returns it with its CRC32 (see `fetchSelfChecked`). */
  def selfChecked(path: String, size: Long): (File, Long) = {
    val (file, crc, downloaded) = local.fetchSelfChecked(remote, path, size, neededBy)
    count(downloaded)
    (file, crc)
  }

  private def count(downloaded: Long): Unit = if (downloaded > 0) synchronized {
    downloadedBytes += downloaded
    downloadedFiles += 1
  }
}
