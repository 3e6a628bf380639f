package org.apache.spark.ui.rockstate

import java.nio.file.Files
import java.util.UUID

import scala.jdk.CollectionConverters._

import org.apache.commons.io.FileUtils
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkConf
import org.apache.spark.status.KVUtils.KVStoreScalaSerializer
import org.apache.spark.util.kvstore.{InMemoryStore, KVStore, RocksDB}

import io.rockstate.checkpoint._
import io.rockstate.storage.ExecutorStoreFigures

/**
 * What an event log can make the tab keep: every count is capped by its setting, an
 * acknowledgement costs the same however many came before it, and a page has a bounded number
 * of rows. Each test feeds what a crafted log of another application would hold.
 */
class UiBoundsSuite extends AnyFunSuite {
  private val root = "file:/tmp/" + ("r" * 4000) // a 4 KB checkpoint root

  private def store(p: Int, op: Long = 0, name: String = "default") = AcknowledgedStore(op, name,
    p, s"exec-${p % 7}", s"state/$op/$p", "snapshots/2.json", "manifests/2.json",
    SnapshotAckStats(1, 2, 100, 50, 1, 1, 150 + p, 10), 100L + p)

  private def acked(run: String, v: Long, p: Int, expected: Int = 1 << 20) =
    CheckpointAcknowledged("query-1", run, root, v, 90L, expected, store(p))

  private def completed(run: String, v: Long) = CheckpointCompleted("query-1", run, root, v, 90L,
    120L, CheckpointTotals(2, 301, 20, 200, 100, 1, 2))

  private def figures(id: String) = ExecutorStoreFigures(id, 1, 1, 10, 20, 30, 0, 77L)

  /** A status store that remembers the size of the largest entry each class was written with. */
  private final class Measured(inner: KVStore) extends KVStore {
    private val serializer = new KVStoreScalaSerializer()
    val largest = scala.collection.mutable.Map.empty[Class[_], Int].withDefaultValue(0)
    override def write(value: Any): Unit = {
      val size = serializer.serialize(value).length
      largest(value.getClass) = math.max(largest(value.getClass), size)
      inner.write(value)
    }
    override def getMetadata[T](klass: Class[T]): T = inner.getMetadata(klass)
    override def setMetadata(value: Any): Unit = inner.setMetadata(value)
    override def read[T](klass: Class[T], naturalKey: Any): T = inner.read(klass, naturalKey)
    override def delete(t: Class[_], naturalKey: Any): Unit = inner.delete(t, naturalKey)
    override def view[T](t: Class[T]) = inner.view(t)
    override def count(t: Class[_]): Long = inner.count(t)
    override def count(t: Class[_], index: String, indexedValue: Any): Long =
      inner.count(t, index, indexedValue)
    override def removeAllByIndexValues[T](klass: Class[T], index: String,
        indexValues: java.util.Collection[_]): Boolean =
      inner.removeAllByIndexValues(klass, index, indexValues)
    override def close(): Unit = inner.close()
  }

  private def listener(kv: KVStore, settings: (String, String)*) =
    (new RockstateUiListener(kv, new SparkConf(false).setAll(settings)), new UiEntries(kv))

  test("an acknowledgement writes entries of one size, however many came before it") {
    // A list rewritten per acknowledgement made the N-th write N times the first.
    def largestAfter(n: Int): Map[Class[_], Int] = {
      val kv = new Measured(new InMemoryStore())
      val (l, entries) = listener(kv)
      (0 until n).foreach(p => l.onOtherEvent(acked("run-1", 2, p)))
      assert(entries.checkpoint("run-1", 2).map(_.acknowledged).contains(n))
      kv.largest.toMap
    }
    val few = largestAfter(10)
    val many = largestAfter(5000)
    assert(few.keySet == many.keySet)
    few.foreach { case (klass, size) =>
      assert(many(klass) <= size + 16, s"${klass.getSimpleName}: $size bytes after 10 " +
        s"acknowledgements, ${many(klass)} after 5000")
    }
  }

