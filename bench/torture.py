"""The torture suite from the command line: one seeded run, its figures on one line.

    python bench/torture.py --seed 7 --cycles 60 --faults 50 --provider both

``--provider both`` runs the same schedule on rockstate and on Spark's RocksDB provider
(changelog checkpointing on) against one oracle run, for a side-by-side line. The seed fixes
the input and the fault schedule, so a failing run replays. See docs/guarantees.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from torture import orchestrator
from torture.queries import KINDS


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--cycles", type=int, default=30, help="micro-batches under faults")
    p.add_argument("--faults", type=int, default=20, help="faults over those cycles")
    p.add_argument("--provider", choices=["rockstate", "spark-rocksdb", "both"],
                   default="rockstate")
    p.add_argument("--kinds", default=",".join(KINDS), help="query kinds, comma-separated")
    p.add_argument("--faults-allowed", default=",".join(orchestrator.FAULTS))
    p.add_argument("--work", type=Path, default=None, help="where runs keep their files")
    p.add_argument("--oracle", type=Path, default=None,
                   help="an oracle run of the same seed and length to reuse (<work>/oracle)")
    a = p.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="rockstate-torture-"))
    kinds = tuple(a.kinds.split(","))
    allowed = tuple(a.faults_allowed.split(","))
    oracle = a.oracle or orchestrator.run_oracle(work, a.seed, a.cycles + 2, kinds)
    providers = ["rockstate", "spark-rocksdb"] if a.provider == "both" else [a.provider]
    failed = False
    for provider in providers:
        figures = orchestrator.run(work, a.seed, a.cycles, a.faults, provider, kinds, oracle,
                                   allowed)
        print(figures.line(), flush=True)
        for problem in figures.problems[:20]:
            print(f"  {problem}")
        failed |= bool(figures.problems) or figures.divergent_rows > 0
    print(f"work directory: {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
