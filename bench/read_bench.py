"""rockstate's offline reader against Spark's ``statestore`` data source, on one checkpoint.

    python bench/read_bench.py --keys 1000000

A streaming aggregation on rockstate (``local[2]``, 4 partitions) puts ``--keys`` keys in its
state in one batch, then a second batch changes one key: the version read is a RocksDB
snapshot plus a changelog. Then the same state is read twice, into Arrow: by Spark (``spark.read
.format("statestore")...toArrow()``, the session already running) and by
``rockstate.read_state`` (no JVM; its partitions in one worker process per CPU, and again in
one process). All must return the same number of rows; the script
prints each one's best wall time of ``--repeat`` runs and their ratio. Nothing is asserted
on time: the machines are shared.

Then the memory of ``rockstate.export`` against ``rockstate.read_state`` of the same state,
each in a fresh process (peak resident set, ``VmHWM``): export streams each store's snapshot
past what its changelogs changed and writes 65,536 rows at a time, so its peak stays flat
however large a partition is (``--partitions 1`` puts the whole state in one).

``--row-checksums`` writes rockstate's checkpoint with per-row checksums, which every read
then checks (Spark's reader through rockstate's provider, and the offline reader).

``--provider spark`` writes the checkpoint with Spark's own RocksDB provider instead
(changelog checkpointing: the version read is a snapshot zip plus a changelog), which the
offline reader reads too.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rockstate.session.providers import PROVIDERS, SPARK_ROCKSDB_CHANGELOG

# Run in a fresh interpreter: prints the call's peak resident set in MiB. VmHWM, not
# ru_maxrss, which Linux carries across exec from the forking parent (this bench, large).
_PEAK = ("import sys, rockstate; {call}; "
         "print(next(int(line.split()[1]) for line in open('/proc/self/status') "
         "if line.startswith('VmHWM:')) / 1024)")


def _peak_mib(call: str, *args: str) -> float:
    done = subprocess.run([sys.executable, "-c", _PEAK.format(call=call), *args],
                          capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the checkpoint, print where")
    parser.add_argument("--row-checksums", action="store_true",
                        help="rockstate's checkpoint with row checksums (every row checked)")
    parser.add_argument("--provider", choices=("rockstate", "spark"), default="rockstate",
                        help="which provider writes the checkpoint")
    args = parser.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import rockstate

    work = Path(tempfile.mkdtemp(prefix="rockstate-read-bench-"))
    builder = (SparkSession.builder.master("local[2]").appName("read-bench")
               .config("spark.sql.shuffle.partitions", str(args.partitions))
               .config("spark.ui.enabled", "false").config("spark.driver.memory", "3g")
               .config("spark.ui.showConsoleProgress", "false"))
    if args.provider == "rockstate":
        if args.row_checksums:
            builder = builder.config("spark.sql.streaming.stateStore.rowChecksum.enabled", "true")
        spark = rockstate.configure(builder, snapshotInterval=1).getOrCreate()
    else:
        provider, confs = PROVIDERS[SPARK_ROCKSDB_CHANGELOG]
        builder = builder.config("spark.sql.streaming.stateStore.providerClass", provider)
        for key, value in confs.items():
            builder = builder.config(key, value)
        spark = (builder
                 # A snapshot zip of the first batch from the next maintenance run on.
                 .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", "1")
                 .config("spark.sql.streaming.stateStore.maintenanceInterval", "1s")
                 .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    src = work / "src"
    spark.range(args.keys).select(F.concat(F.lit("user-"), F.col("id").cast("string"))
                                  .alias("key"), (F.col("id") % 97).alias("value")) \
        .write.parquet(str(src))
    checkpoint = work / "checkpoint"
    query = (spark.readStream.schema("key STRING, value LONG").parquet(str(src))
             .groupBy("key").agg(F.count("*").alias("n"), F.sum("value").alias("total"))
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", str(checkpoint)).start())
    query.processAllAvailable()
    # A second, one-row batch once the first batch's snapshot is uploaded: the version read
    # is then a RocksDB snapshot plus one changelog, the common case.
    if args.provider == "rockstate":
        spark.sparkContext._jvm.io.rockstate.plugin.LocalDiagnostics.awaitUploadsIdle(120000)
    else:  # every partition's snapshot zip of version 1 is uploaded by maintenance
        deadline = time.monotonic() + 120
        while len(list(checkpoint.glob("state/0/*/1.zip"))) < args.partitions:
            if time.monotonic() > deadline:
                print("Spark's provider uploaded no snapshot of version 1 within 120 s")
                return 1
            time.sleep(0.5)
    spark.createDataFrame([("user-0", 1)], "key STRING, value LONG").write.mode("append") \
        .parquet(str(src))
    query.processAllAvailable()
    query.stop()

    def spark_read():
        return spark.read.format("statestore").load(str(checkpoint)).toArrow()

    def offline_read():
        return rockstate.read_state(str(checkpoint))

    def offline_read_serial():
        return rockstate.read_state(str(checkpoint), workers=1)

    timings = {}
    rows = {}
    for name, fn in (("spark statestore", spark_read), ("rockstate.read_state", offline_read),
                     ("read_state, 1 process", offline_read_serial)):
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            table = fn()
            best = min(best, time.perf_counter() - start)
        timings[name], rows[name] = best, table.num_rows
    spark.stop()
    baseline = _peak_mib("import pyarrow.parquet, rocksdict, rockstate.tools.read")
    read_peak = _peak_mib("rockstate.read_state(sys.argv[1], workers=1)", str(checkpoint))
    export_peak = _peak_mib("rockstate.export(sys.argv[1], sys.argv[2])", str(checkpoint),
                            str(work / "export"))
    exported = sum(f.stat().st_size for f in (work / "export").rglob("*.parquet"))
    if args.keep:
        print(f"checkpoint kept at {checkpoint}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    if len(set(rows.values())) != 1:
        print(f"row counts differ: {rows}")
        return 1
    print(f"provider={args.provider} keys={args.keys} partitions={args.partitions} "
          f"rows read={rows['spark statestore']}")
    for name, t in timings.items():
        print(f"{name:22} best of {args.repeat}: {t:7.2f} s  ({rows[name] / t:,.0f} rows/s)")
    ratio = timings["rockstate.read_state"] / timings["spark statestore"]
    print(f"rockstate.read_state / spark statestore time: {ratio:.2f} (in one process: "
          f"{timings['read_state, 1 process'] / timings['spark statestore']:.2f})")
    print(f"peak RSS (MiB): interpreter with pyarrow and rocksdict {baseline:.0f}, "
          f"read_state (whole state) {read_peak:.0f}, export ({args.partitions} partitions, "
          f"streamed) {export_peak:.0f}; parquet written {exported / 2**20:.1f} MiB")
    print(f"export peak above the interpreter / read_state's: "
          f"{(export_peak - baseline) / max(1.0, read_peak - baseline):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
