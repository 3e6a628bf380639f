"""The long tier's short seeded torture run: every kind of fault once, on three query kinds, on
``local-cluster``; outputs, retained state and completed checkpoints equal the oracle's. CI
deals each of these faults in a test of its own (an executor SIGKILL in test_cluster.py and
test_s3.py, a worker killed in test_standalone.py, a kill mid-snapshot in test_checkpoints.py,
the exact crash points in the JVM's FaultPathsSuite); here they come one after another on the
same queries. ``bash dev/run-tests long`` runs it.

The same on a standalone cluster of daemons over a real S3 server is in the long tier
(tests/long/test_torture_outside.py); the long runs (hundreds of faults, and the same schedule
on Spark's RocksDB provider) are ``bench/torture.py``; docs/guarantees.md has their figures.
"""

from __future__ import annotations

from pathlib import Path

from torture import orchestrator


def test_a_short_seeded_torture_run_loses_nothing(spark_home: Path, tmp_path: Path):
    # Every kind of fault once, over the nine cycles that takes (cycle 0 starts the queries), on
    # three query kinds: get and put, a join's four stores with watermark removal, and timeouts
    # (bench/torture.py runs every kind, longer).
    # maxOpenStores 1: most of an executor's instances close after every batch and reopen from
    # their local directories, under the faults.
    figures = orchestrator.run(tmp_path, seed=11, cycles=len(orchestrator.FAULTS) + 1,
                               faults=len(orchestrator.FAULTS), kinds=("agg", "join", "pandas"),
                               settings={"maxOpenStores": 1})
    print(figures.line())
    assert not figures.problems, figures.problems
    assert figures.reopened > 0, figures.line()
    assert figures.divergent_rows == 0 and figures.missing_files == 0
    # The faults really happened: every kind but the exact points that had nothing to hit.
    assert sum(figures.faults.values()) >= len(orchestrator.FAULTS) - 2, figures.line()
    assert figures.longest_chain <= 3 * 2  # maxChangelogChain at snapshotInterval 2
    assert figures.orphan_ratio <= 0.10, figures.line()
