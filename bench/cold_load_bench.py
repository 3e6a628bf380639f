"""Cold load of one partition's state: rockstate against Spark's RocksDB provider, one run.

    python bench/cold_load_bench.py --keys 1000000 --changed 50000 --batches 5 [--s3]

Per provider, one process builds the state of a single partition (one shuffle partition): the
first batch inserts ``--keys`` keys, each later one updates ``--changed`` of them, with a
snapshot every 2 versions (rockstate's ``snapshotInterval``, Spark's ``minDeltasForSnapshot``)
so the newest version is a snapshot plus changes, and waits for the background snapshots.
Then, ``--repeats`` times, a fresh process (a new application: no executor-local files, as on
a new executor) restarts the query on a copy of that checkpoint and runs one batch of one row:
that batch has to load the whole state from the checkpoint. It prints the median time the
store took to load (each provider's own metric: ``rockstateLoadMs``, Spark's
``rocksdbLoadLatencyMs``) and of that whole batch (``triggerExecution``, ``addBatch``), per
provider, the MB the checkpoint holds in ``state/`` (a load's growth from one ``--keys`` to
another is to be read against this one's), and rockstate's ratios. Both providers pay the same
query start; nothing is asserted (shared, noisy machines: read the numbers side by side).

``--warm`` restarts the query in the application that built the state instead, ``--repeats``
times: the first batch of a query stopped and started again while its executors hold what the
stopped run loaded (each start is a new run: new providers, as Spark makes them).

``--s3`` keeps the checkpoints on an S3 API server (moto in a child process, reached through
Hadoop's s3a, as ``provider_bench.py --s3``): each load's copy is made on the server, and each
load also prints the requests it made, by kind. moto serves every byte from one Python process
on the same machine, so a load there is slower than on a real object store; both providers
share that server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import posixpath
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kit import (
    feed,
    read_whole,
    requests_between,
    s3_filesystem,
    s3_key,
    s3_requests,
    s3_storage_options,
    start_s3_server,
    stat_fields,
    state_files,
    with_s3_conf,
    write_input,
)
from rockstate.session.providers import PROVIDERS

SNAPSHOT_EVERY_2 = {
    "rockstate": {"spark.sql.streaming.stateStore.rockstate.snapshotInterval": "2"},
    "spark-rocksdb-changelog": {
        "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2"},
}


def _session(name: str):
    from pyspark.sql import SparkSession

    import rockstate

    provider, extra = PROVIDERS[name]
    builder = (SparkSession.builder.master("local[2]").appName(f"cold-load-{name}")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "3g")
               .config("spark.sql.streaming.stateStore.maintenanceInterval", "1s"))
    spark = rockstate.configure(with_s3_conf(builder)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print(f"JVM {spark.sparkContext._jvm.ProcessHandle.current().pid()}", flush=True)
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
    for k, v in {**extra, **SNAPSHOT_EVERY_2[name]}.items():
        spark.conf.set(k, v)
    return spark


def _checkpoint(work: Path, copy: str = "") -> str:
    """Where a provider's checkpoint (or a load's ``copy`` of it) is: under ``work`` on the
    local disk, or under the bench's root on the S3 server (``--s3``)."""
    folder = f"{copy}/checkpoint" if copy else "checkpoint"
    root = os.environ.get("ROCKSTATE_BENCH_S3_ROOT")
    return f"{root}/{work.name}/{folder}" if root else str(work / folder)


def _copy(checkpoint: str, copy: str) -> None:
    """A copy of a checkpoint for one load (copied on the server for one on S3)."""
    if checkpoint.startswith("s3a://"):
        s3_filesystem().copy(s3_key(checkpoint), s3_key(copy), recursive=True)
    else:
        shutil.copytree(checkpoint, copy)


def _remove(copy: str) -> None:
    """Deletes a load's copy of the checkpoint."""
    if copy.startswith("s3a://"):
        with contextlib.suppress(FileNotFoundError):
            s3_filesystem().rm(s3_key(copy), recursive=True)
    else:
        shutil.rmtree(Path(copy).parent, ignore_errors=True)


def _location(checkpoint: str):
    """rockstate's view of a checkpoint (to read its schemas and its newest version)."""
    from rockstate.checkpoint.location import open_location

    if checkpoint.startswith("s3a://"):
        return open_location("s3://" + s3_key(checkpoint), s3_storage_options())
    return open_location(checkpoint)


def _query(spark, src: Path, checkpoint: str):
    from pyspark.sql import functions as F

    df = spark.readStream.schema("key STRING, value INT").option("maxFilesPerTrigger", 1) \
        .parquet(str(src))
    return (df.groupBy("key").agg(F.count("*").alias("n"), F.sum("value").alias("total"))
            .writeStream.outputMode("update").format("noop")
            .option("checkpointLocation", str(checkpoint)).start())


