package io.rockstate.storage.snapshot

import java.util.concurrent.ConcurrentHashMap

import io.rockstate.storage.format.SnapshotRef

/**
 * The newest snapshot each store's uploads confirmed in this JVM, with the state id it holds,
 * kept past the DB instance that took it: a provider Spark closes after every commit (its
 * `unloadOnCommit`), or one reopened on this executor, rebases its next commit onto that
 * snapshot instead of a lineage whose changelogs only grow. Read at every commit, so an instance
 * opened while an earlier one was still uploading sees that upload. Keyed by the store's checkpoint
 * directory; one small entry per store the executor held. A stale entry is harmless: a commit
 * rebases only onto a snapshot that is a point of its own lineage (by state id) and still in
 * storage.
 */
object ConfirmedSnapshots {
  private val newest = new ConcurrentHashMap[String, (SnapshotRef, String)]()

  def get(store: String): Option[(SnapshotRef, String)] = Option(newest.get(store))

  /** `snapshot` was confirmed; it replaces an older one (never a newer one). */
  def record(store: String, snapshot: (SnapshotRef, String)): Unit =
    newest.merge(store, snapshot, (old, now) => if (now._1.version >= old._1.version) now else old)

  /** Forgets `snapshot` if it is still the store's newest (it was deleted meanwhile). */
  def forget(store: String, snapshot: (SnapshotRef, String)): Unit = newest.remove(store, snapshot)
}
