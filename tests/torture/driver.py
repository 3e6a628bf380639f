"""One torture driver process: every query kind at once, each on its own checkpoint.

``python driver.py SPEC`` runs until ``<root>/stop`` appears; ``python driver.py SPEC
--verify`` instead reads the finished checkpoints (in a fresh JVM, fresh local directories)
and writes ``<root>/verify.json``. The orchestrator kills this process group at will: nothing
here cleans up, every restart resumes from the checkpoints.

Layout under the spec's ``root``: ``<kind>/input`` (one JSON file a batch), ``<kind>/out``
(each batch's output, ``<batch>.json``), ``<kind>/checkpoint``; ``status.json`` (this run's
application id); ``events.log`` (query failures and restarts); ``faults/sink-fail-<kind>-<n>``
makes the sink of batch ``n`` fail once, after the batch's state is committed.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rockstate.session import local_cluster
from rockstate.session.providers import PROVIDERS
from support.testkit_jar import testkit_jar
from torture import queries
from torture.queries import SCHEMA, STATE_READS, build

PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"


def session(spec: dict, master: str):
    from pyspark import cloudpickle
    from pyspark.sql import SparkSession

    import rockstate

    # Python workers cannot import this suite's modules: ship its functions by value.
    cloudpickle.register_pickle_by_value(queries)

    b = (SparkSession.builder.master(master).appName(f"rockstate-torture-{spec['provider']}")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.streaming.noDataMicroBatches.enabled", "false")
         .config("spark.sql.streaming.stateStore.maintenanceInterval", "1s")
         .config("spark.sql.streaming.minBatchesToRetain", str(spec.get("retain", 4)))
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.driver.memory", "1g")
         .config("spark.executor.memory", "512m")
         # An executor stopped past this is given up on and its tasks run elsewhere.
         .config("spark.network.timeout", "10s")
         .config("spark.network.timeoutInterval", "2s")
         .config("spark.executor.heartbeatInterval", "1s")
         .config("spark.task.maxFailures", "8")
         .config("spark.speculation", "true")
         .config("spark.speculation.quantile", "0.5")
         .config("spark.speculation.multiplier", "3")
         .config("spark.speculation.minTaskRuntime", "3s")
         .config("spark.hadoop.fs.rsfault.impl",
                 "io.rockstate.testing.FaultInjectingFileSystem")
         .config("spark.hadoop.fs.rsfault.plan", spec.get("plan", ""))
         # The fault-injecting file system and the store audit: the test kit's jar.
         .config("spark.jars", ",".join([str(testkit_jar()), *spec.get("jars", [])])))
    for k, v in spec.get("confs", {}).items():
        b = b.config(k, v)
    # rockstate's jar and plugin in every run, whichever provider the spec names.
    spark = rockstate.configure(b, **spec.get("settings", {})).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    provider = PROVIDERS[spec["provider"]][0]
    spark.conf.set(PROVIDER_KEY, provider)
    return spark


def location(spec: dict, root: Path, kind: str) -> str:
    """A query's checkpoint: on the local disk through the fault-injecting file system, or
    on the outside run's S3 server."""
    if spec.get("checkpoint_base"):
        return f"{spec['checkpoint_base']}/{kind}/checkpoint"
    return f"rsfault://{(root / kind / 'checkpoint').resolve()}"


def start(spark, spec: dict, root: Path, kind: str):
    query, mode = build(kind)
    out = root / kind / "out"
    out.mkdir(parents=True, exist_ok=True)

    def sink(df, batch_id: int) -> None:
        rows = sorted(json.dumps([None if v is None else str(v) for v in r]) for r in
                      df.collect())
        marker = root / "faults" / f"sink-fail-{kind}-{batch_id}"
        if marker.exists():
            marker.unlink()
            raise RuntimeError(f"torture: injected sink failure in batch {batch_id}")
        tmp = out / f".{batch_id}.json.tmp"
        tmp.write_text(json.dumps(rows))
        tmp.rename(out / f"{batch_id}.json")

    stream = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
              .json(str(root / kind / "input")))
    return (query(stream).writeStream.outputMode(mode).foreachBatch(sink)
            .option("checkpointLocation", location(spec, root, kind))
            # Triggers fall on whole seconds; the orchestrator writes input mid-second, so
            # a join's two sources (a self-join lists the directory twice) see it together.
            .trigger(processingTime="1 second")
            .queryName(f"torture-{kind}").start())


