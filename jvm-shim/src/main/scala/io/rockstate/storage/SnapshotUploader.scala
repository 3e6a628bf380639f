package io.rockstate.storage

import java.io.File
import java.util.UUID
import java.util.concurrent.{ConcurrentHashMap, Executors, ThreadFactory, ThreadPoolExecutor}
import java.util.concurrent.atomic.AtomicInteger

import org.apache.commons.io.FileUtils

import org.apache.spark.internal.Logging

/**
 * SST files a snapshot may reference instead of uploading, by local file name: the files of
 * the snapshot a DB instance was opened from and of the snapshots it produced whose manifests
 * are written (Flink's FLINK-25395 lesson: reuse only what is confirmed). Each remembers its
 * owner, the newest confirmed snapshot manifest naming it: a file is only as safe as a
 * manifest that keeps it alive. Scoped to one DB instance, because another instance reopened
 * from an older snapshot reuses file numbers.
 */
final class ConfirmedFiles(initial: Iterable[StateFile], initialOwner: String) {
  private val files = new ConcurrentHashMap[String, (StateFile, String)]()
  initial.foreach(f => files.put(f.localName, (f, initialOwner)))

  /** The confirmed file of that name and size, with its owner. */
  def reusable(localName: String, size: Long): Option[(StateFile, String)] =
    Option(files.get(localName)).filter(_._1.size == size)

  /** The files of a snapshot whose manifest `owner` is written: it owns them from now on. */
  def confirm(snapshot: Iterable[StateFile], owner: String): Unit =
    snapshot.foreach(f => files.put(f.localName, (f, owner)))

  /** Forgets every file owned by a manifest that is gone: they are uploaded again. */
  def forgetOwner(owner: String): Unit = files.values().removeIf(_._2 == owner)
}

/**
 * The asynchronous part of a snapshot (Flink's AsyncSnapshotCallable): upload the SST files of
 * a local checkpoint that no confirmed snapshot has, then the snapshot manifest, last, with
 * RocksDB's small files packed inside it (`MetaPack`). The synchronous part (flush and
 * hard-link checkpoint) happened on the task, at `takenAtNanos`; the orphan grace is counted
 * from there, queueing included.
 *
 * After the manifest is written the job checks what it relied on: that the manifests owning
 * the files it reused still exist, and that the whole upload stayed within half the orphan
 * grace. If not, its manifest is withdrawn and the snapshot fails; nothing references it yet.
 */
