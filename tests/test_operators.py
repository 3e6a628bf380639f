"""Every stateful operator on rockstate gives the oracle's output and state (local[2]).

Each query runs over six micro-batches with a restart before the third, once on Spark's
HDFSBackedStateStoreProvider and once on rockstate, and both must agree batch for batch.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import functions as F

import rockstate
from rockstate.session.providers import FLOOR_CLASS, SPARK_HDFS_CLASS
from support import faults
from support.queries import BATCHES, SCHEMA, events, join, pandas_count_until_timeout, sided
from support.savepoints import settled
from support.streams import assert_same_as_oracle, assert_same_outputs, run_stream

# The other Spark lines' leg (dev/test-spark-line) runs one query of each way an operator uses
# the store (get/put, removal by watermark, a join's four stores, prefix scans, timeouts) and
# the rockstate-specific tests; the cases marked here run on the main line only.
MAIN_LINE_ONLY = pytest.mark.main_line_only


def test_query_state_lives_in_rockstate(spark, workdir: Path):
    run = run_stream(
        spark, rockstate.PROVIDER_CLASS,
        lambda s: s.groupBy("key").agg(F.sum("value").alias("total")),
        BATCHES[:3], workdir=workdir, name="agg", schema=SCHEMA)
    # Spark records the provider of a checkpoint in its offset log and keeps it on restart.
    assert rockstate.provider_class(run.checkpoint) == rockstate.PROVIDER_CLASS
    # One version file per commit: its lineage and the batch's changes.
    versions = sorted(p.name.split("-")[0] for p in
                      (run.checkpoint / "state" / "0" / "0" / "versions").glob("*.rsv"))
    assert versions == ["1", "2", "3"]
    metrics = run.progress[-1]["stateOperators"][0]["customMetrics"]
    assert metrics["rockstateCommitBytes"] > 0
    assert metrics["rockstateChangelogRecords"] > 0
    # What the batch's reads cost in blocks reaches the progress too (its values: the JVM's
    # ThreadBlockReadsSuite; this small state is read from memtables, so none from files).
    assert {"rockstateBlockCacheHits", "rockstateBlocksRead", "rockstateIndexBlocksRead",
            "rockstateFilterBlocksRead", "rockstateBlockBytesRead"} <= metrics.keys()


@pytest.mark.parametrize("mode", ["update", pytest.param("complete", marks=MAIN_LINE_ONLY)])
def test_aggregation(spark, workdir: Path, mode: str):
    assert_same_as_oracle(
        spark,
        lambda s: s.groupBy("key").agg(F.count("*").alias("n"), F.sum("value").alias("total"),
                                       F.max("ts").alias("last")),
        BATCHES, workdir=workdir, name=f"agg-{mode}", schema=SCHEMA, output_mode=mode)


@MAIN_LINE_ONLY
def test_windowed_aggregation_append_with_watermark(spark, workdir: Path):
    assert_same_as_oracle(
        spark,
        lambda s: s.withWatermark("ts", "5 minutes")
        .groupBy(F.window("ts", "5 minutes"), "key").agg(F.count("*").alias("n")),
        BATCHES, workdir=workdir, name="window-append", schema=SCHEMA, output_mode="append")


@MAIN_LINE_ONLY
def test_struct_key_aggregation(spark, workdir: Path):
    assert_same_as_oracle(
        spark,
        lambda s: s.groupBy(F.struct(F.col("key"), (F.col("value") % 2).alias("odd")).alias("k"))
        .agg(F.collect_list("value").alias("values")),
        BATCHES, workdir=workdir, name="struct-key", schema=SCHEMA, output_mode="update",
        state_options=())  # collect_list state is order-sensitive only in output; checked there


@MAIN_LINE_ONLY
def test_drop_duplicates(spark, workdir: Path):
    assert_same_as_oracle(
        spark, lambda s: s.dropDuplicates(["key"]),
        BATCHES, workdir=workdir, name="dedup", schema=SCHEMA, output_mode="append")


def test_drop_duplicates_within_watermark(spark, workdir: Path):
    assert_same_as_oracle(
        spark,
        lambda s: s.withWatermark("ts", "10 minutes").dropDuplicatesWithinWatermark(["key"]),
        BATCHES, workdir=workdir, name="dedup-wm", schema=SCHEMA, output_mode="append")


@pytest.mark.parametrize("kind", [pytest.param("inner", marks=MAIN_LINE_ONLY),
                                  pytest.param("left_outer", marks=MAIN_LINE_ONLY), "full_outer"])
def test_stream_stream_join(spark, workdir: Path, kind: str):
    assert_same_as_oracle(
        spark, join(kind), sided(BATCHES), workdir=workdir, name=f"join-{kind}",
        schema=SCHEMA, output_mode="append", sources=2,
        state_options=({"joinSide": "left"}, {"joinSide": "right"}))


def test_session_window(spark, workdir: Path):
    assert_same_as_oracle(
        spark,
        lambda s: s.withWatermark("ts", "5 minutes")
        .groupBy(F.session_window("ts", "3 minutes"), "key").agg(F.sum("value").alias("total")),
        BATCHES, workdir=workdir, name="session", schema=SCHEMA, output_mode="append")


def test_apply_in_pandas_with_state_event_time_timeout(spark, workdir: Path):
    assert_same_as_oracle(
        spark, pandas_count_until_timeout,
        BATCHES, workdir=workdir, name="pandas-state", schema=SCHEMA, output_mode="append")


SETTING = "spark.sql.streaming.stateStore.rockstate."


def _metrics(run) -> list[dict]:
    return [p["stateOperators"][0]["customMetrics"] for p in run.progress]


def test_commits_write_the_change_and_snapshots_share_files(spark, workdir: Path):
    """A 1-key batch on a 20k-key state commits a few hundred bytes; snapshots reuse SSTs."""
    big = [{"key": f"key-{i:06d}", "value": i, "ts": "2026-01-01 00:00:00"} for i in range(20000)]
    small = [{"key": "key-000001", "value": 1, "ts": "2026-01-01 00:00:00"}]
    run = run_stream(
        spark, rockstate.PROVIDER_CLASS,
        lambda s: s.groupBy("key").agg(F.sum("value").alias("total")),
        [big] + [small] * 6, workdir=workdir, name="incremental", schema=SCHEMA)
    first, *later = _metrics(run)
    assert run.progress[0]["stateOperators"][0]["numRowsTotal"] == 20000
    for m in later:
        assert m["rockstateChangelogRecords"] == 1  # one key changed, in one partition
        assert m["rockstateCommitBytes"] * 50 < first["rockstateCommitBytes"], m
    # Snapshots every 2 versions: the later ones upload the new SST and share the rest.
    assert sum(m["rockstateSnapshotsCompleted"] for m in later) >= 2
    assert sum(m["rockstateBytesReused"] for m in later) > 0
    assert sum(m["rockstateSnapshotsFailed"] for m in _metrics(run)) == 0


def test_snapshots_stay_on_their_interval_because_spark_hears_of_them(spark, workdir: Path):
    """Spark's StateStoreCoordinator (4.1+) asks a store it believes lags for a snapshot on every
    commit; rockstate reports each uploaded snapshot to it, so none is forced: over 16 batches
    with a snapshot every 2 versions (the session's interval), every snapshot is of an even
    version. Unreported, Spark forced one from about version 13 on (odd versions too)."""
    batches = [events(b, "abcdefgh"[: b % 8 + 1]) for b in range(16)]
    run = run_stream(
        spark, rockstate.PROVIDER_CLASS, lambda s: s.groupBy("key").agg(F.count("*").alias("n")),
        batches, workdir=workdir, name="coordinator", schema=SCHEMA,
        confs={"spark.sql.streaming.stateStore.minDeltasForSnapshot": "2"})
    snapshots = [int(p.name.split("-")[0]) for p in
                 (Path(run.checkpoint) / "state" / "0" / "0" / "snapshots").glob("*.json")]
    assert max(snapshots) >= 14, snapshots
    assert all(v % 2 == 0 for v in snapshots), sorted(snapshots)


def test_restarted_query_recovers_locally_and_downloads_nothing(spark, workdir: Path):
    batches = [events(b, "abcdefgh"[: b + 2]) for b in range(5)]
    run = run_stream(
        spark, rockstate.PROVIDER_CLASS,
        lambda s: s.groupBy("key").agg(F.count("*").alias("n")),
        batches, workdir=workdir, name="local-recovery", schema=SCHEMA, restart_at=3)
    after_restart = _metrics(run)[3]
    assert after_restart["rockstateBytesDownloaded"] == 0, after_restart
    assert after_restart["rockstateChangelogsReplayed"] > 0  # rebuilt from local files


def test_restart_at_a_snapshot_version_loads_that_snapshot(spark, workdir: Path):
    """A snapshot uploads after its commit, so version 2's file names no snapshot (version 1
    has none). A restart there replayed both changelogs, a first batch of 100,064 keys among
    them; the fresh load now starts from version 2's own snapshot, which had landed."""
    first = [{"key": f"key-{i:06d}", "value": i, "ts": "2026-01-01 00:00:00"}
             for i in range(100_064)]
    one = [{"key": "key-000001", "value": 1, "ts": "2026-01-01 00:00:00"}]
    jvm = spark.sparkContext._jvm

    def snapshots_landed(i: int, _query) -> None:
        if i == 1:
            assert jvm.io.rockstate.plugin.LocalDiagnostics.awaitUploadsIdle(60000)

    run = run_stream(
        spark, rockstate.PROVIDER_CLASS,
        lambda s: s.groupBy("key").agg(F.count("*").alias("n")),
        [first, one, one], workdir=workdir, name="restart-at-snapshot", schema=SCHEMA,
        restart_at=2, after_batch=snapshots_landed,
        confs={"spark.sql.shuffle.partitions": "1"})
    after_restart = _metrics(run)[2]
    assert after_restart["rockstateChangelogsReplayed"] == 0, after_restart
    assert run.outputs[2] == [("key-000001", 3)]


