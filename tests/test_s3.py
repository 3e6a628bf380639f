"""rockstate with its checkpoint location on an S3 API, as in production.

moto's S3 server (in this process) is reached by Spark through Hadoop's `s3a` connector (the
`hadoop-aws` of pyspark's Hadoop, from Maven Central; see tests/s3.py) and by the offline
tools through `s3fs`. There every new file is one PUT and a rename is a copy plus a delete:
rockstate publishes each commit's version file with one PUT under its final name. The same
queries as on local disk must give the oracle's output and state, through a restart and an
executor's SIGKILL, and the offline tools must read and verify the same bucket.
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import functions as F

import rockstate
from rockstate import cli
from rockstate.checkpoint.location import CheckpointLocation
from rockstate.tools.report_data import ROCKSTATE, collect
from support.queries import total_by_key
from support.s3 import ACCESS_KEY, REGION, SECRET_KEY
from support.savepoints import Relocation, digest, settled
from support.streams import assert_same_as_oracle, state_rows

SCHEMA = "key STRING, value INT, ts TIMESTAMP"
BATCHES = [
    [{"key": k, "value": b * 10 + i, "ts": f"2026-01-01 00:{b * 5 + i % 3:02d}:00"}
     for i, k in enumerate(keys)]
    for b, keys in enumerate(["aabc", "bcd", "aaee", "f", "abcdef", "gg"])]


def _offline(s3, url: str) -> CheckpointLocation:
    """The checkpoint at an `s3a://` URL, read with s3fs (no Spark)."""
    return CheckpointLocation(url.replace("s3a://", "s3://", 1), **s3.storage_options())


def _object_keys(s3, url: str) -> list[str]:
    """Every object under an `s3a://` URL as the bucket holds it, directory markers (keys
    ending in "/") and temporary objects included: s3fs's own listings hide markers."""
    import boto3

    bucket, _, prefix = url.split("://", 1)[1].partition("/")
    client = boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name=REGION)
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix.rstrip("/") + "/"):
        keys.extend(o["Key"] for o in page.get("Contents", []))
    return keys


def test_aggregation_on_s3_matches_the_oracle_and_reads_offline(spark, s3, workdir: Path):
    _, mine = assert_same_as_oracle(
        spark, lambda s: s.groupBy("key").agg(F.count("*").alias("n"),
                                               F.sum("value").alias("total")),
        BATCHES, workdir=workdir, name="s3-agg", schema=SCHEMA,
        checkpoint_root=s3.url("agg"), storage_options=s3.storage_options())
    loc = _offline(s3, str(mine.checkpoint))
    stores = loc.stores(0)
    assert stores and all(loc.version_entries(s) for s in stores)
    assert all(not e.is_legacy for s in stores for e in loc.version_entries(s))
    # Snapshot manifests and version files are published under new names, one PUT each: no
    # directory marker (a mkdirs), no temporary object (a write then a copy) stays behind.
    keys = [k for k in _object_keys(s3, str(mine.checkpoint)) if "/state/" in k]
    assert any("/snapshots/" in k and k.endswith(".json") for k in keys), keys
    assert not [k for k in keys if k.endswith("/snapshots/") or ".tmp" in k], keys
    report = rockstate.verify(loc)
    assert report.ok, [str(p) for p in report.problems]
    # The report finds the provider in the offset log with the location's own credentials
    # (it once looked it up by URL alone and said "provider unknown").
    data = collect(loc)
    assert (data.provider, data.kind) == (rockstate.PROVIDER_CLASS, ROCKSTATE), data.notes
    # The command line reaches it with the same options, given as --storage-option.
    options = [f"--storage-option={k}={json.dumps(v) if not isinstance(v, str) else v}"
               for k, v in s3.storage_options().items()]
    assert cli.main(["verify", loc.url, *options]) == 0
    # The offline reader (s3fs, Python) and Spark's state source (s3a, the provider) agree.
    table = rockstate.read_state(loc, operator=0)
    offline = sorted((tuple(r["key"].values()), tuple(r["value"].values()), r["partition_id"])
                     for r in table.to_pylist())
    spark_side = sorted((tuple(k), tuple(v), p) for k, v, p in state_rows(spark, mine.checkpoint))
    assert offline == spark_side and offline


def test_stream_stream_join_on_s3_matches_the_oracle(spark, s3, workdir: Path):
    def join(left, right):
        left = left.withWatermark("ts", "10 minutes").alias("l")
        right = right.withWatermark("ts", "10 minutes").alias("r")
        return left.join(right, F.expr(
            "l.key = r.key AND r.ts BETWEEN l.ts - INTERVAL 5 MINUTES AND l.ts + "
            "INTERVAL 5 MINUTES"), "inner").select("l.key", "l.value", "r.value")

    # Three batches (the CI budget): the join's four stores commit and snapshot on S3; what
    # eviction by watermark writes is the same on any file system (test_operators runs it).
    sided = [[dict(r, side=i % 2) for i, r in enumerate(rows)] for rows in BATCHES[:3]]
    _, mine = assert_same_as_oracle(
        spark, join, sided, workdir=workdir, name="s3-join", schema=SCHEMA,
        output_mode="append", sources=2, checkpoint_root=s3.url("join"),
        storage_options=s3.storage_options(),
        state_options=({"joinSide": "left"}, {"joinSide": "right"}))
    assert rockstate.verify(_offline(s3, str(mine.checkpoint))).ok


