"""Each provider's store cost on Nexmark's stateful queries: the floor beside them.

    python bench/nexmark_store_cost.py --queries q3,q4,q5,q7,q8,q9,q11,q17,q20 \\
        --events 1000000 --repeats 3

Runs ``rockstate nexmark``'s queries (python/rockstate/nexmark) on rockstate, on Spark's RocksDB
provider (changelog checkpointing on: Nexmark's ``rocksdb``) and on the floor: the test kit's
benchmark-only provider that keeps each partition's state in a hash map in the JVM and writes
nothing (``io.rockstate.floor.FloorStateStoreProvider``, jvm-shim/src/testkit; never in the
user's jar, so it is a bench here and not a ``rockstate nexmark`` provider). All in one
``local[2]`` application, each query on each provider in turn, ``--repeats`` times (each
repeat starting with another provider: a query's first run compiles its code); then per query
the medians over the repeats and each provider's store cost, two ways:

- batch: its batch p50 minus the floor's (what the store adds to a batch);
- Cores x Time: its CPU seconds (Nexmark's metric, the JVM's threads, background ones
  included) minus the floor's;

and rockstate's store cost over Spark's (the target: at most 0.3). The providers'
outputs are compared, the floor's included (a floor that computed something else would measure
nothing): the script exits 1 when they differ. ``--no-check`` writes no output (Spark's ``noop``
sink) and compares nothing. The floor holds state on the driver's heap (``--driver-memory``,
4g by default); each query's floor state is dropped once the query has run. ``--providers``
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

    from pyspark.sql import SparkSession

    import rockstate
    from rockstate.nexmark.benchmark import parse_queries, run_benchmark
    from rockstate.nexmark.config import NexmarkConfig
    from rockstate.nexmark.run import RunPlan
    from rockstate.session.providers import PROVIDERS, parse

    queries = parse_queries(args.queries)
    providers = [*parse(args.providers), FLOOR]
    catalogue = PROVIDERS
    config = NexmarkConfig(events=args.events)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="rockstate-nexmark-floor-"))
    builder = (SparkSession.builder.master("local[2]").appName("nexmark-store-cost")
               .config("spark.sql.shuffle.partitions", str(args.partitions))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", args.driver_memory)
               .config("spark.jars", floor_jar()))
    for conf in args.conf:
        key, _, value = conf.partition("=")
        builder = builder.config(key, value)
    spark = rockstate.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    floor_states = spark.sparkContext._jvm.io.rockstate.floor.FloorStateStoreProvider

    def heard(run) -> None:
        print(f"  {run.query} on {run.provider}: batch p50 {run.batch_p50_ms:,.0f} ms, "
              f"{run.cpu_s} CPU s, {run.time_s:.1f} s", flush=True)
        if run.provider == FLOOR:  # its state stays on the heap until dropped
            floor_states.forgetAll()

    figures: dict[str, dict[str, list[dict]]] = {q: {p: [] for p in providers} for q in queries}
    equal = True
    try:
        for repeat in range(args.repeats):
            print(f"repeat {repeat + 1} of {args.repeats}", flush=True)
            root = workdir / f"repeat-{repeat}"
            plan = RunPlan(root=str(root), batch_events=max(1, args.events // 20),
                           partitions=args.partitions, keep_output=not args.no_check)
            warmup = 0 if repeat else (args.warmup_events if args.warmup_events is not None
                                       else min(args.events // 10, 200_000))
            # The first provider of a query pays for compiling its code: each repeat starts
            # with another provider (run_benchmark alternates the order from query to query).
            shift = repeat % len(providers)
            order = providers[shift:] + providers[:shift]
            result = run_benchmark(spark, queries, order, config, plan, oracle=False,
                                   progress=heard, warmup_events=warmup, catalogue=catalogue)
            floor_states.forgetAll()  # the warm-up's
            for outcome in result.outcomes:
                equal = equal and outcome.providers_equal is not False
                if outcome.providers_equal is False:
                    print(f"  {outcome.query}: outputs DIFFER {outcome.differences}", flush=True)
                for run in outcome.runs:
                    figures[outcome.query][run.provider].append(run.as_dict())
            shutil.rmtree(root, ignore_errors=True)
    finally:
        spark.stop()
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
