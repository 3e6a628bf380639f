package io.rockstate.storage.snapshot

import java.util.concurrent.ConcurrentHashMap

/**
 * The instances of each store in this JVM that have a snapshot upload under way, keyed by the
 * store's checkpoint directory. With Spark's `unloadOnCommit` a store gets a new instance every
 * batch, and Spark's maintenance thread, when it runs, may take the previous instance away
 * mid-batch and close it on its own pool (it never sees such an instance reported active), so
 * the task no longer waits for that instance's upload: the next instance waits before it
 * commits instead, and so rebases onto the snapshot as it would have otherwise.
 */
object StoreUploads {
  private val uploading = new ConcurrentHashMap[String, Set[AsyncSnapshots]]()

  def began(store: String, snapshots: AsyncSnapshots): Unit =
    uploading.merge(store, Set(snapshots), (a, b) => a ++ b)

  def ended(store: String, snapshots: AsyncSnapshots): Unit =
    uploading.computeIfPresent(store, (_, s) => Option(s - snapshots).filter(_.nonEmpty).orNull)

  /** The other instances of `store` uploading now. */
  def others(store: String, self: AsyncSnapshots): Set[AsyncSnapshots] =
    Option(uploading.get(store)).getOrElse(Set.empty) - self
}
