"""Rescaling and migration: a query runs part of its input, stops, its state is rewritten (a new
partition count, another provider, or both), it runs the rest, and its output and final state
equal an oracle (Spark's HDFS provider) that ran the whole input without the change. Every key
sits in the partition Spark's shuffle sends it to. On `local-cluster`: the rewrite's tasks run
in real executor JVMs. Then what is refused, and a rewrite killed (SIGKILL) midway.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import rockstate
from rockstate.checkpoint import spark_rocksdb, tws
from rockstate.checkpoint.location import CheckpointLocation
from rockstate.checkpoint.rockstate_store_reader import RockstateStoreReader
from rockstate.checkpoint.spark_rocksdb_reader import SparkRocksDBReader
from rockstate.session.providers import SPARK_HDFS_CLASS, SPARK_ROCKSDB_CLASS
from rockstate.session.spark_lines import find
from rockstate.tools.read import read_state
from rockstate.tools.rewrite import migrate, rescale
from support.cli import run_cli
from support.queries import SCHEMA, events, join, pandas_count_until_timeout, sided
from support.rewrite_kill import kill_rewrite_at
from support.streams import (
    PROVIDER_KEY,
    StreamRun,
    assert_checkpoint_sound,
    assert_same_outputs,
    run_stream,
    state_frame,
    state_rows,
)
from support.tws_queries import tally

# Every key is in state before the change and gets new input after it.
BATCHES = [events(b, keys) for b, keys in enumerate(
    ["abcdefghijkl", "mnopabcd", "efghqrst", "abcmnoqr", "defghijklmnopqrst", "aabbcc"])]
RESTART_AT = 3
SPARK_LINE = find(__import__("pyspark").__version__)


KINDS: dict[str, tuple[Callable, list, str, int, tuple]] = {
    # name: (build, batches, output mode, sources, state reads)
    "aggregation": (lambda s: s.groupBy("key").agg(F.sum("value").alias("total")),
                    BATCHES, "update", 1, ({},)),
    "dedup": (lambda s: s.dropDuplicates(["key"]), BATCHES, "append", 1, ({},)),
    "dedup-within-watermark": (
        lambda s: s.withWatermark("ts", "10 minutes").dropDuplicatesWithinWatermark(["key"]),
        BATCHES, "append", 1, ({},)),
    # A gap longer than the pause between batches: sessions open at the change merge with events
    # after it (a session in the wrong partition would not).
    "session-window": (lambda s: s.withWatermark("ts", "5 minutes").groupBy(
        F.session_window("ts", "4 minutes"), "key").agg(F.sum("value").alias("total")),
        BATCHES, "append", 1, ({},)),
    # Both sides' keyToNumValues and keyWithIndexToValue stores: four stores.
    "join": (join("left_outer"), sided(BATCHES), "append", 2,
             ({"joinSide": "left"}, {"joinSide": "right"})),
    "apply-in-pandas-with-state": (pandas_count_until_timeout, BATCHES, "append", 1, ({},)),
}

# change: (provider the query starts on, partitions it starts with, the rewrite, the provider
# and partitions after it)
CHANGES: dict[str, tuple[str, int, Callable, str, int]] = {
    "rescale-4-to-7": (rockstate.PROVIDER_CLASS, 4,
                       lambda spark, ckpt: rescale(spark, ckpt, 7), rockstate.PROVIDER_CLASS, 7),
    "rescale-8-to-3": (rockstate.PROVIDER_CLASS, 8,
                       lambda spark, ckpt: rescale(spark, ckpt, 3), rockstate.PROVIDER_CLASS, 3),
    "from-hdfs": (SPARK_HDFS_CLASS, 4, lambda spark, ckpt: migrate(spark, ckpt, to="rockstate"),
                  rockstate.PROVIDER_CLASS, 4),
    "from-spark-rocksdb-4-to-7": (
        SPARK_ROCKSDB_CLASS, 4,
        lambda spark, ckpt: migrate(spark, ckpt, to="rockstate", partitions=7),
        rockstate.PROVIDER_CLASS, 7),
    "to-spark-rocksdb-8-to-3": (
        rockstate.PROVIDER_CLASS, 8,
        lambda spark, ckpt: migrate(spark, ckpt, to="spark-rocksdb", partitions=3),
        SPARK_ROCKSDB_CLASS, 3),
}

# The part of the matrix the other Spark lines' leg (dev/test-spark-line) runs as well: every
# kind once through one of Spark's own providers (whose formats and state layouts are what
# differ by line), and every change at least once (rescale-8-to-3, rockstate's own, on the
# cheapest kind). The main line runs the whole matrix.
EVERY_LINE: set[tuple[str, str]] = {
    ("aggregation", "from-hdfs"),
    ("aggregation", "rescale-8-to-3"),
    ("dedup", "from-spark-rocksdb-4-to-7"),
    ("dedup-within-watermark", "to-spark-rocksdb-8-to-3"),
    ("join", "from-spark-rocksdb-4-to-7"),
    ("session-window", "to-spark-rocksdb-8-to-3"),
    ("apply-in-pandas-with-state", "from-spark-rocksdb-4-to-7"),
}
MAIN_LINE_ONLY = pytest.mark.main_line_only


# Growing into new partitions is covered by every kind's from-spark-rocksdb-4-to-7 (the same
# rewrite, from another provider): rescale-4-to-7 runs for the join, whose four stores grow.
GROWTH_ONLY_FOR = {"join"}


def _matrix() -> list:
    return [pytest.param(kind, change, id=f"{kind}-{change}",
                         marks=() if (kind, change) in EVERY_LINE else MAIN_LINE_ONLY)
            for kind in sorted(KINDS) for change in sorted(CHANGES)
            if change != "rescale-4-to-7" or kind in GROWTH_ONLY_FOR]


_oracles: dict[str, StreamRun] = {}


def _oracle(spark, workdir: Path, kind: str) -> StreamRun:
    """The oracle of a kind, run once per session: its output does not depend on the partition
    count, and its state is compared without partition ids."""
    if kind not in _oracles:
        build, batches, mode, sources, _ = KINDS[kind]
        _oracles[kind] = run_stream(spark, SPARK_HDFS_CLASS, build, batches, workdir=workdir,
                                    name=f"oracle-{kind}", schema=SCHEMA, output_mode=mode,
                                    sources=sources)
    return _oracles[kind]


def _state(spark, checkpoint, **options: str) -> list[tuple]:
    """Keys and values, without partition ids (the oracle has its own partition count)."""
    df = state_frame(spark, checkpoint, **options)
    return sorted(tuple(r) for r in df.select("key", "value").collect())


def _misplaced(spark, checkpoint, partitions: int, **options: str) -> list[tuple]:
    """Rows whose partition is not where Spark's shuffle sends their key (Spark's `hash` of the
    grouping key: every case here groups by one column, the key's first field)."""
    df = state_frame(spark, checkpoint, **options)
    first = df.schema["key"].dataType.fields[0].name
    placed = df.select(F.col(f"key.{first}").alias("k"), "partition_id",
                       F.expr(f"pmod(hash(key.{first}), {partitions})").alias("wanted"))
    return [tuple(r) for r in placed.where("partition_id != wanted").collect()]


