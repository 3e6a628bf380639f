"""rockstate with real executor JVMs: local-cluster[2,1,1024].

What crosses executor and driver goes through Spark's own channels (the plugin RPC), and an
executor killed mid-query comes back with its state restored from the checkpoint location.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import rockstate
from streams import HDFS, assert_checkpoint_sound, assert_same_outputs, run_stream

pytestmark = pytest.mark.cluster

SCHEMA = "key STRING, value INT, ts TIMESTAMP"


def _ready_executors(spark) -> list[dict]:
    jvm = spark.sparkContext._jvm
    return json.loads(jvm.io.rockstate.plugin.RockstateDriverPlugin.readyExecutorsJson())


def _wait_for(predicate, what: str, attempts: int = 120):
    # Polls a condition the cluster reaches on its own; the bound only stops a hang.
    for _ in range(attempts):
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _executor_pids(app_id: str) -> list[int]:
    out = subprocess.run(["ps", "-eww", "-o", "pid=,args="], capture_output=True, text=True,
                         check=True)
    return [int(line.split()[0]) for line in out.stdout.splitlines()
            if "CoarseGrainedExecutorBackend" in line and app_id in line]


def test_every_executor_reports_its_shared_memory_to_the_driver(cluster_spark):
    spark = cluster_spark
    spark.range(100).repartition(4).count()  # make sure executors are up
    ready = _wait_for(lambda: len(_ready_executors(spark)) >= 2 and _ready_executors(spark),
                      "two executors to report")
    assert {r["blockCacheBytes"] for r in ready} == {32 * 1024 * 1024}
    assert len({r["executorId"] for r in ready}) >= 2


SETTING = "spark.sql.streaming.stateStore.rockstate."


def _kill_an_executor(app_id: str, killed: list[int]) -> None:
    """SIGKILLs one executor JVM and waits for the worker to start its replacement."""
    pids = [p for p in _executor_pids(app_id) if p not in killed]
    assert pids, "no executor JVMs found to kill"
    os.kill(pids[0], signal.SIGKILL)
    killed.append(pids[0])
    _wait_for(lambda: len([p for p in _executor_pids(app_id) if p not in killed]) >= 2,
              "the worker to start a replacement executor")


def _build(s):
    return s.groupBy("key").agg(F.count("*").alias("n"), F.sum("value").alias("t"))


def _batches(n: int) -> list[list[dict]]:
    return [[{"key": f"k{(b * 7 + i) % 40}", "value": i, "ts": "2026-01-01 00:00:00"}
             for i in range(30)] for b in range(n)]


def _run_with_kill(spark, workdir: Path, name: str, n: int, kill_before: int,
                   confs: dict[str, str] | None = None, checkpoint: str | None = None):
    """Runs the oracle and rockstate; SIGKILLs an executor JVM before batch ``kill_before``.
    ``confs`` apply to rockstate's run only; ``checkpoint`` puts its checkpoint at that URL."""
    app_id = spark.sparkContext.applicationId
    batches = _batches(n)
    oracle = run_stream(spark, HDFS, _build, batches, workdir=workdir, name=f"{name}-oracle",
                        schema=SCHEMA)
    killed: list[int] = []

    def kill_an_executor(i: int) -> None:
        if i == kill_before:
            _kill_an_executor(app_id, killed)

    mine = run_stream(spark, rockstate.PROVIDER_CLASS, _build, batches, workdir=workdir,
                      name=name, schema=SCHEMA, before_batch=kill_an_executor, confs=confs,
                      checkpoint=checkpoint)
    assert killed, "the executor was not killed"
    assert_same_outputs(oracle, mine)
    # Killed uploads leave orphans (collected after the grace period); nothing is missing.
    assert_checkpoint_sound(spark, mine.checkpoint, retained=5, orphans_allowed=True)
    return mine


def test_killed_executor_restores_state_from_the_checkpoint(cluster_spark, workdir: Path):
    mine = _run_with_kill(cluster_spark, workdir, "kill", n=6, kill_before=3)
    downloaded = sum(p["stateOperators"][0]["customMetrics"]["rockstateBytesDownloaded"]
                     for p in mine.progress if p["batchId"] >= 3)
    assert downloaded > 0, "the lost partitions should have been restored by download"


def test_executor_killed_during_a_snapshot_upload_loses_nothing(cluster_spark, workdir: Path):
    # Each snapshot file takes 1.5 s to upload: the snapshot version 2 started is still
    # uploading when the executor dies two batches later.
    _run_with_kill(cluster_spark, workdir, "kill-upload", n=6, kill_before=3,
                   confs={SETTING + "testing.snapshotUploadDelayMs": "1500"})


def test_executor_killed_during_cleanup_loses_nothing(cluster_spark, workdir: Path):
    # From version 6 on cleanup expires versions every second and pauses 3 s between deleting
    # manifests and deleting their files: the kill lands inside a cleanup.
    _run_with_kill(cluster_spark, workdir, "kill-cleanup", n=10, kill_before=8,
                   confs={SETTING + "testing.cleanupDelayMs": "3000"})
