package io.rockstate.storage.snapshot

import java.util.concurrent.atomic.AtomicReference

import org.apache.spark.internal.Logging

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{SnapshotManifest, SnapshotRef, SnapshotStats}
import io.rockstate.storage.local.Elapsed

/**
 * The asynchronous side of one store's snapshots: the upload under way (at most one; one past
 * `snapshotUploadTimeoutMs` is abandoned), the newest snapshot its uploads confirmed (commits
 * rebase onto it), and the figures of uploads that ended since the last commit asked. The
 * synchronous part (`SyncSnapshots`) takes the local checkpoint and hands it over as an
 * immutable `SnapshotJob`; upload threads touch only this object.
 */
final class AsyncSnapshots(storeId: String, storeDir: String, conf: RockstateConf)
    extends Logging {
  private val inFlight = new AtomicReference[InFlightUpload](null)
  // The newest snapshot this instance's uploads confirmed, with the state id it holds.
  private val newestSnapshot = new AtomicReference[Option[(SnapshotRef, String)]](None)
  private val completions = new Object
  private var completed = (SnapshotStats.Zero, 0, 0) // stats, completed, failed; under completions

  /**
   * The snapshots a commit may rebase onto, newest first: this instance's newest confirmed one
   * and the newest any instance of the store confirmed in this JVM, read now rather than when
   * this instance opened (an earlier instance's upload may land after the next one opened).
   */
  def newest: Seq[(SnapshotRef, String)] =
    (newestSnapshot.get.toSeq ++ ConfirmedSnapshots.get(storeDir)).distinct
      .sortBy(-_._1.version)

  /**
   * Confirms a snapshot that landed (`m`, its manifest at `path`), from the commit path or an
   * upload thread alike: its SSTs in `files`, for later snapshots to reuse, and itself as this
   * store's newest confirmed snapshot, the one the next commits rebase onto.
   */
  def confirmLanded(m: SnapshotManifest, path: String, files: ConfirmedFiles): Unit = {
    files.confirm(m.files.filter(_.kind == "sst"), path)
    confirmed(SnapshotRef(m.version, path), m.stateId)
  }

  /** Forgets `snapshot` wherever it is still the newest: it was deleted before a commit used it. */
  def forget(snapshot: (SnapshotRef, String)): Unit = {
    newestSnapshot.compareAndSet(Some(snapshot), None)
    ConfirmedSnapshots.forget(storeDir, snapshot)
  }

  private def confirmed(ref: SnapshotRef, stateId: String): Unit = {
    newestSnapshot.set(Some((ref, stateId)))
    ConfirmedSnapshots.record(storeDir, (ref, stateId))
  }

  /**
   * Claims the upload slot for `version`'s snapshot, or tells `listener` why not (the previous
   * upload still runs) and returns None.
   */
  def begin(version: Long, listener: SnapshotListener): Option[InFlightUpload] = {
    val upload = new InFlightUpload(version, System.nanoTime(), listener)
    if (inFlight.compareAndSet(null, upload)) {
      StoreUploads.began(storeDir, this)
      Some(upload)
    } else {
      listener.declined(version, "the store's previous snapshot is still uploading",
        countsAsFailure = false)
      None
    }
  }

  /** The synchronous part failed: the slot is freed and the snapshot declined. */
  def localCheckpointFailed(upload: InFlightUpload, e: Throwable): Unit = {
    finish(upload)
    logWarning(s"rockstate: local checkpoint of version ${upload.version} of $storeId failed; " +
      "the next commit takes the snapshot instead", e)
    upload.listener.declined(upload.version, s"the local checkpoint failed: ${e.getMessage}",
      countsAsFailure = true)
  }

  /** Queues the upload of `job` (the synchronous part is done) in the slot `upload` holds. */
  def upload(upload: InFlightUpload, job: SnapshotJob): Unit = {
    upload.future = SnapshotUploader.submit(job) { result =>
      // A result after the upload was abandoned (timed out) is ignored: its manifest, if it
      // got written, is referenced by nothing and left to cleanup.
      if (inFlight.get eq upload) {
        result match {
          case Right((m, path)) =>
            confirmLanded(m, path, job.confirmed)
            logInfo(s"rockstate snapshot of version ${m.version} of $storeId uploaded: " +
              s"${m.stats.filesUploaded} files / ${m.stats.bytesUploaded} bytes new, " +
              s"${m.stats.filesReused} files / ${m.stats.bytesReused} bytes shared")
            completions.synchronized {
              val (s, n, f) = completed
              completed = (s + m.stats, n + 1, f)
            }
            upload.listener.completed(m, path)
          case Left(e) =>
            logWarning(s"rockstate: snapshot upload of version ${upload.version} of $storeId " +
              "failed; versions stay loadable from earlier snapshots and changelogs", e)
            countFailed()
            upload.listener.declined(upload.version, s"the upload failed: ${e.getMessage}",
              countsAsFailure = true)
        }
        finish(upload)
      }
    }
  }

  /** An upload running longer than `snapshotUploadTimeoutMs` is cancelled and counted failed. */
  def abandonHung(): Unit = {
    val upload = inFlight.get
    if (upload != null && Elapsed.sinceMs(upload.startedNanos) >
      conf.snapshotUploadTimeoutMs && finish(upload)) {
      Option(upload.future).foreach(_.cancel(true))
      logWarning(s"rockstate: snapshot upload of version ${upload.version} of $storeId did " +
        s"not finish within snapshotUploadTimeoutMs (${conf.snapshotUploadTimeoutMs}); " +
        "abandoned")
      countFailed()
      upload.listener.declined(upload.version, "the upload did not finish within " +
        s"snapshotUploadTimeoutMs (${conf.snapshotUploadTimeoutMs} ms)", countsAsFailure = true)
    }
  }

  /** The figures of uploads that ended since the last call: (stats summed, completed, failed). */
  def drainCompleted(): (SnapshotStats, Int, Int) = completions.synchronized {
    val c = completed
    completed = (SnapshotStats.Zero, 0, 0)
    c
  }

  /**
   * Waits until no other instance of this store in this JVM is uploading a snapshot (Spark
   * closed it off the task, see `StoreUploads`); false if one was abandoned.
   */
  def awaitOtherInstances(): Boolean =
    StoreUploads.others(storeDir, this).toSeq.map(_.awaitOrAbandon()).forall(identity)

  /**
   * Waits for this instance's upload until it is `snapshotUploadTimeoutMs` old, and abandons
   * it then (a closed instance never commits again to abandon it); false if it was abandoned.
   */
  private def awaitOrAbandon(): Boolean = Option(inFlight.get).forall { upload =>
    val left = conf.snapshotUploadTimeoutMs - Elapsed.sinceMs(upload.startedNanos)
    await(math.max(1L, left)) || { abandonHung(); false }
  }

  /** Waits until no snapshot upload of this instance is under way; false on timeout. */
  def await(timeoutMs: Long): Boolean = inFlight.synchronized {
    val deadline = System.currentTimeMillis() + timeoutMs
    while (inFlight.get != null && System.currentTimeMillis() < deadline) {
      inFlight.wait(math.max(1L, deadline - System.currentTimeMillis()))
    }
    inFlight.get == null
  }

  private def countFailed(): Unit = completions.synchronized {
    val (s, n, f) = completed
    completed = (s, n, f + 1)
  }

  /** Clears the in-flight upload if it is still `upload`; true if this call did. */
  private def finish(upload: InFlightUpload): Boolean = inFlight.synchronized {
    val mine = inFlight.compareAndSet(upload, null)
    if (mine) StoreUploads.ended(storeDir, this)
    inFlight.notifyAll()
    mine
  }
}