def run(spec: dict) -> None:
    root = Path(spec["root"])
    spark = session(spec, spec["master"])
    work = local_cluster.application_work_folder(spark)  # the orchestrator removes it if killed
    (root / "status.json").write_text(json.dumps(
        {"app_id": spark.sparkContext.applicationId, "pid": os.getpid(),
         "work_folder": str(work) if work else None}))
    events = open(root / "events.log", "a")  # noqa: SIM115 - kept open for the process
    running = {kind: start(spark, spec, root, kind) for kind in spec["kinds"]}
    failures = dict.fromkeys(running, 0)
    reopened: dict[tuple, int] = {}  # (query run, batch) -> instances reopened
    while not (root / "stop").exists():
        for kind, q in list(running.items()):
            _count_reopened(q, reopened, root / f"reopened-{os.getpid()}.json")
            if not q.isActive:
                failures[kind] += 1
                events.write(f"{time.time():.3f} {kind} failed: {q.exception()}\n")
                events.flush()
                if failures[kind] > 6:  # not a fault it recovers from: a finding
                    sys.exit(2)
                running[kind] = start(spark, spec, root, kind)  # a restarted query: a new run
            elif q.lastProgress and q.lastProgress.get("numInputRows"):
                failures[kind] = 0
        time.sleep(0.2)
    for q in running.values():
        q.stop()
    local_cluster.stop(spark)


def _count_reopened(q, seen: dict, path: Path) -> None:
    """Notes the instances the query's last batch reopened (``maxOpenStores``); the
    orchestrator sums every driver's file."""
    p = q.lastProgress
    if not p or (p["runId"], p["batchId"]) in seen:
        return
    seen[(p["runId"], p["batchId"])] = sum(
        o.get("customMetrics", {}).get("rockstateInstancesReopened", 0)
        for o in p.get("stateOperators", []))
    path.write_text(json.dumps({"reopened": sum(seen.values())}))


def _rows(spark, path: str, batch: int, options: dict) -> list[str]:
    reader = spark.read.format("statestore").option("batchId", batch)
    for k, v in options.items():
        reader = reader.option(k, v)
    df = reader.load(path)
    cols = [c for c in df.columns if c in ("key", "value", "partition_id")]
    return sorted(json.dumps(r.asDict(recursive=True), default=str, sort_keys=True)
                  for r in df.select(*cols).collect())


