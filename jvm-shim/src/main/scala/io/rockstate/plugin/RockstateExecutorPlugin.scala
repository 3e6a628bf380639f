package io.rockstate.plugin

import java.net.InetAddress
import java.util.{Map => JMap}
import java.util.concurrent.{Executors, ScheduledExecutorService, TimeUnit}

import scala.jdk.CollectionConverters._
import scala.util.Try
import scala.util.control.NonFatal

import org.apache.spark.api.plugin.{ExecutorPlugin, PluginContext}
import org.apache.spark.internal.Logging

import io.rockstate.checkpoint._
import io.rockstate.storage.conf.RockstateConf
import io.rockstate.storage.ExecutorStoreFigures
import io.rockstate.storage.local.{ExecutorMemory, LocalRocksDB}

class RockstateExecutorPlugin extends ExecutorPlugin with Logging {
  private var poller: ScheduledExecutorService = _
  // The figures the driver last heard from this executor (the poller thread's only).
  private var reported: Option[ExecutorStoreFigures] = None

  override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit = {
    // A bad setting must not crash-loop the executor: the stores report it at the first batch,
    // where the user sees it.
    try {
      val settings = ctx.conf().getAll.toMap
      val retain = settings.get("spark.sql.streaming.minBatchesToRetain").map(_.toInt)
        .getOrElse(100)
      val shared = ExecutorMemory.get(RockstateConf.from(settings, retain))
      // The plugin context knows no host name inside executors; ask the OS.
      val host = Try(InetAddress.getLocalHost.getHostName).getOrElse("unknown")
      // Fire-and-forget: a slow driver must never hold up the executor's start.
      ctx.send(ExecutorReady(ctx.executorID(), host, shared.boundBytes, shared.blockCacheBytes,
        shared.writeBufferManagerBytes, shared.openInstanceCap))
    } catch {
      case NonFatal(e) =>
        logWarning("rockstate executor plugin could not set up shared RocksDB memory; the " +
          "first rockstate store in this executor will report why", e)
    }
    CheckpointReporter.attach(ctx)
    RockstateMetricsSource.registerExecutor(ctx.metricRegistry())
    // The driver cannot push to executors; while this executor waits to hear what became of
    // checkpoints it acknowledged, it asks once a second, on its own thread.
    poller = Executors.newSingleThreadScheduledExecutor { r =>
      val t = new Thread(r, "rockstate-checkpoint-outcomes")
      t.setDaemon(true)
      t
    }
    poller.scheduleWithFixedDelay(() => poll(ctx), 1, 1, TimeUnit.SECONDS)
    poller.scheduleWithFixedDelay(() => report(ctx), FiguresEverySeconds, FiguresEverySeconds,
      TimeUnit.SECONDS)
  }

  /** The executor's store figures for the rockstate tab, when they changed. */
  private def report(ctx: PluginContext): Unit = try {
    val figures = ExecutorStoreFigures.now(ctx.executorID())
    if (!reported.exists(_.sameAs(figures))) {
      ctx.send(figures)
      reported = Some(figures)
    }
  } catch {
    case NonFatal(e) => logDebug("rockstate: reporting this executor's stores failed", e)
  }

  private def poll(ctx: PluginContext): Unit = {
    val roots = CheckpointPins.rootsWithPending
    if (roots.nonEmpty) {
      try ctx.ask(PollOutcomes(ctx.executorID(), roots)) match {
        case json: String => CheckpointPins.apply(Outcomes.fromJson(json), System.currentTimeMillis())
        case other => logWarning(s"rockstate: unexpected reply from the driver: $other")
      } catch {
        case NonFatal(e) => logDebug("rockstate: asking the driver for checkpoint outcomes " +
          "failed; asking again in a second", e)
      }
    }
  }

  private val FiguresEverySeconds = 5L

  override def shutdown(): Unit = {
    CheckpointReporter.detach()
    if (poller != null) poller.shutdownNow()
    // Before Spark deletes the stores' directories (LocalRocksDB.stopAllBackgroundWork).
    val stopped = LocalRocksDB.stopAllBackgroundWork()
    if (stopped > 0) logInfo(s"rockstate: stopped the background work of $stopped stores")
  }
}
