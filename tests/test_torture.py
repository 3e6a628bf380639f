"""A short seeded torture run: every kind of fault once, on three query kinds, on
``local-cluster``; outputs, retained state and completed checkpoints equal the oracle's. Then
one on a standalone cluster of daemons with the checkpoints on a real S3 server behind a fault
proxy (tests/torture/outside.py), with the faults only that world can deal.

The long run (hundreds of faults, and the same schedule on Spark's RocksDB provider) is
``bench/torture.py``; docs/guarantees.md has its figures.
"""

from __future__ import annotations

from pathlib import Path

from torture import orchestrator, outside


def test_a_short_seeded_torture_run_loses_nothing(spark_home: Path, tmp_path: Path):
    # Every kind of fault once, over the nine cycles that takes (cycle 0 starts the queries), on
    # three query kinds: get and put, a join's four stores with watermark removal, and timeouts
    # (the CI budget; bench/torture.py runs every kind, long).
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


def test_a_short_seeded_torture_run_on_a_standalone_cluster_over_s3_loses_nothing(
        spark_home: Path, tmp_path: Path):
    # The same on a standalone cluster of daemons with the checkpoints on s3proxy behind the
    # fault proxy, dealing the faults no other test deals in that world: a full local dir, a
    # driver kill and a zombie executor, on the aggregation. Its other faults (a worker killed,
    # 503s, 500s, resets, latency, the server restarted) each run in test_standalone.py, and
    # all of them together in bench/torture.py --outside (docs/guarantees.md); the CI budget.
    allowed = ("full-local-dir", "kill-driver", "stop-executor")
    world = outside.Outside.start(tmp_path / "outside", seed=5)
    try:
        figures = orchestrator.run(tmp_path, seed=5, cycles=len(allowed) + 1,
                                   faults=len(allowed), kinds=("agg",),
                                   allowed=allowed, outside=world)
    finally:
        world.stop()
    print(figures.line(), "local dir on tmpfs:", world.full_dir is not None)
    assert not figures.problems, figures.problems
    assert figures.divergent_rows == 0 and figures.missing_files == 0
    # Every kind, but a full local dir where this machine refuses the tmpfs.
    assert sum(figures.faults.values()) >= len(allowed) - (world.full_dir is None), \
        figures.line()
    assert figures.orphan_ratio <= 0.10, figures.line()