def _partition_folders(checkpoint: Path) -> dict[str, list[int]]:
    return {op.name: sorted(int(p.name) for p in op.iterdir() if p.name.isdigit())
            for op in (checkpoint / "state").iterdir() if op.name.isdigit()}


@pytest.mark.parametrize("kind,change", _matrix())
def test_rewritten_state_continues_like_the_oracle(cluster_spark, workdir: Path, kind: str,
                                                   change: str):
    spark = cluster_spark
    build, batches, mode, sources, reads = KINDS[kind]
    start_provider, start_n, rewrite, end_provider, end_n = CHANGES[change]
    oracle = _oracle(spark, workdir, kind)
    results = []

    def relocate(query, checkpoint):
        query.stop()
        results.append(rewrite(spark, str(checkpoint)))
        return checkpoint

    mine = run_stream(spark, start_provider, build, batches, workdir=workdir, name=kind,
                      schema=SCHEMA, output_mode=mode, sources=sources, restart_at=RESTART_AT,
                      confs={"spark.sql.shuffle.partitions": str(start_n)}, relocate=relocate)
    (result,) = results
    assert (result.partitions_before, result.partitions) == (start_n, end_n)
    assert result.batch_id == result.read_batch + 1
    assert result.keys > 0 and all(len(s.keys_per_partition) == end_n for s in result.stores)
    # The restarted query ran on what the rewrite recorded, not on the session's settings.
    confs = rockstate.recorded_confs(mine.checkpoint)
    assert (confs[PROVIDER_KEY], confs["spark.sql.shuffle.partitions"]) == \
        (end_provider, str(end_n))
    assert_same_outputs(oracle, mine, f"{kind} {change}")
    for opts in reads:
        assert _state(spark, oracle.checkpoint, **opts), f"{kind}: the oracle's state is empty"
        assert _state(spark, mine.checkpoint, **opts) == _state(spark, oracle.checkpoint, **opts)
        assert _misplaced(spark, mine.checkpoint, end_n, **opts) == []
    assert set(map(tuple, _partition_folders(Path(mine.checkpoint)).values())) == \
        {tuple(range(end_n))}
    if end_provider == rockstate.PROVIDER_CLASS:
        assert_checkpoint_sound(spark, mine.checkpoint, retained=2)
    _assert_verified(mine.checkpoint, end_provider)