@MAIN_LINE_ONLY  # Spark 4.1+: 4.0 has no unloadOnCommit
def test_unload_on_commit_keeps_snapshots_and_rebases_onto_them(spark, workdir: Path):
    """Spark's unloadOnCommit closes each store as its task ends (maintenance first). A slow
    snapshot upload still lands (the maintenance waits for it) and the store's next instance
    rebases onto it, so a load replays only the changes since that snapshot (snapshotInterval
    2: one changelog a partition); output and state agree with the oracle's.

    Spark's maintenance thread, once a query without unloadOnCommit started it, also takes
    these instances away mid-batch (none is ever reported active) and closes them on its own
    pool, with no task waiting for their uploads: the next instance then opens while the
    previous one still uploads, and must wait for it at its commit. Each task here outlasts
    the maintenance interval (1 s), so a tick falls in it."""
    @F.pandas_udf("long")
    def outlasting_a_tick(total: pd.Series) -> pd.Series:
        time.sleep(1.5)  # runs in the stateful task, between its load and its commit
        return total

    def agg(s):
        return (s.groupBy("key").agg(F.sum("value").alias("total"))
                .withColumn("total", outlasting_a_tick("total")))

    run_stream(spark, rockstate.PROVIDER_CLASS, agg, BATCHES[:1], workdir=workdir,
               name="starts-maintenance", schema=SCHEMA, restart_at=None)
    batches = [events(b, "abcdefgh"[b % 4: b % 4 + 4]) for b in range(6)]
    with faults.slow_uploads(2000):
        _, run = assert_same_as_oracle(
            spark, agg, batches,
            workdir=workdir, name="unload-on-commit", schema=SCHEMA, restart_at=None,
            confs={"spark.sql.streaming.stateStore.unloadOnCommit": "true"},
            checkpoint_root=faults.on_faults(workdir))
    snapshots = sorted(int(p.name.split("-")[0]) for p in
                       (faults.local(run.checkpoint) / "state" / "0" / "0" / "snapshots")
                       .glob("*.json"))
    assert snapshots and snapshots[-1] == len(batches), snapshots
    metrics = _metrics(run)
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    # Every batch after the first is a fresh instance loading from local files...
    assert all(m["rockstateLoadMs"] > 0 or m["rockstateChangelogsReplayed"] > 0
               for m in metrics[1:]), metrics
    assert all(m["rockstateBytesDownloaded"] == 0 for m in metrics), metrics
    # ...and a version after a snapshot loads from it: a changelog a partition, not the chain.
    replayed = [m["rockstateChangelogsReplayed"] for m in metrics]
    assert replayed[3::2] == [partitions] * len(metrics[3::2]), _lineages(run, metrics)


