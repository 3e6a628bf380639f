"""Each provider's store cost on Nexmark's stateful queries: the floor beside them.

    python bench/nexmark_store_cost.py --queries q3,q4,q5,q7,q8,q9,q11,q17,q20 \\
        --events 1000000 --repeats 3

Runs ``rockstate nexmark``'s queries (python/rockstate/nexmark) on rockstate, on Spark's RocksDB
provider (changelog checkpointing on: Nexmark's ``rocksdb``) and on the floor: the test kit's
benchmark-only provider that keeps each partition's state in a hash map in the JVM and writes
nothing (``io.rockstate.floor.FloorStateStoreProvider``, jvm-shim/src/testkit; never in the
user's jar, so it is a bench here and not a ``rockstate nexmark`` provider). As ``rockstate
nexmark`` runs them: each run a ``local[2]`` application of its own after an unmeasured run of
the same query on the same provider, the providers' order reversed from one repeat to the next,
``--repeats`` times; then per query the medians over the repeats and each provider's store
cost, two ways:

- batch: its batch p50 minus the floor's (what the store adds to a batch);
- Cores x Time: its CPU seconds (Nexmark's metric, the JVM's threads, background ones
  included) minus the floor's;

and rockstate's store cost over Spark's (the target: at most 0.3). The providers'
outputs are compared, the floor's included (a floor that computed something else would measure
nothing): the script exits 1 when they differ. ``--no-check`` writes no output (Spark's ``noop``
sink) and compares nothing. The floor holds state on the driver's heap (``--driver-memory``,
4g by default), gone with the run's JVM. ``--providers``
picks the providers beside the floor, ``--conf KEY=VALUE`` adds a Spark conf.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

# The floor's name and class, and its jar (the test kit's, compiled for the installed Spark
# line), as provider_bench.py has them.
from kit import floor_jar
from rockstate.session.providers import FLOOR, ROCKSTATE, SPARK_ROCKSDB_CHANGELOG

COMPARED = (ROCKSTATE, SPARK_ROCKSDB_CHANGELOG)  # beside the floor, unless --providers says
FIGURES = ("batch_p50_ms", "cpu_s", "time_s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", default="q3,q4,q5,q7,q8,q9,q11,q17,q20")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--warmup-events", type=int, help="an unmeasured first run's events "
                        "(default: events / 10, at most 200,000)")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--providers", default=",".join(COMPARED),
                        help="the providers beside the floor (default: "
                             "rockstate,spark-rocksdb-changelog)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="any other Spark conf (repeat it)")
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--workdir")
    args = parser.parse_args()

    from rockstate.nexmark.benchmark import parse_queries, run_isolated_benchmark
    from rockstate.nexmark.config import NexmarkConfig
    from rockstate.nexmark.run import RunPlan
    from rockstate.nexmark.session import nexmark_session
    from rockstate.session import local_cluster
    from rockstate.session.providers import PROVIDERS, parse

    queries = parse_queries(args.queries)
    providers = [*parse(args.providers), FLOOR]
    config = NexmarkConfig(events=args.events)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="rockstate-nexmark-floor-"))
    confs = {"spark.driver.memory": args.driver_memory, "spark.jars": floor_jar()}
    for conf in args.conf:
        key, _, value = conf.partition("=")
        confs[key] = value
    plan = RunPlan(root=str(workdir), batch_events=max(1, args.events // 20),
                   partitions=args.partitions, keep_output=not args.no_check)
    warmup = (args.warmup_events if args.warmup_events is not None
              else min(args.events // 10, 200_000))
    sessions: list = []

    def compare_in():
        sessions.append(nexmark_session("local[2]", args.partitions, confs))
        return sessions[-1]

    def heard(run) -> None:
        print(f"  {run.query} on {run.provider} (run {run.repeat + 1}): batch p50 "
              f"{run.batch_p50_ms:,.0f} ms, {run.cpu_s} CPU s, {run.time_s:.1f} s", flush=True)

    try:
        result = run_isolated_benchmark(queries, providers, config, plan, "local[2]", confs,
                                        compare_in, oracle=False, progress=heard,
                                        warmup_events=warmup, catalogue=PROVIDERS,
                                        repeats=args.repeats)
    finally:
        for spark in sessions:
            local_cluster.stop(spark)
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    figures = {o.query: {p: [r.as_dict() for r in o.runs_of(p)] for p in providers}
               for o in result.outcomes}
    equal = True
    for outcome in result.outcomes:
        equal = equal and outcome.providers_equal is not False
        if outcome.providers_equal is False:
            print(f"  {outcome.query}: outputs DIFFER {outcome.differences}", flush=True)
    summary = {q: summarize(figures[q]) for q in queries}
    print(table(summary, args))
    if args.json:
        Path(args.json).write_text(json.dumps({"events": args.events, "repeats": args.repeats,
                                               "queries": summary, "runs": figures}, indent=1))
    if not equal:
        print("outputs differ between providers: see above", file=sys.stderr)
        return 1
    return 0


def summarize(runs: dict[str, list[dict]]) -> dict[str, dict]:
    """Per provider the medians over the repeats, and each store cost against the floor's."""
    medians = {p: {f: statistics.median(r[f] for r in rs) if all(r[f] is not None for r in rs)
                   else None for f in FIGURES} for p, rs in runs.items()}
    floor = medians[FLOOR]
    for p, m in medians.items():
        if p != FLOOR:
            m["store_cost_ms"] = m["batch_p50_ms"] - floor["batch_p50_ms"]
            m["store_cost_cpu_s"] = (m["cpu_s"] - floor["cpu_s"]
                                     if m["cpu_s"] is not None and floor["cpu_s"] is not None
                                     else None)
    return medians


def ratio(ours: float | None, theirs: float | None) -> str:
    """rockstate's store cost over Spark's; none when either is below the floor (the floor
    is then no floor for that query: its own heap costs more than a store)."""
    if ours is None or theirs is None or theirs <= 0 or ours < 0:
        return "n/a"
    return f"{ours / theirs:.2f}"


def table(summary: dict[str, dict], args: argparse.Namespace) -> str:
    """Per query the floor's figures, then each provider's and its store cost; with both
    rockstate and Spark's RocksDB provider in the run, the ratio of their store costs."""
    providers = [p for p in next(iter(summary.values())) if p != FLOOR]
    both = set(COMPARED) <= set(providers)
    head = ["query", "floor batch p50 (ms)", "floor CPU s"]
    for p in providers:
        head += [f"{p} batch p50", f"{p} store cost (ms)", f"{p} CPU s", f"{p} store cost (CPU s)"]
    if both:
        head += ["store cost ratio, batch", "store cost ratio, CPU"]
    lines = [f"Nexmark, {args.events:,} events, medians of {args.repeats} (store cost: a "
             "provider's figure minus the floor's; ratio: rockstate's over Spark's)", "",
             "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for q, m in summary.items():
        cells = [q, f"{m[FLOOR]['batch_p50_ms']:,.0f}", _figure(m[FLOOR]["cpu_s"])]
        for p in providers:
            cells += [f"{m[p]['batch_p50_ms']:,.0f}", f"{m[p]['store_cost_ms']:,.0f}",
                      _figure(m[p]["cpu_s"]), _figure(m[p]["store_cost_cpu_s"])]
        if both:
            mine, spark = m[ROCKSTATE], m[SPARK_ROCKSDB_CHANGELOG]
            cells += [ratio(mine["store_cost_ms"], spark["store_cost_ms"]),
                      ratio(mine["store_cost_cpu_s"], spark["store_cost_cpu_s"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    sys.exit(main())
