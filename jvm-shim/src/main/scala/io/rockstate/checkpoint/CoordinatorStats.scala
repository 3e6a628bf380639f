package io.rockstate.checkpoint

import java.util.concurrent.atomic.{AtomicLong, AtomicReference}

/**
 * The driver's checkpoint figures as Spark's metrics system shows them (the plugin registers
 * them as gauges): totals over every query of this driver since it started, and the newest
 * completed checkpoint's duration and sizes. Written by the coordinator, read by any thread.
 */
final class CoordinatorStats(pendingNow: () => Int) {
  private val completedCount = new AtomicLong()
  private val abortedCount = new AtomicLong()
  private val failedCount = new AtomicLong()
  private val last = new AtomicReference[Option[CheckpointMetadata]](None)

  private[checkpoint] def completed(m: CheckpointMetadata): Unit = {
    completedCount.incrementAndGet()
    last.set(Some(m))
  }

  private[checkpoint] def aborted(countsAsFailure: Boolean): Unit = {
    abortedCount.incrementAndGet()
    if (countsAsFailure) failedCount.incrementAndGet()
  }

  def checkpointsCompleted: Long = completedCount.get
  /** Every abort, subsumed ones included. */
  def checkpointsAborted: Long = abortedCount.get
  /** Aborts that count towards tolerableCheckpointFailures. */
  def checkpointsFailed: Long = failedCount.get
  def checkpointsPending: Long = pendingNow().toLong
  def lastDurationMs: Long = last.get.map(m => m.completedAtMs - m.triggeredAtMs).getOrElse(0L)
  def lastStateBytes: Long = last.get.map(_.totals.stateBytes).getOrElse(0L)
  def lastBytesUploaded: Long = last.get.map(_.totals.bytesUploaded).getOrElse(0L)
  def lastVersion: Long = last.get.map(_.version).getOrElse(-1L)
}
