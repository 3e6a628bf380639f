"""The long tier's check of `rockstate nexmark`'s fairness: a provider compared with itself, each
run in a JVM of its own and the two names alternating over five runs each, comes out even: the
ratio of their median Cores x Time is 1 within the spread of their own runs. Runs that shared
a JVM did not: the one that ran second came out about a fifth cheaper (docs/nexmark.md)."""

from __future__ import annotations

from rockstate.nexmark.benchmark import run_isolated_benchmark
from rockstate.nexmark.config import NexmarkConfig
from rockstate.nexmark.run import RunPlan
from rockstate.session.providers import PROVIDERS


def _no_session():
    raise AssertionError("nothing is compared: the runs keep no output")


def test_a_provider_against_itself_comes_out_even(spark_home, workdir):
    catalogue = {"first": PROVIDERS["rockstate"], "second": PROVIDERS["rockstate"]}
    plan = RunPlan(root=str(workdir), batch_events=10_000, partitions=4, keep_output=False)
    result = run_isolated_benchmark(["q5"], ["first", "second"],
                                    NexmarkConfig(events=100_000), plan, "local[2]", {},
                                    _no_session, warmup_events=10_000, catalogue=catalogue,
                                    repeats=5)
    (outcome,) = result.outcomes
    medians = {p: outcome.median(p).cpu_s for p in ("first", "second")}
    spreads = {p: (hi - lo) / medians[p]
               for p in medians for lo, hi in [outcome.spread(p, "cpu_s")]}
    ratio = medians["first"] / medians["second"]
    print(f"Cores x Time of each run: {[(r.provider, r.cpu_s) for r in outcome.runs]}; "
          f"medians {medians}, ratio {ratio:.3f}, relative spreads {spreads}")
    assert abs(ratio - 1) <= max(spreads.values()), (ratio, outcome.runs)