final case class SnapshotJob(
    manifest: SnapshotManifest, // files and stats are filled in by the upload
    checkpoint: File, // the local checkpoint, owned by the job and deleted when it ends
    remote: StoreCheckpointDir,
    local: LocalStoreFiles,
    confirmed: ConfirmedFiles,
    conf: RockstateConf,
    takenAtNanos: Long) {

  /** Runs the upload; returns the written manifest and its path. */
  def run(background: Boolean = true): (SnapshotManifest, String) = {
    val version = manifest.version
    val files = Option(checkpoint.listFiles()).getOrElse(Array.empty[File]).toSeq.sortBy(_.getName)
    // A checkpoint without RocksDB's CURRENT and MANIFEST cannot be opened: never publish it.
    if (!files.exists(_.getName == "CURRENT") || !files.exists(_.getName.startsWith("MANIFEST-"))) {
      throw new java.io.IOException(s"rockstate: the local checkpoint of version $version in " +
        s"$checkpoint has no RocksDB CURRENT or MANIFEST file (found " +
        s"${files.map(_.getName).take(8).mkString(", ")}); it is not uploaded.")
    }
    // Reuse only files whose owner manifest is still there; the others are uploaded again.
    val candidates = files.flatMap(f =>
      if (f.getName.endsWith(".sst")) confirmed.reusable(f.getName, f.length) else None)
    val goneOwners = candidates.map(_._2).distinct.filterNot(remote.exists)
    goneOwners.foreach(confirmed.forgetOwner)
    val start = System.nanoTime()
    def uploadDelay(): Unit =
      if (background && conf.testUploadDelayMs > 0) Thread.sleep(conf.testUploadDelayMs)
    val (ssts, small) = files.partition(_.getName.endsWith(".sst"))
    // (entry, the owner it is reused from) per SST
    val entries = ssts.map { f =>
      confirmed.reusable(f.getName, f.length) match {
        case Some((shared, owner)) => (shared, Some(owner))
        case None =>
          uploadDelay()
          val path = s"sst/${f.getName.stripSuffix(".sst")}-${UUID.randomUUID()}.sst"
          val (size, crc) = remote.upload(f, path)
          (StateFile(f.getName, path, size, crc, "sst"), None)
      }
    }
    // RocksDB's small files go inside the manifest: no object of their own (an object store
    // charges per request and per listed file).
    val pack = MetaPack.inline(small)
    // An upload that outlived half the orphan grace period may have lost files to another
    // executor's orphan sweep; abandon it rather than write a manifest naming them.
    if (conf.outlivedGrace(sinceMs(takenAtNanos))) throw outlived(version)
    val (reused, uploaded) = entries.partition(_._2.isDefined)
    val stats = manifest.stats.copy(
      asyncMs = sinceMs(start),
      bytesUploaded = uploaded.map(_._1.size).sum + pack.size,
      bytesReused = reused.map(_._1.size).sum,
      filesUploaded = uploaded.size,
      filesReused = reused.size)
    val written = manifest.copy(files = entries.map(_._1), stats = stats,
      createdAtMs = System.currentTimeMillis(), metaPack = Some(pack))
    uploadDelay()
    val path = remote.writeSnapshotManifest(written)
    // Published; now check what it relied on (see the class comment).
    val lostOwners = reused.flatMap(_._2).distinct.filterNot(remote.exists)
    if (lostOwners.nonEmpty || conf.outlivedGrace(sinceMs(takenAtNanos))) {
      remote.delete(path)
      lostOwners.foreach(confirmed.forgetOwner)
      if (lostOwners.nonEmpty) {
        throw new java.io.IOException(s"rockstate: snapshot of version $version reused files " +
          s"of ${lostOwners.mkString(", ")}, deleted by cleanup meanwhile; its manifest is " +
          "withdrawn and the next snapshot uploads those files again.")
      }
      throw outlived(version)
    }
    uploaded.foreach { case (e, _) =>
      local.adopt(CheckpointPath.localFile(checkpoint, e.localName,
        s"the local checkpoint of version $version, file ${e.path}"), e.path, e.crc32)
    }
    (written, path)
  }

  private def sinceMs(nanos: Long): Long = (System.nanoTime() - nanos) / 1000000

  private def outlived(version: Long) = new java.io.IOException(s"rockstate: snapshot of " +
    s"version $version took ${sinceMs(takenAtNanos)} ms from its local checkpoint (queueing " +
    s"included), more than half of orphanFileGraceMs (${conf.orphanFileGraceMs}); abandoned, " +
    "its files are left to the orphan sweep. Raise orphanFileGraceMs.")
}

/**
 * Told what became of the snapshot a commit started: the checkpoint coordinator's executor end
 * listens (io.rockstate.checkpoint.CheckpointReporter). Called from upload threads.
 */
trait SnapshotListener { self =>
  def completed(manifest: SnapshotManifest, path: String): Unit
  /** The snapshot of `version` was not taken or not uploaded. */
  def declined(version: Long, reason: String, countsAsFailure: Boolean): Unit

  /** This listener, also running `f` first for every completed snapshot. */
  def onCompleted(f: SnapshotManifest => Unit): SnapshotListener = new SnapshotListener {
    override def completed(manifest: SnapshotManifest, path: String): Unit = {
      f(manifest)
      self.completed(manifest, path)
    }
    override def declined(version: Long, reason: String, countsAsFailure: Boolean): Unit =
      self.declined(version, reason, countsAsFailure)
  }
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
