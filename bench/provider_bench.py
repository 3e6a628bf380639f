"""The same stateful query on rockstate and on Spark's built-in providers, in one run.

    python bench/provider_bench.py --keys 200000 --changed 20000 --batches 8

Every provider runs in a fresh JVM of its own (a subprocess), on `local[2]`, over the same
input: the first batch fills the state with ``--keys`` keys, every later batch updates
``--changed`` of them. Per provider it prints throughput (input rows/s over all batches),
p50/p95 of the state commit time Spark reports (``commitTimeMs``), bytes written to the
checkpoint's state directory per batch after the first (background snapshot uploads included),
the files and MB the run leaves in ``state/`` once they stop changing after the last batch (both
providers finish snapshots and cleanup in the background; Hadoop's ``.crc`` sidecars not
counted: object stores have none), and the JVM's peak resident memory; then rockstate's ratio
against each of the others (the floor aside: its own lines below). For rockstate it also prints
the bytes its commits wrote on the task's path (``rockstateCommitBytes``) and its checkpoints:
how many completed or aborted, and the spread from the first to the last partition's
acknowledgement; in local mode, also its open stores' RocksDB levels at the end (files, MB,
bytes flushes and compactions wrote, bytes moved down whole) and why their flushes ran (a full
memtable, the executor's write buffer manager, a snapshot's or an idle store's own flush),
summed over the stores. Every provider's files in ``state/`` are printed by kind with their MB,
and so is the MB new after each batch. Nothing here is asserted: the machines are shared, so the
numbers are for reading, side by side, from one run.

``batch_p50_ms`` is the median batch duration (Spark's ``triggerExecution``) after the
first; ``commit_*`` is Spark's ``commitTimeMs``, summed over the operator's partitions.

Small batches on many partitions (Spark's default 200 shuffle partitions, a tiny state) are
the case where each store's fixed cost (open, load, commit, maintenance) dominates:

    python bench/provider_bench.py --keys 200 --changed 200 --partitions 200 --batches 12 \
        --providers rockstate,spark-rocksdb-changelog

``--s3`` puts every checkpoint on an S3 API server (moto, reached through Hadoop's s3a; the
jars come from Maven Central, as in the tests: tests/support/s3.py), where a new file is one
PUT and a rename a copy plus a delete:

    python bench/provider_bench.py --keys 20000 --changed 2000 --batches 8 --s3 \
        --providers rockstate,spark-rocksdb-changelog

``spark-rocksdb-changelog-bounded`` (only when named) is Spark's provider under the memory
bound rockstate keeps by default (a 128 MB cache an executor, the memtables charged to it):
which of a difference is the bound's and which the provider's.

``floor`` (only when named) is the floor: the test kit's benchmark-only provider
(``io.rockstate.floor.FloorStateStoreProvider``, jvm-shim/src/testkit; its jar is compiled
for the installed Spark line on first use and added to that child's ``spark.jars``), which
keeps each partition's state in a hash map in memory and writes nothing. With it in the run,
every provider's store cost is printed (its ``batch_p50_ms`` minus the floor's: what the store
adds to a batch) and so is rockstate's store cost over each Spark provider's (n/a when
Spark's is not above the floor); ``--json`` gets each provider's ``store_cost_ms``:

    python bench/provider_bench.py --keys 1000000 --changed 200000 --partitions 8 \
        --batches 8 --snapshot-every 2 --providers rockstate,spark-rocksdb-changelog,floor

``--snapshot-every N`` gives both RocksDB providers the same snapshot cadence (rockstate's
``snapshotInterval``, Spark's ``minDeltasForSnapshot``; with ``--maintenance-interval 200ms``
Spark's maintenance keeps up with it), and ``--checkpoint-format 2`` runs both on Spark's
checkpoint format 2 (a unique id per commit). The files-and-bytes case of the issue tracker
(40 batches, 4 partitions, a snapshot every 2 versions):

    python bench/provider_bench.py --keys 20000 --changed 4000 --partitions 4 --batches 40 \
        --snapshot-every 2 --maintenance-interval 200ms \
        --providers rockstate,spark-rocksdb-changelog

A provider named ``rockstate:<setting>=<value>[+...]`` runs rockstate with those settings
(``spark.sql.streaming.stateStore.rockstate.<setting>``), to compare choices in one run:

    python bench/provider_bench.py --providers rockstate,rockstate:snapshotInterval=5

``--conf KEY=VALUE`` (repeatable) gives every provider's session a Spark conf. Thousands of
partitions on one executor need it: an open RocksDB store holds about five open files, so at
4000 partitions both RocksDB providers run out of a 20,000-file limit in the first batch
("Too many open files"), and Spark 4.1+'s ``unloadOnCommit`` keeps only the running tasks'
stores open:

    python bench/provider_bench.py --keys 20000 --changed 2000 --partitions 4000 --batches 6 \
        --providers rockstate,spark-rocksdb-changelog \
        --conf spark.sql.streaming.stateStore.unloadOnCommit=true
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from kit import (
    BatchSample,
    cpu_by_thread,
    cpu_seconds,
    executor_jvms,
    feed,
    file_kind,
    floor_jar,
    interval_seconds,
    kill_an_executor,
    median_run,
    open_files,
    peak_rss_bytes,
    read_whole,
    requests_between,
    run_child,
    s3_requests,
    settle,
    start_s3_server,
    state_files,
    summary,
    with_s3_conf,
    write_input,
)
from rockstate.session.providers import FLOOR, FLOOR_CLASS, PROVIDERS

# Run only when named in --providers.
OPT_IN = {"spark-rocksdb-changelog-bounded", FLOOR}  # beside the default providers

def _conf_pair(text: str) -> str:
    """A ``--conf`` argument, checked to be KEY=VALUE when the command line is parsed."""
    key, sep, _ = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: give KEY=VALUE")
    return text


def run_one(name: str, args: argparse.Namespace) -> dict:
    """Runs in the child process: one provider, one JVM."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import rockstate
    from rockstate.session import local_cluster

    base, _, settings = name.partition(":")
    provider, extra = PROVIDERS[base]
    extra = dict(extra)
    for item in filter(None, settings.split("+")):
        k, _, v = item.partition("=")
        extra["spark.sql.streaming.stateStore.rockstate." + k] = v
    builder = (
        SparkSession.builder.master(args.master).appName(f"bench-{name}")
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        # Spark's RocksDB provider uploads its changelog-mode snapshots in maintenance: run it
        # often enough that its snapshot bytes are counted in a run this short, as rockstate's.
        .config("spark.sql.streaming.stateStore.maintenanceInterval", args.maintenance_interval)
    )
    s3_root = os.environ.get("ROCKSTATE_BENCH_S3_ROOT")
    builder = with_s3_conf(builder)
    for conf in args.conf:  # checked as KEY=VALUE when parsed (_conf_pair)
        key, _, value = conf.partition("=")
        builder = builder.config(key, value)
    if base == FLOOR:  # the floor is in the test kit's jar, added to what is there
        jars = getattr(builder, "_options", {}).get("spark.jars")
        builder = builder.config("spark.jars", ",".join(filter(None, [jars, floor_jar()])))
    spark = rockstate.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
    if args.checkpoint_format != 1 and base != "spark-hdfs":
        extra["spark.sql.streaming.stateStore.checkpointFormatVersion"] = \
            str(args.checkpoint_format)
    if args.snapshot_every:
        extra["spark.sql.streaming.stateStore.rockstate.snapshotInterval"] = \
            str(args.snapshot_every)
        extra["spark.sql.streaming.stateStore.minDeltasForSnapshot"] = str(args.snapshot_every)
    for k, v in extra.items():
        spark.conf.set(k, v)
    # A name with settings (rockstate:k=v) holds characters a Hadoop path reads as a scheme.
    folder = re.sub(r"[^A-Za-z0-9._-]", "_", name) + f"-{args.run}"
    work = Path(args.workdir) / folder
    src = work / "src"
    checkpoint: Path | str = (f"{s3_root}/{folder}/checkpoint" if s3_root
                              else work / "checkpoint")
    src.mkdir(parents=True)
    staged = sorted((Path(args.workdir) / "input" / "staged").glob("*.parquet"))

    df = spark.readStream.schema("key STRING, value INT").option("maxFilesPerTrigger", 1) \
        .parquet(str(src))
    query = (df.groupBy("key").agg(F.count("*").alias("n"), F.sum("value").alias("total"))
             .writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", str(checkpoint)).start())
    completed: list = []
    watcher = (rockstate.on_checkpoint_complete(spark, completed.append, poll_seconds=0.2)
               if provider == rockstate.PROVIDER_CLASS else None)
    seen: dict[str, int] = {}
    samples: list[BatchSample] = []
    pid = spark.sparkContext._gateway.proc.pid
    diagnostics = spark._jvm.io.rockstate.plugin.LocalDiagnostics
    in_process_cache = provider == rockstate.PROVIDER_CLASS and args.master.startswith("local[")
    recovery: dict = {}
    steady_threads: dict[str, float] = {}
    for i, f in enumerate(staged):
        if i == 1:  # the first batch loads every key: the steady state's CPU counts from here
            steady_threads = cpu_by_thread(pid)
        cpu_before = cpu_seconds(pid)
        before = s3_requests()
        killed_at = kill_an_executor(spark) if i == args.kill_before else None
        expected = feed(f, src)
        query.processAllAvailable()
        p = query.lastProgress
        if killed_at is not None:  # from the SIGKILL to the end of the batch that follows
            custom_k = p["stateOperators"][0].get("customMetrics", {})
            recovery = {"recovery_s": round(time.monotonic() - killed_at, 2),
                        "batch_ms": p["durationMs"]["triggerExecution"],
                        # Each provider's own metric: its load time summed over the tasks.
                        "load_ms": custom_k.get("rockstateLoadMs",
                                                custom_k.get("rocksdbLoadLatencyMs", 0)),
                        # rockstate's (Spark's provider reports no bytes fetched on load).
                        "downloaded_mb": round(custom_k.get("rockstateBytesDownloaded", 0)
                                               / 2**20, 1)}
        read_whole(p, expected, i)
        cpu = cpu_seconds(pid) - cpu_before
        now = state_files(checkpoint)
        new_bytes = sum(size for path, size in now.items() if seen.get(path) != size)
        seen = now
        # In local mode the executor is this JVM: what of rockstate's cache is pinned (the
        # memtables' reservations, pinned index and filter blocks, blocks being read). A
        # cache pinned near its capacity keeps no data block between two reads.
        samples.append(BatchSample.of(p, cpu, new_bytes,
                                      requests_between(s3_requests(), before),
                                      diagnostics.pinnedCacheBytes() if in_process_cache
                                      else None))
    checkpoints = {}
    if watcher is not None:
        # Let the last snapshots finish and be acknowledged before the query stops.
        deadline = time.time() + 60
        while rockstate.checkpoints(query).pending and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
        watcher.stop()
        view = rockstate.checkpoints(query)
        spreads = [c.completed_at_ms - c.triggered_at_ms for c in completed]
        checkpoints = {
            "completed": len(completed), "aborted": len(view.aborted),
            "spread_p50_ms": statistics.median(spreads) if spreads else 0,
            "async_p50_ms": statistics.median(
                [s.async_ms for c in completed for s in c.stores]) if completed else 0,
            "stores": len(completed[-1].stores) if completed else 0,
        }
    # Spark's provider uploads its last snapshots in maintenance, after the last batch too.
    settled_s = settle(checkpoint, interval_seconds(args.maintenance_interval))
    threads = cpu_by_thread(pid)
    executors = executor_jvms(spark)
    # The state's memory as each provider reports it to Spark (rockstate: the stores'
    # memtables and table readers outside the cache), and rockstate's whole RocksDB memory in
    # the executor (the shared block cache, memtables charged to it) against its bound; in
    # local mode the executor is this JVM.
    state_memory = p["stateOperators"][0].get("memoryUsedBytes", 0)
    rocksdb_memory = diagnostics.rocksdbMemoryUsedBytes() if in_process_cache else 0
    # Where each store's SSTs are and how they got there (local mode: this JVM's stores):
    # bytes compactions wrote against bytes they moved down whole, by level.
    level_stats = list(diagnostics.levelStats()) if in_process_cache else []
    query.stop()
    # What the run leaves in the checkpoint's state/ directory (after the last maintenance):
    # on an object store every file is a request and every listing pays for the count.
    left = state_files(checkpoint)
    result = {
        "provider": name,
        **summary(samples),
        # Every batch after the first, per batch: where the process's CPU went, native
        # threads (RocksDB's flushes and compactions) and the JIT's included.
        "cpu_by_thread_s": dict(sorted(
            ((k, round((v - steady_threads.get(k, 0.0)) / max(1, len(staged) - 1), 3))
             for k, v in threads.items()), key=lambda kv: -kv[1])[:10]),
        "peak_rss_mb": peak_rss_bytes(pid) / 2**20,
        # local-cluster: every executor JVM's peak, summed (local[N]: the driver's JVM above).
        "executor_rss_mb": sum(peak_rss_bytes(e) for e in executors) / 2**20,
        "open_files": sum(open_files(e) for e in [pid, *executors]),
        "state_memory_mb": state_memory / 2**20,
        "rocksdb_memory_mb": rocksdb_memory / 2**20,
        "state_files": len(left),
        "settled_s": round(settled_s, 1),
        # By kind (the name's suffix): where one provider's extra files are.
        "state_files_by_kind": dict(sorted(Counter(file_kind(path) for path in left).items())),
        "state_mb_by_kind": {k: round(sum(v for p, v in left.items() if file_kind(p) == k)
                                      / 2**20, 1)
                             for k in sorted({file_kind(p) for p in left})},
        "state_mb": sum(left.values()) / 2**20,
        "checkpoints": checkpoints,
        "recovery": recovery,
        "levels": _level_totals(level_stats),
        "level_stores": len(level_stats),
        "flushes": _flush_totals(level_stats),
    }
    local_cluster.stop(spark)  # and what local-cluster's workers left in Spark's home
    return result


# RocksDB's per-level figures kept by `_level_totals` (`rocksdb.cfstats`' map names).
LEVEL_FIGURES = ("NumFiles", "SizeBytes", "WriteGB", "MovedGB", "CompCount")


def _level_totals(stats) -> dict[str, dict[str, float]]:
    """RocksDB's per-level figures of the open stores (``compaction.<level>.<figure>``, one
    map a store), ``LEVEL_FIGURES`` summed over the stores, by level ("Sum": all levels)."""
    return _summed(stats, "compaction", LEVEL_FIGURES)


def _flush_totals(stats) -> dict[str, dict[str, float]]:
    """Why the open stores' flushes ran (``flush.<REASON>.Count`` / ``.Bytes``, RocksDB's
    reasons, one map a store), summed over the stores, by reason."""
    return _summed(stats, "flush", ("Count", "Bytes"))


def _summed(stats, kind: str, figures: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """``<kind>.<group>.<figure>`` of every store's map, ``figures`` summed by group."""
    totals: dict[str, dict[str, float]] = {}
    for store in stats:
        for name, value in store.items():
            prefix, group, figure = [*name.split("."), "", ""][:3]
            if prefix == kind and figure in figures:
                by_group = totals.setdefault(group, dict.fromkeys(figures, 0.0))
                by_group[figure] += float(value)
    return dict(sorted(totals.items()))


def store_costs(results: dict[str, dict]) -> dict[str, float]:
    """Each provider's store cost with the floor in the run: its batch p50 minus the floor's
    (what the store adds to a batch over a map in memory that writes nothing)."""
    floor = results[FLOOR]["batch_p50_ms"]
    return {name: r["batch_p50_ms"] - floor for name, r in results.items() if name != FLOOR}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--changed", type=int, default=20_000)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--maintenance-interval", default="2s")
    parser.add_argument("--checkpoint-format", type=int, default=1,
                        help="Spark's state checkpoint format (2: unique ids per commit) for "
                             "both RocksDB providers")
    parser.add_argument("--snapshot-every", type=int, default=0,
                        help="snapshot cadence for both RocksDB providers (rockstate's "
                             "snapshotInterval, Spark's minDeltasForSnapshot); 0: defaults")
    parser.add_argument("--providers", default=",".join(p for p in PROVIDERS
                                                         if p not in OPT_IN))
    parser.add_argument("--workdir")
    parser.add_argument("--s3", action="store_true",
                        help="checkpoints on an S3 API server (moto) through s3a")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs per provider, interleaved (A B A B ...); every figure "
                        "printed is the median over them: the machines are noisy")
    parser.add_argument("--master", default="local[2]",
                        help="Spark's master: local[N], or local-cluster[W,1,1024] for W "
                        "executor JVMs of one core each")
    parser.add_argument("--kill-before", type=int, default=-1, metavar="N",
                        help="SIGKILL an executor JVM just before batch N (0-based) arrives, "
                        "and report the time from the kill to the end of that batch "
                        "(needs --master local-cluster[...])")
    parser.add_argument("--json", help="also write every provider's figures to this file")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        type=_conf_pair,
                        help="a Spark conf for every provider's session (repeatable), e.g. "
                        "spark.sql.streaming.stateStore.unloadOnCommit=true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        print("RESULT " + json.dumps(run_one(args.child, args)))
        return 0
    unknown = [n for n in args.providers.split(",") if n.partition(":")[0] not in PROVIDERS]
    if unknown:  # before the input is written, which at 64M keys takes minutes
        parser.error(f"--providers: unknown {', '.join(unknown)} (known: {', '.join(PROVIDERS)})")

    args.workdir_given = args.workdir is not None
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="rockstate-bench-"))
    args.workdir = str(workdir)
    write_input(workdir / "input" / "src", args.keys, args.changed, args.batches)
    server = start_s3_server() if args.s3 else None
    runs: dict[str, list[dict]] = {}
    names = args.providers.split(",")
    if FLOOR in names:  # compiled here once (on first use), before any child's clock starts
        floor_jar()
    # The providers alternate over the repeats (A B, B A, ...): no one always runs first on a
    # machine the one before it warmed (page cache, CPU frequency).
    order = [(run, name) for run in range(args.repeats)
             for name in (names if run % 2 == 0 else list(reversed(names)))]
    for run, name in order:
        cmd = [sys.executable, __file__, "--child", name, "--run", str(run),
               "--workdir", str(workdir),
               "--keys", str(args.keys), "--changed", str(args.changed),
               "--batches", str(args.batches), "--partitions", str(args.partitions),
               "--maintenance-interval", args.maintenance_interval,
               "--snapshot-every", str(args.snapshot_every),
               "--checkpoint-format", str(args.checkpoint_format), "--master", args.master,
               "--kill-before", str(args.kill_before), *(f"--conf={c}" for c in args.conf)]
        stdout, stderr = run_child(cmd)
        line = next((ln for ln in stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            print(f"{name} failed:\n{stderr[-3000:]}", file=sys.stderr)
            return 1
        runs.setdefault(name, []).append(json.loads(line[len("RESULT "):]))
    results = {name: median_run(rs) for name, rs in runs.items()}
    cols = ["rows_per_s", "batch_p50_ms", "cpu_p50_s", "commit_p50_ms", "commit_p95_ms",
            "bytes_per_batch", "state_files", "state_mb", "peak_rss_mb"]
    print(f"keys={args.keys} changed/batch={args.changed} batches={args.batches} "
          f"partitions={args.partitions} maintenanceInterval={args.maintenance_interval} "
          f"snapshotEvery={args.snapshot_every or 'default'} "
          f"checkpointFormatVersion={args.checkpoint_format} "
          f"checkpoints on {'S3 (moto, s3a)' if args.s3 else 'the local file system'} "
          f"repeats={args.repeats} (medians)")
    print(f"{'provider':26}" + "".join(f"{c:>17}" for c in cols))
    for name, r in results.items():
        print(f"{name:26}" + "".join(f"{r[c]:>17.1f}" for c in cols))
    for name, r in results.items():
        phases = "  ".join(f"{k} {v:.0f}" for k, v in r["phases_p50_ms"].items() if v)
        print(f"{name}: batch phases p50 (ms): {phases}; every batch of the last run (ms): "
              f"{r['batches_ms']}" + (f"; rows/s of each run: {r['rows_per_s_runs']}"
                                      if "rows_per_s_runs" in r else ""))
        state = "  ".join(f"{k} {v:.0f}" for k, v in r["state_time_p50_ms"].items())
        print(f"{name}: state operators' time p50, summed over tasks (ms): {state}")
        threads = "  ".join(f"{k} {v:.2f}" for k, v in r["cpu_by_thread_s"].items())
        print(f"{name}: CPU seconds a batch by thread, the batches after the first (threads "
              f"alive at the end only: a thread that ended is not counted): {threads}")
    for name, r in results.items():
        kinds = ", ".join(f"{k} {n} ({r['state_mb_by_kind'][k]:.0f} MB)"
                          for k, n in r["state_files_by_kind"].items())
        print(f"{name}: files in state/ by kind after the last run: {kinds}; MB new in state/ "
              f"after each batch from the second: {r['written_mb']}")
    for name, r in results.items():
        if name.startswith("rockstate"):
            print(f"{name}: bytes written on the commit path per batch "
                  f"{r['commit_path_bytes']:.0f} (the rest of bytes_per_batch is background "
                  "snapshot uploads)")
            reads = "; ".join(
                f"{b['BlocksRead']:,} ({b['IndexBlocksRead']:,}, {b['FilterBlocksRead']:,}; "
                f"{b['BlockBytesRead'] / 2**20:.1f} MB; hits {b['BlockCacheHits']:,})"
                for b in r["block_reads"])
            print(f"{name}: blocks read from SST files in each batch of the last run (of them "
                  f"index, filter; their MB; cache hits): {reads}")
            if r["pinned_mb"]:
                print(f"{name}: MB of the executor's block cache pinned after each batch of the "
                      f"last run (of rocksdbMemoryMB): {r['pinned_mb']}")
            if r["levels"]:
                rows = "; ".join(
                    f"{lvl} {v['NumFiles']:.0f} files {v['SizeBytes'] / 2**20:.0f} MB, written "
                    f"{v['WriteGB'] * 1024:.0f} MB, moved {v['MovedGB'] * 1024:.0f} MB, "
                    f"{v['CompCount']:.0f} runs" for lvl, v in r["levels"].items())
                print(f"{name}: the open stores' levels at the end of the last run, summed over "
                      f"{r['level_stores']} stores (written and moved: since each opened; "
                      f"flushes are L0's runs): {rows}")
            if r["flushes"]:
                why = "; ".join(f"{reason} {v['Count']:.0f} ({v['Bytes'] / 2**20:.0f} MB, "
                                f"{v['Bytes'] / 2**20 / max(v['Count'], 1):.1f} MB each)"
                                for reason, v in r["flushes"].items())
                print(f"{name}: why the open stores' flushes ran, as RocksDB reports them "
                      f"(SST bytes): {why}")
            c = r["checkpoints"]
            print(f"{name}: checkpoints completed {c['completed']}, aborted {c['aborted']}, "
                  f"{c['stores']} stores each; first to last acknowledgement p50 "
                  f"{c['spread_p50_ms']:.0f} ms; snapshot upload p50 {c['async_p50_ms']:.0f} ms")
            if r["rocksdb_memory_mb"]:
                print(f"{name}: RocksDB memory of the executor after the last batch "
                      f"{r['rocksdb_memory_mb']:.1f} MB (the shared block cache with the "
                      f"memtables charged to it; its bound is rocksdbMemoryMB); the stores' "
                      f"own report to Spark {r['state_memory_mb']:.1f} MB")
    for name, r in results.items():
        if r.get("recovery"):
            k = r["recovery"]
            print(f"{name}: recovery from an executor SIGKILL before batch {args.kill_before} to "
                  f"that batch's end {k['recovery_s']:.1f} s (the batch {k['batch_ms']} ms; "
                  f"loads {k['load_ms']} ms summed over tasks, {k['downloaded_mb']} MB "
                  "downloaded)")
    if "rockstate" in results:
        mine = results["rockstate"]
        for name, r in results.items():
            if name.startswith("rockstate") or name == FLOOR:
                continue
            ratios = "  ".join(f"{c}={mine[c] / r[c]:.2f}" if r[c] else f"{c}=n/a" for c in cols)
            if mine.get("recovery") and r.get("recovery"):
                ratios += (f"  recovery_s="
                           f"{mine['recovery']['recovery_s'] / r['recovery']['recovery_s']:.2f}")
            print(f"rockstate / {name}: {ratios}")
        if "rockstate-checksums" in results:
            r = results["rockstate-checksums"]
            ratios = "  ".join(f"{c}={r[c] / mine[c]:.2f}" if mine[c] else f"{c}=n/a"
                               for c in cols)
            print(f"rockstate-checksums / rockstate (the cost of row checksums): {ratios}")
    if FLOOR in results:
        costs = store_costs(results)
        floor_p50 = results[FLOOR]["batch_p50_ms"]
        print(f"floor: batch p50 {floor_p50:.1f} ms (state in memory, nothing written: "
              f"{FLOOR_CLASS}, the test kit's)")
        print("store cost (batch p50 - floor's batch p50, ms): "
              + "  ".join(f"{name} {cost:.1f}" for name, cost in costs.items()))
        for name, cost in costs.items():
            results[name]["store_cost_ms"] = cost
        for mine in (n for n in costs if n.startswith("rockstate")):
            for theirs in (n for n in costs if not n.startswith("rockstate")):
                ratio = f"{costs[mine] / costs[theirs]:.2f}" if costs[theirs] > 0 else "n/a"
                print(f"{mine} / {theirs} store cost: {ratio}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if not args.workdir_given:  # a workdir given is kept, to look at the files
        shutil.rmtree(workdir, ignore_errors=True)
    if server is not None:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
