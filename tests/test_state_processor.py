"""Changing a stopped query's rows. Forgetting keys: a query runs part of its input, stops,
forgets some keys, and runs the rest. The oracle is the same query on Spark's HDFS provider
whose input never had the forgotten rows before that point: from the forget on, the two give
the same output, and end with the same state. Then a forget killed midway, the history
it leaves and its purge, and what forget refuses. Transforming an operator's rows: the oracle's
input before that point is changed as the transform changes the state (a sum's values doubled,
a key renamed).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

import rockstate
from rockstate.checkpoint.location import CheckpointLocation
from rockstate.checkpoint.state_schema import v2_schemas
from rockstate.session.providers import SPARK_HDFS_CLASS, SPARK_ROCKSDB_CLASS
from rockstate.tools import history
from rockstate.tools.forget import ForgetResult, forget
from rockstate.tools.transform import transform
from support.cli import run_cli
from support.queries import (
    GAIN_MAX_SCHEMA,
    SCHEMA,
    events,
    gain_max,
    pandas_count_until_timeout,
    sided,
)
from support.rewrite_kill import kill_rewrite_at
from support.streams import StreamRun, run_stream, state_frame

TWS = Path(__file__).parent / "fixtures" / "transform-with-state" / "spark-4.0" / "checkpoint"
BATCHES = [events(b, keys) for b, keys in enumerate(["abcdab", "bcdeaf", "abcgd", "aefbh"])]
FORGET_AT = 2  # the query stops before this input and forgets


def _join_on_key(left, right):
    """Both sides keep the column ``key`` in their rows: forgetting ``key`` empties the key on
    both sides."""
    lw = left.withWatermark("ts", "10 minutes").select("key", F.col("value").alias("lvalue"),
                                                       F.col("ts").alias("lts"))
    rw = right.withWatermark("ts", "10 minutes").select("key", F.col("value").alias("rvalue"),
                                                        F.col("ts").alias("rts"))
    return lw.alias("l").join(rw.alias("r"), F.expr(
        "l.key = r.key AND r.rts BETWEEN l.lts - INTERVAL 5 MINUTES AND "
        "l.lts + INTERVAL 5 MINUTES"), "inner")


def _join_on_renamed_key(left, right):
    lw = left.withWatermark("ts", "10 minutes").select(
        F.col("key").alias("lkey"), F.col("value").alias("lvalue"), F.col("ts").alias("lts"))
    rw = right.withWatermark("ts", "10 minutes").select(
        F.col("key").alias("rkey"), F.col("value").alias("rvalue"), F.col("ts").alias("rts"))
    return lw.join(rw, F.expr("lkey = rkey AND rts BETWEEN lts - INTERVAL 5 MINUTES AND "
                              "lts + INTERVAL 5 MINUTES"), "inner")


def _by_key(*keys: str) -> tuple[str, list[tuple], Callable[[dict], bool]]:
    return "key", [(k,) for k in keys], lambda e: e["key"] in keys


# Left rows (even positions of a batch) of values 0 and 12: join key "a" keeps a later row
# (its index moves from 1 to 0), join key "d" loses its only left row.
LEFT_VALUES = (0, 12)
ROWS_OF_ONE_SIDE = ("lvalue", [(v,) for v in LEFT_VALUES],
                    lambda e: e["side"] == 0 and e["value"] in LEFT_VALUES)

KINDS: dict[str, tuple[Callable, str, int, tuple, tuple]] = {
    # name: (build, output mode, sources, state reads, (column, keys, what the oracle drops))
    "aggregation": (lambda s: s.groupBy("key").agg(F.sum("value").alias("total")), "update",
                    1, ({},), _by_key("a", "b")),
    "dedup": (lambda s: s.dropDuplicates(["key"]), "append", 1, ({},), _by_key("a", "c")),
    "dedup-within-watermark": (
        lambda s: s.withWatermark("ts", "10 minutes").dropDuplicatesWithinWatermark(["key"]),
        "append", 1, ({},), _by_key("a")),
    # The same aggregation on Spark's RocksDB provider: the forget writes through it.
    "aggregation-on-spark-rocksdb": (
        lambda s: s.groupBy("key").agg(F.sum("value").alias("total")), "update", 1, ({},),
        _by_key("a", "b")),
    "session-window": (lambda s: s.withWatermark("ts", "5 minutes").groupBy(
        F.session_window("ts", "4 minutes"), "key").agg(F.sum("value").alias("total")),
        "append", 1, ({},), _by_key("a")),
    "join-key": (_join_on_key, "append", 2, ({"joinSide": "left"}, {"joinSide": "right"}),
                 _by_key("a", "d")),
    "join-rows-of-one-side": (_join_on_renamed_key, "append", 2,
                              ({"joinSide": "left"}, {"joinSide": "right"}), ROWS_OF_ONE_SIDE),
    "apply-in-pandas-with-state": (pandas_count_until_timeout, "append", 1, ({},),
                                   _by_key("b")),
}


def _state(spark, checkpoint, **options: str) -> list[tuple]:
    df = state_frame(spark, checkpoint, **options)
    return sorted(tuple(r) for r in df.select("key", "value").collect())


def _after(run: StreamRun, boundary: int) -> list[list[tuple]]:
    """The outputs of the batches after ``boundary`` that had any, in order."""
    return [rows for b, rows in sorted(run.outputs.items()) if b > boundary and rows]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_forgotten_keys_continue_like_an_oracle_that_never_saw_them(spark, workdir: Path,
                                                                    kind: str):
    _forget_like_the_oracle(spark, workdir, kind)


def test_a_join_side_forgets_rows_in_real_executors(cluster_spark, workdir: Path):
    """The same on local-cluster (two executor JVMs): the renumbering and recounting run in
    the executors that write the new version."""
    _forget_like_the_oracle(cluster_spark, workdir, "join-rows-of-one-side")


def _forget_like_the_oracle(spark, workdir: Path, kind: str) -> None:
    build, mode, sources, reads, (column, keys, dropped) = KINDS[kind]
    batches = BATCHES if sources == 1 else sided(BATCHES)
    never_saw = [[e for e in b if not (i < FORGET_AT and dropped(e))]
                 for i, b in enumerate(batches)]
    boundaries: dict[str, int] = {}
    results: list[ForgetResult] = []

    def stop_at(name: str, keys_df=None):
        def relocate(query, checkpoint):
            boundaries[name] = query.lastProgress["batchId"]
            query.stop()
            if keys_df is not None:
                handle = rockstate.Checkpoint(str(checkpoint))
                if provider == SPARK_ROCKSDB_CLASS:  # its older versions are Spark's to drop
                    refused = _refusal(lambda: handle.forget(spark, keys_df, purge_history=True))
                    assert "purge_history removes the older versions of rockstate" in refused
                results.append(handle.forget(spark, keys_df,
                                             purge_history=kind == "aggregation"))
                boundaries[name] = results[-1].rewrite.batch_id
            return checkpoint
        return relocate

    confs = {"spark.sql.shuffle.partitions": "3"}
    provider = SPARK_ROCKSDB_CLASS if kind.endswith("on-spark-rocksdb") else \
        rockstate.PROVIDER_CLASS
    oracle = run_stream(spark, SPARK_HDFS_CLASS, build, never_saw, workdir=workdir,
                        name=f"{kind}-oracle", schema=SCHEMA, output_mode=mode, sources=sources,
                        restart_at=FORGET_AT, relocate=stop_at("oracle"), confs=confs)
    keys_df = spark.createDataFrame(keys, [column])
    mine = run_stream(spark, provider, build, batches, workdir=workdir,
                      name=kind, schema=SCHEMA, output_mode=mode, sources=sources,
                      restart_at=FORGET_AT, relocate=stop_at("mine", keys_df), confs=confs)
    (result,) = results
    assert result.rows_removed > 0, result.stores
    assert all(s.rows_removed >= 0 for s in result.stores)
    assert _after(mine, boundaries["mine"]) == _after(oracle, boundaries["oracle"]), \
        f"{kind}: the outputs after the forget differ from the oracle's"
    for opts in reads:
        assert _state(spark, oracle.checkpoint, **opts), f"{kind}: the oracle's state is empty"
        assert _state(spark, mine.checkpoint, **opts) == _state(spark, oracle.checkpoint,
                                                                 **opts)
    if provider == rockstate.PROVIDER_CLASS:
        assert rockstate.verify(str(mine.checkpoint)).ok
    if kind == "aggregation":
        # Purged: no file of an older version is left, and the forget's own batch reads as
        # the state without the keys.
        assert result.purged > 0 and result.history.files == () and not result.history.versions
        versions = CheckpointLocation(str(mine.checkpoint)).summary()["stores"][0]["versions"]
        assert min(versions) == result.history.version
        at_forget = state_frame(spark, mine.checkpoint, batchId=str(result.rewrite.batch_id))
        assert not at_forget.where(F.col("key.key").isin("a", "b")).count()
        assert at_forget.count() > 0
    else:
        # Not purged: the versions before the forget still hold the rows, and say so.
        assert result.history.files and result.history.versions
        assert max(result.history.versions) < result.history.version


def _small_query(spark, workdir: Path, name: str) -> Path:
    run = run_stream(spark, rockstate.PROVIDER_CLASS,
                     lambda s: s.groupBy("key", "value").count(), BATCHES[:2], workdir=workdir,
                     name=name, schema=SCHEMA, output_mode="update",
                     confs={"spark.sql.shuffle.partitions": "2"})
    return Path(run.checkpoint)


def _refusal(call: Callable[[], object]) -> str:
    with pytest.raises(rockstate.RockstateError) as e:
        call()
    return str(e.value)


def test_a_killed_forget_restarts_as_before_or_completes_when_run_again(spark,
                                                                       workdir: Path):
    """A forget SIGKILLed after it wrote the store and before its offset log entry: the query
    restarts as before, the key still counted. Killed again after the offset entry and before
    the commit entry: another forget is refused until the same one, run again, completes."""
    ckpt = _small_query(spark, workdir, "interrupted")

    def numbered(folder: str) -> list[int]:
        return sorted(int(p.name) for p in (ckpt / folder).iterdir() if p.name.isdigit())

    before = _state(spark, ckpt)
    kill_rewrite_at(ckpt, "forget-a", "after-first-store", workdir)
    assert numbered("offsets") == numbered("commits")
    restarted = run_stream(spark, rockstate.PROVIDER_CLASS,
                           lambda s: s.groupBy("key", "value").count(), [events(0, "ab")],
                           workdir=workdir, name="interrupted", schema=SCHEMA,
                           output_mode="update", checkpoint=str(ckpt), first_file=2,
                           confs={"spark.sql.shuffle.partitions": "2"})
    # Batch 0's events again: each (key, value) pair counted once more than before.
    counts = {(k["key"], k["value"]): v["count"] for k, v in before}
    assert sorted(r for rows in restarted.outputs.values() for r in rows) == \
        sorted((e["key"], e["value"], counts[(e["key"], e["value"])] + 1)
               for e in events(0, "ab"))

    kill_rewrite_at(ckpt, "forget-a", "before-commit", workdir)
    pending = numbered("offsets")[-1]
    assert pending == numbered("commits")[-1] + 1
    other = spark.createDataFrame([("b",)], ["key"])
    refused = _refusal(lambda: forget(spark, str(ckpt), other))
    assert f"batch {pending}" in refused and "forgets rows" in refused
    again = forget(spark, str(ckpt), spark.createDataFrame([("a",)], ["key"]))
    assert again.rewrite.batch_id == pending and numbered("commits")[-1] == pending
    after = _state(spark, ckpt)
    assert after and not [r for r in after if r[0]["key"] == "a"]
    assert [r for r in after if r[0]["key"] == "b"]


def test_what_forget_refuses(spark, workdir: Path):
    ckpt = _small_query(spark, workdir, "refusals")
    before = sorted(p.name for p in (ckpt / "offsets").iterdir())

    def keys(rows: list[tuple], columns: list[str]):
        return spark.createDataFrame(rows, columns)

    none = _refusal(lambda: forget(spark, str(ckpt), keys([("a",)], ["user_id"])))
    assert "no operator's key has the columns ['user_id']" in none and "'key'" in none
    partial = _refusal(lambda: forget(spark, str(ckpt), keys([("a", 1)], ["key", "user_id"])))
    assert "has the columns ['key'] but not ['user_id']" in partial
    cast = _refusal(lambda: forget(spark, str(ckpt), keys([("x",)], ["value"])))
    assert "'x' of column value is not a int" in cast
    twice = _refusal(lambda: forget(spark, str(ckpt), spark.sql("SELECT 'a' k, 'b' k")))
    assert "name a column twice" in twice
    assert sorted(p.name for p in (ckpt / "offsets").iterdir()) == before
    # Both key columns: only that pair goes.
    done = forget(spark, str(ckpt), keys([("a", 0)], ["key", "value"]))
    assert done.rows_removed == 1


def test_the_cli_forgets_keys_from_a_csv_file(spark, workdir: Path):
    ckpt = _small_query(spark, workdir, "cli")
    keys = workdir / "keys.csv"
    keys.write_text("key,reason\nb,erasure request\n")
    run = run_cli("forget", str(ckpt), "--keys", str(keys), "--column", "key",
                  "--master", "local[1]")
    assert run.returncode == 0, run.stderr
    assert "rows removed" in run.stdout and "still hold older state" in run.stdout
    assert not [r for r in _state(spark, ckpt) if r[0]["key"] == "b"]
    # A column the file lacks is refused before Spark starts.
    missing = run_cli("forget", str(ckpt), "--keys", str(keys), "--column", "user",
                      offline=True)
    assert missing.returncode == 2 and "has no column user" in missing.stderr
    assert "its columns are key, reason" in missing.stderr


def _doubled_and_renamed(rows):
    """Every sum doubled, key ``a`` renamed ``z`` (a key moved to another partition). The
    value is the aggregation's buffer: ``sum``'s is one field, ``sum``."""
    (buffer,) = rows.schema["value"].dataType.fields
    assert buffer.name == "sum"
    return rows.select(
        F.struct(F.when(F.col("key.key") == "a", F.lit("z")).otherwise(F.col("key.key"))
                 .alias("key")).alias("key"),
        F.struct((F.col("value.sum") * 2).alias("sum")).alias("value"))


def test_a_transformed_aggregation_continues_like_an_oracle_fed_the_changed_input(
        spark, workdir: Path):
    build = KINDS["aggregation"][0]
    changed = [[{**e, "key": "z" if e["key"] == "a" else e["key"], "value": e["value"] * 2}
                if i < FORGET_AT else e for e in b] for i, b in enumerate(BATCHES)]
    boundaries: dict[str, int] = {}

    def stop(name: str, change: Callable | None = None):
        def relocate(query, checkpoint):
            boundaries[name] = query.lastProgress["batchId"]
            query.stop()
            if change is not None:
                result = rockstate.Checkpoint(str(checkpoint)).transform(spark, 0, change)
                assert result.store.rows_read == result.store.keys > 0
                boundaries[name] = result.rewrite.batch_id
            return checkpoint
        return relocate

    confs = {"spark.sql.shuffle.partitions": "3"}
    oracle = run_stream(spark, SPARK_HDFS_CLASS, build, changed, workdir=workdir,
                        name="transform-oracle", schema=SCHEMA, output_mode="update",
                        restart_at=FORGET_AT, relocate=stop("oracle"), confs=confs)
    mine = run_stream(spark, rockstate.PROVIDER_CLASS, build, BATCHES, workdir=workdir,
                      name="transform", schema=SCHEMA, output_mode="update",
                      restart_at=FORGET_AT, relocate=stop("mine", _doubled_and_renamed),
                      confs=confs)
    assert _after(mine, boundaries["mine"]) == _after(oracle, boundaries["oracle"])
    assert _state(spark, mine.checkpoint) == _state(spark, oracle.checkpoint)
    # Every key where Spark's shuffle sends it, "z" included.
    placed = state_frame(spark, mine.checkpoint).select(
        "partition_id", F.expr("pmod(hash(key.key), 3)").alias("wanted"))
    assert placed.where("partition_id != wanted").count() == 0
    assert rockstate.verify(str(mine.checkpoint)).ok


def _sum_then_max(gained: dict[str, bool]):
    """``sum(value)`` by key; once ``gained["max"]`` is set, also ``max(value)``: the query
    the user redeploys after the transform."""
    def build(stream):
        columns = [F.sum("value").alias("total")]
        if gained["max"]:
            columns.append(F.max("value").alias("top"))
        return stream.groupBy("key").agg(*columns)
    return build


@pytest.mark.parametrize("provider", [rockstate.PROVIDER_CLASS, SPARK_ROCKSDB_CLASS])
def test_an_aggregation_that_gains_a_column_continues_like_the_oracle(spark, workdir: Path,
                                                                      provider: str):
    """The query stops, its state gains max's buffer (empty: null), and the query comes back
    with max(value) added: Spark's schema check accepts it, the sums go on from the old state
    and the max covers only the events after the transform. The oracle runs the new query from
    the start on Spark's HDFS provider, its max over the events after that point only. On
    rockstate the transform is first SIGKILLed after it replaced the schema file and before
    its commit, and run again; on Spark's RocksDB provider, a copy of the checkpoint that was
    not transformed shows Spark refusing the new query."""
    # Values that fall from batch to batch: a max that kept the old events would differ.
    batches = [[{**e, "value": 100 - e["value"]} for e in b] for b in BATCHES]
    cutoff = batches[FORGET_AT][0]["ts"]  # the first event after the transform
    oracle_build = lambda s: s.groupBy("key").agg(  # noqa: E731
        F.sum("value").alias("total"),
        F.max(F.when(F.col("ts") >= F.lit(cutoff).cast("timestamp"), F.col("value")))
        .alias("top"))
    gained = {"max": False}
    boundaries: dict[str, int] = {}

    def relocate(query, checkpoint):
        boundaries["mine"] = boundaries["read"] = query.lastProgress["batchId"]
        query.stop()
        ckpt = Path(checkpoint)
        if provider == rockstate.PROVIDER_CLASS:
            kill_rewrite_at(ckpt, "gain-max", "after-schema", workdir)
            # The kill left the new schema in place and the batch uncommitted.
            assert [f["name"] for f in v2_schemas(CheckpointLocation(str(ckpt)), 0)[1]
                    ["fields"]] == ["sum", "max"]
            assert not (ckpt / "commits" / str(boundaries["mine"] + 1)).exists()
        else:
            shutil.copytree(ckpt, workdir / "not-transformed")
        result = rockstate.Checkpoint(str(ckpt)).transform(spark, 0, gain_max,
                                                           value_schema=GAIN_MAX_SCHEMA)
        assert result.store.rows_read == result.store.keys > 0
        boundaries["mine"] = result.rewrite.batch_id
        gained["max"] = True
        return checkpoint

    def stop_oracle(query, checkpoint):
        boundaries["oracle"] = query.lastProgress["batchId"]
        query.stop()
        return checkpoint

    confs = {"spark.sql.shuffle.partitions": "3"}
    oracle = run_stream(spark, SPARK_HDFS_CLASS, oracle_build, batches, workdir=workdir,
                        name="gain-oracle", schema=SCHEMA, output_mode="update",
                        restart_at=FORGET_AT, relocate=stop_oracle, confs=confs)
    mine = run_stream(spark, provider, _sum_then_max(gained), batches, workdir=workdir,
                      name="gain", schema=SCHEMA, output_mode="update", restart_at=FORGET_AT,
                      relocate=relocate, confs=confs)
    assert _after(mine, boundaries["mine"]) == _after(oracle, boundaries["oracle"])
    seen = [e for b in batches[:FORGET_AT] for e in b]
    old_max = {e["key"]: max(v["value"] for v in seen if v["key"] == e["key"]) for e in seen}
    assert any(r[0] in old_max and r[2] < old_max[r[0]]
               for rows in _after(mine, boundaries["mine"]) for r in rows), \
        "no old key's max fell below its old one: the test cannot tell an empty max from an old"
    assert _state(spark, mine.checkpoint) == _state(spark, oracle.checkpoint)
    # The version from before the transform reads with the schema it was written with.
    handle = rockstate.Checkpoint(str(mine.checkpoint))
    earlier = handle.read(0, version=boundaries["read"] + 1).to_pylist()
    assert {r["key"]["key"]: r["value"] for r in earlier} == \
        {k: {"sum": sum(e["value"] for e in seen if e["key"] == k)} for k in old_max}
    if provider == rockstate.PROVIDER_CLASS:
        assert rockstate.verify(str(mine.checkpoint)).ok
        refused = _refusal(lambda: handle.read_changes(0, 0))
        assert f"batch {boundaries['mine']} of operator 0 store default changed its value " \
            "schema" in refused
        assert handle.read_changes(0, boundaries["mine"] + 1).num_rows > 0
        return
    # The max dropped again: the query without it goes on from the sums.
    totals = {k["key"]: v["sum"] for k, v in _state(spark, mine.checkpoint)}
    rockstate.Checkpoint(str(mine.checkpoint)).transform(
        spark, 0, lambda rows: rows.select("key", F.struct("value.sum").alias("value")),
        value_schema=StructType([GAIN_MAX_SCHEMA["sum"]]))
    gained["max"] = False
    last = events(len(batches), "ab")
    # One more file in the same input folder (Spark's file source stays in its first one).
    dropped = run_stream(spark, provider, _sum_then_max(gained), [last], workdir=workdir,
                         name="gain", schema=SCHEMA, output_mode="update", confs=confs,
                         checkpoint=str(mine.checkpoint), first_file=len(batches))
    assert [r for rows in dropped.outputs.values() for r in rows] == \
        [(e["key"], totals[e["key"]] + e["value"]) for e in last]
    # Without the transform, Spark refuses the query with the max.
    gained["max"] = True
    with pytest.raises(Exception, match="SCHEMA_NOT_COMPATIBLE"):
        run_stream(spark, provider, _sum_then_max(gained), [last], workdir=workdir,
                   name="gain", schema=SCHEMA, output_mode="update", confs=confs,
                   checkpoint=str(workdir / "not-transformed"), first_file=len(batches) + 1)


def test_what_transform_refuses_and_the_cli(spark, workdir: Path):
    ckpt = _small_query(spark, workdir, "transform-refusals")
    before = sorted(p.name for p in (ckpt / "offsets").iterdir())
    missing = _refusal(lambda: transform(spark, str(ckpt), 3, lambda rows: rows))
    assert "no stateful operator 3" in missing and "0 (stateStoreSave)" in missing
    retyped = _refusal(lambda: transform(spark, str(ckpt), 0, lambda rows: rows.select(
        "key", F.struct(F.col("value.count").cast("int").alias("count")).alias("value"))))
    assert "returned value as struct<count:int>" in retyped and "struct<count:bigint>" in retyped
    merged = _refusal(lambda: transform(spark, str(ckpt), 0, lambda rows: rows.select(
        F.struct(F.lit("k").alias("key"), F.lit(0).alias("value")).alias("key"), "value")))
    assert "times; a store holds a key once" in merged
    assert sorted(p.name for p in (ckpt / "offsets").iterdir()) == before
    counts = {r[0]["key"] + str(r[0]["value"]): r[1]["count"] for r in _state(spark, ckpt)}
    bad_ddl = _refusal(lambda: transform(spark, str(ckpt), 0, lambda rows: rows,
                                         value_schema="count BIGINT,, seen"))
    assert "is not a column list Spark reads" in bad_ddl
    not_given = _refusal(lambda: transform(spark, str(ckpt), 0, lambda rows: rows,
                                           value_schema="count BIGINT, seen INT"))
    assert "returned value as struct<count:bigint>" in not_given
    assert "its value_schema is struct<count:bigint,seen:int>" in not_given
    assert sorted(p.name for p in (ckpt / "offsets").iterdir()) == before
    # The command, with a new value column.
    run = run_cli("transform", str(ckpt), "--operator", "0", "--value-schema",
                  "count BIGINT, seen INT", "--sql", "SELECT key, named_struct('count', "
                  "value.count + 10, 'seen', 1) AS value FROM state", "--master", "local[1]")
    assert run.returncode == 0, run.stderr
    assert "rows written" in run.stdout
    assert {r[0]["key"] + str(r[0]["value"]): tuple(r[1]) for r in _state(spark, ckpt)} == \
        {k: (v + 10, 1) for k, v in counts.items()}


def test_transform_refuses_a_join(spark, workdir: Path):
    run = run_stream(spark, rockstate.PROVIDER_CLASS, _join_on_renamed_key, sided(BATCHES[:1]),
                     workdir=workdir, name="transform-join", schema=SCHEMA,
                     output_mode="append", sources=2,
                     confs={"spark.sql.shuffle.partitions": "2"})
    refused = _refusal(lambda: transform(spark, str(run.checkpoint), 0, lambda rows: rows))
    assert "keeps its state in 4 stores" in refused and "left-keyToNumValues" in refused


def test_the_history_is_what_the_newest_version_does_not_need_and_purging_it_keeps_that(
        tmp_path: Path):
    """On a whole query's checkpoint (the transformWithState fixture: three batches, one
    completed checkpoint), with no Spark: the files older state lives in are exactly those the
    newest version does not need, and removing them leaves a checkpoint that verifies and
    reads the same."""
    root = tmp_path / "query"
    shutil.copytree(TWS, root)
    ckpt = rockstate.Checkpoint(str(root))
    before = {var: ckpt.read(state_var=var).to_pylist() for var in ("total", "items")}
    older = history.older_state(str(root), batch_id=2)
    assert older.version == 3 and older.versions == (1, 2) and older.checkpoints == (2,)
    held = {f.split("/")[-2] + "/" + f.split("/")[-1].split("-")[0] for f in older.files}
    assert held == {"versions/1", "versions/2"}, older.files
    assert older.describe() == \
        "2 files of versions 1-2 still hold older state, 1 completed checkpoint"
    assert history.purge(str(root), older) == 2
    assert history.older_state(str(root), batch_id=2).describe() == \
        "no file holds state of a version before 3"
    report = rockstate.verify(str(root))
    assert report.ok, [str(p) for p in report.problems]
    assert report.versions == 1 and report.checkpoints == 0
    assert {var: ckpt.read(state_var=var).to_pylist() for var in ("total", "items")} == before
