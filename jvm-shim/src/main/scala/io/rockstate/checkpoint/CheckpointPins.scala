package io.rockstate.checkpoint

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration

/**
 * Versions an executor's cleanup must keep for checkpoints: those it acknowledged whose outcome
 * it has not heard yet (released when the driver says they completed, were subsumed or were
 * aborted, or after twice the timeout), and the retained completed checkpoints, read from the
 * checkpoint location (the durable truth, right after a restart too) and refreshed when the
 * driver reports a change or every few seconds.
 */
object CheckpointPins {
  private val RefreshMs = 10000L
  private val pending = new ConcurrentHashMap[String, ConcurrentHashMap[Long, Long]]()
  private val retained = new ConcurrentHashMap[String, (Seq[Long], Long)]()

  def pend(root: String, version: Long, nowMs: Long): Unit =
    pending.computeIfAbsent(root, _ => new ConcurrentHashMap[Long, Long]()).put(version, nowMs)

  def rootsWithPending: Seq[String] =
    pending.asScala.collect { case (root, vs) if !vs.isEmpty => root }.toSeq

  /** Applies the driver's decisions. */
  def apply(outcomes: Outcomes, nowMs: Long): Unit = outcomes.roots.foreach { o =>
    Option(pending.get(o.checkpointRoot)).foreach { vs =>
      vs.keySet().asScala.toSeq.foreach { v =>
        if (v <= o.latestCompleted || o.aborted.contains(v)) vs.remove(v)
      }
    }
    retained.put(o.checkpointRoot, (o.retained, nowMs))
  }

  /** Every version the cleanup of a store under `root` must keep for checkpoints. */
  def pinned(root: String, hadoopConf: Configuration, nowMs: Long, expireMs: Long): Set[Long] = {
    val mine = Option(pending.get(root)).map { vs =>
      vs.asScala.collect { case (v, at) if nowMs - at > expireMs => v }.foreach(vs.remove)
      vs.keySet().asScala.toSet
    }.getOrElse(Set.empty[Long])
    val completed = Option(retained.get(root)) match {
      case Some((versions, at)) if nowMs - at < RefreshMs => versions
      case _ =>
        val versions = new CheckpointFiles(root, hadoopConf).completedVersions()
        retained.put(root, (versions, nowMs))
        versions
    }
    mine ++ completed
  }
}
