"""``rockstate.read_state`` against Spark's own ``statestore`` data source, row for row.

The checkpoints are made by real queries on rockstate; the offline reader decodes them with
no JVM and must give exactly what Spark's state reader gives for the same batch.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import signal
from pathlib import Path

import fsspec
import pyarrow.dataset as ds
import pyspark
import pytest
from pyspark.sql import functions as F

import rockstate
import rockstate.tools.read
from rockstate.session import spark_lines
from rockstate.session.providers import SPARK_ROCKSDB_CLASS
from support.cli import run_cli
from support.streams import run_stream

SCHEMA = "key STRING, value INT, ts TIMESTAMP"


def _batches(n: int) -> list[list[dict]]:
    return [[{"key": f"k{(b * 5 + i) % 13}", "value": b * 40 + i,
              "ts": f"2026-01-0{1 + b % 3} 0{i % 10}:00:00"} for i in range(40)]
            for b in range(n)]


def _aggregate_with_struct_key(s):
    return (s.groupBy(F.struct(F.col("key"), (F.col("value") % 3).alias("m"),
                               F.lit("x").alias("tag")).alias("k"), F.col("key"))
            .agg(F.count("*").alias("n"), F.sum(F.col("value").cast("decimal(12,2)")).alias("d"),
                 F.max("ts").alias("latest"), F.avg("value").alias("mean")))


def _deduplicate_with_array_and_binary_keys(s):
    # The key row then holds an array of strings and a binary value: variable-length values
    # inside an UnsafeArrayData and in the row's own variable-length region.
    return (s.withColumn("tags", F.array(F.col("key"), F.lit("x"), F.lit(None).cast("string")))
            .withColumn("raw", F.col("key").cast("binary"))
            .dropDuplicates(["key", "value", "tags", "raw"]))


def _normal(value):
    """Comparable Python values: structs as positional tuples (Spark's aggregation buffers
    may repeat a field name), instants as epoch microseconds."""
    if isinstance(value, list | tuple):  # pyspark Rows are tuples
        return tuple(_normal(v) for v in value)
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1_000_000)
    if isinstance(value, decimal.Decimal):
        return ("decimal", str(value.normalize()))
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, dict):  # a map: pyspark gives a dict, _arrow_values too
        return tuple(sorted((k, _normal(v)) for k, v in value.items()))
    return value


def _arrow_values(arr) -> list:
    """An Arrow array's values, structs as positional tuples (to_pylist refuses repeated
    field names)."""
    import pyarrow as pa

    if pa.types.is_struct(arr.type):
        children = [_arrow_values(arr.field(i)) for i in range(arr.type.num_fields)]
        nulls = arr.is_null().to_pylist()
        return [None if nulls[j] else tuple(c[j] for c in children) for j in range(len(arr))]
    if pa.types.is_map(arr.type):
        return [None if v is None else dict(v) for v in arr.to_pylist()]
    return arr.to_pylist()


def _spark_rows(spark, checkpoint: Path, operator: int, batch_id: int) -> list:
    df = (spark.read.format("statestore").option("operatorId", operator)
          .option("batchId", batch_id).load(str(checkpoint)))
    return sorted(_normal((r["key"], r["value"], r["partition_id"])) for r in df.collect())


def _offline_rows(table) -> list:
    columns = [_arrow_values(table.column(c).combine_chunks())
               for c in ("key", "value", "partition_id")]
    return sorted(_normal(row) for row in zip(*columns, strict=True))


@pytest.fixture(scope="module")
def checkpoints(sessions, tmp_path_factory) -> dict[str, Path]:
    spark = sessions.get("local")
    work = tmp_path_factory.mktemp("read")
    out = {}
    for name, build in (("agg", _aggregate_with_struct_key),
                        ("dedup", _deduplicate_with_array_and_binary_keys)):
        run = run_stream(spark, rockstate.PROVIDER_CLASS, build, _batches(5), workdir=work,
                         name=name, schema=SCHEMA,
                         output_mode="update" if name == "agg" else "append")
        out[name] = run.checkpoint
    # The aggregation with row checksums (format 4): every reader checks and opens its values.
    out["agg-checksums"] = run_stream(
        spark, rockstate.PROVIDER_CLASS, _aggregate_with_struct_key, _batches(5), workdir=work,
        name="agg-checksums", schema=SCHEMA,
        confs={"spark.sql.streaming.stateStore.rowChecksum.enabled": "true"}).checkpoint
    spark.sparkContext._jvm.io.rockstate.plugin.LocalDiagnostics.awaitUploadsIdle(60000)
    # The same aggregation on Spark's own RocksDB provider (a zip and shared SSTs a version).
    out["spark-agg"] = run_stream(
        spark, SPARK_ROCKSDB_CLASS, _aggregate_with_struct_key, _batches(5), workdir=work,
        name="spark-agg", schema=SCHEMA,
        confs={"spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled":
               "false"}).checkpoint
    # And in changelog checkpointing mode: versions are the newest zip plus changelogs.
    out["spark-agg-changelog"] = run_stream(
        spark, SPARK_ROCKSDB_CLASS, _aggregate_with_struct_key, _batches(5), workdir=work,
        name="spark-agg-changelog", schema=SCHEMA,
        confs={"spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
               "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2"}).checkpoint
    return out


@pytest.mark.parametrize("name", ["agg", "dedup", "agg-checksums", "spark-agg",
                                  "spark-agg-changelog"])
# 4: a snapshot version, whose own snapshot lands after its version file (which names 2's).
@pytest.mark.parametrize("version", [None, 3, 4])
def test_read_state_matches_spark_state_reader(spark, checkpoints, name: str, version):
    checkpoint = checkpoints[name]
    table = rockstate.read_state(str(checkpoint), operator=0, version=version)
    batch = (version or 5) - 1
    expected = _spark_rows(spark, checkpoint, 0, batch)
    assert expected, "the state reader found no state"
    assert _offline_rows(table) == expected


def _spark_changes(spark, checkpoint: Path, first: int, last: int) -> list:
    df = (spark.read.format("statestore").option("readChangeFeed", True)
          .option("changeStartBatchId", first).option("changeEndBatchId", last)
          .load(str(checkpoint)))
    return sorted(_normal((r["batch_id"], r["change_type"], r["key"], r["value"],
                           r["partition_id"])) for r in df.collect())


@pytest.mark.parametrize("name", ["agg", "dedup", "agg-checksums"])
def test_read_changes_matches_spark_change_feed(spark, checkpoints, name: str):
    # Spark's own change feed over the same checkpoint (rockstate's provider serves it), and,
    # for the aggregation, over the same query's checkpoint on Spark's RocksDB provider.
    table = rockstate.read_changes(str(checkpoints[name]), operator=0, from_batch=1,
                                   to_batch=3)
    columns = [_arrow_values(table.column(c).combine_chunks())
               for c in ("batch_id", "change_type", "key", "value", "partition_id")]
    offline = sorted(_normal(row) for row in zip(*columns, strict=True))
    assert offline, "no changes read"
    assert {row[0] for row in offline} == {1, 2, 3}
    assert offline == _spark_changes(spark, checkpoints[name], 1, 3)
    if name == "agg":
        assert offline == _spark_changes(spark, checkpoints["spark-agg-changelog"], 1, 3)


def test_read_changes_refuses_what_it_cannot_read(checkpoints):
    with pytest.raises(rockstate.RockstateError, match="not committed in every partition"):
        rockstate.read_changes(str(checkpoints["agg"]), from_batch=0, to_batch=5)
    with pytest.raises(rockstate.RockstateError, match="no later than the last"):
        rockstate.read_changes(str(checkpoints["agg"]), from_batch=3, to_batch=2)
    with pytest.raises(rockstate.RockstateError, match="readChangeFeed"):
        rockstate.read_changes(str(checkpoints["spark-agg-changelog"]))


def test_struct_key_decodes_to_nested_arrow_columns(checkpoints):
    table = rockstate.read_state(str(checkpoints["agg"]))
    key_type = table.schema.field("key").type
    # Spark names the grouping struct in the state schema; its fields are the query's.
    assert [f.name for f in key_type] == ["_groupingexpression", "key"]
    struct_key = key_type.field("_groupingexpression").type
    assert [f.name for f in struct_key] == ["key", "m", "tag"]
    tags = table.column("key").combine_chunks().field(0).field("tag").to_pylist()
    assert set(tags) == {"x"}
    assert table.column("partition_id").to_pylist().count(0) > 0


def test_memory_copy_reads_the_same_table(checkpoints):
    fs = fsspec.filesystem("memory")
    fs.put(str(checkpoints["agg"]), "/read-copy", recursive=True)
    on_disk = rockstate.read_state(str(checkpoints["agg"]))
    in_memory = rockstate.read_state("memory://read-copy")
    assert _offline_rows(in_memory) == _offline_rows(on_disk)


def test_partitions_and_versions_select(checkpoints):
    everything = rockstate.read_state(str(checkpoints["dedup"]))
    one = rockstate.read_state(str(checkpoints["dedup"]), partitions=[1])
    assert set(one.column("partition_id").to_pylist()) == {1}
    assert 0 < one.num_rows < everything.num_rows
    with pytest.raises(rockstate.RockstateError, match="version 99"):
        rockstate.read_state(str(checkpoints["dedup"]), version=99)


_PLAN_READ = rockstate.tools.read.plan_read


def _plan_read_noting_the_process(*args, **kwargs):
    """``plan_read`` that notes which process ran it (forked workers inherit the patch)."""
    with open(os.environ["ROCKSTATE_TEST_PIDS"], "a") as noted:
        noted.write(f"{os.getpid()}\n")
    return _PLAN_READ(*args, **kwargs)


@pytest.mark.parametrize("name", ["dedup", "spark-agg-changelog"])
def test_worker_processes_read_what_one_process_reads(checkpoints, name: str, tmp_path: Path,
                                                      monkeypatch):
    pids = tmp_path / "pids"
    monkeypatch.setenv("ROCKSTATE_TEST_PIDS", str(pids))
    monkeypatch.setattr(rockstate.tools.read, "plan_read", _plan_read_noting_the_process)
    serial_labels: list[str] = []
    serial = rockstate.read_state(str(checkpoints[name]), workers=1,
                                  progress=serial_labels.append)
    assert set(pids.read_text().split()) == {str(os.getpid())}
    pids.unlink()
    labels: list[str] = []
    parallel = rockstate.read_state(str(checkpoints[name]), workers=2, progress=labels.append)
    noted = pids.read_text().split()
    assert len(set(noted) - {str(os.getpid())}) == 1, "a worker process planned its share"
    assert noted.count(str(os.getpid())) == 2, "this process planned the read, then its share"
    assert parallel.num_rows > 0 and parallel.equals(serial), "same rows, in the same order"
    assert labels == serial_labels and len(labels) >= 2
    with pytest.raises(ValueError, match="workers must be 1 or more"):
        rockstate.read_state(str(checkpoints[name]), workers=0)


def _plan_read_killed_in_a_worker(*args, **kwargs):
    """``plan_read`` whose process is SIGKILLed when it is not the test's own (a worker)."""
    if os.getpid() != int(os.environ["ROCKSTATE_TEST_PARENT"]):
        os.kill(os.getpid(), signal.SIGKILL)
    return _PLAN_READ(*args, **kwargs)


