package org.apache.spark.ui.rockstate

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

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
 * log (`RockstateHistoryServerPlugin`), so both tabs read the same entries.
 *
 * An event log may come from anyone, and one History Server serves many applications, so what
 * this keeps is bounded by `UiLimits` whatever the log holds: runs, ended and pending
 * checkpoints per run, acknowledgements over the application and executors are each capped,
 * the oldest dropped first (an executor: the one that reported longest ago). Each event costs
 * a few reads and writes of small entries, whatever came before it.
 */
final class RockstateUiListener(store: KVStore, conf: SparkConf) extends SparkListener {
  import RockstateUiListener._

  private val limits = UiLimits(conf)
  // Runs in the order they were first seen, and each run's checkpoints by version: what
  // retention drops. Every entry in the store is in one of these.
  private val runs = mutable.LinkedHashSet.empty[String]
  private val ended = mutable.Map.empty[String, mutable.SortedSet[Long]]
  private val pending = mutable.Map.empty[String, mutable.SortedSet[Long]]
  // Checkpoints with acknowledgements kept, oldest first, and how many each keeps.
  private val kept = mutable.LinkedHashMap.empty[String, Int]
  private var keptTotal = 0L
  // Executors, the one that reported longest ago first.
  private val executors = mutable.LinkedHashSet.empty[String]
  private var ignored = Option.empty[IgnoredEvents]