  test("pending checkpoints and executors are capped, the oldest dropped first") {
    val (l, entries) = listener(new InMemoryStore(),
      UiLimits.RetainedPendingCheckpoints -> "5", UiLimits.RetainedExecutors -> "3")
    (1 to 20000).foreach { v =>
      l.onOtherEvent(acked("run-1", v, 0))
      l.onOtherEvent(figures(s"exec-$v"))
    }
    assert(entries.checkpoints("run-1").map(_.version) == (19996L to 20000L))
    assert(entries.executors.map(_.executorId).toSet == Set("exec-19998", "exec-19999",
      "exec-20000"))
    // An executor that reports again is kept over one that reported earlier.
    l.onOtherEvent(figures("exec-19998"))
    l.onOtherEvent(figures("exec-new"))
    assert(entries.executors.map(_.executorId).toSet == Set("exec-19998", "exec-20000",
      "exec-new"))
    // A pending checkpoint older than every one kept is not kept either.
    l.onOtherEvent(acked("run-1", 7, 0))
    assert(entries.checkpoints("run-1").map(_.version) == (19996L to 20000L))
  }

  test("acknowledgements are capped over the application: the oldest checkpoints' go first, " +
    "their counts stay") {
    val (l, entries) = listener(new InMemoryStore(), UiLimits.RetainedAcknowledgements -> "10")
    (0 until 4).foreach(p => l.onOtherEvent(acked("run-1", 2, p, expected = 4)))
    l.onOtherEvent(completed("run-1", 2))
    (0 until 4).foreach(p => l.onOtherEvent(acked("run-1", 4, p, expected = 4)))
    (0 until 4).foreach(p => l.onOtherEvent(acked("run-1", 6, p, expected = 4)))
    val Seq(two, four, six) = entries.checkpoints("run-1")
    assert((two.acknowledged, two.acksKept) == (4, 0))
    assert(entries.acknowledgements(two, 0, 100).isEmpty)
    assert((four.acknowledged, four.acksKept) == (4, 4) && (six.acknowledged, six.acksKept) ==
      (4, 4))
    assert(entries.acknowledgements(six, 0, 100).map(_.store.partitionId) == Seq(0, 1, 2, 3))
    // One checkpoint alone past the cap: the rest are counted, not kept.
    (0 until 30).foreach(p => l.onOtherEvent(acked("run-1", 8, p, expected = 30)))
    val eight = entries.checkpoint("run-1", 8).get
    assert((eight.acknowledged, eight.acksKept) == (30, 10))
    assert(entries.checkpoints("run-1").filter(_.version < 8).forall(_.acksKept == 0))
    // Counted without being kept, a store's second acknowledgement cannot be told apart: the
    // count stops at what the checkpoint expects.
    l.onOtherEvent(acked("run-1", 8, 29, expected = 30))
    assert(entries.checkpoint("run-1", 8).get.acknowledged == 30)
    val page = TabContent(entries, Some("run-1"), Some(8L)).mkString
    assert(page.contains("10 of 30 acknowledgements shown: 20 were not kept"), page)
  }

  test("a store's second acknowledgement of a checkpoint is not counted again") {
    val (l, entries) = listener(new InMemoryStore())
    l.onOtherEvent(acked("run-1", 2, 0, expected = 2))
    l.onOtherEvent(acked("run-1", 2, 0, expected = 2).copy(store = store(0).copy(
      snapshotManifest = "snapshots/2-retry.json")))
    l.onOtherEvent(acked("run-1", 2, 1, expected = 2))
    val c = entries.checkpoint("run-1", 2).get
    assert((c.acknowledged, c.acksKept) == (2, 2))
    assert(entries.acknowledgements(c, 0, 10).map(_.store.snapshotManifest) ==
      Seq("snapshots/2.json", "snapshots/2.json"))
  }

