package io.rockstate.state

import java.io.File
import java.util.UUID
import java.util.concurrent.{ConcurrentHashMap, Executors, ThreadFactory, ThreadPoolExecutor}
import java.util.concurrent.atomic.AtomicInteger

import org.apache.commons.io.FileUtils

import org.apache.spark.internal.Logging

/**
 * SST files a snapshot may reference instead of uploading, by local file name: the files of
 * the snapshot a DB instance was opened from and of the snapshots it produced whose manifests
 * are written (Flink's FLINK-25395 lesson: reuse only what is confirmed). Scoped to one DB
 * instance, because another instance reopened from an older snapshot reuses file numbers.
 */
final class ConfirmedFiles(initial: Iterable[StateFile]) {
  private val files = new ConcurrentHashMap[String, StateFile]()
  initial.foreach(f => files.put(f.localName, f))

  def reusable(localName: String, size: Long): Option[StateFile] =
    Option(files.get(localName)).filter(_.size == size)

  def confirm(uploaded: Iterable[StateFile]): Unit = uploaded.foreach(f => files.put(f.localName, f))
}

/**
 * The asynchronous part of a snapshot (Flink's AsyncSnapshotCallable): upload the SST files of
 * a local checkpoint that no confirmed snapshot has, RocksDB's small files, then the snapshot
 * manifest, last. The synchronous part (flush and hard-link checkpoint) happened on the task.
 */
final case class SnapshotJob(
    manifest: SnapshotManifest, // files and stats are filled in by the upload
    checkpoint: File, // the local checkpoint, owned by the job and deleted when it ends
    remote: StoreCheckpointDir,
    local: LocalStoreFiles,
    confirmed: ConfirmedFiles,
    conf: RockstateConf) {

  /** Runs the upload; returns the written manifest and its path. */
  def run(): (SnapshotManifest, String) = {
    val start = System.nanoTime()
    val version = manifest.version
    val metaDir = s"meta/$version-${UUID.randomUUID()}"
    val entries = Option(checkpoint.listFiles()).getOrElse(Array.empty[File]).toSeq
      .sortBy(_.getName).map { f =>
        val name = f.getName
        val isSst = name.endsWith(".sst")
        confirmed.reusable(name, f.length).filter(_ => isSst) match {
          case Some(shared) => (shared, false)
          case None =>
            if (conf.testUploadDelayMs > 0) Thread.sleep(conf.testUploadDelayMs)
            val path =
              if (isSst) s"sst/${name.stripSuffix(".sst")}-${UUID.randomUUID()}.sst"
              else s"$metaDir/$name"
            val (size, crc) = remote.upload(f, path)
            (StateFile(name, path, size, crc, if (isSst) "sst" else "meta"), true)
        }
      }
    val elapsedMs = (System.nanoTime() - start) / 1000000
    // An upload that outlived half the orphan grace period may have lost files to another
    // executor's orphan sweep; abandon it rather than write a manifest naming them.
    if (conf.outlivedGrace(elapsedMs)) {
      throw new java.io.IOException(s"rockstate: snapshot upload of version $version took " +
        s"$elapsedMs ms, more than half of orphanFileGraceMs (${conf.orphanFileGraceMs}); " +
        "abandoned, its files are left to the orphan sweep. Raise orphanFileGraceMs.")
    }
    val (uploaded, reused) = entries.partition(_._2)
    val stats = manifest.stats.copy(
      asyncMs = elapsedMs,
      bytesUploaded = uploaded.map(_._1.size).sum,
      bytesReused = reused.map(_._1.size).sum,
      filesUploaded = uploaded.size,
      filesReused = reused.size)
    val written = manifest.copy(files = entries.map(_._1), stats = stats,
      createdAtMs = System.currentTimeMillis())
    val path = remote.writeSnapshotManifest(written)
    // Confirmed only now that the manifest is durable.
    uploaded.foreach { case (e, _) => local.adopt(new File(checkpoint, e.localName), e.path) }
    confirmed.confirm(uploaded.map(_._1).filter(_.kind == "sst"))
    (written, path)
  }
}

/**
 * Told what became of the snapshot a commit started: the checkpoint coordinator's executor end
 * listens (io.rockstate.checkpoint.CheckpointReporter). Called from upload threads.
 */
trait SnapshotListener {
  def completed(manifest: SnapshotManifest, path: String): Unit
  /** The snapshot of `version` was not taken or not uploaded. */
  def declined(version: Long, reason: String, countsAsFailure: Boolean): Unit
}

object SnapshotListener {
  val Silent: SnapshotListener = new SnapshotListener {
    override def completed(manifest: SnapshotManifest, path: String): Unit = ()
    override def declined(version: Long, reason: String, countsAsFailure: Boolean): Unit = ()
  }
}

/** The executor's background snapshot uploads: a small pool of daemon threads. */
object SnapshotUploader extends Logging {
  @volatile private var pool: ThreadPoolExecutor = _
  private val pending = new AtomicInteger()

  private def executor(threads: Int): ThreadPoolExecutor = synchronized {
    if (pool == null) {
      val n = new AtomicInteger()
      val factory: ThreadFactory = r => {
        val t = new Thread(r, s"rockstate-snapshot-upload-${n.incrementAndGet()}")
        t.setDaemon(true)
        t
      }
      pool = Executors.newFixedThreadPool(threads, factory).asInstanceOf[ThreadPoolExecutor]
    }
    pool
  }

  /**
   * Runs `job` in the background; `done` gets the manifest and its path, or the failure. The
   * job's local checkpoint is deleted either way.
   */
  def submit(job: SnapshotJob)(done: Either[Throwable, (SnapshotManifest, String)] => Unit): Unit = {
    pending.incrementAndGet()
    executor(job.conf.snapshotUploadThreads).execute { () =>
      try {
        val result: Either[Throwable, (SnapshotManifest, String)] = try Right(job.run()) catch {
          case e: Throwable => Left(e)
        } finally FileUtils.deleteQuietly(job.checkpoint)
        done(result)
      } finally pending.decrementAndGet()
    }
  }

  /** Waits until this JVM has no snapshot upload queued or running; false on timeout. */
  def awaitIdle(timeoutMs: Long): Boolean = {
    val deadline = System.currentTimeMillis() + timeoutMs
    while (pending.get > 0 && System.currentTimeMillis() < deadline) Thread.sleep(10)
    pending.get == 0
  }
}
