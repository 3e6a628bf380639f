package io.rockstate.plugin

import com.codahale.metrics.{Gauge, MetricRegistry}

import io.rockstate.checkpoint.CoordinatorStats
import io.rockstate.storage.local.{ExecutorMemory, LocalStoreFiles, NativeHeapTrim, OpenInstances}
import io.rockstate.storage.snapshot.SnapshotUploader

/**
 * rockstate's figures in Spark's metrics system: the plugin's registry is reported by every
 * configured sink (JMX, CSV, the Prometheus servlet) under the source
 * `plugin.io.rockstate.plugin.RockstatePlugin`, on the driver and on each executor.
 * docs/checkpoints.md lists the names.
 */
object RockstateMetricsSource {
  private def gauge(registry: MetricRegistry, name: String)(read: => Long): Unit =
    registry.register(name, new Gauge[Long] { override def getValue: Long = read })

  /** The driver's checkpoint figures (totals over every query since the driver started). */
  def registerDriver(registry: MetricRegistry, stats: () => Option[CoordinatorStats]): Unit = {
    def of(f: CoordinatorStats => Long): Long = stats().map(f).getOrElse(0L)
    gauge(registry, "checkpointsCompleted")(of(_.checkpointsCompleted))
    gauge(registry, "checkpointsAborted")(of(_.checkpointsAborted))
    gauge(registry, "checkpointsFailed")(of(_.checkpointsFailed))
    gauge(registry, "checkpointsPending")(of(_.checkpointsPending))
    gauge(registry, "lastCheckpointDurationMs")(of(_.lastDurationMs))
    gauge(registry, "lastCheckpointStateBytes")(of(_.lastStateBytes))
    gauge(registry, "lastCheckpointBytesUploaded")(of(_.lastBytesUploaded))
    gauge(registry, "lastCheckpointVersion")(stats().map(_.lastVersion).getOrElse(-1L))
  }

  /** One executor's figures. */
  def registerExecutor(registry: MetricRegistry): Unit = {
    gauge(registry, "snapshotUploadsInFlight")(SnapshotUploader.inFlight.toLong)
    gauge(registry, "openStores")(LocalStoreFiles.openStores.toLong)
    gauge(registry, "rocksdbInstancesOpen")(OpenInstances.executor.open.toLong)
    gauge(registry, "rocksdbInstancesClosedForCap")(OpenInstances.executor.closedForCap)
    gauge(registry, "nativeHeapTrims")(NativeHeapTrim.executor.trims)
    gauge(registry, "localCacheBytes")(LocalStoreFiles.cacheBytes)
    gauge(registry, "rocksdbMemoryUsedBytes")(ExecutorMemory.usedBytes)
    gauge(registry, "rocksdbMemoryCapacityBytes")(
      ExecutorMemory.current.map(_.blockCacheBytes).getOrElse(0L))
  }
}