def test_a_worker_killed_mid_read_is_a_clear_error(checkpoints, monkeypatch):
    monkeypatch.setenv("ROCKSTATE_TEST_PARENT", str(os.getpid()))
    monkeypatch.setattr(rockstate.tools.read, "plan_read", _plan_read_killed_in_a_worker)
    with pytest.raises(rockstate.RockstateError, match="worker process reading the state died"):
        rockstate.read_state(str(checkpoints["dedup"]), workers=2)
    assert rockstate.read_state(str(checkpoints["dedup"]), workers=1).num_rows > 0


def test_a_version_reads_from_its_own_snapshot_that_landed_after_it(checkpoints, monkeypatch,
                                                                     tmp_path: Path):
    """Version 4's file names version 2's snapshot (4's was still uploading); the reader
    starts from 4's own instead of replaying 3 and 4, and without it reads the same."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(checkpoints["agg"], copy)
    loc = rockstate.CheckpointLocation(str(copy))
    store = loc.stores()[0]
    named = loc.manifest(store, 4)
    assert named.snapshot is not None and named.snapshot.version == 2
    assert [c.version for c in named.changelogs] == [3, 4]
    assert any(p.startswith("snapshots/4-") for p in loc.snapshots(store))
    read_paths: list[str] = []
    real_read = rockstate.CheckpointLocation.read

    def counting(self, store_ref, relative, needed_by, byte_range=None, **kind):
        read_paths.append(relative)
        return real_read(self, store_ref, relative, needed_by, byte_range, **kind)

    monkeypatch.setattr(rockstate.CheckpointLocation, "read", counting)
    from_own = _offline_rows(rockstate.read_state(str(copy), version=4, workers=1))
    replayed = [p for p in read_paths if p.startswith(("versions/3-", "snapshots/2-"))]
    assert not replayed, read_paths
    assert any(p.startswith("snapshots/4-") for p in read_paths), read_paths
    # Without 4's snapshot (cleanup took it, or it was withdrawn) the lineage is replayed.
    for path in loc.snapshots(store):
        if path.startswith("snapshots/4-"):
            (Path(store.path) / path).unlink()
    read_paths.clear()
    assert _offline_rows(rockstate.read_state(str(copy), version=4, workers=1)) == from_own
    assert any(p.startswith("versions/3-") for p in read_paths), read_paths


def test_a_damaged_snapshot_file_is_an_error_not_empty_state(checkpoints, tmp_path: Path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(checkpoints["dedup"], copy)
    loc = rockstate.CheckpointLocation(str(copy))
    store = loc.stores()[0]
    m = loc.manifest(store, loc.versions(store)[-1])
    snap = loc.snapshot_manifest(store, m.snapshot.path, "test")
    sst = Path(store.path) / next(f.path for f in snap.files if f.kind == "sst")
    sst.write_bytes(sst.read_bytes()[:-10])
    with pytest.raises(rockstate.CorruptCheckpointError, match="does not match its manifest"):
        rockstate.read_state(str(copy))


@pytest.mark.parametrize("name", ["agg", "agg-checksums", "spark-agg", "spark-agg-changelog"])
def test_export_writes_one_dataset_per_operator_partitioned_by_partition(
        checkpoints, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str):
    from rockstate.checkpoint.store_reader import StoreReader
    from rockstate.tools import read
    from rockstate.tools.state_read import StateRead

    # Streamed, rockstate's stores and Spark's provider's alike (StoreReader.entry_chunks):
    # no partition is read whole, and no chunk holds more rows than the chunk size (3 here,
    # so every partition takes several).
    chunks: list[int] = []

    def counted(stream):
        def chunked(*args, **kwargs):
            for keys, values in stream(*args, **kwargs):
                chunks.append(len(keys))
                yield keys, values
        return chunked

    def whole(self, partitions=None, progress=None):
        raise AssertionError("export read a partition whole")

    monkeypatch.setattr(read, "EXPORT_CHUNK_ROWS", 3)
    monkeypatch.setattr(StoreReader, "entry_chunks", counted(StoreReader.entry_chunks))
    monkeypatch.setattr(StateRead, "read", whole)
    dest = tmp_path / "export"
    written = rockstate.export(str(checkpoints[name]), str(dest))
    assert chunks and max(chunks) <= 3 and len(chunks) > 2
    monkeypatch.undo()
    assert written == [str(dest / "operator=0" / "store=default")]
    assert sorted(p.name for p in (dest / "operator=0" / "store=default").iterdir()) == \
        ["partition_id=0", "partition_id=1"]
    back = ds.dataset(written[0], partitioning="hive").to_table()
    whole = rockstate.read_state(str(checkpoints[name]))
    assert back.num_rows == whole.num_rows > 0
    assert sorted(back.column("partition_id").to_pylist()) == \
        sorted(whole.column("partition_id").to_pylist())

    def rows(table):  # every row whole, comparable
        return sorted(json.dumps(r, sort_keys=True, default=str)
                      for r in read.table_rows(table.select(["key", "value", "partition_id"])))
    assert rows(back) == rows(whole)


def test_cli_read_changes_and_export_run_without_spark(checkpoints, tmp_path: Path):
    import json
    import subprocess

    def cli(*args: str) -> subprocess.CompletedProcess:
        return run_cli(*args, offline=True)

    out = cli("read", str(checkpoints["agg"]), "--json", "--limit", "0")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == rockstate.read_state(str(checkpoints["agg"])).num_rows
    assert {"key", "value", "partition_id"} == set(rows[0])
    assert "reading operator 0 partition 0" in out.stderr  # progress, on stderr
    serial = cli("read", str(checkpoints["agg"]), "--json", "--limit", "0", "--workers", "1")
    assert serial.returncode == 0 and serial.stdout == out.stdout, serial.stderr
    refused_workers = cli("read", str(checkpoints["agg"]), "--workers", "0")
    assert refused_workers.returncode == 2 and "1 or more" in refused_workers.stderr
    table = cli("read", str(checkpoints["dedup"]), "--partitions", "1", "--limit", "2")
    assert table.returncode == 0 and table.stdout.count("partition 1:") == 2, table.stdout
    exported = cli("export", str(checkpoints["dedup"]), str(tmp_path / "out"))
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "out" / "operator=0" / "store=default" / "partition_id=0").is_dir()
    missing = cli("read", str(checkpoints["dedup"]), "--operator", "7")
    assert missing.returncode == 2 and "no rockstate store" in missing.stderr
    changes = cli("changes", str(checkpoints["agg"]), "--from", "1", "--to", "2", "--json",
                  "--limit", "0")
    assert changes.returncode == 0, changes.stderr
    rows = [json.loads(line) for line in changes.stdout.splitlines()]
    assert len(rows) == rockstate.read_changes(str(checkpoints["agg"]), from_batch=1,
                                               to_batch=2).num_rows
    assert {r["batch_id"] for r in rows} == {1, 2} and rows[0]["change_type"] == "update"
    refused = cli("changes", str(checkpoints["agg"]), "--from", "3", "--to", "1")
    assert refused.returncode == 2 and "no later than the last" in refused.stderr


def test_session_window_state_is_refused_not_misread(spark, workdir: Path):
    def sessions(s):
        return (s.withWatermark("ts", "1 hour")
                .groupBy(F.session_window("ts", "10 minutes"), "key").count())

    run = run_stream(spark, rockstate.PROVIDER_CLASS, sessions, _batches(2), workdir=workdir,
                     name="session", schema=SCHEMA, output_mode="append")
    with pytest.raises(rockstate.RockstateError, match="prefix columns"):
        rockstate.read_state(str(run.checkpoint))


# state variable of _ListAndMapProcessor -> the columns Spark's statestore source gives it
TWS_COLUMNS = {"total": ("key", "value"), "items": ("key", "list_element"),
               "counts": ("key", "user_map_key", "user_map_value")}


def _assert_variables_read_like_spark(spark, checkpoint: Path, columns: dict) -> None:
    """Each state variable (name -> its columns) read offline as Spark's reader reads it."""
    for var, cols in columns.items():
        df = spark.read.format("statestore").option("stateVarName", var).load(str(checkpoint))
        expected = sorted(_normal(tuple(r[c] for c in (*cols, "partition_id")))
                          for r in df.collect())
        table = rockstate.read_state(str(checkpoint), state_var=var)
        values = [_arrow_values(table.column(c).combine_chunks()) for c in (*cols, "partition_id")]
        assert expected, f"Spark's reader found no {var} state"
        assert sorted(_normal(row) for row in zip(*values, strict=True)) == expected, var


