"""Where a state step's per-row time goes: a Java Flight Recorder profile of each provider.

    python bench/profile_rows.py --keys 1000000 --changed 200000 --partitions 8 --batches 8 \
        --providers rockstate,spark-rocksdb-changelog,floor

Each provider runs ``bench/provider_bench.py``'s state step (the same input, the same query) in
a JVM of its own with JFR on. The task threads' samples are then split three ways: the store's
share (any frame of a provider, of Spark's state package or of RocksDB's JNI: inclusive), the
store's samples by the innermost frame that names a step of the per-row path (``STEPS``), and
the innermost store methods by count. Only the batches after the first are profiled (the first
loads every key). Samples are counts, not times: compare the providers' shares from one run;
the floor's samples are what the query costs with no store at all.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from profile_commit import samples  # the recording's task-thread stacks

STORE = ("io.rockstate.", "org.rocksdb.", "org.apache.spark.sql.execution.streaming.state.")
# Spark's frames that run the whole stage of a stateful operator, not the store: a sample
# under them alone is the query's own work (its generated code), as on the floor.
PLUMBING = ("org.apache.spark.sql.execution.streaming.state.package$StateStoreOps",
            "org.apache.spark.sql.execution.streaming.state.StateStoreRDD",
            "org.apache.spark.sql.execution.streaming.state.ReadStateStoreRDD")
# JFR's default sampling (10-20 ms) leaves a few hundred task samples a run: every 2 ms.
SAMPLING = "jdk.ExecutionSample#period=2ms,jdk.NativeMethodSample#period=2ms"


def in_store(frame: str) -> bool:
    return frame.startswith(STORE) and not frame.startswith(PLUMBING)

# A store sample's step: the innermost frame that matches one of these (first match wins).
STEPS = (
    ("RocksDB get (JNI)", ("org.rocksdb.RocksDB.get",)),
    ("RocksDB put/merge/delete (JNI)", ("org.rocksdb.RocksDB.put", "org.rocksdb.RocksDB.merge",
                                       "org.rocksdb.RocksDB.delete",
                                       "org.rocksdb.RocksDB.write")),
    ("RocksDB iterator (JNI)", ("org.rocksdb.RocksIterator", "org.rocksdb.AbstractRocksIterator")),
    ("changelog write", ("io.rockstate.storage.format.Changelog",
                         "org.apache.spark.sql.execution.streaming.state.StateStoreChangelog")),
    ("row checksums", ("io.rockstate.spark.RowChecks", "io.rockstate.storage.format.RowChecksum")),
    ("the batch's rows held", ("io.rockstate.storage.local.BatchRows",)),
    ("row encoding", ("org.apache.spark.sql.execution.streaming.state.RocksDBKeyStateEncoder",
                      "org.apache.spark.sql.execution.streaming.state.RocksDBValueStateEncoder",
                      "org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoder",
                      "org.apache.spark.sql.execution.streaming.state.SingleValueStateEncoder",
                      "org.apache.spark.sql.execution.streaming.state.RocksDBStateEncoder",
                      "org.apache.spark.sql.execution.streaming.state.UnsafeRowDataEncoder",
                      "io.rockstate.spark.ColumnFamilyCodec")),
    ("commit and load", ("io.rockstate.storage.VersionedRocksDB.commit",
                         "io.rockstate.storage.VersionedRocksDB.load",
                         "org.apache.spark.sql.execution.streaming.state.RocksDB.commit",
                         "org.apache.spark.sql.execution.streaming.state.RocksDB.load")),
)
STEP_NAMES = [name for name, _ in STEPS] + ["other store frames"]


def step(stack: list[str]) -> str:
    """The step a store sample is in: the innermost frame that names one."""
    for frame in stack:  # innermost first
        for name, prefixes in STEPS:
            if frame.startswith(prefixes):
                return name
    return "other store frames"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--changed", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--snapshot-every", type=int, default=2)
    parser.add_argument("--providers", default="rockstate,spark-rocksdb-changelog,floor")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--workdir")
    args = parser.parse_args()
    if shutil.which("jfr") is None:
        print("the JDK's jfr tool is not on PATH", file=sys.stderr)
        return 2
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="rockstate-row-profile-"))
    workdir.mkdir(parents=True, exist_ok=True)
    bench = Path(__file__).resolve().parent / "provider_bench.py"
    profiles = {}
    for provider in args.providers.split(","):
        recording = workdir / f"{provider.replace(':', '_')}.jfr"
        figures = workdir / f"{provider.replace(':', '_')}.json"
        cmd = [sys.executable, str(bench), "--keys", str(args.keys),
               "--changed", str(args.changed), "--partitions", str(args.partitions),
               "--batches", str(args.batches), "--snapshot-every", str(args.snapshot_every),
               "--providers", provider, "--workdir", str(workdir / "bench" / provider),
               "--json", str(figures),
               "--conf", "spark.driver.extraJavaOptions=-XX:+UnlockDiagnosticVMOptions "
               "-XX:+DebugNonSafepoints -XX:StartFlightRecording="
               f"filename={recording},settings=profile,{SAMPLING}"]
        out = subprocess.run(cmd, capture_output=True, text=True, env=os.environ, check=False)
        if out.returncode != 0:
            print(f"{provider} failed:\n{out.stderr[-3000:]}", file=sys.stderr)
            return 1
        batch = next((ln for ln in out.stdout.splitlines() if ln.startswith(provider + " ")), "")
        print(f"{provider}: {' '.join(batch.split()[1:3])} (rows/s, batch p50 ms)")
        # The first batch loads every key: the steady state's batches are the ones profiled.
        steady = json.loads(figures.read_text())[provider]["batch_starts"][1]
        profiles[provider] = samples(recording, since=steady)

    print(f"\n| task-thread samples | {' | '.join(profiles)} |")
    print("|---" * (1 + len(profiles)) + "|")
    totals = {p: len(s) or 1 for p, s in profiles.items()}
    stores = {p: [s for s in stacks if any(in_store(f) for f in s)]
              for p, stacks in profiles.items()}
    print("| all | " + " | ".join(f"{len(s):,}" for s in profiles.values()) + " |")
    print("| in the store (inclusive) | " + " | ".join(
        f"{len(stores[p]):,} ({100 * len(stores[p]) / totals[p]:.0f}%)" for p in profiles) + " |")
    steps = {p: collections.Counter(step(s) for s in stores[p]) for p in profiles}
    for name in STEP_NAMES:
        print(f"| {name} | " + " | ".join(f"{steps[p][name]:,}" for p in profiles) + " |")
    for provider, stacks in stores.items():
        innermost = collections.Counter(
            next(f for f in s if in_store(f)) for s in stacks)
        print(f"\n{provider}: innermost store frames")
        for frame, n in innermost.most_common(args.top):
            print(f"  {n:6,}  {frame}")
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
