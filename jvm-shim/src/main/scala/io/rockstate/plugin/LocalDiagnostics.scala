package io.rockstate.plugin

import scala.util.Try

import io.rockstate.storage.local.{ExecutorMemory, LocalRocksDB, OpenInstances}
import io.rockstate.storage.snapshot.SnapshotUploader

/**
 * What this JVM's stores hold and do, for whoever reaches the JVM through py4j: the benches,
 * the tests, a notebook on a local session, where the executor is the driver's JVM. The one
 * entry point for those figures, so no caller names storage's internal classes. Each figure is
 * the JVM's own: on a cluster, an executor's are in Spark's metrics system
 * (`RockstateMetricsSource`).
 */
object LocalDiagnostics {
  /** Waits until no snapshot upload of this JVM is under way; false if `timeoutMs` passed. */
  def awaitUploadsIdle(timeoutMs: Long): Boolean = SnapshotUploader.awaitIdle(timeoutMs)

  /** Bytes in use in the shared RocksDB memory (the block cache, memtables charged to it). */
  def rocksdbMemoryUsedBytes: Long = ExecutorMemory.usedBytes

  /** Of those, the bytes pinned: memtables' reservations, pinned index and filter blocks and
   * blocks being read. A cache pinned near its capacity keeps no data block between reads. */
  def pinnedCacheBytes: Long = ExecutorMemory.current.map(_.cache.getPinnedUsage).getOrElse(0L)

  /** The RocksDB memory bound, 0 before any store set it up. */
  def rocksdbMemoryBoundBytes: Long = ExecutorMemory.current.map(_.boundBytes).getOrElse(0L)

  /** The cap on instances kept open between tasks (0: none), -1 before any store set it up. */
  def openInstanceCap: Int = ExecutorMemory.current.map(_.openInstanceCap).getOrElse(-1)

  /** Instances open between tasks now, and closed for the cap so far. */
  def openInstances: Int = OpenInstances.executor.open
  def instancesClosedForCap: Long = OpenInstances.executor.closedForCap

  /** Per open store, its SSTs by level and how compactions moved them (RocksDB's figures). */
  def levelStats: java.util.List[java.util.Map[String, String]] =
    Try(LocalRocksDB.openLevelStats()).getOrElse(java.util.Collections.emptyList())
}
