"""The long tier's torture run on a standalone cluster of daemons with the checkpoints on a real
S3 server (s3proxy) behind a fault proxy (tests/torture/outside.py), dealing the faults no
other test deals in that world: a full local dir, a driver kill and a zombie executor, on the
aggregation. Its other faults (a worker killed, 503s, 500s, resets, latency, the server
restarted) each run in tests/test_standalone.py, in CI; all of them together in
``bench/torture.py --outside`` (docs/guarantees.md). ``bash dev/run-tests long`` runs it.
"""

from __future__ import annotations

from pathlib import Path

from torture import orchestrator, outside


def test_a_short_seeded_torture_run_on_a_standalone_cluster_over_s3_loses_nothing(
        spark_home: Path, tmp_path: Path):
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