def _assert_verified(checkpoint: Path | str, provider: str) -> None:
    """rockstate verify finds nothing wrong; after the exit door (no rockstate store left, as
    verify says), the completed checkpoints of the run on rockstate still find their stores,
    moved aside."""
    report = rockstate.verify(str(checkpoint))
    problems = [str(p) for p in report.problems]
    if provider == rockstate.PROVIDER_CLASS:
        assert report.ok, problems
    else:
        assert report.checkpoints > 0
        assert [p.path for p in report.problems] == ["state/"], problems


def _digest(checkpoint: Path) -> dict[str, bytes]:
    return {str(p.relative_to(checkpoint)): p.read_bytes()
            for p in sorted(checkpoint.rglob("*")) if p.is_file()}


def _stopped_query(spark, workdir: Path, name: str, partitions: int = 4,
                   provider: str = rockstate.PROVIDER_CLASS) -> Path:
    build, batches, mode, _, _ = KINDS["aggregation"]
    run = run_stream(spark, provider, build, batches[:RESTART_AT], workdir=workdir, name=name,
                     schema=SCHEMA, output_mode=mode,
                     confs={"spark.sql.shuffle.partitions": str(partitions)})
    return Path(run.checkpoint)


def _refused(spark, checkpoint: Path, match: str, change: Callable | None = None) -> None:
    """The rewrite fails with an error matching ``match`` and changes no file."""
    before = _digest(checkpoint)
    with pytest.raises(rockstate.RockstateError, match=match):
        (change or (lambda s, c: rescale(s, c, 3)))(spark, str(checkpoint))
    assert _digest(checkpoint) == before


def test_the_old_providers_files_are_moved_aside(tmp_path: Path):
    """After a migration, what the other provider wrote in partition and store folders is
    moved to state/<op>/_retired/<batch>-<partition>-<kind>/; the rest stays."""
    from rockstate.checkpoint.writable_location import WritableLocation
    from rockstate.tools.rewrite import retire_files_of_other_providers

    (tmp_path / "offsets").mkdir()
    spark_files = ["1.zip", ".1.zip.crc", "2.changelog", "3.delta", "4.snapshot", "SSTs/a.sst",
                   "logs/b.log", "left-keyToNumValues/5.zip"]
    rockstate_files = ["versions/6", "sst/c.sst", "snapshots/d", "meta/e", "changelog/f",
                       "left-keyToNumValues/versions/7"]
    for f in [*spark_files, *rockstate_files, "_metadata/g", "notes.txt"]:
        (tmp_path / "state" / "0" / "0" / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "state" / "0" / "0" / f).write_text(f)
    ckpt = WritableLocation(str(tmp_path), {})

    def files(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}

    retire_files_of_other_providers(ckpt, rockstate.PROVIDER_CLASS, 9)
    retired = tmp_path / "state" / "0" / "_retired"
    assert files(retired / "9-0-spark") == set(spark_files)
    assert files(tmp_path / "state" / "0" / "0") == \
        {*rockstate_files, "_metadata/g", "notes.txt"}
    retire_files_of_other_providers(ckpt, SPARK_ROCKSDB_CLASS, 10)
    assert files(retired / "10-0-rockstate") == set(rockstate_files)
    assert files(tmp_path / "state" / "0" / "0") == {"_metadata/g", "notes.txt"}
    # rockstate's completed checkpoints of versions up to 11 find that store there (verify).
    loc = CheckpointLocation(str(tmp_path))
    assert loc.store_dir_at("state/0/0/left-keyToNumValues", 11) == \
        "state/0/_retired/10-0-rockstate/left-keyToNumValues"
    assert loc.store_dir_at("state/0/0", 12) == "state/0/0"


