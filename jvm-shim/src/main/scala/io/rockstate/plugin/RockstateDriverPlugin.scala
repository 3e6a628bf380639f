package io.rockstate.plugin

import java.util.{Map => JMap}
import java.util.concurrent.{ConcurrentHashMap, Executors, ScheduledExecutorService, TimeUnit}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, PluginContext}
import org.apache.spark.internal.Logging
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent, SparkListenerExecutorRemoved,
  SparkListenerJobStart}
import org.apache.spark.sql.streaming.StreamingQueryListener.QueryStartedEvent
import org.apache.spark.ui.rockstate.RockstateUi

import io.rockstate.checkpoint._
import io.rockstate.storage.ExecutorStoreFigures
import io.rockstate.storage.format.CheckpointJson

class RockstateDriverPlugin extends DriverPlugin with Logging {
  private val TimeoutTickMs = 250L
  private var worker: ScheduledExecutorService = _

  override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
    RockstateDriverPlugin.executors.clear()
    val hadoopConf = sc.hadoopConfiguration
    val coordinator = new CheckpointCoordinator(hadoopConf, () => System.currentTimeMillis(),
      root => ExpectedStores.read(root, hadoopConf),
      // Cancels the run's jobs with the message; the listener below cancels its later ones.
      (runId, message) => sc.cancelJobGroup(runId, message),
      // The event log and the rockstate tab, live and in the History Server.
      RockstateUi.post(sc))
    RockstateDriverPlugin.post = RockstateUi.post(sc)
    try RockstateUi.attach(sc) catch {
      case NonFatal(e) => logWarning("rockstate: could not add the rockstate tab to Spark's UI; " +
        "checkpoints work as before", e)
    }
    // A streaming query's jobs carry its run id as their job group. (Spark's own "cancel
    // future jobs" drops the reason from the error, so the user would not learn why.)
    sc.addSparkListener(new SparkListener {
      override def onJobStart(event: SparkListenerJobStart): Unit = {
        Option(event.properties).flatMap(p => Option(p.getProperty(AckSource.JobGroupProperty)))
          .flatMap(coordinator.failureOf(_)).foreach(message => sc.cancelJob(event.jobId, message))
      }
      // Streaming query events reach the context's listener bus too: which run Spark started
      // last at a location decides whose checkpoint decisions its executors follow.
      override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
        case e: QueryStartedEvent => coordinator.runStarted(e.runId.toString)
        case _ =>
      }
      // A lost executor is not ready any more: its replacement reports under a new id.
      override def onExecutorRemoved(event: SparkListenerExecutorRemoved): Unit =
        RockstateDriverPlugin.forget(event.executorId)
    })
    // One thread applies every acknowledgement in arrival order and runs the timeouts, so the
    // RPC thread never waits on the file a completion writes.
    worker = Executors.newSingleThreadScheduledExecutor { r =>
      val t = new Thread(r, "rockstate-checkpoint-coordinator")
      t.setDaemon(true)
      t
    }
    worker.scheduleWithFixedDelay(() => guarded(coordinator.checkTimeouts()), TimeoutTickMs,
      TimeoutTickMs, TimeUnit.MILLISECONDS)
    RockstateDriverPlugin.coordinator = Some(coordinator)
    logInfo("rockstate driver plugin started; checkpoint coordinator running")
    Map.empty[String, String].asJava
  }

  override def registerMetrics(appId: String, ctx: PluginContext): Unit =
    RockstateMetricsSource.registerDriver(ctx.metricRegistry(),
      () => RockstateDriverPlugin.coordinator.map(_.stats))

  override def receive(message: AnyRef): AnyRef = message match {
    case r: ExecutorReady =>
      RockstateDriverPlugin.record(r)
      null // a one-way message (PluginContext.send) takes no reply
    case a: SnapshotAck =>
      RockstateDriverPlugin.coordinator.foreach(c => worker.execute(() => guarded(c.acknowledge(a))))
      null
    case f: ExecutorStoreFigures =>
      RockstateDriverPlugin.post(f)
      null
    case d: SnapshotDecline =>
      RockstateDriverPlugin.coordinator.foreach(c => worker.execute(() => guarded(c.decline(d))))
      null
    case p: PollOutcomes =>
      // A reply is deserialized by the executor's RPC layer, which cannot see rockstate's
      // classes (they are in the task class loader): send JSON text.
      Outcomes.toJson(RockstateDriverPlugin.coordinator.map(_.outcomes(p.checkpointRoots))
        .getOrElse(Outcomes(Nil)))
    case other =>
      throw new IllegalArgumentException(s"rockstate driver plugin: unknown message $other")
  }

  override def shutdown(): Unit = {
    RockstateDriverPlugin.coordinator = None
    RockstateDriverPlugin.post = _ => ()
    if (worker != null) worker.shutdownNow()
  }

  private def guarded(body: => Any): Unit = try body catch {
    case NonFatal(e) => logWarning("rockstate checkpoint coordinator: a step failed", e)
  }
}

object RockstateDriverPlugin {
  private val executors = new ConcurrentHashMap[String, ExecutorReady]()
  @volatile private[plugin] var coordinator: Option[CheckpointCoordinator] = None
  @volatile private var post: SparkListenerEvent => Unit = _ => ()

  /** Executors that have set up rockstate, as seen by the driver. */
  def readyExecutors: Seq[ExecutorReady] = executors.values().asScala.toSeq.sortBy(_.executorId)

  /** Same, as JSON for the Python side. */
  def readyExecutorsJson: String = json(readyExecutors)

  private[plugin] def record(ready: ExecutorReady): Unit = executors.put(ready.executorId, ready)

  private[plugin] def forget(executorId: String): Unit = executors.remove(executorId)

  private def json(value: AnyRef): String =
    CheckpointJson.mapper.writeValueAsString(value)

  /** The coordinator's view of a query run as JSON, "null" if it has heard nothing of it. */
  def checkpointsJson(runId: String): String = coordinator.flatMap(_.view(runId))
    .map(CheckpointCoordinator.json).getOrElse("null")

  /** Whether the coordinator runs in this driver (the plugin is on). */
  def coordinatorRunning: Boolean = coordinator.isDefined

  /** Completions after sequence number `after`, as JSON [[seq, runId, version], ...]. */
  def completedSinceJson(after: Long): String = json(coordinator.map(_.completedSince(after))
    .getOrElse(Nil).map { case (seq, run, v) => Seq(seq, run, v) })
}
