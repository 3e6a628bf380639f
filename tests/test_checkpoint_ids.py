"""Spark's state checkpoint format 2 on rockstate: a unique id per commit, loads by id.

With ``spark.sql.streaming.stateStore.checkpointFormatVersion=2`` Spark records, per batch
and partition, the id of the state each store committed (in its commit log), passes it to
the next batch's ``getStore``, and fails the batch if a store reports having built on any
other id (``STATE_STORE_BASE_CHECKPOINT_ID_MISMATCH``). rockstate's id is its version file's
uuid. Spark's built-in HDFS provider refuses format 2, so the oracle runs format 1: the outputs
and the state must agree for every operator, through a restart and an executor's SIGKILL.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import rockstate
from support.queries import BATCHES, SCHEMA, join, sided
from support.streams import assert_same_as_oracle, run_stream

FORMAT_2 = {"spark.sql.streaming.stateStore.checkpointFormatVersion": "2"}


def _recorded_ids(checkpoint: Path) -> dict[int, dict]:
    """Spark's commit log: batch id -> the state ids it recorded per operator."""
    out = {}
    for f in sorted((checkpoint / "commits").glob("[0-9]*")):
        lines = f.read_text().splitlines()
        out[int(f.name)] = json.loads(lines[1]).get("stateUniqueIds") or {}
    return out


def _version_files(checkpoint: Path) -> set[str]:
    return {p.name.split("-", 1)[1].removesuffix(".rsv")
            for p in (checkpoint / "state").rglob("versions/*.rsv")}


# Spark records one checkpoint id per store commit whatever the operator: the simplest store,
# and the join's four stores a partition.
@pytest.mark.parametrize("name,build,batches,mode,sources,state", [
    ("agg", lambda s: s.groupBy("key").agg(F.count("*").alias("n"), F.sum("value").alias("t")),
     BATCHES, "update", 1, ({},)),
    ("join", join("inner"), sided(BATCHES), "append", 2,
     ({"joinSide": "left"}, {"joinSide": "right"})),
])
def test_format_2_matches_the_oracle_and_records_rockstate_ids(
        spark, workdir: Path, name, build, batches, mode, sources, state):
    _, mine = assert_same_as_oracle(
        spark, build, batches, workdir=workdir, name=f"ids-{name}", schema=SCHEMA,
        output_mode=mode, sources=sources, state_options=state, rockstate_confs=FORMAT_2)
    recorded = _recorded_ids(Path(mine.checkpoint))
    assert recorded and all(recorded.values()), "Spark recorded no checkpoint ids"
    ids = {i for ops in recorded.values() for parts in ops.values() for p in parts for i in p}
    # Every id Spark recorded is a commit rockstate published (its version file's uuid).
    assert ids and ids <= _version_files(Path(mine.checkpoint))


def test_format_2_survives_an_executor_kill(cluster_spark, workdir: Path):
    from support.executors import run_with_executor_kill

    mine = run_with_executor_kill(cluster_spark, workdir, "ids-kill", n=6, kill_before=3,
                          confs=FORMAT_2)
    assert all(_recorded_ids(Path(mine.checkpoint)).values())


def test_offline_tools_take_the_attempt_spark_recorded(spark, workdir: Path):
    """Two attempts of the newest version: the offline reader takes the one in Spark's commit
    log, even when the other was written later."""
    import os
    import shutil

    run = run_stream(spark, rockstate.PROVIDER_CLASS,
                     lambda s: s.groupBy("key").agg(F.count("*").alias("n")), BATCHES[:3],
                     workdir=workdir, name="ids-offline", schema=SCHEMA, confs=FORMAT_2)
    checkpoint = Path(run.checkpoint)
    loc = rockstate.CheckpointLocation(str(checkpoint))
    store = loc.stores(0)[0]
    recorded = loc.landed(store, 3)
    before = rockstate.read_state(str(checkpoint), operator=0).to_pylist()
    # A zombie's attempt of version 3, written after the recorded one: a copy with other state
    # would be wrong to read; here a damaged copy, so reading it would fail loudly.
    zombie = Path(store.path) / "versions" / "3-ffffffff-ffff-ffff-ffff-ffffffffffff.rsv"
    shutil.copy(Path(store.path) / recorded.path, zombie)
    zombie.write_bytes(zombie.read_bytes()[:-20])
    os.utime(zombie, (2_000_000_000, 2_000_000_000))
    assert loc.landed(store, 3, loc.version_entries(store)).path == recorded.path
    assert rockstate.read_state(str(checkpoint), operator=0).to_pylist() == before
    assert rockstate.verify(str(checkpoint)).ok