def test_what_a_rewrite_refuses(spark, workdir: Path):
    checkpoint = _stopped_query(spark, workdir, "refusals")
    _refused(spark, checkpoint, "already has 4 partitions", lambda s, c: rescale(s, c, 4))
    _refused(spark, checkpoint, "at least 1", lambda s, c: rescale(s, c, 0))
    _refused(spark, checkpoint, "cannot migrate to 'hdfs'",
             lambda s, c: migrate(s, c, to="hdfs"))
    _refused(spark, workdir, "not a streaming query's checkpoint location")
    # A batch that started and did not commit (a running query, or one stopped mid-batch).
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    (checkpoint / "commits" / str(last)).rename(workdir / "commit-aside")
    _refused(spark, checkpoint, f"batch {last} .* has started but not committed")
    (workdir / "commit-aside").rename(checkpoint / "commits" / str(last))


def test_a_running_query_is_refused(spark, workdir: Path):
    mode = KINDS["aggregation"][2]
    checkpoint = _stopped_query(spark, workdir, "running")
    query = (spark.readStream.schema(SCHEMA).json(str(workdir / "running-src"))
             .groupBy("key").agg(F.sum("value").alias("total"))
             .writeStream.outputMode(mode).foreachBatch(lambda df, i: df.collect())
             .option("checkpointLocation", str(checkpoint)).start())
    try:
        query.processAllAvailable()
        _refused(spark, checkpoint, "is running on")
    finally:
        query.stop()


def _family_rows(checkpoint: Path | str) -> dict[tuple[int, int, str], int]:
    """Rows per (operator, partition, column family) in the newest version of every store
    (rockstate's or Spark's RocksDB provider's): transformWithState keeps timers and TTL
    indexes in families of their own, which Spark's state reader does not show."""
    loc = CheckpointLocation(str(checkpoint))
    out = {}
    if rockstate.provider_class(checkpoint) == SPARK_ROCKSDB_CLASS:
        for op in loc.operators():
            for reader in SparkRocksDBReader.of_operator(loc, op):
                version = reader.versions()[-1]
                for family in spark_rocksdb.column_families(loc, reader.store.path, version):
                    out[(op, reader.partition, family)] = len(reader.entries(version, family))
        return out
    for store in loc.stores():
        version = loc.versions(store)[-1]
        for family in loc.manifest(store, version).column_families:
            out[(store.operator, store.partition, family)] = \
                len(RockstateStoreReader(loc, store).entries(version, family))
    return out


# transformWithState (rockstate serves it on 4.0 and 4.1): (API, time mode, provider and
# partitions before, provider and partitions after, state encoding). Event time keeps timers
# (both their indexes), processing time TTL indexes; each API in each time mode once; each way
# across providers once, rescaling too; Avro once within rockstate (its keys placed by
# decoding them from Avro), UnsafeRow's timers across a rescale in the Scala event-time case.
ROCKSTATE = rockstate.PROVIDER_CLASS
TWS_CASES = {
    "python-event-time-avro-4-to-7": ("python", "EventTime", ROCKSTATE, 4, ROCKSTATE, 7, "avro"),
    "python-processing-time-from-spark-rocksdb-4-to-7": (
        "python", "ProcessingTime", SPARK_ROCKSDB_CLASS, 4, ROCKSTATE, 7, "unsaferow"),
    "scala-event-time-to-spark-rocksdb-8-to-3": (
        "scala", "EventTime", ROCKSTATE, 8, SPARK_ROCKSDB_CLASS, 3, "unsaferow"),
    "scala-processing-time-8-to-3": (
        "scala", "ProcessingTime", ROCKSTATE, 8, ROCKSTATE, 3, "unsaferow"),
}


