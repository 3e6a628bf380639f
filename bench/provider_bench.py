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
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# The tests' support code (the S3 server, executor JVMs), for this process and its children.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

# Run only when named in --providers.
from rockstate.session.providers import FLOOR, FLOOR_CLASS, PROVIDERS

OPT_IN = {"spark-rocksdb-changelog-bounded", FLOOR}  # beside the default providers

# rockstate's custom metrics of a batch's block reads (``rockstate`` + each name).
BLOCK_READS = ("BlockCacheHits", "BlocksRead", "IndexBlocksRead", "FilterBlocksRead",
               "BlockBytesRead")


def _conf_pair(text: str) -> str:
    """A ``--conf`` argument, checked to be KEY=VALUE when the command line is parsed."""
    key, sep, _ = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: give KEY=VALUE")
    return text


def write_input(src: Path, keys: int, changed: int, batches: int) -> list[Path]:
    """One Parquet file a batch: the first holds every key, each later one ``changed`` keys.

    Keys are built by Arrow in chunks and written a row group at a time, so 64M keys need
    no more than a chunk's memory here."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    chunk = 1 << 20
    schema = pa.schema([("key", pa.string()), ("value", pa.int32())])
    files = []
    for b in range(batches):
        if b == 0:
            spans = [(lo, min(keys, lo + chunk)) for lo in range(0, keys, chunk)]
        else:
            start = (b * changed * 7) % keys
            spans = [(lo, min(changed, lo + chunk)) for lo in range(0, changed, chunk)]
        path = src.parent / "staged" / f"batch-{b:04d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(path, schema) as writer:
            for lo, hi in spans:
                ids = pa.array(range(lo, hi), pa.int64())
                if b > 0:
                    ids = pc.remainder(pc.add(ids, start), keys)
                text = pc.utf8_lpad(pc.cast(ids, pa.string()), 8, "0")
                key = pc.binary_join_element_wise("key-", text, "")
                value = pa.array([b] * (hi - lo), pa.int32())
                writer.write_table(pa.table([key, value], schema=schema))
        files.append(path)
    return files


def feed(staged: Path, src: Path) -> int:
    """Puts one batch's file into the running query's source folder whole, and returns its
    rows. A copy in place is listed while it grows: Spark then splits the file by the length
    it listed, reads only the row groups that start within it, and the batch silently holds
    part of the input (a 64M-key load of one run held 40.9M keys). The file source
    skips names starting with a dot, so the copy is made under one and renamed in."""
    import pyarrow.parquet as pq

    hidden = src / f".{staged.name}.tmp"
    shutil.copy(staged, hidden)
    hidden.rename(src / staged.name)
    return pq.ParquetFile(staged).metadata.num_rows


def read_whole(progress: dict, expected: int, batch: int) -> None:
    """Stops the bench unless the batch's progress counts every row its file holds."""
    if progress["numInputRows"] != expected:
        raise SystemExit(f"batch {batch} read {progress['numInputRows']:,} rows of the "
                         f"{expected:,} in its file; its figures would not be comparable.")


def state_files(checkpoint: Path | str) -> dict[str, int]:
    """Files under the checkpoint's state/ directory (local, or an s3a:// URL) and sizes."""
    if str(checkpoint).startswith("s3a://"):
        fs = s3_filesystem()
        root = s3_key(str(checkpoint)) + "/state"
        fs.invalidate_cache()
        return {p: int(i["size"]) for p, i in fs.find(root, detail=True).items()} \
            if fs.exists(root) else {}
    root = Path(checkpoint) / "state"
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and not p.name.endswith(".crc"):
            out[str(p)] = p.stat().st_size
    return out


def interval_seconds(text: str) -> float:
    """Spark's duration string as the bench passes it (``200ms``, ``2s``, ``1min``), in seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m)?\s*", text)
    if not m:
        raise SystemExit(f"--maintenance-interval {text!r}: give a duration such as 200ms or 2s")
    return float(m.group(1)) * {"ms": 0.001, "s": 1.0, "min": 60.0, "m": 60.0}[m.group(2) or "ms"]


def settle(checkpoint: Path | str, maintenance_s: float, limit_s: float = 60.0) -> float:
    """Waits until the files in ``state/`` stop changing for three maintenance intervals (at
    least 1.5 s), at most ``limit_s``; returns the seconds waited. Both providers write some
    files after the last batch (snapshots, their cleanup), and "after maintenance" means after
    that work, for both alike."""
    began = time.monotonic()
    quiet = max(3 * maintenance_s, 1.5)
    last, since = state_files(checkpoint), time.monotonic()
    while time.monotonic() - began < limit_s:
        time.sleep(min(0.5, quiet / 3))
        now = state_files(checkpoint)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return time.monotonic() - began


def _kind(path: str) -> str:
    """A state file's kind, by the suffix of its name (``sst``, ``zip``, ``changelog``,
    rockstate's ``rsv`` version files and ``json`` manifests); ``other`` for a name without
    one (Spark's operator metadata and schema files)."""
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1] if "." in name else "other"


def peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def stat_fields(stat: Path) -> list[str]:
    """The fields of a /proc ``stat`` file after the command (which may hold spaces and
    parentheses): state first, then ppid, pgrp, session, ..."""
    return stat.read_text().rsplit(")", 1)[1].split()


def _stat_cpu_seconds(stat: Path) -> float:
    """User plus system CPU time from a /proc ``stat`` file (a process's or one thread's)."""
    fields = stat_fields(stat)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """CPU time of a process, every thread (native ones too) included."""
    return _stat_cpu_seconds(Path(f"/proc/{pid}/stat"))


def cpu_by_thread(pid: int) -> dict[str, float]:
    """CPU seconds of a process's live threads, grouped by name with digits dropped."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            comm = (task / "comm").read_text().strip()
            seconds = _stat_cpu_seconds(task / "stat")
        except OSError:  # the thread ended
            continue
        group = "".join(c for c in comm if not c.isdigit()).strip(" -#_")
        out[group] = out.get(group, 0.0) + seconds
    return out


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
    phases: list[dict] = []
    every: list[int] = []
    starts: list[str] = []  # each batch's trigger time (ISO, UTC), to line up with a profile
    written, commits, task_bytes, durations, rows, millis = [], [], [], [], 0, 0
    state_ms: list[dict[str, int]] = []
    pid = spark.sparkContext._gateway.proc.pid
    cpu = []
    batch_requests: list[dict[str, int]] = []
    block_reads: list[dict[str, int]] = []
    pinned: list[int] = []
    in_process_cache = provider == rockstate.PROVIDER_CLASS and args.master.startswith("local[")
    recovery: dict = {}
    steady_threads: dict[str, float] = {}
    for i, f in enumerate(staged):
        if i == 1:  # the first batch loads every key: the steady state's CPU counts from here
            steady_threads = cpu_by_thread(pid)
        cpu.append(cpu_seconds(pid))
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
        cpu[-1] = cpu_seconds(pid) - cpu[-1]
        batch_requests.append(requests_between(s3_requests(), before))
        now = state_files(checkpoint)
        new_bytes = sum(size for path, size in now.items() if seen.get(path) != size)
        seen = now
        custom = p["stateOperators"][0].get("customMetrics", {})
        if i > 0:  # the first batch loads the whole state; later ones are the steady state
            written.append(new_bytes)
            commits.append(p["stateOperators"][0]["commitTimeMs"])
            task_bytes.append(custom.get("rockstateCommitBytes", 0))
            durations.append(p["durationMs"]["triggerExecution"])
            phases.append(p["durationMs"])
            # The state operators' own time, summed over their tasks (Spark's progress): what
            # a provider can take off a batch, against what the rest of the query costs.
            state_ms.append({k: sum(op.get(f"{k}TimeMs", 0) for op in p["stateOperators"])
                             for k in STATE_TIMES})
        # What each batch's reads cost in RocksDB blocks (rockstate reports it; Spark's
        # provider reports its own figures under other names): a cache too small for the
        # state's index and filters shows as index and filter blocks read again and again.
        block_reads.append({k: custom.get(f"rockstate{k}", 0) for k in BLOCK_READS})
        # In local mode the executor is this JVM: what of rockstate's cache is pinned (the
        # memtables' reservations, pinned index and filter blocks, blocks being read). A
        # cache pinned near its capacity keeps no data block between two reads.
        if in_process_cache:
            pinned.append(spark._jvm.io.rockstate.plugin.LocalDiagnostics.pinnedCacheBytes())
        rows += p["numInputRows"]
        millis += p["durationMs"]["triggerExecution"]
        every.append(p["durationMs"]["triggerExecution"])
        starts.append(p["timestamp"])
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
    diagnostics = spark._jvm.io.rockstate.plugin.LocalDiagnostics
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
        "rows_per_s": rows / (millis / 1000.0),
        "commit_p50_ms": statistics.median(commits),
        "commit_p95_ms": sorted(commits)[max(0, round(0.95 * len(commits)) - 1)],
        "batch_p50_ms": statistics.median(durations),
        # The JVM's CPU time per batch, every thread: background work competes with tasks.
        "cpu_p50_s": statistics.median(cpu[1:]),
        # Every batch after the first, per batch: where the process's CPU went, native
        # threads (RocksDB's flushes and compactions) and the JIT's included.
        "cpu_by_thread_s": dict(sorted(
            ((k, round((v - steady_threads.get(k, 0.0)) / max(1, len(staged) - 1), 3))
             for k, v in threads.items()), key=lambda kv: -kv[1])[:10]),
        "bytes_per_batch": statistics.mean(written),
        "peak_rss_mb": peak_rss_bytes(pid) / 2**20,
        # local-cluster: every executor JVM's peak, summed (local[N]: the driver's JVM above).
        "executor_rss_mb": sum(peak_rss_bytes(e) for e in executors) / 2**20,
        "open_files": sum(open_files(e) for e in [pid, *executors]),
        "state_memory_mb": state_memory / 2**20,
        "rocksdb_memory_mb": rocksdb_memory / 2**20,
        # Requests to the object store while each batch ran (the background uploads that
        # landed in it included; the bench's own listings between batches not): the median
        # batch after the first, and the sum over every batch.
        "s3_requests_per_batch": {k: statistics.median(b.get(k, 0) for b in batch_requests[1:])
                                  for k in sorted({k for b in batch_requests for k in b})},
        "s3_requests": {k: sum(b.get(k, 0) for b in batch_requests)
                        for k in sorted({k for b in batch_requests for k in b})},
        "commit_path_bytes": statistics.mean(task_bytes),
        "state_files": len(left),
        "settled_s": round(settled_s, 1),
        # By kind (the name's suffix): where one provider's extra files are.
        "state_files_by_kind": dict(sorted(Counter(_kind(path) for path in left).items())),
        "state_mb_by_kind": {k: round(sum(v for p, v in left.items() if _kind(p) == k) / 2**20, 1)
                             for k in sorted({_kind(p) for p in left})},
        # New bytes in state/ after each batch from the second (background uploads land late).
        "written_mb": [round(b / 2**20, 1) for b in written],
        "state_mb": sum(left.values()) / 2**20,
        "checkpoints": checkpoints,
        "recovery": recovery,
        # Where a batch's time goes (Spark's durationMs phases, p50 after the first batch).
        "batches_ms": every,
        "batch_starts": starts,
        "block_reads": block_reads,
        "pinned_mb": [round(b / 2**20, 1) for b in pinned],
        "levels": _level_totals(level_stats),
        "level_stores": len(level_stats),
        "flushes": _flush_totals(level_stats),
        "phases_p50_ms": {k: statistics.median(d.get(k, 0) for d in phases)
                          for k in sorted({k for d in phases for k in d})},
        "state_time_p50_ms": {k: statistics.median(d[k] for d in state_ms) for k in STATE_TIMES},
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


# A state operator's time in a batch, as Spark's progress names it (`<name>TimeMs`).
STATE_TIMES = ("allUpdates", "allRemovals", "commit")


def _median_run(rs: list[dict]) -> dict:
    """One provider's runs as one: the median of every number (the last run's lists)."""
    out = dict(rs[-1])
    for k, v in rs[-1].items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = statistics.median(r[k] for r in rs)
        elif isinstance(v, dict) and all(isinstance(x, (int, float)) for x in v.values()):
            out[k] = {kk: statistics.median(r[k].get(kk, 0) for r in rs) for kk in v}
    if len(rs) > 1:
        out["rows_per_s_runs"] = [round(r["rows_per_s"]) for r in rs]
    return out


def s3_requests() -> dict[str, int]:
    """The requests the S3 server has served so far, by kind as S3 bills them (PUT, POST, GET,
    HEAD, LIST, DELETE: tests/support/s3.py counts them as it serves them, from every JVM)."""
    endpoint = os.environ.get("ROCKSTATE_BENCH_S3_ENDPOINT")
    if not endpoint:
        return {}
    import urllib.request

    from support.s3 import REQUESTS_PATH

    with urllib.request.urlopen(endpoint + REQUESTS_PATH, timeout=30) as response:
        return json.loads(response.read())


def start_s3_server():
    """Starts the S3 API server (moto, in a child process) and tells this process's children
    where it is, through the environment: the Spark settings for ``s3a://`` (with its jars),
    the root of the bench's checkpoints, the fsspec options and the request counter's
    endpoint. The caller stops it."""
    from support.s3 import S3Server

    server = S3Server(process=True).start()
    os.environ["ROCKSTATE_BENCH_SPARK_CONF"] = json.dumps(server.spark_conf())
    os.environ["ROCKSTATE_BENCH_S3_ROOT"] = server.url("bench")
    os.environ["ROCKSTATE_BENCH_S3_OPTIONS"] = json.dumps(server.storage_options())
    os.environ["ROCKSTATE_BENCH_S3_ENDPOINT"] = server.endpoint
    return server


def floor_jar() -> str:
    """The test kit's jar, which holds the floor provider (compiled for the installed Spark
    line on first use, then cached: tests/support/testkit_jar.py). The parent builds it once
    and hands its path to the children."""
    path = os.environ.get("ROCKSTATE_BENCH_TESTKIT_JAR")
    if not path:
        from support.testkit_jar import testkit_jar

        path = str(testkit_jar())
        os.environ["ROCKSTATE_BENCH_TESTKIT_JAR"] = path
    return path


def store_costs(results: dict[str, dict]) -> dict[str, float]:
    """Each provider's store cost with the floor in the run: its batch p50 minus the floor's
    (what the store adds to a batch over a map in memory that writes nothing)."""
    floor = results[FLOOR]["batch_p50_ms"]
    return {name: r["batch_p50_ms"] - floor for name, r in results.items() if name != FLOOR}


def with_s3_conf(builder):
    """``builder`` with the Spark settings ``start_s3_server`` handed down (none without it)."""
    for k, v in json.loads(os.environ.get("ROCKSTATE_BENCH_SPARK_CONF", "{}")).items():
        builder = builder.config(k, v)
    return builder


def s3_storage_options() -> dict:
    """The fsspec options of the server ``start_s3_server`` started."""
    return json.loads(os.environ["ROCKSTATE_BENCH_S3_OPTIONS"])


def s3_filesystem():
    """The server ``start_s3_server`` started, as an fsspec file system."""
    import fsspec

    return fsspec.filesystem("s3", **s3_storage_options())


def s3_key(url: str) -> str:
    """An ``s3a://bucket/key`` URL as fsspec's ``bucket/key``."""
    return url.removeprefix("s3a://")