def test_max_open_stores_closes_idle_instances_and_reopens_them_like_the_oracle(
        spark, workdir: Path):
    """maxOpenStores=1 on 4 partitions: after each release the executor closes every other
    idle RocksDB instance, so each batch reopens most stores from their flushed local
    directories (nothing replayed or downloaded); output and state agree with the oracle's."""
    batches = [events(b, "abcdefgh"[b % 4: b % 4 + 4]) for b in range(6)]
    _, run = assert_same_as_oracle(
        spark, lambda s: s.groupBy("key").agg(F.sum("value").alias("total")), batches,
        workdir=workdir, name="max-open-stores", schema=SCHEMA, restart_at=None,
        confs={"spark.sql.shuffle.partitions": "4"},
        rockstate_confs={SETTING + "maxOpenStores": "1"})
    metrics = _metrics(run)
    # Each batch after the first reopens at least two of the four as they closed, with the
    # version their last commit made: no changelog is replayed.
    assert all(m["rockstateInstancesReopened"] >= 2 for m in metrics[1:]), metrics
    assert all(m["rockstateChangelogsReplayed"] == 0 for m in metrics), metrics
    assert all(m["rockstateBytesDownloaded"] == 0 for m in metrics), metrics


@MAIN_LINE_ONLY  # rockstate's own cap: the same code on every line
def test_the_default_cap_closes_instances_past_one_per_mb_of_the_bound(spark, workdir: Path):
    """No maxOpenStores set: the executor's cap is one instance per MB of its bound, and a query
    with more partitions than that has its idle instances closed between batches and reopened
    from local files, with the oracle's output and state."""
    diagnostics = spark.sparkContext._jvm.io.rockstate.plugin.LocalDiagnostics
    cap = diagnostics.openInstanceCap()
    assert cap >= 0, "the session's stores set up the executor's memory"
    assert cap * 1024 * 1024 == diagnostics.rocksdbMemoryBoundBytes()  # the default: one per MB
    closed_before = diagnostics.instancesClosedForCap()
    batches = [events(b, "abcdefgh") for b in range(3)]
    _, run = assert_same_as_oracle(
        spark, lambda s: s.groupBy("key").agg(F.sum("value").alias("total")), batches,
        workdir=workdir, name="default-cap", schema=SCHEMA, restart_at=None,
        confs={"spark.sql.shuffle.partitions": str(cap + 8)})
    assert diagnostics.instancesClosedForCap() > closed_before
    # At most the cap, but for the two task slots' stores.
    assert diagnostics.openInstances() <= cap + 2
    assert sum(m["rockstateInstancesReopened"] for m in _metrics(run)) > 0, _metrics(run)