  override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
    case a: CheckpointAcknowledged => take(a, UiEvents.acknowledged(a))(acknowledged)
    case c: CheckpointCompleted => take(c, UiEvents.completed(c))(completed)
    case a: CheckpointAborted => take(a, UiEvents.aborted(a))(aborted)
    case f: ExecutorStoreFigures => take(f, UiEvents.executor(f))(reported)
    case e: QueryStartedEvent => take(e, started(e))(identity)
    case e: QueryProgressEvent => take(e, progressed(e))(identity)
    case e: QueryTerminatedEvent => take(e, terminated(e))(identity)
    case _ =>
  }

  /**
   * `use`s the event as `checked`, or counts it as one the tab could not take, and why: a
   * crafted event breaks nothing but its own application's tab, which says so.
   */
  private def take[E <: SparkListenerEvent, T](event: E, checked: => Either[String, T])(
      use: T => Unit): Unit = {
    val outcome = try checked.map(use) catch { case NonFatal(e) => Left(e.toString) }
    outcome match {
      case Right(_) =>
      case Left(why) =>
        val first = UiLimits.cut(s"${event.getClass.getSimpleName}: $why", UiLimits.MaxText)
        val now = ignored.map(i => i.copy(count = i.count + 1))
          .getOrElse(IgnoredEvents(IgnoredEvents.Key, 1, first))
        ignored = Some(now)
        store.write(now)
    }
  }

  // ---- checkpoints ----

  private def acknowledged(a: CheckpointAcknowledged): Unit = {
    seen(a.runId)
    val key = CheckpointEntry.keyOf(a.runId, a.version)
    val entry = existing(key).orElse(newPending(a.runId, a.version, newEntry(a.queryId,
      a.runId, a.checkpointRoot, a.version, a.triggeredAtMs, a.expected)))
    // An acknowledgement after its checkpoint ended (a late one) changes nothing shown, and
    // so does a store's second one (a retried batch's snapshot): the first stays, as in the
    // coordinator's live view. Once some were dropped, a second one cannot be told apart:
    // the count then stops at what the checkpoint expects.
    entry.filter(_.status == CheckpointEntry.Pending).foreach { e =>
      val ackKey = AckEntry.keyOf(key, a.store)
      if (!e.keepsEveryAck || read(classOf[AckEntry], ackKey).isEmpty) {
        val keep = e.keepsEveryAck && roomFor(key)
        if (keep) {
          store.write(AckEntry(ackKey, key, a.store))
          kept(key) = kept.getOrElse(key, 0) + 1
          keptTotal += 1
        }
        val counted = if (e.keepsEveryAck || a.expected <= 0) e.acknowledged + 1
          else math.min(e.acknowledged + 1, math.max(a.expected, e.acknowledged))
        store.write(e.copy(expected = a.expected, acknowledged = counted,
          acksKept = e.acksKept + (if (keep) 1 else 0)))
      }
    }
  }

  private def completed(c: CheckpointCompleted): Unit = end(c.runId, c.version,
    existing(CheckpointEntry.keyOf(c.runId, c.version))
      .getOrElse(newEntry(c.queryId, c.runId, c.checkpointRoot, c.version, c.triggeredAtMs, 0))
      .copy(status = CheckpointEntry.Completed, endedAtMs = c.completedAtMs,
        totals = Some(c.totals)))

  private def aborted(a: CheckpointAborted): Unit = end(a.runId, a.version,
    existing(CheckpointEntry.keyOf(a.runId, a.version))
      .getOrElse(newEntry(a.queryId, a.runId, a.checkpointRoot, a.version, a.triggeredAtMs,
        a.aborted.expected))
      .copy(status = CheckpointEntry.Aborted, endedAtMs = a.aborted.abortedAtMs,
        reason = Some(a.aborted.reason), countsAsFailure = a.aborted.countsAsFailure))

  /** `entry` as the new pending checkpoint of its run, unless it is older than every pending
   * one the run keeps: then it is not kept at all. */
  private def newPending(runId: String, version: Long,
      entry: CheckpointEntry): Option[CheckpointEntry] = {
    val versions = pending.getOrElseUpdate(runId, mutable.SortedSet.empty[Long])
    versions += version
    while (versions.size > limits.retainedPendingCheckpoints) {
      val oldest = versions.head
      versions -= oldest
      if (oldest != version) dropCheckpoint(runId, oldest)
    }
    if (versions.contains(version)) Some(entry) else None
  }

  private def end(runId: String, version: Long, entry: CheckpointEntry): Unit = {
    seen(runId)
    store.write(entry)
    pending.get(runId).foreach(_ -= version)
    val versions = ended.getOrElseUpdate(runId, mutable.SortedSet.empty[Long])
    versions += version
    while (versions.size > limits.retainedCheckpoints) {
      val oldest = versions.head
      versions -= oldest
      dropCheckpoint(runId, oldest)
    }
  }

  /** Whether checkpoint `key` may keep one more acknowledgement: the oldest other
   * checkpoints' acknowledgements are dropped to make room. */
  private def roomFor(key: String): Boolean = {
    def full = keptTotal >= limits.retainedAcknowledgements
    while (full && kept.keysIterator.exists(_ != key)) dropAcks(kept.keysIterator.find(_ != key).get)
    !full
  }

  private def dropAcks(key: String): Unit = kept.remove(key).foreach { n =>
    keptTotal -= n
    store.removeAllByIndexValues(classOf[AckEntry], AckEntry.CheckpointIndex, Seq(key).asJava)
    existing(key).foreach(e => store.write(e.copy(acksKept = 0)))
  }

  private def dropCheckpoint(runId: String, version: Long): Unit = {
    val key = CheckpointEntry.keyOf(runId, version)
    dropAcks(key)
    if (existing(key).isDefined) store.delete(classOf[CheckpointEntry], key)
  }

  // ---- runs ----

  private def started(e: QueryStartedEvent): Either[String, Unit] = for {
    runId <- uuid("runId", e.runId)
    queryId <- uuid("id", e.id)
  } yield {
    seen(runId)
    store.write(RunEntry(runId, queryId, Option(e.name).map(UiLimits.cut(_, UiLimits.MaxName)),
      parseTime(e.timestamp), terminated = false, None, -1L, Nil))
  }

  private def terminated(e: QueryTerminatedEvent): Either[String, Unit] =
    uuid("runId", e.runId).map { runId =>
      run(runId).foreach { r =>
        store.write(r.copy(terminated = true,
          exception = e.exception.flatMap(Option(_)).map(UiLimits.cut(_, UiLimits.MaxText))))
      }
    }

  private def progressed(e: QueryProgressEvent): Either[String, Unit] = for {
    p <- Option(e.progress).toRight("no progress")
    runId <- uuid("progress.runId", p.runId)
    queryId <- uuid("progress.id", p.id)
  } yield {
    val operators = Option(p.stateOperators).toSeq.flatten
      .filter(o => o != null && o.customMetrics != null &&
        o.customMetrics.containsKey(RockstateMetric))
      .take(MaxOperators)
      .map(o => OperatorFigures(UiLimits.cut(String.valueOf(o.operatorName), UiLimits.MaxName),
        p.batchId, o.numRowsTotal, o.numRowsUpdated, o.memoryUsedBytes, o.commitTimeMs,
        o.numShufflePartitions,
        o.customMetrics.asScala.toSeq.collect { case (k, v) if k != null && v != null =>
          NamedFigure(UiLimits.cut(k, UiLimits.MaxName), v.longValue) }
          .sortBy(_.name).take(MaxFigures)))
    if (operators.nonEmpty) {
      seen(runId)
      val known = run(runId).getOrElse(RunEntry(runId, queryId,
        Option(p.name).map(UiLimits.cut(_, UiLimits.MaxName)), -1L, terminated = false, None,
        -1L, Nil))
      store.write(known.copy(lastProgressAtMs = parseTime(p.timestamp), operators = operators))
    }
  }

  private def seen(runId: String): Unit = if (!runs.contains(runId)) {
    runs += runId
    while (runs.size > limits.retainedRuns) {
      val oldest = runs.head
      runs -= oldest
      dropRun(oldest)
    }
  }

  private def dropRun(runId: String): Unit = {
    (ended.remove(runId).toSeq ++ pending.remove(runId).toSeq).flatten
      .foreach(dropCheckpoint(runId, _))
    if (run(runId).isDefined) store.delete(classOf[RunEntry], runId)
  }

  // ---- executors ----

  private def reported(f: ExecutorStoreFigures): Unit = {
    executors -= f.executorId
    executors += f.executorId
    store.write(ExecutorEntry(f.executorId, f))
    while (executors.size > limits.retainedExecutors) {
      val oldest = executors.head
      executors -= oldest
      store.delete(classOf[ExecutorEntry], oldest)
    }
  }

  // ---- the status store ----

  private def existing(key: String): Option[CheckpointEntry] = read(classOf[CheckpointEntry], key)

  private def run(runId: String): Option[RunEntry] = read(classOf[RunEntry], runId)

  private def read[T](klass: Class[T], key: String): Option[T] =
    try Some(store.read(klass, key)) catch { case _: NoSuchElementException => None }

  private def newEntry(queryId: String, runId: String, root: String, version: Long,
      triggeredAtMs: Long, expected: Int): CheckpointEntry =
    CheckpointEntry(CheckpointEntry.keyOf(runId, version), queryId, runId, root, version,
      CheckpointEntry.Pending, triggeredAtMs, -1L, expected, 0, 0, None, None,
      countsAsFailure = false)
}

object RockstateUiListener {
  // Present in every rockstate state operator's custom metrics, and in no other provider's.
  private val RockstateMetric = "rockstateLoadMs"
  // A query's rockstate operators, and figures of each, kept from one progress event.
  private val MaxOperators = 64
  private val MaxFigures = 64

  private def uuid(field: String, id: java.util.UUID): Either[String, String] =
    Option(id).map(_.toString).toRight(s"no $field")

  // Spark's query events carry their times as ISO-8601 text.
  private def parseTime(iso: String): Long =
    try java.time.Instant.parse(iso).toEpochMilli catch { case _: Exception => -1L }
}
