package org.apache.spark.ui.rockstate

import java.util.UUID

import scala.jdk.CollectionConverters._
import scala.util.{Random, Try}

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkConf
import org.apache.spark.scheduler.SparkListenerEvent
import org.apache.spark.sql.streaming.StreamingQueryListener.{QueryStartedEvent, QueryTerminatedEvent}
import org.apache.spark.util.JsonProtocol
import org.apache.spark.util.kvstore.InMemoryStore

import io.rockstate.checkpoint._
import io.rockstate.storage.ExecutorStoreFigures
import io.rockstate.storage.format.CheckpointJson

/**
 * Fuzzing of the tab's event-log replay, the twin of the checkpoint parsers' fuzzing: the
 * History Server reads event logs written by anyone. rockstate's events and Spark's query
 * events, each written by Spark's `JsonProtocol` and then given pathological values (a field
 * removed or null, huge and negative numbers, long strings, markup, the wrong JSON type), are
 * read back by `JsonProtocol` as a replay does; whatever it accepts goes to the listener.
 * Neither the listener nor the page nor the JSON API may throw, every count stays within its
 * cap, and no string kept is longer than the cut allows.
 *
 * CI runs `ROCKSTATE_FUZZ_EXAMPLES` (default 150) sequences of events; a long run sets more:
 *
 *   ROCKSTATE_FUZZ_EXAMPLES=5000 dev/sbt "shim/testOnly *EventLogFuzzSuite"
 */
class EventLogFuzzSuite extends AnyFunSuite {
  private val Examples: Int = sys.props.get("ROCKSTATE_FUZZ_EXAMPLES")
    .orElse(sys.env.get("ROCKSTATE_FUZZ_EXAMPLES")).map(_.trim.toInt).getOrElse(150)
  private val Caps = Map(UiLimits.RetainedRuns -> "3", UiLimits.RetainedCheckpoints -> "4",
    UiLimits.RetainedPendingCheckpoints -> "3", UiLimits.RetainedAcknowledgements -> "10",
    UiLimits.RetainedExecutors -> "4")
  private val nodes = JsonNodeFactory.instance
  private val runs = IndexedSeq.fill(5)(UUID.randomUUID())

  private def base(r: Random): SparkListenerEvent = {
    val run = runs(r.nextInt(runs.size))
    val v = 2L * r.nextInt(12)
    def store = AcknowledgedStore(r.nextInt(3), "default", r.nextInt(8), s"exec-${r.nextInt(9)}",
      "state/0/1", "snapshots/2.json", "manifests/2.json",
      SnapshotAckStats(1, 2, 100, 50, 1, 1, 150, 10), 100L)
    r.nextInt(7) match {
      case 0 | 1 => CheckpointAcknowledged("q", run.toString, "file:/tmp/q", v, 90L, 8, store)
      case 2 => CheckpointCompleted("q", run.toString, "file:/tmp/q", v, 90L, 120L,
        CheckpointTotals(2, 301, 20, 200, 100, 1, 2))
      case 3 => CheckpointAborted("q", run.toString, "file:/tmp/q", v, 90L,
        AbortedCheckpoint(v, "expired", countsAsFailure = true, 130L, 1, 8))
      case 4 => ExecutorStoreFigures(s"exec-${r.nextInt(9)}", 1, 1, 10, 20, 30, 0, 77L)
      case 5 => new QueryStartedEvent(UUID.randomUUID(), run, "name", "2026-12-05T10:00:00Z")
      case _ => new QueryTerminatedEvent(UUID.randomUUID(), run, Some("boom"))
    }
  }

  private def pathological(r: Random): Option[JsonNode] = r.nextInt(12) match {
    case 0 => None // the field removed
    case 1 => Some(nodes.nullNode())
    case 2 => Some(nodes.numberNode(Long.MaxValue))
    case 3 => Some(nodes.numberNode(Long.MinValue))
    case 4 => Some(nodes.numberNode(-1L))
    case 5 => Some(nodes.numberNode(1e99))
    case 6 => Some(nodes.textNode("x" * (1 + r.nextInt(20000))))
    case 7 => Some(nodes.textNode("<a href=\"https://evil.example/\">sign in</a>"))
    case 8 => Some(nodes.textNode(""))
    case 9 => Some(nodes.objectNode())
    case 10 => Some(nodes.arrayNode())
    case _ => Some(nodes.booleanNode(true))
  }

  /** Every object field of `node`, nested ones too, with the object holding it. */
  private def fields(node: JsonNode): Seq[(ObjectNode, String)] = node match {
    case o: ObjectNode => o.fieldNames().asScala.toSeq.filter(_ != "Event")
      .flatMap(f => (o, f) +: fields(o.get(f)))
    case _ => Nil
  }

  /** `event` as Spark's JSON with one to three fields made pathological. */
  private def mutated(event: SparkListenerEvent, r: Random): String = {
    val tree = CheckpointJson.mapper.readTree(JsonProtocol.sparkEventToJsonString(event))
    (0 to r.nextInt(3)).foreach { _ =>
      val all = fields(tree)
      if (all.nonEmpty) {
        val (holder, name) = all(r.nextInt(all.size))
        pathological(r) match {
          case None => holder.remove(name)
          case Some(value) => holder.set[JsonNode](name, value)
        }
      }
    }
    tree.toString
  }

  test("replayed events with pathological values never break the listener, the page or the " +
    "API, and stay within the caps") {
    val r = new Random(20261207L)
    var accepted = 0
    (1 to Examples).foreach { example =>
      val kv = new InMemoryStore()
      val listener = new RockstateUiListener(kv, new SparkConf(false).setAll(Caps))
      val entries = new UiEntries(kv)
      (1 to 1 + r.nextInt(40)).foreach { _ =>
        val e = base(r)
        val line = if (r.nextInt(4) == 0) JsonProtocol.sparkEventToJsonString(e) else mutated(e, r)
        // What Spark's parser refuses stops its replay of this log: Spark's rule, not the tab's.
        Try(JsonProtocol.sparkEventFromJson(line)).toOption.foreach { parsed =>
          accepted += 1
          withClue(s"example $example, event $line") { listener.onOtherEvent(parsed) }
        }
      }
      withClue(s"example $example") {
        val byRun = entries.checkpointsByRun
        assert(entries.runs.size <= 3 && byRun.size <= 3)
        byRun.values.foreach { cs =>
          assert(cs.count(_.status == CheckpointEntry.Pending) <= 3)
          assert(cs.count(_.status != CheckpointEntry.Pending) <= 4)
          assert(cs.forall(c => c.acksKept >= 0 && c.acksKept <= c.acknowledged))
        }
        assert(kv.count(classOf[AckEntry]) <= 10 && entries.executors.size <= 4)
        val strings = byRun.values.flatten.flatMap(c => Seq(c.runId, c.queryId,
          c.checkpointRoot) ++ c.reason) ++ entries.executors.map(_.executorId) ++
          kv.view(classOf[AckEntry]).asScala.flatMap(a => Seq(a.store.storeName,
            a.store.executorId, a.store.storeDir))
        assert(strings.forall(s => s != null && s.length <= UiLimits.MaxText + 40))
        val chosen = byRun.values.flatten.toSeq
        (None +: chosen.map(c => Some((c.runId, c.version)))).foreach { pick =>
          TabContent(entries, pick.map(_._1), pick.map(_._2)).mkString
        }
        chosen.foreach(c => entries.acknowledgements(c, 0, UiLimits.ApiPage))
      }
    }
    assert(accepted > Examples) // most mutated events still reach the listener
  }
}