class _ListAndMapProcessor:
    """A transformWithStateInPandas processor with a value, a list and a map state."""

    def __new__(cls):
        from pyspark.sql.streaming import StatefulProcessor

        class Processor(StatefulProcessor):
            def init(self, handle) -> None:
                from pyspark.sql.types import LongType, StringType, StructField, StructType

                self.total = handle.getValueState("total",
                                                  StructType([StructField("n", LongType())]))
                self.items = handle.getListState("items",
                                                 StructType([StructField("v", LongType())]))
                self.counts = handle.getMapState(
                    "counts", StructType([StructField("word", StringType())]),
                    StructType([StructField("n", LongType())]))

            def handleInputRows(self, key, rows, timerValues):
                import pandas as pd

                total = self.total.get()[0] if self.total.exists() else 0
                for pdf in rows:
                    for v, w in zip(pdf["value"], pdf["word"], strict=True):
                        total += int(v)
                        self.items.appendValue((int(v),))
                        n = self.counts.getValue((w,))[0] if self.counts.containsKey((w,)) else 0
                        self.counts.updateValue((w,), (n + 1,))
                self.total.update((total,))
                yield pd.DataFrame({"key": [key[0]], "total": [total]})

            def close(self) -> None:
                pass

        return Processor()


def _list_and_map_query(s):
    return (s.withColumn("word", F.concat(F.lit("w"), (F.col("value") % 3).cast("string")))
            .groupBy("key")
            .transformWithStateInPandas(_ListAndMapProcessor(),
                                        outputStructType="key STRING, total LONG",
                                        outputMode="Update", timeMode="None"))


