package org.apache.spark.ui.rockstate

import java.util.UUID

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkConf
import org.apache.spark.sql.streaming.StreamingQueryListener.{QueryStartedEvent, QueryTerminatedEvent}
import org.apache.spark.util.JsonProtocol
import org.apache.spark.util.kvstore.InMemoryStore

import io.rockstate.checkpoint._
import io.rockstate.storage.ExecutorStoreFigures

/** The tab's events through Spark's event log, its listener's entries, and its page's text. */
class RockstateUiSuite extends AnyFunSuite {
  private val root = "file:/tmp/query"

  private def store(p: Int, ackedAtMs: Long = 100L) = AcknowledgedStore(0, "default", p,
    s"exec-$p", s"state/0/$p", "snapshots/2.json", "manifests/2.json",
    SnapshotAckStats(1, 2, 100, 50, 1, 1, 150 + p, 10), ackedAtMs)

  private def acked(run: String, v: Long, p: Int) =
    CheckpointAcknowledged("query-1", run, root, v, 90L, 2, store(p))

  private def completed(run: String, v: Long) = CheckpointCompleted("query-1", run, root, v, 90L,
    120L, CheckpointTotals(2, 301, 20, 200, 100, 1, 2))

  private def aborted(run: String, v: Long, why: String) = CheckpointAborted("query-1", run, root,
    v, 90L, AbortedCheckpoint(v, why, countsAsFailure = true, 130L, 1, 2))

  private def listener(settings: (String, String)*) = {
    val kv = new InMemoryStore()
    val conf = new SparkConf(false).setAll(settings)
    (new RockstateUiListener(kv, conf), new UiEntries(kv))
  }

  test("rockstate's events survive Spark's event log: written and read back equal") {
    val events = Seq(acked("run-1", 2, 0), completed("run-1", 2),
      aborted("run-1", 4, "expired \"quoted\" <b>"),
      ExecutorStoreFigures("exec-1", 3, 2, 1000, 4000, 500, 1, 77L))
    events.foreach { e =>
      val json = JsonProtocol.sparkEventToJsonString(e)
      assert(json.contains("\"Event\":\"" + e.getClass.getName + "\""), json)
      assert(JsonProtocol.sparkEventFromJson(json) == e)
    }
  }

  test("a checkpoint is pending from its first ack, then completed or aborted; late acks " +
    "change nothing") {
    val (l, entries) = listener()
    l.onOtherEvent(acked("run-1", 2, 0))
    val pending = entries.checkpoint("run-1", 2).get
    assert(pending.status == CheckpointEntry.Pending && pending.acknowledged == 1 &&
      pending.expected == 2 && pending.durationMs == -1)
    l.onOtherEvent(acked("run-1", 2, 1))
    l.onOtherEvent(completed("run-1", 2))
    val done = entries.checkpoint("run-1", 2).get
    assert(done.status == CheckpointEntry.Completed &&
      entries.acknowledgements(done, 0, 10).map(_.store.partitionId) == Seq(0, 1))
    assert(done.durationMs == 30 && done.totals.map(_.stateBytes).contains(301L))
    l.onOtherEvent(acked("run-1", 2, 1)) // late
    assert(entries.checkpoint("run-1", 2).get == done)
    l.onOtherEvent(acked("run-1", 4, 0))
    l.onOtherEvent(aborted("run-1", 4, "expired"))
    val gone = entries.checkpoint("run-1", 4).get
    assert(gone.status == CheckpointEntry.Aborted && gone.reason.contains("expired") &&
      gone.countsAsFailure && gone.acknowledged == 1)
    // An abort of a checkpoint no acknowledgement announced (the listener came later).
    l.onOtherEvent(aborted("run-1", 6, "subsumed"))
    assert(entries.checkpoints("run-1").map(c => (c.version, c.status)) ==
      Seq(2L -> "completed", 4L -> "aborted", 6L -> "aborted"))
    assert(entries.runs.map(_.runId) == Seq("run-1") && entries.nonEmpty)
  }

  test("the newest retainedCheckpoints ended checkpoints of a run are kept") {
    val (l, entries) = listener(UiLimits.RetainedCheckpoints -> "2")
    (1 to 4).foreach(i => l.onOtherEvent(completed("run-1", 2L * i)))
    l.onOtherEvent(acked("run-1", 10, 0))
    assert(entries.checkpoints("run-1").map(_.version) == Seq(6L, 8L, 10L))
  }

  test("the newest retainedRuns runs are kept, with their checkpoints") {
    val (l, entries) = listener(UiLimits.RetainedRuns -> "2")
    val runs = (1 to 3).map(_ => UUID.randomUUID())
    runs.foreach { r =>
      l.onOtherEvent(new QueryStartedEvent(UUID.randomUUID(), r, s"query $r", "2026-12-05T10:00:00Z"))
      l.onOtherEvent(completed(r.toString, 2))
    }
    assert(entries.runs.map(_.runId).toSet == runs.drop(1).map(_.toString).toSet)
    assert(entries.checkpoints(runs.head.toString).isEmpty)
    l.onOtherEvent(new QueryTerminatedEvent(UUID.randomUUID(), runs.last, Some("boom")))
    assert(entries.run(runs.last.toString).map(_.status).contains("failed"))
  }

  test("names, reasons and locations are shown as text, never as markup") {
    val (l, entries) = listener()
    val run = UUID.randomUUID()
    l.onOtherEvent(new QueryStartedEvent(UUID.randomUUID(), run, "<script>alert(1)</script>",
      "2026-12-05T10:00:00Z"))
    l.onOtherEvent(aborted(run.toString, 2, "declined: <img src=x onerror=alert(2)>"))
    l.onOtherEvent(ExecutorStoreFigures("<i>exec</i>", 1, 1, 10, 20, 30, 0, 77L))
    val html = TabContent(entries, None, None).mkString
    assert(!html.contains("<script>alert") && html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
    assert(!html.contains("<img src=x") && html.contains("&lt;img src=x onerror=alert(2)&gt;"))
    assert(!html.contains("<i>exec</i>") && html.contains("&lt;i&gt;exec&lt;/i&gt;"))
  }

  test("no entries: the page says so, and the History Server adds no tab") {
    val (_, entries) = listener()
    assert(!entries.nonEmpty)
    assert(TabContent(entries, None, None).mkString.contains("No query has rockstate"))
  }
}
