package org.apache.spark.ui.rockstate

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.spark.SparkConf
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.sql.streaming.StreamingQueryListener.{QueryProgressEvent, QueryStartedEvent, QueryTerminatedEvent}
import org.apache.spark.util.kvstore.KVStore

import io.rockstate.checkpoint.{CheckpointAborted, CheckpointAcknowledged, CheckpointCompleted}
import io.rockstate.storage.ExecutorStoreFigures

/**
 * Keeps the rockstate tab's entries in an application's status store from the listener bus:
 * the coordinator's checkpoint events, executors' store figures and Spark's own query events.
 * The live application runs it on the status queue; the History Server runs it over the event
 * log (`RockstateHistoryServerPlugin`), so both tabs read the same entries. The newest
 * `RetainedCheckpoints` ended checkpoints of a run and the newest `RetainedRuns` runs are kept.
 */
final class RockstateUiListener(store: KVStore, conf: SparkConf) extends SparkListener {
  import RockstateUiListener._

  private val retainedCheckpoints = math.max(1, conf.getInt(RetainedCheckpoints, 100))
  private val retainedRuns = math.max(1, conf.getInt(RetainedRuns, 50))
  // Ended checkpoints per run, and runs in the order they were first seen: what retention drops.
  private val ended = mutable.Map.empty[String, mutable.SortedSet[Long]]
  private val runs = mutable.LinkedHashSet.empty[String]

  override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
    case a: CheckpointAcknowledged => acknowledged(a)
    case c: CheckpointCompleted => ended(c.runId, c.version, existing(c.runId, c.version)
      .getOrElse(newEntry(c.queryId, c.runId, c.checkpointRoot, c.version, c.triggeredAtMs, 0))
      .copy(status = CheckpointEntry.Completed, endedAtMs = c.completedAtMs,
        totals = Some(c.totals)))
    case a: CheckpointAborted => ended(a.runId, a.version, existing(a.runId, a.version)
      .getOrElse(newEntry(a.queryId, a.runId, a.checkpointRoot, a.version, a.triggeredAtMs,
        a.aborted.expected))
      .copy(status = CheckpointEntry.Aborted, endedAtMs = a.aborted.abortedAtMs,
        reason = Some(a.aborted.reason), countsAsFailure = a.aborted.countsAsFailure))
    case f: ExecutorStoreFigures => store.write(ExecutorEntry(f.executorId, f))
    case e: QueryStartedEvent =>
      seen(e.runId.toString)
      store.write(RunEntry(e.runId.toString, e.id.toString, Option(e.name),
        parseTime(e.timestamp), terminated = false, None, -1L, Nil))
    case e: QueryProgressEvent => progressed(e)
    case e: QueryTerminatedEvent => run(e.runId.toString).foreach { r =>
      store.write(r.copy(terminated = true, exception = e.exception))
    }
    case _ =>
  }

  private def acknowledged(a: CheckpointAcknowledged): Unit = {
    seen(a.runId)
    val entry = existing(a.runId, a.version).getOrElse(
      newEntry(a.queryId, a.runId, a.checkpointRoot, a.version, a.triggeredAtMs, a.expected))
    // An acknowledgement after its checkpoint ended (a late one) changes nothing shown.
    if (entry.status == CheckpointEntry.Pending) {
      store.write(entry.copy(expected = a.expected, stores = entry.stores :+ a.store))
    }
  }

  private def ended(runId: String, version: Long, entry: CheckpointEntry): Unit = {
    seen(runId)
    store.write(entry)
    val versions = ended.getOrElseUpdate(runId, mutable.SortedSet.empty[Long])
    versions += version
    while (versions.size > retainedCheckpoints) {
      val oldest = versions.head
      versions -= oldest
      store.delete(classOf[CheckpointEntry], CheckpointEntry.keyOf(runId, oldest))
    }
  }

  private def progressed(e: QueryProgressEvent): Unit = {
    val p = e.progress
    val operators = Option(p.stateOperators).toSeq.flatten
      .filter(o => o.customMetrics != null && o.customMetrics.containsKey(RockstateMetric))
      .map(o => OperatorFigures(o.operatorName, p.batchId, o.numRowsTotal, o.numRowsUpdated,
        o.memoryUsedBytes, o.commitTimeMs, o.numShufflePartitions,
        o.customMetrics.asScala.toSeq.sortBy(_._1)
          .map { case (k, v) => NamedFigure(k, v.longValue) }))
    if (operators.nonEmpty) {
      val runId = p.runId.toString
      seen(runId)
      val known = run(runId).getOrElse(RunEntry(runId, p.id.toString, Option(p.name),
        -1L, terminated = false, None, -1L, Nil))
      store.write(known.copy(lastProgressAtMs = parseTime(p.timestamp), operators = operators))
    }
  }

  private def seen(runId: String): Unit = if (!runs.contains(runId)) {
    runs += runId
    while (runs.size > retainedRuns) {
      val oldest = runs.head
      runs -= oldest
      dropRun(oldest)
    }
  }

  private def dropRun(runId: String): Unit = {
    val keys = store.view(classOf[CheckpointEntry]).asScala.filter(_.runId == runId).map(_.key)
      .toSeq
    keys.foreach(store.delete(classOf[CheckpointEntry], _))
    if (run(runId).isDefined) store.delete(classOf[RunEntry], runId)
    ended.remove(runId)
  }

  private def existing(runId: String, version: Long): Option[CheckpointEntry] =
    read(classOf[CheckpointEntry], CheckpointEntry.keyOf(runId, version))

  private def run(runId: String): Option[RunEntry] = read(classOf[RunEntry], runId)

  private def read[T](klass: Class[T], key: String): Option[T] =
    try Some(store.read(klass, key)) catch { case _: NoSuchElementException => None }

  private def newEntry(queryId: String, runId: String, root: String, version: Long,
      triggeredAtMs: Long, expected: Int): CheckpointEntry =
    CheckpointEntry(CheckpointEntry.keyOf(runId, version), queryId, runId, root, version,
      CheckpointEntry.Pending, triggeredAtMs, -1L, expected, Nil, None, None,
      countsAsFailure = false)
}

object RockstateUiListener {
  /** Ended checkpoints kept per query run (pending ones are always kept). */
  val RetainedCheckpoints = "spark.rockstate.ui.retainedCheckpoints"
  /** Query runs kept, with their checkpoints. */
  val RetainedRuns = "spark.rockstate.ui.retainedRuns"
  // Present in every rockstate state operator's custom metrics, and in no other provider's.
  private val RockstateMetric = "rockstateLoadMs"

  // Spark's query events carry their times as ISO-8601 text.
  private def parseTime(iso: String): Long =
    try java.time.Instant.parse(iso).toEpochMilli catch { case _: Exception => -1L }
}