def requests_between(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    """The S3 requests served from ``before`` to ``after`` (two ``s3_requests()``), by kind."""
    return {k: v - before.get(k, 0) for k, v in after.items()}


def kill_an_executor(spark) -> float:
    """SIGKILLs one executor JVM of a local-cluster application (its worker starts another);
    returns when, on the monotonic clock."""
    pids = executor_jvms(spark)
    if not pids:
        raise SystemExit("--kill-before needs executor JVMs: --master local-cluster[...]")
    os.kill(pids[0], signal.SIGKILL)
    return time.monotonic()


def executor_jvms(spark) -> list[int]:
    """The executor JVMs of a local-cluster application (none for local[N])."""
    from support.executors import executor_pids

    return executor_pids(spark.sparkContext.applicationId)


def open_files(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _session_alive(sid: int) -> bool:
    """Whether a process of session `sid` is still running (Linux's /proc)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = stat_fields(Path(f"/proc/{entry}/stat"))
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                return True
    return False


def _run_child(cmd: list[str]) -> tuple[str, str]:
    """Runs one provider's child and returns its output. The child runs in a session of its
    own, writing to files rather than pipes: a JVM it leaves behind (once seen at 16M keys,
    alive and idle after its Python exited) is killed with the session, after a grace, instead
    of holding the pipes open and the whole bench with them."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=os.environ,
                                 start_new_session=True)
        child.wait()
        # The JVM exits on its own once its Python has (its shutdown hooks run: a Flight
        # Recorder dump, for one); one still there after the grace is killed.
        deadline = time.monotonic() + 30
        while _session_alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):  # nothing left in the session
            os.killpg(child.pid, signal.SIGKILL)
        out.seek(0)
        err.seek(0)
        return out.read(), err.read()


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
    for run, name in ((run, name) for run in range(args.repeats) for name in names):
        cmd = [sys.executable, __file__, "--child", name, "--run", str(run),
               "--workdir", str(workdir),
               "--keys", str(args.keys), "--changed", str(args.changed),
               "--batches", str(args.batches), "--partitions", str(args.partitions),
               "--maintenance-interval", args.maintenance_interval,
               "--snapshot-every", str(args.snapshot_every),
               "--checkpoint-format", str(args.checkpoint_format), "--master", args.master,
               "--kill-before", str(args.kill_before), *(f"--conf={c}" for c in args.conf)]
        stdout, stderr = _run_child(cmd)
        line = next((ln for ln in stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            print(f"{name} failed:\n{stderr[-3000:]}", file=sys.stderr)
            return 1
        runs.setdefault(name, []).append(json.loads(line[len("RESULT "):]))
    results = {name: _median_run(rs) for name, rs in runs.items()}
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
