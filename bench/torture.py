"""The torture suite from the command line: one seeded run, its figures on one line.

    python bench/torture.py --seed 7 --cycles 60 --faults 50 --provider both

``--provider both`` runs the same schedule on rockstate and on Spark's RocksDB provider
(changelog checkpointing on) against one oracle run, for a side-by-side line. The seed fixes
the input and the fault schedule, so a failing run replays. See docs/guarantees.md.

``--outside`` runs on a standalone cluster of daemons (a master and two workers) with the
checkpoints on s3proxy behind the fault proxy, and mixes in the faults of that world (a worker
killed, 503s, 500s, resets, latency, the server restarted, a full local dir):
tests/torture/outside.py.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from torture import orchestrator, outside
from torture.queries import KINDS


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--cycles", type=int, default=30, help="micro-batches under faults")
    p.add_argument("--faults", type=int, default=20, help="faults over those cycles")
    p.add_argument("--provider", choices=["rockstate", "spark-rocksdb-changelog", "both"],
                   default="rockstate")
    p.add_argument("--kinds", default=",".join(KINDS), help="query kinds, comma-separated")
    p.add_argument("--faults-allowed", default=None,
                   help="fault kinds, comma-separated (default: every kind of the run's world)")
    p.add_argument("--outside", action="store_true",
                   help="a standalone cluster and an S3 server with faults of their own")
    p.add_argument("--work", type=Path, default=None, help="where runs keep their files")
    p.add_argument("--oracle", type=Path, default=None,
                   help="an oracle run of the same seed and length to reuse (<work>/oracle)")
    p.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="a rockstate setting over the run's own (maxOpenStores=1: instances "
                        "close and reopen between batches); repeatable")
    a = p.parse_args()
    settings = dict(kv.split("=", 1) for kv in a.setting)
    work = a.work or Path(tempfile.mkdtemp(prefix="rockstate-torture-"))
    kinds = tuple(a.kinds.split(","))
    if a.faults_allowed:
        allowed = tuple(a.faults_allowed.split(","))
    elif a.outside:
        allowed = (*(f for f in orchestrator.FAULTS if f not in outside.LOCAL_ONLY),
                   *outside.FAULTS)
    else:
        allowed = orchestrator.FAULTS
    oracle = a.oracle or orchestrator.run_oracle(work, a.seed, a.cycles + 2, kinds)
    providers = ["rockstate", "spark-rocksdb-changelog"] if a.provider == "both" \
        else [a.provider]
    failed = False
    world = outside.Outside.start(work / "outside", a.seed) if a.outside else None
    try:
        for provider in providers:
            figures = orchestrator.run(work, a.seed, a.cycles, a.faults, provider, kinds,
                                       oracle, allowed, outside=world, settings=settings)
            print(figures.line(), flush=True)
            if world is not None:
                print(f"  S3 requests {dict(world.proxy.plan.requests)}, proxy faults "
                      f"{world.dealt()}, local dir on tmpfs: {world.full_dir is not None}")
            for problem in figures.problems[:20]:
                print(f"  {problem}")
            failed |= bool(figures.problems) or figures.divergent_rows > 0
    finally:
        if world is not None:
            world.stop()
    print(f"work directory: {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
