"""rockstate with its checkpoint location on an S3 API, as in production.

moto's S3 server (in this process) is reached by Spark through Hadoop's `s3a` connector (the
`hadoop-aws` of pyspark's Hadoop, from Maven Central; see tests/s3.py) and by the offline
tools through `s3fs`. There every new file is one PUT and a rename is a copy plus a delete:
rockstate publishes each commit's version file with one PUT under its final name. The same
queries as on local disk must give the oracle's output and state, through a restart and an
executor's SIGKILL, and the offline tools must read and verify the same bucket.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

import rockstate
from rockstate.location import CheckpointLocation
from streams import assert_same_as_oracle, state_rows

SCHEMA = "key STRING, value INT, ts TIMESTAMP"
BATCHES = [
    [{"key": k, "value": b * 10 + i, "ts": f"2026-01-01 00:{b * 5 + i % 3:02d}:00"}
     for i, k in enumerate(keys)]
    for b, keys in enumerate(["aabc", "bcd", "aaee", "f", "abcdef", "gg"])]


def _offline(s3, url: str) -> CheckpointLocation:
    """The checkpoint at an `s3a://` URL, read with s3fs (no Spark)."""
    return CheckpointLocation(url.replace("s3a://", "s3://", 1), **s3.storage_options())


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
    report = rockstate.verify(loc)
    assert report.ok, [str(p) for p in report.problems]
    # The offline reader (s3fs, Python) and Spark's state source (s3a, the provider) agree.
    table = rockstate.read_state(loc, operator=0)
    offline = sorted((tuple(r["key"].values()), tuple(r["value"].values()), r["partition_id"])
                     for r in table.to_pylist())
    spark_side = sorted((tuple(k), tuple(v), p) for k, v, p in state_rows(spark, mine.checkpoint))
    assert offline == spark_side and offline


@pytest.mark.slow
def test_stream_stream_join_on_s3_matches_the_oracle(spark, s3, workdir: Path):
    def join(left, right):
        left = left.withWatermark("ts", "10 minutes").alias("l")
        right = right.withWatermark("ts", "10 minutes").alias("r")
        return left.join(right, F.expr(
            "l.key = r.key AND r.ts BETWEEN l.ts - INTERVAL 5 MINUTES AND l.ts + "
            "INTERVAL 5 MINUTES"), "inner").select("l.key", "l.value", "r.value")

    sided = [[dict(r, side=i % 2) for i, r in enumerate(rows)] for rows in BATCHES]
    _, mine = assert_same_as_oracle(
        spark, join, sided, workdir=workdir, name="s3-join", schema=SCHEMA,
        output_mode="append", sources=2, checkpoint_root=s3.url("join"),
        storage_options=s3.storage_options(),
        state_options=({"joinSide": "left"}, {"joinSide": "right"}))
    assert rockstate.verify(_offline(s3, str(mine.checkpoint))).ok


@pytest.mark.slow
def test_executor_killed_with_the_checkpoint_on_s3_loses_nothing(cluster_spark, s3,
                                                                 workdir: Path):
    from test_cluster import _run_with_kill

    mine = _run_with_kill(cluster_spark, workdir, "s3-kill", n=6, kill_before=3,
                          checkpoint=s3.url("kill"))
    downloaded = sum(p["stateOperators"][0]["customMetrics"]["rockstateBytesDownloaded"]
                     for p in mine.progress if p["batchId"] >= 3)
    assert downloaded > 0, "the lost partitions should have been restored from S3"
    assert rockstate.verify(_offline(s3, str(mine.checkpoint))).ok