def _built(spark, work: Path, staged: list[Path]):
    """The query, after it built the state from ``staged`` and its background snapshots landed
    (Spark snapshots in maintenance, rockstate in the background)."""
    src = work / "src"
    src.mkdir(parents=True)
    query = _query(spark, src, _checkpoint(work))
    for i, f in enumerate(staged):
        expected = feed(f, src)
        query.processAllAvailable()
        read_whole(query.lastProgress, expected, i)
    time.sleep(8)
    return query


def build(name: str, work: Path, staged: list[Path]) -> None:
    """Child: builds the state, then waits for the background snapshots to land."""
    spark = _session(name)
    _built(spark, work, staged).stop()
    spark.stop()


def load(name: str, work: Path, run: int) -> dict:
    """Child: a new application restarts the query on a copy and runs a one-row batch."""
    # A copy of the checkpoint (Spark's file source log names the input files by path, so the
    # input directory stays where it is; the one-row file is removed again afterwards).
    copy = _checkpoint(work, f"load-{run}")
    _copy(_checkpoint(work), copy)
    spark = _session(name)
    before = s3_requests()
    query = _query(spark, work / "src", copy)
    query.processAllAvailable()  # nothing new: the restart itself
    one_row = work / "src" / f"zz-one-row-{run}.parquet"
    figures = _one_row_batch(query, one_row)
    figures["requests"] = requests_between(s3_requests(), before)
    query.stop()
    spark.stop()
    one_row.unlink()
    _remove(copy)
    return figures


def _one_row_batch(query, one_row: Path) -> dict:
    """Runs a batch of one row (written to ``one_row``, in the query's input) on a (re)started
    query: its figures."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"key": ["key-00000001"], "value": pa.array([1], pa.int32())}),
                   one_row)
    query.processAllAvailable()
    p = query.lastProgress
    op = p["stateOperators"][0]
    custom = op.get("customMetrics", {})
    return {"batch_ms": p["durationMs"]["triggerExecution"],
            "add_batch_ms": p["durationMs"].get("addBatch", 0),
            "keys": op["numRowsTotal"],
            # the store's own figures, where the provider reports them
            "load_ms": custom.get("rockstateLoadMs", custom.get("rocksdbLoadLatencyMs", -1)),
            "replayed": custom.get("rockstateChangelogsReplayed", -1)}


def warm(name: str, work: Path, staged: list[Path], repeats: int) -> list[dict]:
    """Child: builds the state, then stops the query and starts it again in the same
    application ``repeats`` times, each start running a batch of one row: a warm restart,
    whose executors still hold what the stopped run loaded (a new run id: new providers)."""
    spark = _session(name)
    query = _built(spark, work, staged)
    runs = []
    for run in range(repeats):
        query.stop()
        query = _query(spark, work / "src", _checkpoint(work))
        query.processAllAvailable()  # nothing new: the restart itself
        runs.append(_one_row_batch(query, work / "src" / f"zz-warm-{run}.parquet"))
    query.stop()
    spark.stop()
    return runs


def _java_array(spark, cls, items: list):
    arr = spark.sparkContext._gateway.new_array(cls, len(items))
    for i, item in enumerate(items):
        arr[i] = item
    return arr


def store_load(name: str, work: Path, run: int) -> dict:
    """Child: a new application opens partition 0's newest version through the provider's own
    API, with no query and no local files: the load alone, timed around ``getStore``. Then it
    scans every key (a full read, the first use of the loaded state)."""
    from rockstate.checkpoint.state_schema import v2_schemas

    copy = _checkpoint(work, f"store-{run}")
    _copy(_checkpoint(work), copy)
    spark = _session(name)
    jvm = spark.sparkContext._jvm
    state = jvm.org.apache.spark.sql.execution.streaming.state
    loc = _location(copy)
    key_json, value_json = v2_schemas(loc, 0)
    schema = jvm.org.apache.spark.sql.types.DataType.fromJson
    key_schema, value_schema = schema(json.dumps(key_json)), schema(json.dumps(value_json))
    version = max(int(posixpath.basename(p)) for p in loc.fs.ls(loc.path("commits"),
                                                                 detail=False)
                  if posixpath.basename(p).isdigit()) + 1
    store_id = state.StateStoreId(copy + "/state", 0, 0, "default")
    provider_id = state.StateStoreProviderId(store_id, jvm.java.util.UUID.randomUUID())
    conf = state.StateStoreConf(spark._jsparkSession.sessionState().conf(),
                                jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(
                                    jvm.java.util.HashMap()))
    before = s3_requests()
    started = time.perf_counter()
    provider = state.StateStoreProvider.createAndInit(
        provider_id, key_schema, value_schema, state.NoPrefixKeyStateEncoderSpec(key_schema),
        False, conf, spark.sparkContext._jsc.hadoopConfiguration(), False,
        jvm.scala.Option.empty())
    # py4j passes a small int as an Integer, which no overload takes: reflection widens it.
    # (Spark 4.3's getStore(version, checkpointId, and two flags); the defaults otherwise.)
    lang = jvm.java.lang
    get_store = provider.getClass().getMethod("getStore", _java_array(spark, lang.Class, [
        lang.Long.TYPE, lang.Class.forName("scala.Option"), lang.Boolean.TYPE,
        lang.Boolean.TYPE]))
    store = get_store.invoke(provider, _java_array(spark, lang.Object, [
        version, getattr(provider, "getStore$default$2")(),
        getattr(provider, "getStore$default$3")(), getattr(provider, "getStore$default$4")()]))
    loaded = time.perf_counter()
    requests = requests_between(s3_requests(), before)
    keys = store.iterator("default").size()
    scanned = time.perf_counter()
    store.abort()
    provider.close()
    spark.stop()
    _remove(copy)
    return {"store_load_ms": (loaded - started) * 1000, "scan_ms": (scanned - loaded) * 1000,
            "keys": keys, "version": version, "requests": requests}


def _run_child(phase: str, name: str, work: Path) -> tuple[int, str, str]:
    """Runs a child phase; returns its exit code, stdout and stderr. Its output goes to files,
    not pipes, and the child's own end is awaited, not its JVM's: Spark's RocksDB provider
    can leave a JVM that never exits (its compactions fail on the directories Spark deletes
    as it stops, and RocksDB's log call from a native thread then blocks the JVM's exit). A
    JVM still there 60 s after its child is ended, and said so."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.run([sys.executable, __file__, "--child", phase, name, str(work)],
                               stdout=out, stderr=err, env=os.environ, check=False)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    jvm = next((int(ln.split()[1]) for ln in stdout.splitlines() if ln.startswith("JVM ")),
               None)
    if jvm is not None and not _ended(jvm, 60):
        os.kill(jvm, signal.SIGKILL)
        print(f"{name} {phase}: its JVM had not exited 60 s after its Python process; ended",
              file=sys.stderr)
    return child.returncode, stdout, stderr