  test("strings are cut, and a page renders a bounded number of rows") {
    val (l, entries) = listener(new InMemoryStore(), UiLimits.RetainedExecutors -> "100000")
    val run = UUID.randomUUID().toString
    (0 until 2000).foreach(p => l.onOtherEvent(acked(run, 2, p)))
    (0 until 2000).foreach(i => l.onOtherEvent(figures(s"exec-$i-" + "x" * 5000)))
    val c = entries.checkpoint(run, 2).get
    assert(c.checkpointRoot.length < UiLimits.MaxName + 40 &&
      c.checkpointRoot.endsWith(s"(cut: ${root.length} characters)"))
    assert(entries.executors.forall(_.executorId.length < UiLimits.MaxName + 40))
    val page = TabContent(entries, None, None).mkString
    assert("<tr data-partition=".r.findAllMatchIn(page).size == UiLimits.ShownRows)
    assert("<tr data-executor=".r.findAllMatchIn(page).size == UiLimits.ShownRows)
    assert(page.contains(s"the first ${UiLimits.ShownRows} of 2000"))
    assert(page.contains(s"${UiLimits.ShownRows} of 2000 acknowledgements shown"))
    // The JSON API's pages cover every kept acknowledgement once.
    val paged = Iterator.iterate(0)(_ + UiLimits.ApiPage).takeWhile(_ < 2000)
      .flatMap(o => entries.acknowledgements(c, o, UiLimits.ApiPage)).map(_.store.partitionId)
      .toSeq
    assert(paged.sorted == (0 until 2000) && paged.distinct.size == 2000)
  }

  test("events with a field missing are counted and named on the tab, not kept") {
    val (l, entries) = listener(new InMemoryStore())
    l.onOtherEvent(acked("run-1", 2, 0).copy(store = null))
    l.onOtherEvent(acked("run-1", 2, 0).copy(runId = null))
    l.onOtherEvent(completed("run-1", 2).copy(totals = null))
    l.onOtherEvent(figures(null))
    l.onOtherEvent(new org.apache.spark.sql.streaming.StreamingQueryListener.QueryStartedEvent(
      UUID.randomUUID(), null, "q", "2026-12-05T10:00:00Z"))
    assert(entries.checkpointsByRun.isEmpty && entries.executors.isEmpty && entries.runs.isEmpty)
    assert(entries.ignored.map(_.count).contains(5L))
    assert(entries.ignored.map(_.first).contains("CheckpointAcknowledged: no store"))
    assert(entries.nonEmpty) // the History Server adds the tab, which says why it is empty
    val page = TabContent(entries, None, None).mkString
    assert(page.contains("5</span> rockstate events in this"), page)
  }

  test("the disk-backed status store (spark.history.store.path) keeps the same entries") {
    val dir = Files.createTempDirectory("rockstate-ui-kv").toFile
    val kv = new RocksDB(dir, new KVStoreScalaSerializer())
    try {
      val (l, entries) = listener(kv, UiLimits.RetainedAcknowledgements -> "6",
        UiLimits.RetainedPendingCheckpoints -> "2")
      (0 until 4).foreach(p => l.onOtherEvent(acked("run-1", 2, p, expected = 4)))
      l.onOtherEvent(completed("run-1", 2))
      (0 until 4).foreach(p => l.onOtherEvent(acked("run-1", 4, p, expected = 4)))
      (6L to 10L by 2).foreach(v => l.onOtherEvent(acked("run-1", v, 0, expected = 4)))
      assert(entries.checkpoints("run-1").map(c => (c.version, c.acknowledged, c.acksKept)) ==
        Seq((2L, 4, 0), (8L, 1, 1), (10L, 1, 1)))
      assert(kv.count(classOf[AckEntry]) == 2)
      assert(entries.acknowledgements(entries.checkpoint("run-1", 10).get, 0, 10)
        .map(_.store.partitionId) == Seq(0))
    } finally {
      kv.close()
      FileUtils.deleteQuietly(dir)
    }
  }

  test("dropping a run drops its checkpoints and their acknowledgements") {
    val kv = new InMemoryStore()
    val (l, entries) = listener(kv, UiLimits.RetainedRuns -> "1")
    (0 until 3).foreach(p => l.onOtherEvent(acked("run-1", 2, p)))
    l.onOtherEvent(completed("run-1", 2))
    l.onOtherEvent(acked("run-1", 4, 0))
    l.onOtherEvent(acked("run-2", 2, 0))
    assert(entries.checkpointsByRun.keySet == Set("run-2"))
    assert(kv.view(classOf[AckEntry]).asScala.map(_.checkpoint).toSet ==
      Set(CheckpointEntry.keyOf("run-2", 2)))
  }
}