# Spark 4.2+ runs transformWithState only on its own RocksDB provider; 4.0 and 4.1 run it on
# rockstate too (rockstate.session.spark_lines). The reader reads both, one column family (state
# variable) at a time.
TWS_PROVIDERS = [SPARK_ROCKSDB_CLASS] + (
    [rockstate.PROVIDER_CLASS] if spark_lines.find(pyspark.__version__).transform_with_state
    else [])


@pytest.mark.parametrize(("checksums", "encoding"), [
    (False, "unsaferow"), (True, "unsaferow"), (False, "avro")],
    ids=["plain", "row-checksums", "avro"])
@pytest.mark.parametrize("provider", TWS_PROVIDERS, ids=lambda p: p.rsplit(".", 1)[-1])
def test_transform_with_state_in_pandas_reads_like_spark(spark, workdir: Path, provider: str,
                                                         checksums: bool, encoding: str):
    """Value, list (merged values) and map state, read offline as Spark reads them; with row
    checksums too (rockstate's on 4.0/4.1, Spark's own provider's on 4.2+: there it is the
    same value layout over the key with its family id; on 4.0/4.1 Spark's provider ignores
    the setting), and in the Avro encoding."""
    run = run_stream(spark, provider, _list_and_map_query, _batches(3), workdir=workdir,
                     name=f"tws-{checksums}-{encoding}", schema=SCHEMA, confs={
                         "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled":
                         "false",
                         "spark.sql.streaming.stateStore.rowChecksum.enabled": str(checksums),
                         "spark.sql.streaming.stateStore.encodingFormat": encoding})
    _assert_variables_read_like_spark(spark, run.checkpoint, TWS_COLUMNS)
    with pytest.raises(rockstate.RockstateError, match="state_var"):
        rockstate.read_state(str(run.checkpoint))
    written = rockstate.export(str(run.checkpoint),
                               str(workdir / f"tws-export-{checksums}-{encoding}"))
    assert [p.rsplit("/", 1)[-1] for p in written] == \
        ["column_family=counts", "column_family=items", "column_family=total"]