def _lineages(run, metrics: list[dict]) -> str:
    """What a failed lineage check needs: each batch's load figures, and each version's base
    snapshot and changelog count in every store of operator 0 (from its version files)."""
    keys = ("rockstateChangelogsReplayed", "numSnapshotsAutoRepaired", "rockstateSnapshotsFailed",
            "rockstateLoadMs", "rockstateBytesDownloaded")
    lines = [f"batch {b}: " + ", ".join(f"{k}={m.get(k)}" for k in keys)
             for b, m in enumerate(metrics)]
    loc = rockstate.CheckpointLocation(str(faults.local(run.checkpoint)))
    for store in loc.stores(operator=0):
        for version in loc.versions(store):
            m = loc.manifest(store, version)
            base = m.snapshot.version if m.snapshot else 0
            lines.append(f"partition {store.partition} version {version}: snapshot {base} + "
                         f"{len(m.changelogs)} changelogs")
    return "\n".join(lines)


def test_row_checksums_agree_with_the_oracle_and_stay_with_the_checkpoint(spark, workdir: Path):
    """A query with row checksums (Spark's rowChecksum.enabled, every line): output and state
    are the oracle's across a restart, every version of every store says so (format 4), and
    ``verify`` checks every changed row. The restart runs with the setting off: a checkpoint
    keeps what it was created with."""
    key = "spark.sql.streaming.stateStore.rowChecksum.enabled"
    turned_off: dict[str, bool] = {}

    def restart_without_the_setting(query, checkpoint):
        query.stop()
        spark.conf.set(key, "false")
        turned_off["done"] = True
        return checkpoint

    try:
        _, run = assert_same_as_oracle(
            spark, lambda s: s.groupBy("key").agg(F.sum("value").alias("total")), BATCHES,
            workdir=workdir, name="row-checksums", schema=SCHEMA, restart_at=3,
            rockstate_confs={key: "true"}, relocate=restart_without_the_setting)
    finally:
        spark.conf.unset(key)
    assert turned_off
    loc = rockstate.CheckpointLocation(str(run.checkpoint))
    stores = loc.stores(0)
    assert stores and all(loc.manifest(s, v).row_checksums
                          for s in stores for v in loc.versions(s))
    report = rockstate.verify(str(run.checkpoint))
    assert report.ok, [str(p) for p in report.problems]


