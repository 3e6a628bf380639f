package org.apache.spark.ui.rockstate

import scala.jdk.CollectionConverters._

import org.apache.spark.util.kvstore.KVStore

/**
 * What the rockstate tab and its JSON endpoint read from an application's status store. Every
 * read is bounded by what the listener keeps (`UiLimits`); a checkpoint's acknowledgements are
 * read a page at a time.
 */
final class UiEntries(store: KVStore) {

  /** Query runs that have rockstate checkpoints or stores, newest first. */
  def runs: Seq[RunEntry] = {
    val known = store.view(classOf[RunEntry]).asScala.toSeq
    val withCheckpoints = checkpointsByRun
    val shown = known.filter(r => r.operators.nonEmpty || withCheckpoints.contains(r.runId))
    // Checkpoints of a run whose start was not seen (posted before the listener was added).
    val unseen = withCheckpoints.keySet -- known.map(_.runId)
    val orphans = unseen.toSeq.map { id =>
      val first = withCheckpoints(id).head
      RunEntry(id, first.queryId, None, -1L, terminated = false, None, -1L, Nil)
    }
    (shown ++ orphans).sortBy(r => (-firstSeen(r, withCheckpoints), r.runId))
  }

  def run(runId: String): Option[RunEntry] = runs.find(_.runId == runId)

  /** A run's checkpoints by version, oldest first. */
  def checkpoints(runId: String): Seq[CheckpointEntry] =
    checkpointsByRun.getOrElse(runId, Nil)

  def checkpoint(runId: String, version: Long): Option[CheckpointEntry] =
    try Some(store.read(classOf[CheckpointEntry], CheckpointEntry.keyOf(runId, version))) catch {
      case _: NoSuchElementException => None
    }

  /**
   * At most `limit` of the acknowledgements `c` keeps, from the `offset`-th, by operator and
   * partition.
   */
  def acknowledgements(c: CheckpointEntry, offset: Int, limit: Int): Seq[AckEntry] =
    if (c.acksKept <= 0 || offset >= c.acksKept || limit <= 0) Nil
    else store.view(classOf[AckEntry]).index(AckEntry.OrderIndex).parent(c.key).skip(math.max(0, offset).toLong)
      .max(math.max(0, limit).toLong).asScala.toSeq

  def executors: Seq[ExecutorEntry] =
    store.view(classOf[ExecutorEntry]).asScala.toSeq.sortBy(_.executorId)

  /** Events the listener could not take, if any. */
  def ignored: Option[IgnoredEvents] =
    try Some(store.read(classOf[IgnoredEvents], IgnoredEvents.Key)) catch {
      case _: NoSuchElementException => None
    }

  /** Whether anything of rockstate is here (the History Server adds the tab only then). */
  def nonEmpty: Boolean = store.count(classOf[CheckpointEntry]) > 0 ||
    store.count(classOf[IgnoredEvents]) > 0 ||
    store.view(classOf[RunEntry]).asScala.exists(_.operators.nonEmpty)

  /** Every run's checkpoints by version, oldest first: one read of the store. */
  def checkpointsByRun: Map[String, Seq[CheckpointEntry]] =
    store.view(classOf[CheckpointEntry]).asScala.toSeq.groupBy(_.runId)
      .map { case (run, cs) => run -> cs.sortBy(_.version) }

  private def firstSeen(r: RunEntry, cs: Map[String, Seq[CheckpointEntry]]): Long =
    if (r.startedAtMs >= 0) r.startedAtMs
    else cs.get(r.runId).flatMap(_.headOption).map(_.triggeredAtMs).getOrElse(r.lastProgressAtMs)
}
