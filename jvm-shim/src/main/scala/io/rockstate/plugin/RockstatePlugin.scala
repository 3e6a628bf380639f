package io.rockstate.plugin

import java.net.InetAddress
import java.util.{Map => JMap}
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.util.Try
import scala.util.control.NonFatal

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}
import org.apache.spark.internal.Logging

import io.rockstate.state.{ExecutorMemory, RockstateConf}

/** Sent by each executor once its shared RocksDB memory is set up. */
final case class ExecutorReady(executorId: String, host: String, blockCacheBytes: Long,
    writeBufferManagerBytes: Long)

/**
 * rockstate's Spark plugin (`spark.plugins=io.rockstate.plugin.RockstatePlugin`). The executor
 * side sets up the RocksDB memory all stores of that executor share, from the session's
 * rockstate settings, before any task runs, and reports it to the driver over Spark's plugin
 * RPC; the driver side keeps what the executors reported.
 */
class RockstatePlugin extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new RockstateDriverPlugin
  override def executorPlugin(): ExecutorPlugin = new RockstateExecutorPlugin
}

class RockstateDriverPlugin extends DriverPlugin with Logging {
  override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
    RockstateDriverPlugin.executors.clear()
    logInfo("rockstate driver plugin started")
    Map.empty[String, String].asJava
  }

  override def receive(message: AnyRef): AnyRef = message match {
    case r: ExecutorReady =>
      RockstateDriverPlugin.executors.put(r.executorId, r)
      null // a one-way message (PluginContext.send) takes no reply
    case other =>
      throw new IllegalArgumentException(s"rockstate driver plugin: unknown message $other")
  }
}

object RockstateDriverPlugin {
  private val executors = new ConcurrentHashMap[String, ExecutorReady]()

  /** Executors that have set up rockstate, as seen by the driver. */
  def readyExecutors: Seq[ExecutorReady] = executors.values().asScala.toSeq.sortBy(_.executorId)

  /** Same, as JSON for the Python side. */
  def readyExecutorsJson: String = readyExecutors.map { r =>
    s"""{"executorId":"${r.executorId}","host":"${r.host}",""" +
      s""""blockCacheBytes":${r.blockCacheBytes},"writeBufferManagerBytes":${r.writeBufferManagerBytes}}"""
  }.mkString("[", ",", "]")
}

class RockstateExecutorPlugin extends ExecutorPlugin with Logging {
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
      ctx.send(ExecutorReady(ctx.executorID(), host, shared.blockCacheBytes,
        shared.writeBufferManagerBytes))
    } catch {
      case NonFatal(e) =>
        logWarning("rockstate executor plugin could not set up shared RocksDB memory; the " +
          "first rockstate store in this executor will report why", e)
    }
  }
}
