package io.rockstate.checkpoint

import scala.collection.mutable

/** How the coordinator took an acknowledgement (Flink's TaskAcknowledgeResult). */
sealed abstract class AckResult(val name: String) {
  override def toString: String = name
}

object AckResult {
  /** Counted towards its checkpoint. */
  case object Success extends AckResult("SUCCESS")
  /** The store already acknowledged this checkpoint; the first one counts. */
  case object Duplicate extends AckResult("DUPLICATE")
  /** Not a checkpoint this run has: a version off the interval, or a store it does not expect. */
  case object Unknown extends AckResult("UNKNOWN")
  /** The checkpoint was already aborted, subsumed or completed without it: a late ack. */
  case object Discarded extends AckResult("DISCARDED")
}

/**
 * A checkpoint some stores acknowledged and others not yet (Flink's PendingCheckpoint): it
 * completes when every expected store has, and is disposed when aborted or subsumed.
 */
final class PendingCheckpoint(
    val version: Long,
    val expected: Set[StoreKey],
    val triggeredAtMs: Long) {
  private val acks = mutable.LinkedHashMap.empty[StoreKey, SnapshotAck]
  private var disposed = false

  def acknowledge(ack: SnapshotAck): AckResult = {
    val key = ack.source.store
    if (disposed) AckResult.Discarded
    else if (!expected.contains(key)) AckResult.Unknown
    else if (acks.contains(key)) AckResult.Duplicate
    else {
      acks.put(key, ack)
      AckResult.Success
    }
  }

  def isFullyAcknowledged: Boolean = !disposed && acks.size == expected.size
  def acknowledged: Seq[SnapshotAck] = acks.values.toSeq
  def missing: Seq[StoreKey] = expected.diff(acks.keySet).toSeq
    .sortBy(k => (k.operatorId, k.storeName, k.partitionId))
  def dispose(): Unit = disposed = true
}