@pytest.mark.parametrize("case", sorted(TWS_CASES))
def test_transform_with_state_rescaled_like_the_oracle(cluster_spark, workdir: Path, case: str):
    """The query runs three batches on ``before`` partitions of one provider, is rescaled
    and/or migrated, and runs three more. The oracle is Spark's RocksDB provider on ``after``
    partitions from the start, so its output, and its state of every variable and timer
    including partition ids, must be the same, and so must the rows in each column family of
    each partition (timers' and TTL indexes included). On 4.2+, where only Spark's provider runs
    transformWithState, a migration into rockstate is refused, saying why."""
    spark = cluster_spark
    api, mode, start_provider, before, end_provider, after, encoding = TWS_CASES[case]
    build = tally(api, mode)
    confs = {"spark.sql.streaming.stateStore.encodingFormat": encoding}
    if mode == "ProcessingTime":  # Spark then runs a batch whenever idle: only batches with data
        confs["spark.sql.streaming.noDataMicroBatches.enabled"] = "false"

    def run(provider: str, name: str, partitions: int, **kwargs) -> StreamRun:
        return run_stream(spark, provider, build, kwargs.pop("batches", BATCHES),
                          workdir=workdir, name=name, schema=SCHEMA, output_mode="update",
                          confs={**confs, "spark.sql.shuffle.partitions": str(partitions)},
                          **kwargs)

    if not SPARK_LINE.transform_with_state:
        on_spark = run(SPARK_ROCKSDB_CLASS, f"{case}-on-spark", before, batches=BATCHES[:1])
        _refused(spark, Path(on_spark.checkpoint), "SPARK-54117",
                 lambda s, c: migrate(s, c, to="rockstate", partitions=after))
        return
    results = []

    def relocate(query, checkpoint):
        query.stop()
        to = "rockstate" if end_provider == ROCKSTATE else "spark-rocksdb"
        results.append(migrate(spark, str(checkpoint), to=to, partitions=after))
        return checkpoint

    oracle = run(SPARK_ROCKSDB_CLASS, f"{case}-oracle", after)
    mine = run(start_provider, case, before, restart_at=RESTART_AT, relocate=relocate)
    (result,) = results
    assert (result.partitions_before, result.partitions) == (before, after)
    assert (result.provider_before, result.provider) == (start_provider, end_provider)
    assert rockstate.provider_class(mine.checkpoint) == end_provider
    assert result.keys > 0
    assert_same_outputs(oracle, mine, case)
    reads = [{"stateVarName": v} for v in ("count", "seen", "perValue")]
    if mode == "EventTime":
        assert any(r[-1] is True for r in mine.all_rows()), "no timer fired after the rescale"
        reads.append({"readRegisteredTimers": "true"})
    for opts in reads:
        assert state_rows(spark, oracle.checkpoint, **opts), f"{case}: {opts} is empty"
        assert state_rows(spark, mine.checkpoint, **opts) == \
            state_rows(spark, oracle.checkpoint, **opts), f"{case}: state {opts} differs"
    assert set(map(tuple, _partition_folders(Path(mine.checkpoint)).values())) == \
        {tuple(range(after))}
    # Both providers keep the same column families, so the oracle's rows per family are the
    # reference on either side.
    assert _family_rows(mine.checkpoint) == _family_rows(oracle.checkpoint)
    if end_provider == ROCKSTATE:
        assert_checkpoint_sound(spark, mine.checkpoint, retained=2)
    _assert_verified(mine.checkpoint, end_provider)


# rockstate's transformWithState fixtures written on 4.0: Spark's default row encoding, and
# Avro (each value after the id of the schema it was written with).
TWS_FIXTURES = ("spark-4.0", "spark-4.0-avro")


