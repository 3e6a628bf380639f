package io.rockstate.checkpoint

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path

import org.apache.spark.api.plugin.PluginContext
import org.apache.spark.internal.Logging

import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.format.{SnapshotManifest, VersionFile}
import io.rockstate.storage.snapshot.SnapshotListener

/**
 * The executor's end of checkpoint reporting: acknowledgements and declines go to the driver
 * through the plugin's one-way `send`, so the thread that tells it (an upload thread, or the
 * task for a snapshot on the commit path or a declined one) never waits for the driver. Set
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
          val figures = SnapshotAckStats.of(m.stats, m.files.map(_.size).sum, m.numKeys)
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
