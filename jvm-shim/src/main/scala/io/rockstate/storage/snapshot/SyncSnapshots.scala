package io.rockstate.storage.snapshot

import java.util.concurrent.CompletableFuture

import scala.util.control.NonFatal

import org.apache.commons.io.FileUtils

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.SnapshotManifest
import io.rockstate.storage.local.{Elapsed, LocalCheckpointPool, LocalRocksDB, LocalStoreFiles}
import io.rockstate.storage.location.StoreCheckpointDir

/**
 * The synchronous part of one store's snapshots (Flink's snapshot strategy before its async
 * callable): flush and a local hard-link checkpoint of the database, handed on as an immutable
 * `SnapshotJob`. Normally it runs on `LocalCheckpointPool` once the commit has returned, and
 * `AsyncSnapshots` uploads the result; while it runs the database must not change, so the
 * store waits for it (`await`) before every load, write, rollback and close. On the commit
 * path (a too long lineage, a changed family table) both parts run on the task.
 *
 * Not thread-safe: used by its store's task only, like the store.
 */
private[storage] final class SyncSnapshots(checkpointDir: StoreCheckpointDir,
    local: LocalStoreFiles, conf: RockstateConf, snapshots: AsyncSnapshots) {
  // The part the last `begin` submitted, until it is waited for.
  private var running: Option[CompletableFuture[Void]] = None

  /**
   * Snapshots `source` now, on the task: takes the local checkpoint, uploads it, confirms its
   * SSTs in `files` and tells `snapshots` and `listener`. Returns the written manifest and its
   * path. `startedNanos`: when the commit asked for it (the orphan grace counts from there).
   */
  def onCommitPath(source: LocalRocksDB, manifest: SnapshotManifest, files: ConfirmedFiles,
      listener: SnapshotListener, startedNanos: Long): (SnapshotManifest, String) = {
    val checkpoint = local.newWorkPath(s"checkpoint-${manifest.version}")
    try {
      source.checkpointTo(checkpoint)
      val (m, path) = SnapshotJob(manifest, checkpoint, checkpointDir, local, files, conf,
        startedNanos).run()
      snapshots.confirmLanded(m, path, files)
      listener.completed(m, path)
      (m, path)
    } finally FileUtils.deleteQuietly(checkpoint)
  }

  /**
   * Begins the snapshot of the version just committed, off the commit path: the version is
   * durable already (its version file), and `source` does not change until the part ends.
   * Skipped while the store's previous snapshot is still uploading (the next due commit tries
   * again). Returns whether it began; a failed local checkpoint loses nothing, and the next due
   * commit takes the snapshot.
   */
  def begin(source: LocalRocksDB, manifest: SnapshotManifest, files: ConfirmedFiles,
      listener: SnapshotListener): Boolean = {
    await()
    snapshots.begin(manifest.version, listener).exists { upload =>
      val checkpoint = local.newWorkPath(s"checkpoint-${manifest.version}")
      running = Some(LocalCheckpointPool.submit { () =>
        try {
          val taken = System.nanoTime()
          source.checkpointTo(checkpoint)
          val synced = manifest.copy(stats = manifest.stats.copy(syncMs = Elapsed.sinceMs(taken)))
          snapshots.upload(upload, SnapshotJob(synced, checkpoint, checkpointDir, local, files,
            conf, upload.startedNanos))
        } catch {
          case NonFatal(e) =>
            FileUtils.deleteQuietly(checkpoint)
            snapshots.localCheckpointFailed(upload, e)
        }
      })
      true
    }
  }

  /**
   * Waits for the part `begin` submitted, if it still runs; uninterruptibly, so that no change
   * reaches the database while it reads it.
   */
  def await(): Unit = running.foreach { part =>
    part.join()
    running = None
  }
}
