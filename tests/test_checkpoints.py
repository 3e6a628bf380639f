"""The driver's checkpoint coordinator, end to end: executors acknowledge each partition's
snapshot over the plugin RPC, the driver completes checkpoints, writes their metadata, drops
subsumed ones and fails a query whose checkpoints keep failing.

The coordinator's decisions for each acknowledgement class are unit-tested on the JVM side
(CheckpointCoordinatorSuite); here they run in real Spark, on real executor JVMs.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import rockstate
from rockstate.session.providers import SPARK_HDFS_CLASS
from support import faults
from support.executors import kill_an_executor
from support.polling import wait_for
from support.queries import SCHEMA, keyed_batches, two_operators
from support.streams import assert_checkpoint_sound, assert_same_outputs, run_stream

SETTING = "spark.sql.streaming.stateStore.rockstate."
PARTITIONS = 4


def _expected_stores() -> set[tuple[int, str, int]]:
    return {(op, "default", p) for op in (0, 1) for p in range(PARTITIONS)}


def _metadata(checkpoint: Path) -> dict[int, dict]:
    out = {}
    for f in sorted((checkpoint / "rockstate" / "checkpoints").glob("*/_metadata")):
        doc = json.loads(f.read_text())
        out[doc["version"]] = doc
    return out


def _assert_files_present(checkpoint: Path, checkpoints) -> None:
    for c in checkpoints:
        for s in c.stores:
            path = checkpoint / s.store_dir / s.snapshot_manifest
            assert path.exists(), f"completed checkpoint {c.version} names missing {path}"


def test_two_operators_four_partitions_complete_checkpoints_of_eight_stores(
        cluster_spark, workdir: Path):
    spark = cluster_spark
    confs = {"spark.sql.shuffle.partitions": str(PARTITIONS)}
    batches = keyed_batches(6)  # versions 1..6: checkpoints 2, 4 and 6
    oracle = run_stream(spark, SPARK_HDFS_CLASS, two_operators, batches, workdir=workdir,
                        name="ck-oracle", schema=SCHEMA, confs=confs)
    called: list = []
    watcher = rockstate.on_checkpoint_complete(spark, called.append, poll_seconds=0.2)
    views = {}

    def last_view(i: int, query) -> None:
        if i == len(batches) - 1:
            # Snapshots upload after the commit; wait for the last one to be acknowledged.
            views["final"] = wait_for(
                lambda: (v := rockstate.checkpoints(query)).latest is not None
                and v.latest.version == 6 and v, "checkpoint 6 to complete")

    try:
        mine = run_stream(spark, rockstate.PROVIDER_CLASS, two_operators, batches,
                          workdir=workdir, name="ck", schema=SCHEMA, confs=confs,
                          after_batch=last_view)
        wait_for(lambda: 6 in {c.version for c in called}, "the callback for checkpoint 6")
    finally:
        watcher.stop()
    assert_same_outputs(oracle, mine)

    view = views["final"]
    assert view.expected_stores == 2 * PARTITIONS
    assert view.failure is None and view.consecutive_failures == 0
    assert [c.version for c in view.completed] == [2, 4, 6]  # 3 retained by default
    for c in view.completed:
        assert {(s.operator, s.store, s.partition) for s in c.stores} == _expected_stores()
        assert len(c.stores) == 2 * PARTITIONS
        assert all(s.state_bytes > 0 and s.async_ms >= 0 for s in c.stores)
    # Every partition's executor is a real executor JVM, not the driver.
    assert {s.executor_id for c in view.completed for s in c.stores} - {"driver"}
    assert "driver" not in {s.executor_id for c in view.completed for s in c.stores}

    # The metadata files say the same: exactly 2 x 4 acknowledged stores per version.
    on_disk = _metadata(mine.checkpoint)
    assert sorted(on_disk) == [2, 4, 6]
    for version, doc in on_disk.items():
        assert doc["formatVersion"] == 1 and doc["batchId"] == version - 1
        assert len(doc["stores"]) == 2 * PARTITIONS
        assert {(s["operatorId"], s["storeName"], s["partitionId"])
                for s in doc["stores"]} == _expected_stores()
        assert doc["totals"]["stores"] == 2 * PARTITIONS

    # Offline, with no Spark: the same completed checkpoints.
    offline = rockstate.checkpoints(str(mine.checkpoint))
    assert offline.completed == view.completed
    assert [c.version for c in called if c.version in (2, 4, 6)] == [2, 4, 6]
    assert rockstate.verify(str(mine.checkpoint)).ok
    _assert_files_present(mine.checkpoint, offline.completed)
    assert_checkpoint_sound(spark, mine.checkpoint, retained=5)

    # rockstate's SQL functions (how a Spark Connect client asks) answer as the plugin does,
    # on the driver; with a column they run on the executors, which have no coordinator.
    from rockstate.live.coordinator_channel import SqlFunctionChannel, channel

    sql, py4j = SqlFunctionChannel(spark), channel(spark)
    assert json.loads(sql.checkpoints_json(view.run_id)) == \
        json.loads(py4j.checkpoints_json(view.run_id))
    assert json.loads(sql.completed_since_json(-1)) == json.loads(py4j.completed_since_json(-1))
    with pytest.raises(Exception, match="answers on the driver only"):
        spark.range(2).selectExpr("rockstate_completed_since(id)").collect()

    # The snapshot figures are in the query's progress too.
    completed = sum(op["customMetrics"]["rockstateSnapshotsCompleted"]
                    for p in mine.progress for op in p["stateOperators"])
    assert completed > 0


def test_executor_killed_mid_snapshot_its_checkpoint_never_completes(cluster_spark,
                                                                      workdir: Path):
    spark = cluster_spark
    app_id = spark.sparkContext.applicationId
    # Each snapshot file takes 0.6 s to upload: version 2's snapshots are still uploading when
    # an executor is killed right after batch 1 (which commits version 2).
    confs = {"spark.sql.shuffle.partitions": str(PARTITIONS)}
    batches = keyed_batches(8)
    killed: list[int] = []
    queries: list = []

    def before(i: int) -> None:
        if i == 2:
            kill_an_executor(app_id, killed)
        if i > 2 and i % 2 == 1 and queries:
            # Batch i commits version i + 1, a checkpoint: let the previous one's uploads
            # finish first, so no store declines it for being still busy.
            wait_for(lambda: not [p for p in rockstate.checkpoints(queries[0]).pending
                                   if p.version > 2], "earlier snapshots to finish", 240)

    def remember(i: int, query) -> None:
        if not queries:
            queries.append(query)
        if i == len(batches) - 1:
            # Settled: a checkpoint after the interrupted one completed, none still pending.
            try:
                queries.append(wait_for(
                    lambda: (v := rockstate.checkpoints(query)).latest is not None
                    and v.latest.version > 2 and not v.pending and v,
                    "a later checkpoint to complete", 240))
            except AssertionError as e:
                raise AssertionError(f"{e}: {rockstate.checkpoints(query)}") from None

    oracle = run_stream(spark, SPARK_HDFS_CLASS, two_operators, batches, workdir=workdir,
                        name="ck-kill-oracle", schema=SCHEMA, confs=confs)
    with faults.slow_uploads(600):
        mine = run_stream(spark, rockstate.PROVIDER_CLASS, two_operators, batches,
                          workdir=workdir, name="ck-kill", schema=SCHEMA, confs=confs,
                          before_batch=before, after_batch=remember,
                          checkpoint=faults.on_faults(workdir / "ck-kill-checkpoint"))
    assert killed
    assert_same_outputs(oracle, mine)
    view = queries[-1]
    completed = [c.version for c in view.completed]
    assert 2 not in completed, "the checkpoint the kill interrupted must never complete"
    assert completed[-1] >= 4
    aborted = {c.version: c.reason for c in view.aborted}
    assert 2 in aborted and "subsumed" in aborted[2], aborted
    checkpoint = faults.local(mine.checkpoint)
    assert sorted(_metadata(checkpoint)) == completed
    # No completed checkpoint ever references a missing file.
    _assert_files_present(checkpoint, view.completed)
    report = rockstate.verify(str(checkpoint))
    assert report.ok, [str(p) for p in report.problems]
    assert_checkpoint_sound(spark, mine.checkpoint, retained=5, orphans_allowed=True)


def test_too_many_failed_checkpoints_fail_the_query_with_a_clear_error(spark, workdir: Path):
    # Uploads take 0.5 s a file and 4 stores share 2 upload threads, so the last
    # acknowledgements come seconds after the first: every checkpoint times out at 300 ms.
    confs = {"spark.sql.shuffle.partitions": str(PARTITIONS),
             SETTING + "checkpointTimeoutMs": "300",
             SETTING + "tolerableCheckpointFailures": "0"}
    seen: list = []

    def wait_for_failure(i: int, query) -> None:
        if i == 1:  # version 2, the first checkpoint, was just committed
            seen.append(wait_for(lambda: (v := rockstate.checkpoints(query)).failure and v,
                                  "the checkpoint to time out"))
            time.sleep(1)

    with faults.slow_uploads(500), pytest.raises(Exception) as failure:
        run_stream(spark, rockstate.PROVIDER_CLASS, two_operators, keyed_batches(4),
                   workdir=workdir, name="ck-fail", schema=SCHEMA, confs=confs,
                   after_batch=wait_for_failure,
                   checkpoint=faults.on_faults(workdir / "ck-fail-checkpoint"))
    view = seen[0]
    assert view.aborted[0].version == 2 and "expired after 300 ms" in view.aborted[0].reason
    assert "tolerableCheckpointFailures" in str(failure.value), str(failure.value)[:2000]



def test_a_batch_that_fails_after_its_acks_leaves_no_stale_checkpoint(spark, workdir: Path):
    """Batch 1 (state version 2, a checkpoint) commits its stores and every partition
    acknowledges its snapshot, then the sink fails: Spark never commits the batch. The
    checkpoint must wait for Spark's commit, and once the restarted query re-runs the batch,
    name the snapshots of the attempt whose version landed, not the failed one's."""
    src, checkpoint = workdir / "fail-src", workdir / "fail-checkpoint"
    src.mkdir()
    marker = workdir / "fail-once"
    marker.touch()
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", rockstate.PROVIDER_CLASS)

    def sink(df, batch_id: int) -> None:
        df.collect()  # the stateful job runs and its stores commit
        if batch_id == 1 and marker.exists():
            time.sleep(4)  # every acknowledgement of version 2 arrives meanwhile
            marker.unlink()
            raise RuntimeError("sink failed after the state committed")

    def start():
        return (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(src))
                .groupBy("key").agg(F.count("*").alias("n")).writeStream
                .outputMode("update").foreachBatch(sink)
                .option("checkpointLocation", str(checkpoint)).start())

    def feed(i: int) -> None:
        rows = "".join(json.dumps(r) + "\n" for r in keyed_batches(3)[i])
        (src / f".b{i}.tmp").write_text(rows)
        (src / f".b{i}.tmp").rename(src / f"b{i}.json")

    query = start()
    feed(0)
    query.processAllAvailable()
    feed(1)
    with pytest.raises(Exception, match="sink failed after the state committed"):
        query.processAllAvailable()
    query.stop()
    assert 2 not in _metadata(checkpoint), "completed a checkpoint of an uncommitted batch"
    query = start()  # batch 1 runs again, a new attempt of version 2
    try:
        query.processAllAvailable()
        metadata = wait_for(lambda: _metadata(checkpoint).get(2), "checkpoint 2 to complete")
    finally:
        query.stop()
    loc = rockstate.CheckpointLocation(str(checkpoint))
    for store in metadata["stores"]:
        ref = next(s for s in loc.stores() if s.partition == store["partitionId"]
                   and s.operator == store["operatorId"])
        landed = loc.manifest(ref, 2).changelogs[-1].path
        snapshot = loc.snapshot_manifest(ref, store["snapshotManifest"], "test")
        assert snapshot.state_id == landed, "checkpoint 2 names a replaced attempt's snapshot"
