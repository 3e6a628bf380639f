"""Executor JVMs of a ``local-cluster`` application: finding them, and SIGKILLing one in the middle
of a query whose output and state must still equal the oracle's."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from pyspark.sql import functions as F

import rockstate
from rockstate.session.providers import SPARK_HDFS_CLASS
from support.polling import wait_for
from support.streams import assert_checkpoint_sound, assert_same_outputs, run_stream

SCHEMA = "key STRING, value INT, ts TIMESTAMP"


def executor_pids(app_id: str) -> list[int]:
    out = subprocess.run(["ps", "-eww", "-o", "pid=,args="], capture_output=True, text=True,
                         check=True)
    return [int(line.split()[0]) for line in out.stdout.splitlines()
            if "CoarseGrainedExecutorBackend" in line and app_id in line]


def _holds_stores(pid: int) -> bool:
    """Whether the JVM has files of rockstate's local stores open (a loaded store keeps its
    RocksDB files open under ``<local dir>/stores/``)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    links = []
    for fd in fds:
        try:
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue  # closed since the listing
    return any("/stores/" in link for link in links)


def kill_an_executor(app_id: str, killed: list[int]) -> None:
    """SIGKILLs one executor JVM, one that holds loaded stores if any does (the scheduler
    may have run every partition on the other, whose loss would test nothing), and waits for
    the worker to start its replacement."""
    pids = [p for p in executor_pids(app_id) if p not in killed]
    assert pids, "no executor JVMs found to kill"
    pids.sort(key=lambda p: not _holds_stores(p))
    os.kill(pids[0], signal.SIGKILL)
    killed.append(pids[0])
    wait_for(lambda: len([p for p in executor_pids(app_id) if p not in killed]) >= 2,
             "the worker to start a replacement executor")


def _build(s):
    return s.groupBy("key").agg(F.count("*").alias("n"), F.sum("value").alias("t"))


def _batches(n: int) -> list[list[dict]]:
    return [[{"key": f"k{(b * 7 + i) % 40}", "value": i, "ts": "2026-01-01 00:00:00"}
             for i in range(30)] for b in range(n)]


def run_with_executor_kill(spark, workdir: Path, name: str, n: int, kill_before: int,
                   confs: dict[str, str] | None = None, checkpoint: str | None = None):
    """Runs the oracle and rockstate; SIGKILLs an executor JVM before batch ``kill_before``.
    ``confs`` apply to rockstate's run only; ``checkpoint`` puts its checkpoint at that URL."""
    app_id = spark.sparkContext.applicationId
    batches = _batches(n)
    oracle = run_stream(spark, SPARK_HDFS_CLASS, _build, batches, workdir=workdir,
                        name=f"{name}-oracle", schema=SCHEMA)
    killed: list[int] = []

    def kill_before_batch(i: int) -> None:
        if i == kill_before:
            kill_an_executor(app_id, killed)

    mine = run_stream(spark, rockstate.PROVIDER_CLASS, _build, batches, workdir=workdir,
                      name=name, schema=SCHEMA, before_batch=kill_before_batch, confs=confs,
                      checkpoint=checkpoint)
    assert killed, "the executor was not killed"
    assert_same_outputs(oracle, mine)
    # Killed uploads leave orphans (collected after the grace period); nothing is missing.
    assert_checkpoint_sound(spark, mine.checkpoint, retained=5, orphans_allowed=True)
    return mine
