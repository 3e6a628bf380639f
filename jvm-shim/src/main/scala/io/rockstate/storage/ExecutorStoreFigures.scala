package io.rockstate.storage

import org.apache.spark.scheduler.SparkListenerEvent

import io.rockstate.storage.local.{ExecutorMemory, LocalStoreFiles, OpenInstances}
import io.rockstate.storage.snapshot.SnapshotUploader

/**
 * One executor's stores as it last reported them: sent to the driver while it has stores,
 * and posted there to Spark's listener bus as is (the event log and the rockstate tab).
 */
final case class ExecutorStoreFigures(
    executorId: String,
    openStores: Int,
    rocksdbInstancesOpen: Int,
    rocksdbMemoryUsedBytes: Long,
    rocksdbMemoryCapacityBytes: Long,
    localCacheBytes: Long,
    snapshotUploadsInFlight: Int,
    reportedAtMs: Long) extends SparkListenerEvent {

  /** The same figures, whenever they were taken. */
  def sameAs(other: ExecutorStoreFigures): Boolean = copy(reportedAtMs = 0) ==
    other.copy(reportedAtMs = 0)
}

object ExecutorStoreFigures {
  /** This executor's figures now. */
  def now(executorId: String): ExecutorStoreFigures = ExecutorStoreFigures(executorId,
    LocalStoreFiles.openStores, OpenInstances.executor.open, ExecutorMemory.usedBytes,
    ExecutorMemory.current.map(_.blockCacheBytes).getOrElse(0L), LocalStoreFiles.cacheBytes,
    SnapshotUploader.inFlight, System.currentTimeMillis())
}