def verify(spec: dict) -> None:
    """The state of every retained version against the oracle's, from a fresh JVM."""
    import rockstate

    root, oracle = Path(spec["root"]), Path(spec["oracle"])
    spark = session(spec, "local[2]")
    jvm = spark.sparkContext._jvm
    report: dict = {}
    for kind in spec["kinds"]:
        # On the outside run's S3 server the JVM reads through s3a, Python through s3fs, and
        # the commit log is looked at in the server's own folder.
        theirs = str(oracle / kind / "checkpoint")
        if spec.get("checkpoint_base"):
            mine = f"{spec['checkpoint_base']}/{kind}/checkpoint"
            mine_loc = rockstate.CheckpointLocation(
                f"{spec['verify_base'].replace('s3a://', 's3://', 1)}/{kind}/checkpoint",
                **spec["storage_options"])
            mine_files = Path(spec["mirror"]) / kind / "checkpoint"
        else:
            mine = str(root / kind / "checkpoint")
            mine_loc, mine_files = rockstate.CheckpointLocation(mine), Path(mine)
        entry: dict = {"divergent_state": [], "errors": []}
        batches = sorted(int(p.stem) for p in (root / kind / "out").glob("*.json"))
        versions = [b + 1 for b in batches]
        if spec["provider"] == "rockstate":
            loc = mine_loc
            per_store = [set(loc.versions(s)) for s in loc.stores()]
            versions = sorted(set.intersection(*per_store)) if per_store else []
            audits = json.loads(jvm.io.rockstate.testing.StoreAudit.auditCheckpointJson(mine, 100))
            entry["missing"] = sorted({m for a in audits for m in a["missing"]})
            entry["errors"] += [e for a in audits for e in a["errors"]]
            entry["longest_chain"] = max(
                (len(loc.manifest(s, v).changelogs) for s in loc.stores()
                 for v in loc.versions(s)), default=0)
            entry["orphan_bytes"], entry["live_bytes"] = _orphans(loc, audits)
            report_ok = rockstate.verify(loc)
            entry["verify_problems"] = [str(p) for p in report_ok.problems]
            entry["checkpoints"] = _check_completed(loc)
        else:
            versions = versions[-2:]  # what Spark's provider retains for sure
        # The state reader needs the batch in both commit logs (Spark trims its own).
        versions = [v for v in versions if all(
            (Path(c) / "commits" / str(v - 1)).exists() for c in (mine_files, theirs))]
        for v in versions:
            for opts in STATE_READS[kind]:
                try:
                    a, b = _rows(spark, mine, v - 1, opts), _rows(spark, theirs, v - 1, opts)
                except Exception as e:  # a version that does not load is a finding
                    lines = str(e).splitlines()
                    cause = [x for x in lines if "Exception" in x or "Error" in x][:2]
                    entry["errors"].append(f"version {v} {opts}: {lines[0][:200]} {cause}")
                    continue
                if a != b:
                    entry["divergent_state"].append(
                        {"version": v, "options": opts, "rows": len(set(a) ^ set(b))})
        entry["versions_checked"] = versions
        report[kind] = entry
    (root / "verify.json").write_text(json.dumps(report, indent=1))
    spark.stop()


def _orphans(loc, audits: list[dict]) -> tuple[int, int]:
    """Bytes of data files no manifest references (the audit's list), and bytes of the rest."""
    stray = {_under_checkpoint(a["store"]): set(a["unreferenced"]) for a in audits}
    orphan = live = 0
    for store in loc.stores():
        unreferenced = stray.get(_under_checkpoint(store.path), set())
        for rel, size in loc.data_files(store).items():
            if rel in unreferenced:
                orphan += size
            else:
                live += size
    return orphan, live


def _under_checkpoint(path: str) -> str:
    """A store's folder relative to its checkpoint (JVM and Python name the root apart)."""
    return "state/" + path.rstrip("/").split("/state/", 1)[-1]


def _check_completed(loc) -> dict:
    """Every completed checkpoint's snapshots hold exactly their version's state."""
    import tempfile

    from rocksdict import AccessType, Rdict

    from rockstate.checkpoint.rockstate_store_reader import RockstateStoreReader, stage_snapshot

    checked, wrong = 0, []

    stores = {(s.operator, s.name, s.partition): s for s in loc.stores()}
    for cp in loc.checkpoints():
        for st in cp.stores:
            store = stores.get((st.operator, st.store, st.partition))
            if store is None:
                wrong.append(f"checkpoint {cp.version}: store {st} not found")
                continue
            snap = loc.snapshot_manifest(store, st.snapshot_manifest, f"checkpoint {cp.version}")
            with tempfile.TemporaryDirectory() as tmp:
                stage_snapshot(loc, store, snap, st.snapshot_manifest, Path(tmp), cp.version)
                db = Rdict(tmp, access_type=AccessType.read_only())
                try:
                    entries = dict(db.items())
                finally:
                    db.close()
            if entries != RockstateStoreReader(loc, store).entries(cp.version):
                wrong.append(f"checkpoint {cp.version}: {store}")
            checked += 1
    return {"stores_checked": checked, "wrong": wrong}


if __name__ == "__main__":
    spec = json.loads(Path(sys.argv[1]).read_text())
    try:
        verify(spec) if "--verify" in sys.argv else run(spec)
    except Exception:
        traceback.print_exc()
        sys.exit(1)
