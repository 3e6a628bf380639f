"""One Nexmark run in a JVM of its own: a child Python process starts its own Spark application,
runs the query on the provider over a few events unmeasured (the JIT compiles this query's and
this provider's code), then the measured run, and hands its figures back as JSON.

Runs that share a JVM are not comparable: whichever provider runs first pays for compiling
the code both use, and the second inherits a heap, caches and threads shaped by the first
(docs/nexmark.md, "A fair comparison").

    python -m rockstate.nexmark.isolated SPEC.json FIGURES.json
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rockstate.errors import RockstateError
from rockstate.nexmark.config import NexmarkConfig
from rockstate.nexmark.queries import QUERIES
from rockstate.nexmark.run import RunFigures, RunPlan, run_name, run_query


@dataclass(frozen=True)
class IsolatedRun:
    """What a child process needs for one run: the query, the provider (its name, class and
    confs), the events, the plan, the application's master and confs, and the warm-up's
    events (0: none)."""

    query: str
    provider: str
    provider_class: str
    provider_confs: dict[str, str]
    config: NexmarkConfig
    plan: RunPlan
    master: str
    confs: dict[str, str]
    warmup_events: int
    repeat: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def of(data: dict[str, Any]) -> IsolatedRun:
        return IsolatedRun(**{**data, "config": NexmarkConfig(**data["config"]),
                              "plan": RunPlan(**data["plan"])})


def run_isolated(run: IsolatedRun) -> RunFigures:
    """Runs ``run`` in a child process and returns its figures; its output goes to a log
    beside the run's checkpoints, whose end the error quotes if the child fails."""
    with tempfile.TemporaryDirectory(prefix="rockstate-nexmark-run-") as work:
        spec, figures = Path(work, "spec.json"), Path(work, "figures.json")
        log = Path(work, "log")
        spec.write_text(json.dumps(run.as_dict()), encoding="utf-8")
        with log.open("wb") as out:
            code = subprocess.call([sys.executable, "-m", "rockstate.nexmark.isolated",
                                    str(spec), str(figures)], stdout=out,
                                   stderr=subprocess.STDOUT)
        if code != 0 or not figures.exists():
            tail = log.read_text(encoding="utf-8", errors="replace")[-4000:]
            raise RockstateError(f"the run of {run.query} on {run.provider} (repeat "
                                 f"{run.repeat}) failed in its own process (exit {code}); "
                                 f"the end of its output:\n{tail}")
        return RunFigures(**json.loads(figures.read_text(encoding="utf-8")))


def main(argv: list[str]) -> int:
    from rockstate.nexmark.session import nexmark_session
    from rockstate.session import local_cluster

    spec_path, figures_path = argv
    run = IsolatedRun.of(json.loads(Path(spec_path).read_text(encoding="utf-8")))
    catalogue = {run.provider: (run.provider_class, run.provider_confs)}
    query = QUERIES[run.query]
    spark = nexmark_session(run.master, run.plan.partitions, run.confs)
    try:
        if run.warmup_events:
            warm = replace(run.plan, root=run.plan.path(
                "warmup", run_name(run.query, run.provider, run.repeat)), kill_after=None,
                stop_after=None, batch_events=max(1, run.warmup_events // 4))
            run_query(spark, query, run.provider, replace(run.config, events=run.warmup_events),
                      warm, catalogue)
        figures = run_query(spark, query, run.provider, run.config, run.plan, catalogue,
                            run.repeat)
    finally:
        local_cluster.stop(spark)
    Path(figures_path).write_text(json.dumps(figures.as_dict()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
