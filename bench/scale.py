"""How rockstate's costs grow against Spark's RocksDB provider's, one dimension at a time.

    python bench/scale.py                       # every dimension, this machine's sizes
    python bench/scale.py --dimensions state --sizes 1000000,4000000,16000000

Each step is one run of ``bench/provider_bench.py`` (every provider in a fresh JVM of its own,
the same input, the same run): rockstate and Spark's RocksDB provider in changelog mode. Four
dimensions, each grown from its first step while the others stay put:

- ``state``: keys in the state (``--sizes``; 200,000 changed a batch, 8 partitions, a snapshot
  every 2 versions for both providers: the targets' configuration), ``--batches``
  batches (12: six left five timed batches, and the one or two that follow the
  first snapshot, or a compaction of the loaded state, moved their median by a second);
- ``partitions``: shuffle partitions of a small state (``--partitions``; 20,000 keys);
- ``executors``: ``local-cluster`` executor JVMs of one core each (``--executors``; 1M keys,
  100,000 changed a batch), ``--batches`` batches too: with 6, the five timed batches were
  the JVMs' warm-up (each faster than the one before, for both providers);
- ``storage``: the checkpoint on the local disk, then on an S3 API server (moto, through s3a),
  with the requests s3a made, by kind, per batch.

Per step and provider it prints batch p50, commit p50 and p95 (Spark's ``commitTimeMs``), the
files and MB left in ``state/``, the JVMs' peak resident memory (the driver's, and on
local-cluster the executors' summed), open files at the end, and on S3 the requests per
batch; then each provider's growth (cost at the step / cost at the first step) and rockstate's
ratio to Spark's at each step.

``--providers`` names the providers of every step (``bench/provider_bench.py``'s names;
rockstate and Spark's RocksDB changelog provider unless told). With ``floor`` among them (the
test kit's provider that keeps state in memory and writes nothing), the table gains each
provider's store cost (its batch p50 minus the floor's) and every step a line with rockstate's
store cost over Spark's (the floor keeps state in its JVM: on ``executors``' local-cluster a
partition that moves to another executor fails it):

    python bench/scale.py --dimensions state --providers rockstate,spark-rocksdb-changelog,floor

Cold load is ``bench/cold_load_bench.py``'s and the checkpoint coordinator's
``CoordinatorScaleBench``'s (docs/performance.md). Nothing is asserted: the machines are
shared and noisy, so read the ratios of one run side by side.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent / "provider_bench.py"
PROVIDERS = ("rockstate", "spark-rocksdb-changelog")
FLOOR = "floor"
FIGURES = ("batch_p50_ms", "commit_p50_ms", "commit_p95_ms", "state_files", "state_mb",
           "peak_rss_mb", "executor_rss_mb", "open_files")
GROWTH = ("batch_p50_ms", "commit_p50_ms", "state_files", "state_mb")


def steps(args: argparse.Namespace) -> dict[str, list[tuple[str, list[str]]]]:
    """Each dimension's steps: a label, and provider_bench's arguments."""
    snap = ["--snapshot-every", "2", "--maintenance-interval", "200ms"]
    return {
        "state": [(f"{k:,} keys", ["--keys", str(k), "--changed", "200000", "--partitions", "8",
                                   "--batches", str(args.batches), *snap])
                  for k in args.sizes],
        "partitions": [(f"{p} partitions", ["--keys", "20000", "--changed", "2000",
                                            "--partitions", str(p), "--batches", "6"])
                       for p in args.partitions],
        "executors": [(f"{w} executor{'s' if w > 1 else ''}",
                       ["--keys", "1000000", "--changed", "100000", "--partitions", "8",
                        "--batches", str(args.batches), "--master", f"local-cluster[{w},1,1024]",
                        *snap])
                      for w in args.executors],
        "storage": [(where, ["--keys", "200000", "--changed", "20000", "--partitions", "4",
                             "--batches", "8", *snap, *(["--s3"] if where == "S3" else [])])
                    for where in ("local disk", "S3")],
    }


def run_step(providers: list[str], extra: list[str], out: Path) -> dict[str, dict]:
    cmd = [sys.executable, str(BENCH), "--providers", ",".join(providers), "--json", str(out),
           *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not out.exists():
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return json.loads(out.read_text())


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}"


def _mine_and_theirs(providers: list[str]) -> tuple[str, str | None]:
    """The rockstate provider and the Spark provider the ratios compare (the first of each)."""
    mine = next((p for p in providers if p.startswith("rockstate")), providers[0])
    theirs = next((p for p in providers if not p.startswith("rockstate") and p != FLOOR), None)
    return mine, theirs


def print_dimension(name: str, results: list[tuple[str, dict[str, dict]]],
                    providers: list[str]) -> None:
    # With the floor in the run, provider_bench gives every other provider its store cost.
    figures = (*FIGURES, "store_cost_ms") if FLOOR in providers else FIGURES
    print(f"\n## {name}\n")
    print("| step | provider | " + " | ".join(figures) + " | S3 requests per batch |")
    print("|---|---|" + "---|" * (len(figures) + 1))
    for label, by_provider in results:
        for provider in providers:
            r = by_provider[provider]
            s3 = ", ".join(f"{k} {v:g}" for k, v in r.get("s3_requests_per_batch", {}).items()
                           if v) or "-"
            # The floor has no store cost of its own.
            cells = [_fmt(r.get(f, 0)) if f in FIGURES else _fmt(r[f]) if f in r else "-"
                     for f in figures]
            print(f"| {label} | {provider} | " + " | ".join(cells) + f" | {s3} |")
    print("\nEvery batch's duration in ms (the first loads the state and is not in the p50), "
          "and the files left in `state/` by kind:\n")
    for label, by_provider in results:
        for provider in providers:
            r = by_provider[provider]
            kinds = ", ".join(f"{k} {v:g}" for k, v in r.get("state_files_by_kind", {}).items())
            print(f"- {label}, {provider}: {', '.join(f'{b:,}' for b in r['batches_ms'])}; "
                  f"files: {kinds}")
    print(f"\nGrowth from the first step ({results[0][0]}), cost at the step / cost at the "
          "first step:\n")
    print("| step | provider | " + " | ".join(GROWTH) + " |")
    print("|---|---|" + "---|" * len(GROWTH))
    first = results[0][1]
    for label, by_provider in results[1:]:
        for provider in providers:
            cells = [by_provider[provider][f] / first[provider][f] if first[provider][f] else 0
                     for f in GROWTH]
            print(f"| {label} | {provider} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    me, them = _mine_and_theirs(providers)
    if them is None:
        return
    print(f"\n{me} / {them} at each step:\n")
    shown = (*GROWTH, "peak_rss_mb", "open_files")
    print("| step | " + " | ".join(shown) + " | S3 requests per batch |")
    print("|---|" + "---|" * (len(shown) + 1))
    for label, by_provider in results:
        mine, theirs = by_provider[me], by_provider[them]
        cells = [f"{mine[f] / theirs[f]:.2f}" if theirs[f] else "n/a" for f in shown]
        req_mine = sum(mine.get("s3_requests_per_batch", {}).values())
        req_theirs = sum(theirs.get("s3_requests_per_batch", {}).values())
        s3 = f"{req_mine / req_theirs:.2f}" if req_theirs else "-"
        print(f"| {label} | " + " | ".join(cells) + f" | {s3} |")
    if FLOOR in providers:
        print(f"\n{me} / {them} store cost (batch p50 minus the floor's) at each step:\n")
        for label, by_provider in results:
            mine, theirs = by_provider[me]["store_cost_ms"], by_provider[them]["store_cost_ms"]
            ratio = f"{mine / theirs:.2f}" if theirs > 0 else "n/a"
            print(f"- {label}: {ratio} ({_fmt(mine)} ms / {_fmt(theirs)} ms; floor "
                  f"{_fmt(by_provider[FLOOR]['batch_p50_ms'])} ms)")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dimensions", default="state,partitions,executors,storage")
    parser.add_argument("--sizes", type=_ints, default=[1_000_000, 4_000_000])
    parser.add_argument("--partitions", type=_ints, default=[200, 1000])
    parser.add_argument("--executors", type=_ints, default=[1, 2, 4])
    parser.add_argument("--providers", default=",".join(PROVIDERS),
                        help="the providers of every step (provider_bench.py's names); with "
                             "floor, each provider's store cost and their ratio")
    parser.add_argument("--batches", type=int, default=12,
                        help="batches a state or executors step runs; the first, which loads "
                             "the state, is not timed")
    args = parser.parse_args()
    providers = [p for p in args.providers.split(",") if p]
    plan = steps(args)
    work = Path(tempfile.mkdtemp(prefix="rockstate-scale-"))
    for name in args.dimensions.split(","):
        results = []
        for i, (label, extra) in enumerate(plan[name]):
            start = time.monotonic()
            results.append((label, run_step(providers, extra, work / f"{name}-{i}.json")))
            print(f"{name}: {label} done in {time.monotonic() - start:.0f} s", file=sys.stderr)
        print_dimension(name, results, providers)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
