package io.rockstate.storage.format

/**
 * How a store's state versions relate to Spark's micro-batches and to checkpoints, named once:
 *
 * {{{
 *   version 0        the empty state, before batch 0
 *   version b + 1    what batch b committed
 *   checkpoints      the versions that are multiples of the snapshot interval (10, 20, ...),
 *                    the same in every partition, so that their snapshots make one checkpoint
 * }}}
 */
object StateVersion {
  /** The state version batch `batchId` commits. */
  def ofBatch(batchId: Long): Long = batchId + 1

  /** The micro-batch that committed `version`. */
  def batchOf(version: Long): Long = version - 1

  /** Whether `version` is one of the query's checkpoints. */
  def isCheckpoint(version: Long, snapshotInterval: Int): Boolean =
    version > 0 && version % snapshotInterval == 0
}