# The value state of _EvolvingProcessor: every type the Avro encoding has, nulls included.
_RICH_FIELDS = ("i INT, l LONG, d DOUBLE, f FLOAT, s STRING, b BINARY, dec DECIMAL(12,3), "
                "big DECIMAL(30,5), dt DATE, ts TIMESTAMP, ok BOOLEAN, arr ARRAY<INT>, "
                "m MAP<STRING,LONG>, st STRUCT<a: INT, t: STRING>")


class _EvolvingProcessor:
    """A processor whose value state ``rich`` holds every Avro-encodable type; version 2 adds
    a field to it and to the list ``events`` (transformWithState's schema evolution)."""

    def __new__(cls, version: int):
        from pyspark.sql.streaming import StatefulProcessor

        class Processor(StatefulProcessor):
            def init(self, handle) -> None:
                # DDL strings: the driver-side worker that runs init has no SparkContext
                extra = ", extra STRING" if version > 1 else ""
                self.rich = handle.getValueState("rich", _RICH_FIELDS + extra)
                self.events = handle.getListState("events", "n LONG, tag STRING" + extra)
                self.seen = handle.getMapState("seen", "w STRING, k INT", "c LONG")

            def handleInputRows(self, key, rows, timerValues):
                import datetime as dt
                import decimal as dec

                import pandas as pd

                n = 0
                for pdf in rows:
                    for v in pdf["value"]:
                        n += 1
                        self.events.appendValue(
                            (int(v), None if v % 4 == 0 else f"t{v}",
                             *([f"x{v}"] if version > 1 else [])))
                        w = (f"w{v % 3}", int(v % 2))
                        c = self.seen.getValue(w)[0] if self.seen.containsKey(w) else 0
                        self.seen.updateValue(w, (c + 1,))
                k = int(key[0][1:])
                self.rich.update((
                    k * n, -(k << 40) - n, k / 4 - 3.5, float(n) / 2, None if k % 3 == 0
                    else f"s{k}-é", bytes([k, n, 0, 255]), dec.Decimal(f"{k * 7 - 50}.125"),
                    dec.Decimal(f"-{k}12345678901234567890.00005"),
                    dt.date(2026, 1 + k % 12, 1 + n % 28),
                    dt.datetime(2026, 3, 1, k % 24, n % 60, 7, 125000), k % 2 == 0,
                    list(range(k % 4)), {f"m{j}": j * n for j in range(k % 3)},
                    None if k % 5 == 0 else (k, f"in{n}"),
                    *([f"v2-{n}"] if version > 1 else [])))
                yield pd.DataFrame({"key": [key[0]], "total": [n]})

            def close(self) -> None:
                pass

        return Processor()