def _ended(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` ends (or is a zombie) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if stat_fields(Path(f"/proc/{pid}/stat"))[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.5)
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--changed", type=int, default=50_000)
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--providers", default="rockstate,spark-rocksdb-changelog")
    parser.add_argument("--s3", action="store_true",
                        help="checkpoints on an S3 API server (moto) through s3a")
    parser.add_argument("--warm", action="store_true",
                        help="restart the query in the same application instead (the "
                        "executors keep their local files): the first batch of each restart")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        phase, name, work = args.child
        if phase.startswith("warm-"):
            staged = sorted((Path(work).parent / "input" / "staged").glob("*.parquet"))
            print("RESULT " + json.dumps(warm(name, Path(work), staged, int(phase[5:]))))
        elif phase == "build":
            staged = sorted((Path(work).parent / "input" / "staged").glob("*.parquet"))
            build(name, Path(work), staged)
        elif phase.startswith("store-"):
            print("RESULT " + json.dumps(store_load(name, Path(work), int(phase[6:]))))
        else:
            print("RESULT " + json.dumps(load(name, Path(work), int(phase))))
        return 0

    workdir = Path(tempfile.mkdtemp(prefix="rockstate-cold-load-"))
    write_input(workdir / "input" / "src", args.keys, args.changed, args.batches)
    server = start_s3_server() if args.s3 else None
    try:
        return _compare_warm(args, workdir) if args.warm else _compare(args, workdir)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def _compare_warm(args: argparse.Namespace, workdir: Path) -> int:
    """Each provider builds its state and restarts ``--repeats`` times in one application."""
    medians = {}
    for name in args.providers.split(","):
        code, stdout, stderr = _run_child(f"warm-{args.repeats}", name, workdir / name)
        line = next((ln for ln in stdout.splitlines() if ln.startswith("RESULT ")), None)
        if code != 0 or line is None:
            print(f"{name} warm failed:\n{stderr[-3000:]}", file=sys.stderr)
            return 1
        runs = json.loads(line[len("RESULT "):])
        medians[name] = {k: statistics.median(r[k] for r in runs)
                         for k in ("batch_ms", "add_batch_ms", "load_ms")}
        print(f"{name:26} warm restart: first batch p50 {medians[name]['batch_ms']:6.0f} ms "
              f"{[r['batch_ms'] for r in runs]}   addBatch p50 "
              f"{medians[name]['add_batch_ms']:6.0f} ms   store load p50 "
              f"{medians[name]['load_ms']:.0f} ms   keys {runs[-1]['keys']}")
    if "rockstate" in medians:
        for name, m in medians.items():
            if name != "rockstate":
                print(f"rockstate / {name}: warm restart's first batch "
                      f"{medians['rockstate']['batch_ms'] / m['batch_ms']:.2f}  addBatch "
                      f"{medians['rockstate']['add_batch_ms'] / m['add_batch_ms']:.2f}")
    return 0


def _compare(args: argparse.Namespace, workdir: Path) -> int:
    """Builds each provider's state, loads it ``--repeats`` times each way, prints the table."""
    results: dict[str, list[dict]] = {}
    stores: dict[str, list[dict]] = {}
    state_mb: dict[str, float] = {}  # what cold load is to grow no faster than
    for name in args.providers.split(","):
        work = workdir / name
        runs, store_runs = [], []
        phases = [str(i) for i in range(args.repeats)] + [f"store-{i}"
                                                           for i in range(args.repeats)]
        for phase in ["build", *phases]:
            code, stdout, stderr = _run_child(phase, name, work)
            if code != 0:
                print(f"{name} {phase} failed:\n{stderr[-3000:]}", file=sys.stderr)
                return 1
            line = next((ln for ln in stdout.splitlines() if ln.startswith("RESULT ")), None)
            if line:
                (store_runs if phase.startswith("store-") else runs).append(
                    json.loads(line[len("RESULT "):]))
        results[name] = runs
        stores[name] = store_runs
        state_mb[name] = sum(state_files(_checkpoint(work)).values()) / 1e6
    print(f"keys={args.keys} changed/batch={args.changed} batches={args.batches} "
          f"repeats={args.repeats} (one partition; snapshot every 2 versions; checkpoints on "
          f"{'S3 (moto, s3a)' if args.s3 else 'the local file system'})")
    medians = {}
    for name, runs in results.items():
        medians[name] = {k: statistics.median(r[k] for r in runs)
                         for k in ("batch_ms", "add_batch_ms", "load_ms")}
        print(f"{name:26} load batch p50 {medians[name]['batch_ms']:8.0f} ms   addBatch p50 "
              f"{medians[name]['add_batch_ms']:8.0f} ms   keys {runs[-1]['keys']}   store load "
              f"p50 {medians[name]['load_ms']:.0f} ms {[r['load_ms'] for r in runs]}")
    direct = {}
    for name, runs in stores.items():
        direct[name] = {k: statistics.median(r[k] for r in runs)
                        for k in ("store_load_ms", "scan_ms")}
        print(f"{name:26} getStore on a new application p50 "
              f"{direct[name]['store_load_ms']:8.0f} ms "
              f"{[round(r['store_load_ms']) for r in runs]}   then a full scan p50 "
              f"{direct[name]['scan_ms']:6.0f} ms   keys {runs[-1]['keys']} at version "
              f"{runs[-1]['version']}   {state_mb[name]:.1f} MB in state/")
        if args.s3:
            print(f"{'':26} S3 requests: getStore {_median_requests(runs)}; restart and "
                  f"one-row batch {_median_requests(results[name])}")
    if "rockstate" in medians:
        for name, m in medians.items():
            if name != "rockstate":
                mine, d, theirs = medians["rockstate"], direct["rockstate"], direct[name]
                with_scan = (d["store_load_ms"] + d["scan_ms"]) / (
                    theirs["store_load_ms"] + theirs["scan_ms"])
                print(f"rockstate / {name}: getStore (cold load) "
                      f"{d['store_load_ms'] / theirs['store_load_ms']:.2f}  getStore + scan "
                      f"{with_scan:.2f}"
                      f"  load batch {mine['batch_ms'] / m['batch_ms']:.2f}  addBatch "
                      f"{mine['add_batch_ms'] / m['add_batch_ms']:.2f}")
    return 0


def _median_requests(runs: list[dict]) -> str:
    """The median of the runs' S3 requests, kind by kind, on one line."""
    kinds = sorted({k for r in runs for k in r["requests"]})
    return ", ".join(f"{k} {statistics.median(r['requests'].get(k, 0) for r in runs):g}"
                     for k in kinds) or "none"


if __name__ == "__main__":
    sys.exit(main())
