package io.rockstate.checkpoint

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import org.apache.spark.api.plugin.PluginContext
import org.apache.spark.internal.Logging

import io.rockstate.storage.{RockstateConf, SnapshotListener, SnapshotManifest, VersionFile}

/** The streaming query run a task belongs to (Spark's query id and run id). */
final case class QueryRun(queryId: String, runId: String)

/**
 * The executor's end of checkpoint reporting: acknowledgements and declines go to the driver
 * through the plugin's one-way `send`, from the snapshot upload threads, never a task's. Set
 * up by the rockstate plugin; without it stores work as before and nothing is reported.
 */
object CheckpointReporter extends Logging {
  @volatile private var context: PluginContext = _

  def attach(ctx: PluginContext): Unit = context = ctx
  def detach(): Unit = context = null

  /**
   * The listener for the snapshot a commit of `store` (under the query's checkpoint location
   * `root`) may start, bound to the task's query run; a no-op outside a streaming task
   * (`run` is None) or without the plugin.
   */
  def listenerFor(store: StoreKey, root: Path, storeDir: Path, conf: RockstateConf,
      run: Option[QueryRun]): SnapshotListener = {
    val ctx = context
    if (ctx == null || run.isEmpty) return SnapshotListener.Silent
    val QueryRun(queryId, runId) = run.get
    val relativeDir = root.toUri.relativize(storeDir.toUri).getPath.stripSuffix("/")
    val settings = CoordinatorSettings(conf.checkpointsRetained, conf.checkpointTimeoutMs,
      conf.tolerableCheckpointFailures)
    def source(version: Long) = AckSource(queryId, runId, root.toString, conf.snapshotInterval,
      settings, store, version, ctx.executorID())

    new SnapshotListener {
      override def completed(m: SnapshotManifest, path: String): Unit = {
        if (conf.isCheckpointVersion(m.version)) {
          val figures = SnapshotFigures(m.stats.syncMs, m.stats.asyncMs, m.stats.bytesUploaded,
            m.stats.bytesReused, m.stats.filesUploaded, m.stats.filesReused,
            m.files.map(_.size).sum, m.numKeys)
          CheckpointPins.pend(root.toString, m.version, System.currentTimeMillis())
          // Format 3: the version file whose state the snapshot holds (its path is the id).
          val versionFile = if (VersionFile.isVersionFile(m.stateId)) m.stateId
            else s"manifests/${m.version}.json"
          send(ctx, SnapshotAck(source(m.version), relativeDir, path, versionFile, m.stateId,
            figures, System.currentTimeMillis()))
        }
      }

      override def declined(version: Long, reason: String, countsAsFailure: Boolean): Unit = {
        if (conf.isCheckpointVersion(version)) {
          send(ctx, SnapshotDecline(source(version), reason, countsAsFailure))
        }
      }
    }
  }

  private def send(ctx: PluginContext, message: AnyRef): Unit = {
    try ctx.send(message) catch {
      case NonFatal(e) => logWarning(s"rockstate: could not report $message to the driver; " +
        "that checkpoint will time out there", e)
    }
  }
}

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

  /** For tests: forget everything. */
  def clear(): Unit = {
    pending.clear()
    retained.clear()
  }
}