@pytest.mark.parametrize("name", TWS_FIXTURES)
def test_transform_with_state_fixture_rescales_on_every_line(spark, tmp_path: Path, name: str):
    """rockstate's transformWithState checkpoint written on 4.0 (value, list and map state in
    one partition), rescaled to 3 partitions by this line's jar: every row of every variable
    keeps its value and sits in partition pmod(hash(key), 3)."""
    fixture = Path(__file__).parent / "fixtures" / "transform-with-state" / name
    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(fixture / "checkpoint", checkpoint)
    variables = sorted(tws.state_variables(CheckpointLocation(str(checkpoint)), 0))

    def rows(var: str) -> list[dict]:
        return read_state(str(checkpoint), 0, state_var=var).to_pylist()

    before = {v: rows(v) for v in variables}
    result = rescale(spark, str(checkpoint), 3)
    assert (result.partitions_before, result.partitions) == (1, 3)
    wanted = {r["k"]: r["p"] for r in spark.createDataFrame(
        [(k,) for k in "abcd"], "k STRING").select(
        "k", F.expr("pmod(hash(k), 3)").alias("p")).collect()}
    assert len(set(wanted.values())) > 1, "the keys do not spread: the case tests nothing"
    for v in variables:
        after = rows(v)
        assert _without_partition(after) == _without_partition(before[v]), v
        assert {(r["key"]["key"], r["partition_id"]) for r in after} == \
            {(r["key"]["key"], wanted[r["key"]["key"]]) for r in after}, v
    assert rockstate.verify(str(checkpoint)).ok
    # The operator metadata of the rescale's batch records the new count.
    meta = json.loads((checkpoint / "state" / "0" / "_metadata" / "v2" / str(result.batch_id)
                       ).read_text().splitlines()[1])
    assert [i["numPartitions"] for i in meta["stateStoreInfo"]] == [3]


def _without_partition(rows: list[dict]) -> list[str]:
    return sorted(json.dumps({k: v for k, v in r.items() if k != "partition_id"},
                             sort_keys=True) for r in rows)


@pytest.mark.parametrize("name", TWS_FIXTURES)
def test_transform_with_state_fixture_moves_across_providers_on_every_line(spark,
                                                                          tmp_path: Path,
                                                                          name: str):
    """The same fixture (restored from a savepoint: Spark's operator metadata names its schema
    files by absolute path) out of rockstate into Spark's RocksDB provider (3 partitions),
    then rescaled there (2), then back into rockstate where this line runs transformWithState
    on it (refused, saying why, where it does not): after each step every variable holds the
    same rows, in partition pmod(hash(key), N), read offline and by Spark's state reader; the
    old provider's files are moved aside."""
    fixture = Path(__file__).parent / "fixtures" / "transform-with-state" / name
    rockstate.savepoint(str(fixture / "checkpoint"), str(tmp_path / "savepoint"))
    checkpoint = tmp_path / "checkpoint"
    rockstate.restore(str(tmp_path / "savepoint"), str(checkpoint))
    variables = sorted(tws.state_variables(CheckpointLocation(str(checkpoint)), 0))

    def rows(var: str) -> list[dict]:
        return read_state(str(checkpoint), 0, state_var=var).to_pylist()

    before = {v: _without_partition(rows(v)) for v in variables}

    def assert_moved(provider: str, n: int) -> None:
        assert rockstate.provider_class(checkpoint) == provider
        wanted = {r["k"]: r["p"] for r in spark.createDataFrame(
            [(k,) for k in "abcd"], "k STRING").select(
            "k", F.expr(f"pmod(hash(k), {n})").alias("p")).collect()}
        for v in variables:
            after = rows(v)
            assert _without_partition(after) == before[v], (provider, v)
            assert {(r["key"]["key"], r["partition_id"]) for r in after} == \
                {(r["key"]["key"], wanted[r["key"]["key"]]) for r in after}, (provider, v)
            assert len(state_rows(spark, checkpoint, stateVarName=v)) == len(after), v
        kinds = {p.name for p in (checkpoint / "state" / "0").glob("[0-9]*/*")}
        assert not kinds & ({"versions", "sst"} if provider == SPARK_ROCKSDB_CLASS else {"SSTs"}), \
            kinds

    assert migrate(spark, str(checkpoint), to="spark-rocksdb", partitions=3).keys > 0
    assert_moved(SPARK_ROCKSDB_CLASS, 3)
    rescale(spark, str(checkpoint), 2)
    assert_moved(SPARK_ROCKSDB_CLASS, 2)
    if not SPARK_LINE.transform_with_state:
        _refused(spark, checkpoint, "SPARK-54117", lambda s, c: migrate(s, c, to="rockstate"))
        return
    migrate(spark, str(checkpoint), to="rockstate")
    assert_moved(rockstate.PROVIDER_CLASS, 2)
    assert rockstate.verify(str(checkpoint)).ok


