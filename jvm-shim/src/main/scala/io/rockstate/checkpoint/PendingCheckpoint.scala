package io.rockstate.checkpoint

import scala.collection.mutable

/**
 * A checkpoint some stores acknowledged and others not yet (Flink's PendingCheckpoint): it is
 * fully acknowledged when every expected store has, and is disposed when aborted or subsumed.
 * A store may acknowledge more than once with different snapshots (a retried or re-run batch
 * snapshots its own attempt); completion keeps the one of the attempt whose version landed.
 */
final class PendingCheckpoint(
    val version: Long,
    val expected: Set[StoreKey],
    val triggeredAtMs: Long) {
  private val acks = mutable.LinkedHashMap.empty[StoreKey, Vector[SnapshotAck]]
  private var disposed = false

  def acknowledge(ack: SnapshotAck): AckResult = {
    val key = ack.source.store
    val known = acks.getOrElse(key, Vector.empty)
    if (disposed) AckResult.Discarded
    else if (!expected.contains(key)) AckResult.Unknown
    else if (known.exists(_.snapshotManifest == ack.snapshotManifest)) AckResult.Duplicate
    else {
      acks(key) = known :+ ack
      AckResult.Success
    }
  }

  def isFullyAcknowledged: Boolean = !disposed && acks.size == expected.size
  /** The first acknowledgement of each store, for the live view. */
  def acknowledged: Seq[SnapshotAck] = acks.values.map(_.head).toSeq
  /** Every acknowledgement of a store, oldest first. */
  def acknowledgementsOf(key: StoreKey): Seq[SnapshotAck] = acks.getOrElse(key, Vector.empty)
  /** Forgets acknowledgements of a store that hold no committed state: it must ack again. */
  def forget(key: StoreKey, stale: Seq[SnapshotAck]): Unit = {
    val left = acks.getOrElse(key, Vector.empty).filterNot(stale.contains)
    if (left.isEmpty) acks.remove(key) else acks(key) = left
  }
  def missing: Seq[StoreKey] = expected.diff(acks.keySet).toSeq
    .sortBy(k => (k.operatorId, k.storeName, k.partitionId))
  def dispose(): Unit = disposed = true
}
