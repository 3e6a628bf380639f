"""Where a store's fixed per-batch cost goes: a Java Flight Recorder profile of small batches.

    python bench/profile_commit.py --providers rockstate,spark-rocksdb-changelog

Each provider runs in a fresh JVM (a subprocess) with JFR on: a tiny aggregation over
``--partitions`` shuffle partitions (Spark's default 200), ``--batches`` batches of
``--rows`` rows. It then reads the recording with the JDK's ``jfr`` tool and prints, for the
task threads only, the share of samples under each rockstate method, and the Hadoop call
paths that fork a process (``Shell.runCommand``: chmod on create, readlink on a FileContext
rename, on the local file system without Hadoop's native library). Samples are counts, not
times; compare the providers' shares side by side from one run.
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

from rockstate.session.providers import PROVIDERS

DEFAULT_PROVIDERS = "rockstate,spark-rocksdb-changelog"


def run_one(name: str, args: argparse.Namespace, recording: Path) -> None:
    """In the child: one provider, one JVM, JFR on."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import rockstate

    provider, extra = PROVIDERS[name]
    builder = (SparkSession.builder.master("local[2]").appName(f"profile-{name}")
               .config("spark.sql.shuffle.partitions", str(args.partitions))
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.extraJavaOptions",
                       f"-XX:StartFlightRecording=filename={recording},settings=profile"))
    spark = rockstate.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
    for k, v in extra.items():
        spark.conf.set(k, v)
    work = Path(args.workdir) / name
    src = work / "src"
    src.mkdir(parents=True)
    query = (spark.readStream.schema("key STRING, value INT").option("maxFilesPerTrigger", 1)
             .json(str(src)).groupBy("key").agg(F.count("*").alias("n"))
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", str(work / "checkpoint")).start())
    for b in range(args.batches):
        rows = "".join(json.dumps({"key": f"k{(b * 31 + i) % args.rows}", "value": i}) + "\n"
                       for i in range(args.rows))
        (src / f".b{b}").write_text(rows)
        (src / f".b{b}").rename(src / f"b{b}.json")
        query.processAllAvailable()
    query.stop()
    spark.stop()  # the JVM writes the recording when it exits


def samples(recording: Path, since: str = "") -> list[list[str]]:
    """Task-thread stacks (innermost frame first) of the recording's execution samples, of
    those taken at or after ``since`` (an ISO time in UTC, as Spark's progress gives it)."""
    out = subprocess.run(["jfr", "print", "--json", "--stack-depth", "96", "--events",
                          "jdk.ExecutionSample,jdk.NativeMethodSample", str(recording)],
                         capture_output=True, text=True, check=True).stdout
    stacks = []
    for event in json.loads(out)["recording"]["events"]:
        trace = event["values"].get("stackTrace")
        # Both are ISO times in UTC ending in Z: compared to the millisecond, as text.
        if not trace or event["values"]["startTime"][:23] < since[:23]:
            continue
        frames = [f["method"]["type"]["name"].replace("/", ".") + "." + f["method"]["name"]
                  for f in trace["frames"]]
        if any("Executor$TaskRunner" in f for f in frames):
            stacks.append(frames)
    return stacks


def summarize(name: str, stacks: list[list[str]], top: int) -> None:
    total = len(stacks) or 1
    print(f"== {name}: {len(stacks)} task-thread samples")
    forks = [s for s in stacks if any(f.endswith("Shell.runCommand") for f in s)]
    print(f"  forking a process (Shell.runCommand): {len(forks)} ({100 * len(forks) / total:.0f}%)")
    paths: collections.Counter[str] = collections.Counter()
    for s in forks:
        at = next(i for i, f in enumerate(s) if f.endswith("Shell.runCommand"))
        chain = [f.rsplit(".", 2)[-2] + "." + f.rsplit(".", 1)[-1] for f in s[at + 1:]
                 if ".Shell" not in f and "Process" not in f]
        paths[" < ".join(chain[:6])] += 1
    for path, n in paths.most_common(top):
        print(f"    {n:5}  {path}")
    mine: collections.Counter[str] = collections.Counter(
        next((f for f in s if f.startswith("io.rockstate.")), "(outside rockstate)")
        for s in stacks)
    print("  innermost rockstate method:")
    for method, n in mine.most_common(top):
        print(f"    {n:5} ({100 * n / total:3.0f}%)  {method}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--providers", default=DEFAULT_PROVIDERS,
                        help=f"comma-separated, of {', '.join(PROVIDERS)}")
    parser.add_argument("--workdir")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_one(args.child, args, Path(args.workdir) / f"{args.child}.jfr")
        return 0
    if shutil.which("jfr") is None:
        print("the JDK's jfr tool is not on PATH", file=sys.stderr)
        return 2
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="rockstate-profile-"))
    workdir.mkdir(parents=True, exist_ok=True)  # JFR will not start without its directory
    for name in args.providers.split(","):
        cmd = [sys.executable, __file__, "--child", name, "--workdir", str(workdir),
               "--partitions", str(args.partitions), "--batches", str(args.batches),
               "--rows", str(args.rows)]
        out = subprocess.run(cmd, capture_output=True, text=True, env=os.environ, check=False)
        if out.returncode != 0:
            print(f"{name} failed:\n{out.stderr[-3000:]}", file=sys.stderr)
            return 1
        summarize(name, samples(workdir / f"{name}.jfr"), args.top)
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
