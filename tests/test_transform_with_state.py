"""transformWithState on rockstate, where the Spark line lets a provider other than its own serve it
(``rockstate.session.spark_lines``): oracle-equal against Spark's RocksDBStateStoreProvider,
across a restart. On the lines that refuse it (4.2+, SPARK-54117), Spark's refusal is what is
asserted.
"""

from __future__ import annotations

from pathlib import Path

import pyspark
import pytest

import rockstate
from rockstate.session import spark_lines
from rockstate.session.providers import SPARK_ROCKSDB_CLASS
from support.queries import BATCHES, SCHEMA
from support.streams import assert_same_as_oracle, run_stream
from support.tws_queries import tally

LINE = spark_lines.find(pyspark.__version__)


@pytest.mark.parametrize("api", ["python", "scala"])
@pytest.mark.parametrize("time_mode", ["EventTime", "ProcessingTime"])
def test_transform_with_state(spark, workdir: Path, api: str, time_mode: str):
    name = f"tws-{api}-{time_mode}"
    if not LINE.transform_with_state:
        # Spark 4.2+ runs transformWithState only on its own RocksDB provider (SPARK-54117).
        with pytest.raises(Exception, match="STORE_BACKEND_NOT_SUPPORTED_FOR_TWS"):
            run_stream(spark, rockstate.PROVIDER_CLASS, tally(api, time_mode), BATCHES[:1],
                       workdir=workdir, name=f"{name}-refused", schema=SCHEMA)
        return
    _, mine = assert_same_as_oracle(
        spark, tally(api, time_mode), BATCHES, workdir=workdir, name=name,
        schema=SCHEMA, oracle_provider=SPARK_ROCKSDB_CLASS,
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
