"""The transformWithState query the suites run: a processor with value, list and map state (and
timers in event time, TTLs in processing time), in Python or its Scala twin
(``jvm-shim/src/test/scala/io/rockstate/tws/ScalaTally.scala``)."""

from __future__ import annotations

MINUTE_MS = 60 * 1000


def processor(event_time: bool):
    """Value, list and map state. In event time, a timer per key that reports and clears the
    key when it fires; in processing time, TTLs instead (long: nothing expires, but Spark keeps
    their index column families and timestamps), as Spark allows TTL only there."""
    import pandas as pd
    from pyspark.sql.streaming import StatefulProcessor

    class Tally(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            ttl = None if event_time else 24 * 3600 * 1000
            self.count = handle.getValueState("count", "n LONG", ttl)
            self.seen = handle.getListState("seen", "v INT", ttl)
            self.per_value = handle.getMapState("perValue", "v INT", "c LONG", ttl)

        def handleInputRows(self, key, rows, timerValues):
            n = self.count.get()[0] if self.count.exists() else 0
            for pdf in rows:
                for v in pdf["value"]:
                    n += 1
                    self.seen.appendValue((int(v) % 7,))
                    bucket = (int(v) % 3,)
                    c = self.per_value.getValue(bucket)[0] if self.per_value.containsKey(
                        bucket) else 0
                    self.per_value.updateValue(bucket, (c + 1,))
            self.count.update((n,))
            if event_time:
                for t in list(self.handle.listTimers()):
                    self.handle.deleteTimer(t)
                self.handle.registerTimer(timerValues.getCurrentWatermarkInMs() + 10 * MINUTE_MS)
            yield pd.DataFrame({"key": [key[0]], "n": [n],
                                "listed": [sum(1 for _ in self.seen.get())],
                                "buckets": [sum(1 for _ in self.per_value.iterator())],
                                "fired": [False]})

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            n = self.count.get()[0] if self.count.exists() else 0
            self.count.clear()
            self.seen.clear()
            self.per_value.clear()
            yield pd.DataFrame({"key": [key[0]], "n": [n], "listed": [0], "buckets": [0],
                                "fired": [True]})

        def handleInitialState(self, key, initialState, timerValues):
            self.count.update((int(initialState["n"].iloc[0]),))

        def close(self):
            pass

    return Tally()


OUTPUT = "key STRING, n LONG, listed LONG, buckets LONG, fired BOOLEAN"
# Starting counts: for keys the input has, and for one it never has.
SEEDS = [("a", 100), ("d", 5), ("z", 7)]


def seeds(s):
    return s.sparkSession.createDataFrame(SEEDS, "key STRING, n LONG")


def tally(api: str, time_mode: str):
    """The query: the Python processor above, or its Scala twin (ScalaTally.scala, compiled
    for this Spark line by conftest) called through py4j with the same streams."""
    def python(s):
        return (s.withWatermark("ts", "5 minutes").groupBy("key").transformWithStateInPandas(
            processor(time_mode == "EventTime"), OUTPUT, "update", time_mode,
            initialState=seeds(s).groupBy("key")))

    def scala(s):
        from pyspark.sql import DataFrame

        jvm = s.sparkSession.sparkContext._jvm
        return DataFrame(jvm.io.rockstate.tws.ScalaTally.apply(
            s._jdf, seeds(s)._jdf, time_mode), s.sparkSession)
    return python if api == "python" else scala
