"""Where a Nexmark query's task time goes on each provider: a Java Flight Recorder profile.

    python bench/profile_nexmark.py --query q11 --events 10000000 --providers rockstate,rocksdb

Each provider runs ``rockstate nexmark`` in a JVM of its own with JFR on (no output kept: the
no-op sink, Nexmark's blackhole). The recording's task-thread samples are then split by what
runs in them: the state store (any frame of rockstate, of Spark's state package or of RocksDB's
JNI: the store's share, inclusive), and by the innermost frame's owner (RocksDB's native calls,
rockstate, Spark's state package, generated code, shuffle, other). Samples are counts, not
times: compare the providers' shares from one run.
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

STORE = ("io.rockstate.", "org.rocksdb.", "org.apache.spark.sql.execution.streaming.state.")
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--query", default="q11")
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--providers", default="rockstate,rocksdb")
    parser.add_argument("--workdir")
    args = parser.parse_args()
    if shutil.which("jfr") is None:
        print("the JDK's jfr tool is not on PATH", file=sys.stderr)
        return 2
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="rockstate-nexmark-profile-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"| {args.query}, {args.events:,} events | task samples | store share (inclusive) | "
          + " | ".join(NAMES) + " | other |")
    print("|---" * (4 + len(NAMES)) + "|")
    for provider in args.providers.split(","):
        recording = workdir / f"{provider}.jfr"
        cmd = [sys.executable, "-m", "rockstate", "nexmark", "--queries", args.query,
               "--providers", provider, "--events", str(args.events), "--no-check",
               "--master", "local[2]", "--checkpoint-root", str(workdir / provider),
               "--conf", "spark.driver.memory=4g", "--conf",
               "spark.driver.extraJavaOptions=-XX:StartFlightRecording="
               f"filename={recording},settings=profile"]
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
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