def test_executor_killed_with_the_checkpoint_on_s3_loses_nothing(cluster_spark, s3,
                                                                 workdir: Path):
    from support.executors import run_with_executor_kill

    mine = run_with_executor_kill(cluster_spark, workdir, "s3-kill", n=6, kill_before=3,
                          checkpoint=s3.url("kill"))
    downloaded = sum(p["stateOperators"][0]["customMetrics"]["rockstateBytesDownloaded"]
                     for p in mine.progress if p["batchId"] >= 3)
    assert downloaded > 0, "the lost partitions should have been restored from S3"
    assert rockstate.verify(_offline(s3, str(mine.checkpoint))).ok


def test_a_savepoint_on_s3_restores_and_continues(spark, s3, workdir: Path):
    """The savepoint on the S3 server (s3fs), restored to local disk; neither the original nor
    the savepoint changes while the restored query runs."""
    class OnS3(Relocation):
        def __call__(self, query, checkpoint):
            self.saved = rockstate.stop_with_savepoint(
                query, self.target, target_options=s3.storage_options())
            self.frozen = {"original": settled(checkpoint), "savepoint": self._saved_digest()}
            self.original = checkpoint
            return rockstate.restore(self.target, str(self.workdir / "restored"),
                                     storage_options=s3.storage_options())

        def _saved_digest(self) -> dict[str, str]:
            loc = CheckpointLocation(self.target, **s3.storage_options())
            return {p: str(loc.fs.info(p)["size"]) + loc.fs.cat_file(p).hex()[:64]
                    for p in sorted(loc.fs.find(loc.root))}

        def assert_untouched(self) -> None:
            assert self._saved_digest() == self.frozen["savepoint"], "the savepoint changed"
            assert digest(self.original) == self.frozen["original"], "the original changed"

    relocation = OnS3(workdir, s3.url("savepoints/agg", scheme="s3"), "stopped")
    _, mine = assert_same_as_oracle(
        spark, total_by_key, BATCHES, workdir=workdir, name="s3-savepoint",
        schema=SCHEMA, restart_at=3, relocate=relocation)
    assert str(mine.checkpoint) == str(workdir / "restored")
    relocation.assert_untouched()
    assert rockstate.verify(CheckpointLocation(relocation.target, **s3.storage_options())).ok


def test_a_rescale_on_s3_places_every_key_like_the_oracle(spark, s3, workdir: Path):
    """A checkpoint on S3 (rename = copy + delete) rescaled 4 -> 2: the oracle runs with the
    session's 2 partitions, so the final state, partition ids included, must be its state."""
    def rescale_to_2(query, checkpoint):
        query.stop()
        rockstate.rescale(spark, str(checkpoint), 2, storage_options=s3.storage_options())
        return checkpoint

    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    _, mine = assert_same_as_oracle(
        spark, lambda s: s.groupBy("key").agg(F.sum("value").alias("total")),
        BATCHES, workdir=workdir, name="s3-rescale", schema=SCHEMA, restart_at=3,
        checkpoint_root=s3.url("rescale"), storage_options=s3.storage_options(),
        rockstate_confs={"spark.sql.shuffle.partitions": "4"}, relocate=rescale_to_2)
    confs = rockstate.recorded_confs(str(mine.checkpoint).replace("s3a://", "s3://", 1),
                                     storage_options=s3.storage_options())
    assert confs["spark.sql.shuffle.partitions"] == "2"


def test_the_server_counts_requests_by_kind_as_s3_bills_them():
    """What bench/provider_bench.py reports as requests per batch: a server of its own, so no
    other test's traffic is counted."""
    import fsspec

    from support.s3 import S3Server

    with S3Server() as server:
        fs = fsspec.filesystem("s3", **server.storage_options())
        start = server.requests()
        fs.pipe(f"{server.bucket}/a/one", b"1")
        fs.pipe(f"{server.bucket}/a/two", b"22")
        fs.invalidate_cache()
        assert sorted(fs.ls(f"{server.bucket}/a", detail=False)) == \
            [f"{server.bucket}/a/one", f"{server.bucket}/a/two"]
        assert fs.cat_file(f"{server.bucket}/a/two") == b"22"
        fs.info(f"{server.bucket}/a/one")
        fs.rm_file(f"{server.bucket}/a/one")
        done = {k: v - start.get(k, 0) for k, v in server.requests().items()}
    assert done.get("PUT") == 2 and done.get("LIST", 0) >= 1 and done.get("GET") == 1, done
    assert done.get("HEAD", 0) >= 1 and done.get("DELETE") == 1, done