@pytest.mark.parametrize("provider", TWS_PROVIDERS, ids=lambda p: p.rsplit(".", 1)[-1])
def test_avro_state_of_every_type_and_an_evolved_schema_reads_like_spark(
        spark, workdir: Path, provider: str):
    """Avro-encoded state (every type it has, nulls at each depth) written by two versions of
    a processor, the second adding fields: rows of both schema ids, read offline as Spark
    reads them (the older rows with the added fields null)."""
    started = []

    def query(s):
        started.append(len(started) + 1)
        return (s.groupBy("key").transformWithStateInPandas(
            _EvolvingProcessor(started[-1]), outputStructType="key STRING, total LONG",
            outputMode="Update", timeMode="None"))

    # Keys k6 to k12 stop at the restart: their rows keep the first schema's id.
    batches = [[r for r in rows if b < 2 or int(r["key"][1:]) < 6]
               for b, rows in enumerate(_batches(4))]
    run = run_stream(spark, provider, query, batches, workdir=workdir, name="tws-evolve",
                     schema=SCHEMA, restart_at=2, confs={
                         "spark.sql.streaming.stateStore.encodingFormat": "avro"})
    assert started == [1, 2]
    columns = {"rich": ("key", "value"), "events": ("key", "list_element"),
               "seen": ("key", "user_map_key", "user_map_value")}
    _assert_variables_read_like_spark(spark, run.checkpoint, columns)
    # Both schema ids are there, in values and within one list.
    rich = rockstate.read_state(str(run.checkpoint), state_var="rich")
    extras = dict(zip(rich.column("key").combine_chunks().field("key").to_pylist(),
                      rich.column("value").combine_chunks().field("extra").to_pylist(),
                      strict=True))
    assert extras["k12"] is None and extras["k3"] is not None, extras
    events = rockstate.read_state(str(run.checkpoint), state_var="events")
    tags = [(k["key"], e["extra"]) for k, e in zip(events.column("key").to_pylist(),
                                                   events.column("list_element").to_pylist(),
                                                   strict=True)]
    assert ("k3", None) in tags and any(k == "k3" and x for k, x in tags), tags


