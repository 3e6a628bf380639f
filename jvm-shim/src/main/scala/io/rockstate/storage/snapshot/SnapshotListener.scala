package io.rockstate.storage.snapshot

import io.rockstate.storage.format.SnapshotManifest

/**
 * Told what became of the snapshot a commit started: the checkpoint coordinator's executor end
 * listens (io.rockstate.checkpoint.CheckpointReporter). Called from upload threads, and from
 * the task for a snapshot taken on the commit path or one declined because the previous upload
 * still runs: a listener must not block.
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
