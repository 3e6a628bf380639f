package io.rockstate.storage.snapshot

import java.util.concurrent.ThreadPoolExecutor
import java.util.concurrent.atomic.AtomicInteger

import org.apache.commons.io.FileUtils

import org.apache.spark.internal.Logging

import io.rockstate.storage.format.SnapshotManifest
import io.rockstate.storage.local.DaemonThreadPool

/** The executor's background snapshot uploads: a small pool of daemon threads. */
object SnapshotUploader extends Logging {
  @volatile private var pool: ThreadPoolExecutor = _
  private val pending = new AtomicInteger()

  private def executor(threads: Int): ThreadPoolExecutor = synchronized {
    if (pool == null) pool = DaemonThreadPool.fixed("rockstate-snapshot-upload", threads)
    pool
  }

  /**
   * Runs `job` in the background; `onDone` gets the manifest and its path, or the failure. The
   * job's local checkpoint is deleted either way. The returned future cancels it (a queued
   * job never starts; a running one is interrupted).
   */
  def submit(job: SnapshotJob)(
      onDone: Either[Throwable, (SnapshotManifest, String)] => Unit): java.util.concurrent.Future[_] = {
    pending.incrementAndGet()
    val task = new java.util.concurrent.FutureTask[Unit](() => {
      val result: Either[Throwable, (SnapshotManifest, String)] = try Right(job.run()) catch {
        case e: Throwable => Left(e)
      } finally FileUtils.deleteQuietly(job.checkpoint)
      onDone(result)
    }) {
      // Runs whether the job ran, failed or was cancelled before it started.
      override def done(): Unit = {
        if (isCancelled) FileUtils.deleteQuietly(job.checkpoint)
        pending.decrementAndGet()
      }
    }
    executor(job.conf.snapshotUploadThreads).execute(task)
    task
  }

  /** Snapshot uploads queued or running in this JVM. */
  def inFlight: Int = pending.get

  /** Waits until this JVM has no snapshot upload queued or running; false on timeout. */
  def awaitIdle(timeoutMs: Long): Boolean = {
    val deadline = System.currentTimeMillis() + timeoutMs
    while (pending.get > 0 && System.currentTimeMillis() < deadline) Thread.sleep(10)
    pending.get == 0
  }
}
