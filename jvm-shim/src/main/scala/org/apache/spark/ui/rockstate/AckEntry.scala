package org.apache.spark.ui.rockstate

import scala.annotation.meta.getter

import com.fasterxml.jackson.annotation.JsonIgnore

import org.apache.spark.util.kvstore.KVIndex

import io.rockstate.checkpoint.AcknowledgedStore

/**
 * One store's acknowledgement of a checkpoint, in the status store beside its checkpoint's
 * entry rather than inside it: an acknowledgement then writes one small entry, however many
 * came before it (a list rewritten per acknowledgement cost time in their square).
 */
final case class AckEntry(
    // The checkpoint's key as the parent of the natural one: a checkpoint's acknowledgements
    // are read and dropped without going through any other's.
    @(KVIndex @getter)(parent = AckEntry.CheckpointIndex) key: String,
    @(KVIndex @getter)(value = AckEntry.CheckpointIndex) checkpoint: String, // its entry's key
    store: AcknowledgedStore) {

  // A checkpoint's acknowledgements in key order: the disk-backed status store filters by
  // parent only on a child index, never on the natural one.
  @JsonIgnore @KVIndex(value = AckEntry.OrderIndex, parent = AckEntry.CheckpointIndex)
  private def order: String = key
}

object AckEntry {
  final val CheckpointIndex = "checkpoint"
  final val OrderIndex = "order"

  /**
   * One key per store of a checkpoint, so a store's second acknowledgement (a retried batch's
   * snapshot) finds its first. Fixed-width numbers before the name: keys cannot collide, and a
   * checkpoint's acknowledgements sort by operator and partition.
   */
  def keyOf(checkpoint: String, s: AcknowledgedStore): String =
    f"$checkpoint/${s.operatorId}%020d/${s.partitionId}%011d/${s.storeName}"
}
