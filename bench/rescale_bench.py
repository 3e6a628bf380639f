"""Rescaling a 1M-key state: rockstate's rewrite next to Spark's own repartition, one run.

    python bench/rescale_bench.py --keys 1000000 --from-partitions 4 --to-partitions 8

Builds, once per provider, the checkpoint of a streaming aggregation whose first batch holds
``--keys`` keys over ``--from-partitions`` partitions: one on Spark's RocksDB provider
(changelog checkpointing off, so every version is a snapshot), one on rockstate. Then each
rewrite runs in a fresh process (its own JVM, ``local[2]``, the same driver memory) on a copy:

- ``spark-repartition``: Spark's ``StreamingCheckpointManager.repartition`` (4.2+) on the Spark
  RocksDB checkpoint: the side-by-side figure;
- ``rockstate-migrate``: ``rockstate.migrate(to="rockstate", partitions=N)`` on the same Spark
  RocksDB checkpoint (the same state, read through the same reader);
- ``rockstate-rescale``: ``rockstate.rescale(partitions=N)`` on the rockstate checkpoint.

It prints, per rewrite, the seconds the call took (the process start excluded) and the peak
resident memory of the whole process tree (Python driver and JVM, sampled every 100 ms), and
rockstate's ratios to Spark's figures. Nothing is asserted (shared, noisy machines).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kit import stat_fields, write_input
from rockstate.session.providers import PROVIDERS

DRIVER_MEMORY = "3g"


def _session(name: str, provider_name: str | None = None):
    from pyspark.sql import SparkSession

    import rockstate

    builder = (SparkSession.builder.master("local[2]").appName(f"rescale-{name}")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", DRIVER_MEMORY))
    spark = rockstate.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if provider_name is not None:
        provider, extra = PROVIDERS[provider_name]
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
        for k, v in extra.items():
            spark.conf.set(k, v)
    return spark


def build(provider_name: str, src: Path, checkpoint: Path, partitions: int) -> None:
    from pyspark.sql import functions as F

    spark = _session(f"build-{provider_name}", provider_name)
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    query = (spark.readStream.schema("key STRING, value INT").parquet(str(src))
             .groupBy("key").agg(F.sum("value").alias("total"))
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", str(checkpoint)).start())
    query.processAllAvailable()
    query.stop()
    spark.stop()


def rewrite(mode: str, checkpoint: Path, partitions: int) -> None:
    import rockstate

    spark = _session(mode)
    started = time.monotonic()
    if mode == "spark-repartition":
        spark._streamingCheckpointManager.repartition(str(checkpoint), partitions)
    elif mode == "rockstate-migrate":
        rockstate.migrate(spark, str(checkpoint), to="rockstate", partitions=partitions)
    else:
        rockstate.rescale(spark, str(checkpoint), partitions)
    print(json.dumps({"seconds": time.monotonic() - started}))
    spark.stop()


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and every descendant (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(stat_fields(Path(f"/proc/{entry}/stat"))[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def measure(mode: str, checkpoint: Path, partitions: int) -> dict:
    child = subprocess.Popen([sys.executable, __file__, "--child", mode, str(checkpoint),
                              str(partitions)], stdout=subprocess.PIPE, text=True)
    peak = [0]

    def sample() -> None:
        while child.poll() is None:
            peak[0] = max(peak[0], _tree_rss(child.pid))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = child.communicate()
    sampler.join()
    if child.returncode != 0:
        raise SystemExit(f"{mode} failed (exit {child.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    return {"seconds": result["seconds"], "peak_rss_mb": peak[0] / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--from-partitions", type=int, default=4)
    parser.add_argument("--to-partitions", type=int, default=8)
    parser.add_argument("--child", nargs=3, metavar=("MODE", "CHECKPOINT", "PARTITIONS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, checkpoint, n = args.child
        rewrite(mode, Path(checkpoint), int(n))
        return
    work = Path(tempfile.mkdtemp(prefix="rescale-bench-"))
    try:
        src = work / "src"
        (staged,) = write_input(src, args.keys, 0, 1)  # written beside src/, moved in whole
        src.mkdir()
        staged.rename(src / staged.name)
        built = {}
        for provider_name in ("spark-rocksdb", "rockstate"):
            built[provider_name] = work / f"built-{provider_name}"
            subprocess.run([sys.executable, "-c",
                            "import sys; sys.path.insert(0, sys.argv[1]); "
                            "from rescale_bench import build; from pathlib import Path; "
                            "build(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]), "
                            "int(sys.argv[5]))",
                            str(Path(__file__).parent), provider_name, str(src),
                            str(built[provider_name]), str(args.from_partitions)], check=True)
        results = {}
        for mode, source in (("spark-repartition", "spark-rocksdb"),
                             ("rockstate-migrate", "spark-rocksdb"),
                             ("rockstate-rescale", "rockstate")):
            copy = work / f"run-{mode}"
            shutil.copytree(built[source], copy)
            results[mode] = measure(mode, copy, args.to_partitions)
            print(f"{mode:>18}: {results[mode]['seconds']:7.1f} s, peak RSS "
                  f"{results[mode]['peak_rss_mb']:7.0f} MB", flush=True)
        spark = results["spark-repartition"]
        print(f"{args.keys} keys, {args.from_partitions} -> {args.to_partitions} partitions, "
              f"driver memory {DRIVER_MEMORY}, local[2]")
        for mode in ("rockstate-migrate", "rockstate-rescale"):
            r = results[mode]
            print(f"{mode}: time {r['seconds'] / spark['seconds']:.2f}x, peak memory "
                  f"{r['peak_rss_mb'] / spark['peak_rss_mb']:.2f}x of Spark's repartition")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