def test_query_stopped_while_a_snapshot_uploads_loses_nothing(spark, workdir: Path):
    """Stop between a snapshot's local part and its upload; restart; nothing is lost."""
    batches = [events(b, "abcdefgh"[b % 4: b % 4 + 4]) for b in range(6)]
    with faults.slow_uploads(700):
        assert_same_as_oracle(
            spark, lambda s: s.groupBy("key").agg(F.sum("value").alias("total")), batches,
            workdir=workdir, name="stop-mid-upload", schema=SCHEMA, restart_at=2,
            checkpoint_root=faults.on_faults(workdir))


@MAIN_LINE_ONLY
def test_a_damaged_snapshot_is_repaired_on_restart_and_the_query_agrees_with_the_oracle(
        spark, workdir: Path):
    """The query stops after batch 3; in a copy of its checkpoint one SST of the snapshot
    partition 0's version 4 is built on loses half its bytes, and the query restarts from the
    copy. The load rebuilds version 4 from an older snapshot (or empty state) plus the
    changelogs since (automatic snapshot repair, on by default), counts it in
    ``numSnapshotsAutoRepaired``, and the query's output and state are the oracle's."""
    damaged: dict[str, object] = {}

    def damage_partition_0s_snapshot(query, checkpoint: Path) -> Path:
        query.stop()
        settled(checkpoint)  # the last snapshot uploads have landed
        copy = workdir / "repair-copy"
        shutil.copytree(checkpoint, copy)
        loc = rockstate.CheckpointLocation(str(copy))
        store = next(s for s in loc.stores(0) if s.partition == 0)
        version = loc.versions(store)[-1]
        m = loc.manifest(store, version)
        assert m.snapshot is not None, m
        newest = loc.snapshot_manifest(store, m.snapshot.path, "test")
        sst = next(f for f in newest.files if f.kind == "sst")
        path = Path(store.path) / sst.path
        path.write_bytes(path.read_bytes()[:sst.size // 2])
        damaged.update(version=version, snapshot=m.snapshot.version)
        return copy

    _, mine = assert_same_as_oracle(
        spark, lambda s: s.groupBy("key").agg(F.sum("value").alias("total")), BATCHES,
        workdir=workdir, name="repair", schema=SCHEMA, restart_at=4,
        relocate=damage_partition_0s_snapshot)
    assert damaged["version"] == 4 and damaged["snapshot"] >= 2, damaged
    repaired = [p["stateOperators"][0]["customMetrics"].get("numSnapshotsAutoRepaired", 0)
                for p in mine.progress if p["batchId"] >= 4]
    assert repaired[0] == 1 and sum(repaired) == 1, repaired


# The benches' floor (bench/provider_bench.py --providers ...,floor), FLOOR_CLASS: the test
# kit's benchmark-only provider, state in memory and nothing written. The benches run on the
# main line: so do its tests.


@MAIN_LINE_ONLY
def test_the_benches_floor_gives_the_oracles_output_and_writes_no_state(spark, workdir: Path):
    """The benches' aggregation on the floor agrees with the oracle batch for batch, across a
    restart in the same JVM whose last batch runs again (its commit dropped from the commit
    log, as a query stopped between the state commit and the commit log would): the restarted
    query's new providers find the state in the JVM and go back a version by its undo log. The
    store writes nothing: state/ holds only Spark's own metadata."""
    def agg(s):
        return s.groupBy("key").agg(F.count("*").alias("n"), F.sum("value").alias("total"))

    def drop_last_commit(query, checkpoint):
        query.stop()
        commits = Path(checkpoint) / "commits"
        last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
        for name in (str(last), f".{last}.crc"):
            (commits / name).unlink(missing_ok=True)
        return checkpoint

    oracle = run_stream(spark, SPARK_HDFS_CLASS, agg, BATCHES, workdir=workdir, name="floor-oracle",
                        schema=SCHEMA, restart_at=3)
    floor = run_stream(spark, FLOOR_CLASS, agg, BATCHES, workdir=workdir, name="floor",
                       schema=SCHEMA, restart_at=3, relocate=drop_last_commit)
    assert oracle.all_rows()
    assert_same_outputs(oracle, floor, "floor")
    assert len(floor.outputs) >= len(BATCHES)
    # The stores' numKeys, summed over partitions: the state's keys, as the oracle counts them.
    assert floor.progress[-1]["stateOperators"][0]["numRowsTotal"] == \
        oracle.progress[-1]["stateOperators"][0]["numRowsTotal"] > 0
    state = Path(floor.checkpoint) / "state"
    written = [p.relative_to(state) for p in state.rglob("*") if p.is_file()]
    assert written, "Spark writes the operator's metadata under state/"
    assert [p for p in written if not any(part.startswith(("_", ".")) for part in p.parts)] \
        == [], written


@MAIN_LINE_ONLY
@pytest.mark.parametrize("operator", ["session window", "join"])
def test_the_benches_floor_runs_nexmarks_operators_like_the_oracle(
        spark, workdir: Path, operator: str):
    """The floor under bench/nexmark_store_cost.py's queries' operators: a session window
    (its state scanned by a prefix of the key, through the floor's prefix index, across
    removals as sessions merge and close) and a stream-stream join (four stores a partition,
    rows removed by the watermark while the store is iterated), the same output as Spark's
    HDFS provider, across a restart in the same JVM."""
    if operator == "join":
        build, batches, extra = join("full_outer"), sided(BATCHES), {"sources": 2}
    else:
        def build(s):
            return s.withWatermark("ts", "5 minutes") \
                .groupBy(F.session_window("ts", "3 minutes"), "key") \
                .agg(F.sum("value").alias("total"))
        batches, extra = BATCHES, {}
    name = operator.replace(" ", "-")
    oracle = run_stream(spark, SPARK_HDFS_CLASS, build, batches, workdir=workdir,
                        name=f"{name}-oracle", schema=SCHEMA, output_mode="append",
                        restart_at=3, **extra)
    floor = run_stream(spark, FLOOR_CLASS, build, batches, workdir=workdir, name=f"{name}-floor",
                       schema=SCHEMA, output_mode="append", restart_at=3, **extra)
    assert oracle.all_rows()
    assert_same_outputs(oracle, floor, "floor")
    # The stores' numKeys at the end, summed over partitions and stores.
    assert sum(op["numRowsTotal"] for op in floor.progress[-1]["stateOperators"]) == \
        sum(op["numRowsTotal"] for op in oracle.progress[-1]["stateOperators"])
