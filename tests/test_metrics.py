"""rockstate's figures in Spark's metrics system, read back from Spark's own CSV sink, which the
local-cluster session configures (tests/conftest.py) as a user would: no rockstate set-up.

The driver reports checkpoint totals, each executor its uploads, stores, local cache and
RocksDB memory, under the source ``plugin.io.rockstate.plugin.RockstatePlugin``.
"""

from __future__ import annotations

import csv
import json
import os
import time
from pathlib import Path

import rockstate
from support.polling import wait_for
from support.queries import SCHEMA, keyed_batches, two_operators
from support.streams import run_stream

SOURCE = "plugin.io.rockstate.plugin.RockstatePlugin"


def _values(app_id: str, process: str, metric: str) -> list[tuple[float, int]]:
    """What the CSV sink wrote for one process's metric: (time in seconds, value), oldest first."""
    path = Path(os.environ["ROCKSTATE_TEST_METRICS_DIR"]) / (
        f"{app_id}.{process}.{SOURCE}.{metric}.csv")
    if not path.exists():
        return []
    rows = list(csv.reader(path.read_text().splitlines()))[1:]
    return [(float(t), int(float(v))) for t, v in rows]


def _latest(app_id: str, process: str, metric: str) -> int | None:
    """The newest value the CSV sink wrote for one process's metric, None before any."""
    values = _values(app_id, process, metric)
    return values[-1][1] if values else None


def test_driver_and_executor_figures_reach_the_csv_sink(cluster_spark, workdir: Path):
    spark = cluster_spark
    app = spark.sparkContext.applicationId
    before = _latest(app, "driver", "checkpointsCompleted") or 0
    started = time.time()
    run_stream(spark, rockstate.PROVIDER_CLASS, two_operators, keyed_batches(4), workdir=workdir,
               name="metrics", schema=SCHEMA,
               confs={"spark.sql.shuffle.partitions": "4"})
    # Checkpoints 2 and 4 of this query; the sink writes every 2 s.
    wait_for(lambda: (_latest(app, "driver", "checkpointsCompleted") or 0) >= before + 2,
              "the driver's checkpointsCompleted to count this query's checkpoints")
    assert (_latest(app, "driver", "lastCheckpointVersion") or 0) >= 2
    assert (_latest(app, "driver", "lastCheckpointStateBytes") or 0) > 0
    assert _latest(app, "driver", "checkpointsFailed") is not None
    executors = sorted(r["executorId"] for r in json.loads(
        spark.sparkContext._jvm.io.rockstate.plugin.RockstateDriverPlugin.readyExecutorsJson()))
    assert executors and "driver" not in executors
    wait_for(lambda: all(_latest(app, e, "localCacheBytes") is not None for e in executors),
              "every executor's figures in the sink")
    assert any((_latest(app, e, "localCacheBytes") or 0) > 0 for e in executors)
    # rocksdbMemoryMB=32 in the test session, of which the default cap's 32 instances keep
    # 256 KB each outside the cache.
    assert all(_latest(app, e, "rocksdbMemoryCapacityBytes") == 24 * 1024 * 1024
               for e in executors)
    assert all(_latest(app, e, "snapshotUploadsInFlight") is not None for e in executors)
    # The session's default cap (32 instances) is above what its queries open: the query's
    # instances stay open between batches. Any figure written while it ran: once it stops,
    # Spark's maintenance unloads its stores, and the newest figure may be after that.
    wait_for(lambda: all(any(t >= started for t, _ in _values(app, e, "rocksdbInstancesOpen"))
                         for e in executors), "the open instances' figures of the query's time")
    assert any(v > 0 for e in executors
               for t, v in _values(app, e, "rocksdbInstancesOpen") if t >= started)
    assert all(_latest(app, e, "rocksdbInstancesClosedForCap") == 0 for e in executors)
    assert all(_latest(app, e, "nativeHeapTrims") is not None for e in executors)