@pytest.mark.skipif(len(TWS_PROVIDERS) < 2, reason="Spark 4.2+ runs transformWithState only "
                    "on its own provider (rockstate.session.spark_lines); the 4.0 leg runs this")
def test_transform_with_state_change_feed_matches_spark_rocksdb(spark, workdir: Path):
    # The same query on the same input: Spark's change feed of each state variable is the same
    # on rockstate and on Spark's RocksDB provider (changelog checkpointing, which has one).
    feeds = {}
    for provider in TWS_PROVIDERS:
        run = run_stream(spark, provider, _list_and_map_query, _batches(3), workdir=workdir,
                         name=f"tws-feed-{provider.rsplit('.', 1)[-1]}", schema=SCHEMA, confs={
                             "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing"
                             ".enabled": "true"})
        for var, cols in TWS_COLUMNS.items():
            df = (spark.read.format("statestore").option("stateVarName", var)
                  .option("readChangeFeed", True).option("changeStartBatchId", 0)
                  .option("changeEndBatchId", 2).load(str(run.checkpoint)))
            feeds[provider, var] = sorted(
                _normal(tuple(r[c] for c in ("batch_id", "change_type", *cols, "partition_id")))
                for r in df.collect())
    for var in TWS_COLUMNS:
        assert feeds[SPARK_ROCKSDB_CLASS, var], f"Spark's change feed of {var} is empty"
        assert feeds[rockstate.PROVIDER_CLASS, var] == feeds[SPARK_ROCKSDB_CLASS, var], var


