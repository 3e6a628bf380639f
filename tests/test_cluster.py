"""rockstate with real executor JVMs: local-cluster[2,1,1024].

What crosses executor and driver goes through Spark's own channels (the plugin RPC), and an
executor killed mid-query comes back with its state restored from the checkpoint location.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import faults
from support.executors import run_with_executor_kill
from support.polling import wait_for


def _ready_executors(spark) -> list[dict]:
    jvm = spark.sparkContext._jvm
    return json.loads(jvm.io.rockstate.plugin.RockstateDriverPlugin.readyExecutorsJson())


def test_every_executor_reports_its_shared_memory_to_the_driver(cluster_spark):
    spark = cluster_spark
    spark.range(100).repartition(4).count()  # make sure executors are up
    ready = wait_for(lambda: len(_ready_executors(spark)) >= 2 and _ready_executors(spark),
                     "two executors to report")
    # rocksdbMemoryMB=32: the bound, of which the default cap's 32 instances keep 256 KB each.
    assert {r["memoryBoundBytes"] for r in ready} == {32 * 1024 * 1024}
    assert {r["openInstanceCap"] for r in ready} == {32}
    assert {r["blockCacheBytes"] for r in ready} == {24 * 1024 * 1024}
    assert len({r["executorId"] for r in ready}) >= 2



def test_killed_executor_restores_state_from_the_checkpoint(cluster_spark, workdir: Path):
    mine = run_with_executor_kill(cluster_spark, workdir, "kill", n=6, kill_before=3)
    downloaded = sum(p["stateOperators"][0]["customMetrics"]["rockstateBytesDownloaded"]
                     for p in mine.progress if p["batchId"] >= 3)
    assert downloaded > 0, "the lost partitions should have been restored by download"
    # The driver forgets the killed executor: what it lists as ready is what Spark runs.
    live = set(str(cluster_spark.sparkContext._jsc.sc().getExecutorIds().mkString(",")).split(","))
    wait_for(lambda: {r["executorId"] for r in _ready_executors(cluster_spark)} == live,
             f"the driver's ready executors to be Spark's live ones {sorted(live)}")


@pytest.mark.main_line_only  # rockstate's own protocol: one kill runs on every line
def test_executor_killed_during_a_snapshot_upload_loses_nothing(cluster_spark, workdir: Path):
    # Each snapshot file takes 1.5 s to upload: the snapshot version 2 started is still
    # uploading when the executor dies two batches later.
    with faults.slow_uploads(1500):
        run_with_executor_kill(cluster_spark, workdir, "kill-upload", n=6, kill_before=3,
                               checkpoint=faults.on_faults(workdir / "kill-upload-checkpoint"))


@pytest.mark.main_line_only  # rockstate's own protocol: one kill runs on every line
def test_executor_killed_during_cleanup_loses_nothing(cluster_spark, workdir: Path):
    # From version 6 on cleanup expires versions every second and pauses 3 s after each version
    # file it deletes: the kill lands inside a cleanup.
    with faults.slow_cleanup(3000):
        run_with_executor_kill(cluster_spark, workdir, "kill-cleanup", n=10, kill_before=8,
                               checkpoint=faults.on_faults(workdir / "kill-cleanup-checkpoint"))


def test_a_stopped_local_cluster_session_leaves_nothing_in_sparks_home(sessions, cluster_spark):
    # Its executors copied every jar of the application into $SPARK_HOME/work/<app id>.
    from rockstate.session import local_cluster

    cluster_spark.range(10).repartition(2).count()
    folder = local_cluster.application_work_folder(cluster_spark)
    assert folder is not None and any(folder.rglob("rockstate-shim.jar")), folder
    sessions.stop()  # as every local-cluster session of the tests, the benches and nexmark
    assert not folder.exists()