def test_a_rewrite_into_spark_rocksdb_on_every_line(spark, workdir: Path):
    """The exit door, and a rescale of a checkpoint on Spark's RocksDB provider, on every line:
    from 4.2 on Spark's provider starts the version from empty state; on 4.0/4.1 the rewrite
    writes a snapshot elsewhere and moves it in (the oracle matrix runs the exit door for every
    operator)."""
    checkpoint = _stopped_query(spark, workdir, "exit", partitions=4)
    on_spark = _stopped_query(spark, workdir, "on-spark", partitions=4,
                              provider=SPARK_ROCKSDB_CLASS)
    before = _state(spark, on_spark)
    assert migrate(spark, str(checkpoint), to="spark-rocksdb").provider == SPARK_ROCKSDB_CLASS
    assert rockstate.provider_class(checkpoint) == SPARK_ROCKSDB_CLASS
    assert rescale(spark, str(on_spark), 3).provider == SPARK_ROCKSDB_CLASS
    assert rockstate.recorded_confs(on_spark)["spark.sql.shuffle.partitions"] == "3"
    assert _state(spark, on_spark) == before
    assert _misplaced(spark, on_spark, 3) == []


@MAIN_LINE_ONLY  # the command line is the same Python on every line
def test_the_cli_rescales_and_says_why_it_refuses(spark, workdir: Path):
    checkpoint = _stopped_query(spark, workdir, "cli", partitions=4)
    before = _state(spark, checkpoint)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return run_cli("rescale", str(checkpoint), *args, "--master", "local[1]", timeout=600)

    done = cli("--partitions", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "4 -> 3 partitions" in done.stdout
    assert rockstate.recorded_confs(checkpoint)["spark.sql.shuffle.partitions"] == "3"
    assert _state(spark, checkpoint) == before
    assert _misplaced(spark, checkpoint, 3) == []
    again = cli("--partitions", "3")
    assert again.returncode == 2 and "already has 3 partitions" in again.stderr


@pytest.mark.parametrize("pause,then", [
    pytest.param("after-first-store", "restart-as-before", marks=MAIN_LINE_ONLY),
    pytest.param("after-first-store", "rescale-again", marks=MAIN_LINE_ONLY),
    pytest.param("before-commit", "rescale-again", marks=MAIN_LINE_ONLY)])
def test_a_rescale_killed_midway(cluster_spark, workdir: Path, pause: str, then: str):
    """A join (four stores) rescaled 4 -> 7 in another process, SIGKILLed midway: the query
    restarts as before, or the rescale run again completes; either way the output and state
    equal the oracle's."""
    spark = cluster_spark
    build, batches, mode, sources, reads = KINDS["join"]
    oracle = _oracle(spark, workdir, "join")
    seen: dict[str, object] = {}

    def relocate(query, checkpoint):
        query.stop()
        kill_rewrite_at(Path(checkpoint), "7", pause, workdir)
        committed = sorted(int(p.name) for p in (Path(checkpoint) / "commits").iterdir()
                           if p.name.isdigit())
        offsets = sorted(int(p.name) for p in (Path(checkpoint) / "offsets").iterdir()
                         if p.name.isdigit())
        # Killed before its commit: the offset entry exists only when paused before commit.
        assert (offsets[-1] > committed[-1]) == (pause == "before-commit")
        if then == "rescale-again":
            seen["result"] = rescale(spark, str(checkpoint), 7)
        return checkpoint

    mine = run_stream(spark, rockstate.PROVIDER_CLASS, build, batches, workdir=workdir,
                      name=f"killed-{pause}", schema=SCHEMA, output_mode=mode, sources=sources,
                      restart_at=RESTART_AT, confs={"spark.sql.shuffle.partitions": "4"},
                      relocate=relocate)
    partitions = 7 if then == "rescale-again" else 4
    assert rockstate.recorded_confs(mine.checkpoint)["spark.sql.shuffle.partitions"] == \
        str(partitions)
    assert_same_outputs(oracle, mine, f"join killed {pause}, then {then}")
    for opts in reads:
        assert _state(spark, mine.checkpoint, **opts) == _state(spark, oracle.checkpoint, **opts)
        assert _misplaced(spark, mine.checkpoint, partitions, **opts) == []
    assert set(map(tuple, _partition_folders(Path(mine.checkpoint)).values())) == \
        {tuple(range(partitions))}
    assert_checkpoint_sound(spark, mine.checkpoint, retained=2)
