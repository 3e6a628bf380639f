"""Where a Nexmark query's task time goes on each provider: a Java Flight Recorder profile.

    python bench/profile_nexmark.py --query q11 --events 10000000 \
        --providers rockstate,spark-rocksdb-changelog

Each provider runs ``rockstate nexmark`` in a JVM of its own with JFR on (no output kept: the
no-op sink, Nexmark's blackhole). The recording's task-thread samples are then split by what
runs in them: the state store (any frame of rockstate, of Spark's state package or of RocksDB's
JNI: the store's share, inclusive), and by the innermost frame's owner (RocksDB's native calls,
rockstate, Spark's state package, generated code, shuffle, other). With ``--steps``, the store's
samples are split twice more: by the operator's request (the caller of the outermost store
frame, and that frame: a join's append, its lookup of the other side, its removal by
watermark...) and by the step of the per-row path (``profile_rows.STEPS``). Samples are
counts, not times: compare the providers' shares from one run.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from profile_commit import samples  # the recording's task-thread stacks
from profile_rows import SAMPLING, STEP_NAMES, STORE, in_store, step

OWNERS = (("RocksDB JNI", "org.rocksdb."), ("rockstate", "io.rockstate."),
          ("Spark state package", "org.apache.spark.sql.execution.streaming.state."),
          ("generated code", "org.apache.spark.sql.catalyst.expressions.GeneratedClass"),
          ("shuffle and blocks", "org.apache.spark.shuffle."),
          ("shuffle and blocks", "org.apache.spark.storage."))
NAMES = list(dict.fromkeys(name for name, _ in OWNERS))  # each once, in order


def owner(stack: list[str]) -> str:
    for frame in stack:  # innermost first
        for name, prefix in OWNERS:
            if frame.startswith(prefix):
                return name
    return "other"


def request(stack: list[str]) -> str:
    """Who asked the store, and for what: the caller of the outermost store frame (a join's
    state manager, an aggregation's...), and that frame."""
    outer = max(i for i, f in enumerate(stack) if in_store(f))
    caller = stack[outer + 1] if outer + 1 < len(stack) else "(none)"
    return f"{_short(caller)} > {_short(stack[outer])}"


def _short(frame: str) -> str:
    return ".".join(frame.rsplit(".", 2)[-2:])


def print_steps(stacks: list[list[str]], top: int) -> None:
    store = [s for s in stacks if any(in_store(f) for f in s)]
    total = len(store) or 1
    for title, split in (("by request", request), ("by step", step)):
        counts = collections.Counter(split(s) for s in store)
        names = STEP_NAMES if split is step else [n for n, _ in counts.most_common(top)]
        print(f"  store samples {title}:")
        for name in names:
            print(f"    {counts[name]:6,} ({100 * counts[name] / total:3.0f}%)  {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--query", default="q11")
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--providers", default="rockstate,spark-rocksdb-changelog")
    parser.add_argument("--workdir")
    parser.add_argument("--steps", action="store_true",
                        help="split the store's samples by request and by step as well")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    if shutil.which("jfr") is None:
        print("the JDK's jfr tool is not on PATH", file=sys.stderr)
        return 2
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="rockstate-nexmark-profile-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"| {args.query}, {args.events:,} events | task samples | store share (inclusive) | "
          + " | ".join(NAMES) + " | other |")
    print("|---" * (4 + len(NAMES)) + "|")
    profiled: dict[str, list[list[str]]] = {}
    for provider in args.providers.split(","):
        recording = workdir / f"{provider}.jfr"
        cmd = [sys.executable, "-m", "rockstate", "nexmark", "--queries", args.query,
               "--providers", provider, "--events", str(args.events), "--no-check",
               "--master", "local[2]", "--checkpoint-root", str(workdir / provider),
               "--conf", "spark.driver.memory=4g", "--conf",
               "spark.driver.extraJavaOptions=-XX:+UnlockDiagnosticVMOptions "
               "-XX:+DebugNonSafepoints -XX:StartFlightRecording="
               f"filename={recording},settings=profile,{SAMPLING}"]
        out = subprocess.run(cmd, capture_output=True, text=True, env=os.environ, check=False)
        if out.returncode != 0:
            print(f"{provider} failed:\n{out.stderr[-3000:]}", file=sys.stderr)
            return 1
        stacks = samples(recording)
        total = len(stacks) or 1
        store = sum(1 for s in stacks if any(f.startswith(STORE) for f in s))
        owners = collections.Counter(owner(s) for s in stacks)
        cells = [f"{100 * owners[n] / total:.0f}%" for n in NAMES]
        print(f"| {provider} | {len(stacks):,} | {100 * store / total:.0f}% | "
              + " | ".join(cells) + f" | {100 * owners['other'] / total:.0f}% |", flush=True)
        profiled[provider] = stacks
    for provider, stacks in profiled.items() if args.steps else ():
        print(f"\n{provider}:")
        print_steps(stacks, args.top)
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