def test_a_truncated_spark_changelog_is_an_error(checkpoints, tmp_path: Path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(checkpoints["spark-agg-changelog"], copy)
    changelog = copy / "state" / "0" / "0" / "5.changelog"
    changelog.write_bytes(changelog.read_bytes()[:-12])
    (changelog.parent / ".5.changelog.crc").unlink(missing_ok=True)
    with pytest.raises(rockstate.CorruptCheckpointError, match=r"5\.changelog"):
        rockstate.read_state(str(copy), version=5)


@pytest.mark.skipif(tuple(int(p) for p in pyspark.__version__.split(".")[:2]) < (4, 2),
                    reason="Spark's row checksums (SPARK-54106) are in 4.2+")
def test_spark_providers_row_checksums_are_read_as_spark_reads_them(spark, workdir: Path,
                                                                    tmp_path: Path):
    """Spark's own provider with row checksums puts a header before each value (the offset
    log records the setting): the offline reader checks and opens every value, and reads
    what Spark's reader reads, in changelog checkpointing mode (snapshot plus changelogs)."""
    run = run_stream(spark, SPARK_ROCKSDB_CLASS, _aggregate_with_struct_key, _batches(3),
                     workdir=workdir, name="spark-checksums", schema=SCHEMA,
                     confs={"spark.sql.streaming.stateStore.rowChecksum.enabled": "true",
                            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing"
                            ".enabled": "true",
                            "spark.sql.streaming.stateStore.minDeltasForSnapshot": "1"})
    expected = _spark_rows(spark, run.checkpoint, 0, 2)
    assert expected
    assert _offline_rows(rockstate.read_state(str(run.checkpoint))) == expected
    written = rockstate.export(str(run.checkpoint), str(tmp_path / "export"))
    back = ds.dataset(written[0], partitioning="hive").to_table()
    assert back.num_rows == len(expected)


def test_a_format_1_version_reads_its_listed_snapshot_not_empty_state(spark, checkpoints,
                                                                      tmp_path: Path):
    """A format 1 manifest lists its full snapshot's files itself (rockstate 0.1): it is read
    from them, as the JVM and ``verify`` do, never as an empty store."""
    import json
    import shutil
    import zlib

    copy = tmp_path / "copy"
    shutil.copytree(checkpoints["agg"], copy)
    loc = rockstate.CheckpointLocation(str(copy))
    converted = 0
    for store in loc.stores():
        # Version 4 is snapshotted (interval 2): its snapshot's files are the whole state.
        snapshots = [p for p in (Path(store.path) / "snapshots").glob("4-*.json")]
        if not snapshots:
            continue
        snap = json.loads(snapshots[0].read_text())
        # Format 3 packs RocksDB's small files into the snapshot manifest; format 1 listed them.
        relative = f"snapshots/{snapshots[0].name}"
        meta = loc.snapshot_manifest(store, relative, "test").meta_files(relative)
        (Path(store.path) / "meta" / "4-legacy").mkdir(parents=True)
        for name, content in meta:
            (Path(store.path) / "meta" / "4-legacy" / name).write_bytes(content)
            snap["files"].append({"localName": name, "path": f"meta/4-legacy/{name}",
                                  "size": len(content), "crc32": zlib.crc32(content),
                                  "kind": "meta"})
        # What rockstate 0.1 wrote for a version: the snapshot's files in its manifest.
        legacy = {"formatVersion": 1, "version": 4, "operatorId": store.operator,
                  "partitionId": store.partition, "storeName": store.name,
                  "numKeys": loc.manifest(store, 4).num_keys, "useColumnFamilies": False,
                  "columnFamilies": snap["columnFamilies"], "files": snap["files"],
                  "stats": snap["stats"], "createdAtMs": 0, "writer": "rockstate-jvm"}
        # Written after version 4's version file, so it is the attempt that landed.
        (Path(store.path) / "manifests").mkdir(exist_ok=True)
        (Path(store.path) / "manifests" / "4.json").write_text(json.dumps(legacy))
        converted += 1
    assert converted, "no store snapshotted version 4; the case tests nothing"
    assert rockstate.verify(str(copy)).ok
    expected = _spark_rows(spark, checkpoints["agg"], 0, 3)
    assert expected
    assert _offline_rows(rockstate.read_state(str(copy), operator=0, version=4)) == expected
