"""transformWithState on rockstate, where the Spark line lets a provider other than its own serve
it (``rockstate.spark_lines``): oracle-equal against Spark's RocksDBStateStoreProvider, across a
restart. On the lines that refuse it (4.2+, SPARK-54117), Spark's refusal is what is asserted.
"""

from __future__ import annotations

from pathlib import Path

import pyspark
import pytest

import rockstate
from rockstate import spark_lines
from support.queries import BATCHES, SCHEMA
from support.streams import SPARK_ROCKSDB, assert_same_as_oracle, run_stream

LINE = spark_lines.find(pyspark.__version__)
MINUTE_MS = 60 * 1000


def _processor(event_time: bool):
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


def _seeds(s):
    return s.sparkSession.createDataFrame(SEEDS, "key STRING, n LONG")


def _tws(api: str, time_mode: str):
    """The query: the Python processor above, or its Scala twin (ScalaTally.scala, compiled
    for this Spark line by conftest) called through py4j with the same streams."""
    def python(s):
        return (s.withWatermark("ts", "5 minutes").groupBy("key").transformWithStateInPandas(
            _processor(time_mode == "EventTime"), OUTPUT, "update", time_mode,
            initialState=_seeds(s).groupBy("key")))

    def scala(s):
        from pyspark.sql import DataFrame

        jvm = s.sparkSession.sparkContext._jvm
        return DataFrame(jvm.io.rockstate.tws.ScalaTally.apply(
            s._jdf, _seeds(s)._jdf, time_mode), s.sparkSession)
    return python if api == "python" else scala


@pytest.mark.parametrize("api", ["python", "scala"])
@pytest.mark.parametrize("time_mode", ["EventTime", "ProcessingTime"])
def test_transform_with_state(spark, workdir: Path, api: str, time_mode: str):
    name = f"tws-{api}-{time_mode}"
    if not LINE.transform_with_state:
        # Spark 4.2+ runs transformWithState only on its own RocksDB provider (SPARK-54117).
        with pytest.raises(Exception, match="STORE_BACKEND_NOT_SUPPORTED_FOR_TWS"):
            run_stream(spark, rockstate.PROVIDER_CLASS, _tws(api, time_mode), BATCHES[:1],
                       workdir=workdir, name=f"{name}-refused", schema=SCHEMA)
        return
    _, mine = assert_same_as_oracle(
        spark, _tws(api, time_mode), BATCHES, workdir=workdir, name=name,
        schema=SCHEMA, oracle_provider=SPARK_ROCKSDB,
        # In processing time Spark runs a batch whenever idle (timers may be due), so the
        # query would never be caught up: only batches with data here.
        confs={} if time_mode == "EventTime" else {
            "spark.sql.streaming.noDataMicroBatches.enabled": "false"},
        state_options=[{"stateVarName": "count"}, {"stateVarName": "seen"},
                       {"stateVarName": "perValue"}])
    rows = mine.all_rows()
    # "a" starts at 100 and comes twice in the first batch.
    assert ("a", 102) in {r[:2] for r in rows}, "the initial state was not applied"
    fired = [r for r in rows if r[-1] is True]
    if time_mode == "EventTime":
        assert fired, "no timer fired: the case does not cover timers"
    else:
        assert not fired
