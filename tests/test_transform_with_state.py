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
from streams import SPARK_ROCKSDB, assert_same_as_oracle, run_stream
from test_operators import BATCHES, SCHEMA

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

        def close(self):
            pass

    return Tally()


OUTPUT = "key STRING, n LONG, listed LONG, buckets LONG, fired BOOLEAN"


def _tws(time_mode: str):
    def build(s):
        return (s.withWatermark("ts", "5 minutes").groupBy("key").transformWithStateInPandas(
            _processor(time_mode == "EventTime"), OUTPUT, "update", time_mode))
    return build


@pytest.mark.parametrize("time_mode", ["EventTime", "ProcessingTime"])
def test_transform_with_state_in_pandas(spark, workdir: Path, time_mode: str):
    if not LINE.transform_with_state:
        # Spark 4.2+ runs transformWithState only on its own RocksDB provider (SPARK-54117).
        with pytest.raises(Exception, match="STORE_BACKEND_NOT_SUPPORTED_FOR_TWS"):
            run_stream(spark, rockstate.PROVIDER_CLASS, _tws(time_mode), BATCHES[:1],
                       workdir=workdir, name=f"tws-refused-{time_mode}", schema=SCHEMA)
        return
    _, mine = assert_same_as_oracle(
        spark, _tws(time_mode), BATCHES, workdir=workdir, name=f"tws-{time_mode}",
        schema=SCHEMA, oracle_provider=SPARK_ROCKSDB,
        # In processing time Spark runs a batch whenever idle (timers may be due), so the
        # query would never be caught up: only batches with data here.
        confs={} if time_mode == "EventTime" else {
            "spark.sql.streaming.noDataMicroBatches.enabled": "false"},
        state_options=[{"stateVarName": "count"}, {"stateVarName": "seen"},
                       {"stateVarName": "perValue"}])
    fired = [r for r in mine.all_rows() if r[-1] is True]
    if time_mode == "EventTime":
        assert fired, "no timer fired: the case does not cover timers"
    else:
        assert not fired
