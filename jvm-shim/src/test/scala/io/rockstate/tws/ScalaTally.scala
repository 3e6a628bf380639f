package io.rockstate.tws

import java.sql.Timestamp
import java.time.Duration

import org.apache.spark.sql.{DataFrame, Encoders}
import org.apache.spark.sql.streaming.{ExpiredTimerInfo, ListState, MapState, OutputMode, StatefulProcessorWithInitialState, TTLConfig, TimeMode, TimerValues, ValueState}

/** One input event: the columns of the Python suites' streams (key, value, ts). */
final case class Event(key: String, value: Int, ts: Timestamp)

/** What the processor emits per key and batch, and when a key's timer fires. */
final case class Tally(key: String, n: Long, listed: Long, buckets: Long, fired: Boolean)

/** A key's starting count, from the initial state. */
final case class Seed(key: String, n: Long)

/**
 * The Scala twin of the Python suite's transformWithStateInPandas processor: value, list and
 * map state; in event time a timer per key that reports and clears the key when it fires, in
 * processing time TTLs (long: nothing expires, but Spark keeps their index families) instead;
 * the count of a key may start from an initial state. Used by tests/test_transform_with_state.py,
 * which compiles this file for the installed Spark line and runs it against Spark's own
 * RocksDB provider as the oracle.
 */
final class TallyProcessor(eventTime: Boolean)
    extends StatefulProcessorWithInitialState[String, Event, Tally, Seed] {

  @transient private var count: ValueState[Long] = _
  @transient private var seen: ListState[Int] = _
  @transient private var perValue: MapState[Int, Long] = _

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    val ttl = if (eventTime) TTLConfig.NONE else TTLConfig(Duration.ofDays(1))
    val h = getHandle
    count = h.getValueState[Long]("count", Encoders.scalaLong, ttl)
    seen = h.getListState[Int]("seen", Encoders.scalaInt, ttl)
    perValue = h.getMapState[Int, Long]("perValue", Encoders.scalaInt, Encoders.scalaLong, ttl)
  }

  override def handleInitialState(key: String, seed: Seed, timerValues: TimerValues): Unit =
    count.update(seed.n)

  override def handleInputRows(key: String, rows: Iterator[Event],
      timerValues: TimerValues): Iterator[Tally] = {
    val start = if (count.exists()) count.get() else 0L
    val n = rows.foldLeft(start) { (n, e) =>
      seen.appendValue(e.value % 7)
      val bucket = e.value % 3
      perValue.updateValue(bucket, (if (perValue.containsKey(bucket)) perValue.getValue(bucket)
        else 0L) + 1)
      n + 1
    }
    count.update(n)
    if (eventTime) {
      getHandle.listTimers().toList.foreach(t => getHandle.deleteTimer(t))
      getHandle.registerTimer(timerValues.getCurrentWatermarkInMs() + Duration.ofMinutes(10)
        .toMillis)
    }
    Iterator.single(Tally(key, n, seen.get().size.toLong, perValue.iterator().size.toLong,
      fired = false))
  }

  override def handleExpiredTimer(key: String, timerValues: TimerValues,
      expiredTimerInfo: ExpiredTimerInfo): Iterator[Tally] = {
    val n = if (count.exists()) count.get() else 0L
    count.clear()
    seen.clear()
    perValue.clear()
    Iterator.single(Tally(key, n, 0L, 0L, fired = true))
  }
}

/** Entry points the Python suite calls through py4j with its streaming DataFrame. */
object ScalaTally {
  def apply(events: DataFrame, seeds: DataFrame, timeMode: String): DataFrame = {
    val eventTime = timeMode == "EventTime"
    val mode = if (eventTime) TimeMode.EventTime() else TimeMode.ProcessingTime()
    val initial = seeds.as(Encoders.product[Seed]).groupByKey(_.key)(Encoders.STRING)
    events.withWatermark("ts", "5 minutes").as(Encoders.product[Event])
      .groupByKey(_.key)(Encoders.STRING)
      .transformWithState(new TallyProcessor(eventTime), mode, OutputMode.Update(), initial)(
        Encoders.product[Tally], Encoders.product[Seed])
      .toDF()
  }
}
