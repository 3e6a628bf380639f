"""Spark 4.3 real-time mode (RTM) on rockstate: a reproducible try.

What it does (see README.md beside it):
  1. brings the jars with Maven (Spark's Kafka connector 4.2.0, the last one published, and a
     Kafka 4.1 broker) into --jars (default /tmp/rt/jars), unless they are there;
  2. formats and starts a single-node KRaft broker on 127.0.0.1 from those jars;
  3. writes --records records to a topic (a Spark batch write through the connector);
  4. on a session made by rockstate.configure(), starts two RTM queries
     (trigger(realTime=...), output mode update, Kafka sink):
       agg:   groupBy(key).count()            (q5-like)
       dedup: dropDuplicates([id])
     and reports what happens (on pyspark 4.3.0: refused at start(), see README.md);
  5. control: the same two queries with the provider key unset (Spark then picks its own
     RocksDBStateStoreProvider for RTM), checks their output and which provider wrote the state;
  6. with --resume-route: the loophole described in README.md (a checkpoint first made by a
     ProcessingTime run on rockstate, then resumed in RTM with the provider key unset: Spark
     restores the provider from the checkpoint's offset log), checks output and provider.

Exit code: 0 when every step behaved as the README says for 4.3.0 (the rockstate RTM start is
refused with STREAMING_REAL_TIME_MODE.SQL_CONFIGURATION_NOT_SUPPORTED, the control runs and is
right), 1 otherwise. Everything it starts (the broker, Spark) is stopped at the end.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter

PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
ROCKSTATE_PROVIDER = "io.rockstate.state.RockstateStateStoreProvider"
SPARK_ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

CONNECTOR_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rt</groupId><artifactId>connector</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.spark</groupId>
      <artifactId>spark-sql-kafka-0-10_2.13</artifactId><version>4.2.0</version>
      <exclusions><exclusion><groupId>org.apache.hadoop</groupId><artifactId>*</artifactId>
      </exclusion></exclusions></dependency>
  </dependencies>
</project>
"""

BROKER_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rt</groupId><artifactId>broker</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
      <version>4.1.1</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId>
      <version>2.0.16</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId>
      <version>2.0.16</version></dependency>
  </dependencies>
</project>
"""

# The connector's own jars for spark.jars (Spark 4.3's distribution has the rest).
CONNECTOR_JARS = (
    "spark-sql-kafka-0-10_2.13-4.2.0.jar",
    "spark-token-provider-kafka-0-10_2.13-4.2.0.jar",
    "kafka-clients-3.9.2.jar",
    "commons-pool2-*.jar",
)


def log(msg: str) -> None:
    print(f"[try_realtime {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------- jars


def mvn_copy(pom_text: str, out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        pom = os.path.join(tmp, "pom.xml")
        with open(pom, "w") as f:
            f.write(pom_text)
        subprocess.run(
            ["mvn", "-q", "-B", "-f", pom, "dependency:copy-dependencies",
             f"-DoutputDirectory={out_dir}"],
            check=True,
        )


def ensure_jars(jars_dir: str) -> tuple[list[str], str]:
    conn_dir = os.path.join(jars_dir, "sparkkafka")
    broker_dir = os.path.join(jars_dir, "broker")
    if not glob.glob(os.path.join(conn_dir, "spark-sql-kafka-0-10_2.13-4.2.0.jar")):
        log(f"fetching Spark's Kafka connector 4.2.0 with Maven into {conn_dir}")
        mvn_copy(CONNECTOR_POM, conn_dir)
    if not glob.glob(os.path.join(broker_dir, "kafka_2.13-4.1.1.jar")):
        log(f"fetching the Kafka 4.1.1 broker with Maven into {broker_dir}")
        mvn_copy(BROKER_POM, broker_dir)
    # kafka_2.13 brings slf4j-api 1.7; keep only 2.x beside slf4j-simple 2.x.
    for old in glob.glob(os.path.join(broker_dir, "slf4j-api-1.*.jar")):
        os.remove(old)
    conn = []
    for pattern in CONNECTOR_JARS:
        found = sorted(glob.glob(os.path.join(conn_dir, pattern)))
        if not found:
            raise SystemExit(f"missing {pattern} in {conn_dir}")
        conn.append(found[-1])
    return conn, os.path.join(broker_dir, "*")


# ---------------------------------------------------------------- broker


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def start_broker(classpath: str, work: str, partitions: int) -> tuple[subprocess.Popen, str]:
    port, cport = free_port(), free_port()
    logs = os.path.join(work, "kafka-logs")
    props = os.path.join(work, "server.properties")
    with open(props, "w") as f:
        f.write(
            "process.roles=broker,controller\n"
            "node.id=1\n"
            f"controller.quorum.bootstrap.servers=127.0.0.1:{cport}\n"
            f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}\n"
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n"
            "controller.listener.names=CONTROLLER\n"
            "inter.broker.listener.name=PLAINTEXT\n"
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
            f"log.dirs={logs}\n"
            f"num.partitions={partitions}\n"
            "auto.create.topics.enable=true\n"
            "offsets.topic.replication.factor=1\n"
            "offsets.topic.num.partitions=1\n"
            "transaction.state.log.replication.factor=1\n"
            "transaction.state.log.min.isr=1\n"
            "share.coordinator.state.topic.replication.factor=1\n"
            "share.coordinator.state.topic.min.isr=1\n"
            "group.initial.rebalance.delay.ms=0\n"
        )
    java = ["java", "-Xmx512m", "-cp", classpath]
    cluster_id = subprocess.run(
        [*java, "kafka.tools.StorageTool", "random-uuid"],
        check=True, capture_output=True, text=True,
    ).stdout.strip().splitlines()[-1]
    subprocess.run(
        [*java, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", props, "--standalone"],
        check=True, capture_output=True, text=True,
    )
    broker_log = os.path.join(work, "broker.log")
    with open(broker_log, "w") as out:  # the broker writes to its own copy of the descriptor
        proc = subprocess.Popen([*java, "kafka.Kafka", props], stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    wait_port(port, 90)
    log(f"broker pid {proc.pid} on 127.0.0.1:{port} (cluster {cluster_id}), log {broker_log}")
    return proc, f"127.0.0.1:{port}"


def stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


# ---------------------------------------------------------------- data


def make_records(n: int, keys: int, ids: int) -> list[tuple[str, str]]:
    """(key, id) pairs: key k<i % keys>, id r<i % ids> (so ids repeat: dedup has work)."""
    return [(f"k{i % keys}", f"r{i % ids}") for i in range(n)]


def produce(spark, bootstrap: str, topic: str, records: list[tuple[str, str]]) -> None:
    df = spark.createDataFrame(records, "key string, id string")
    (df.selectExpr("key", "id AS value")
       .write.format("kafka")
       .option("kafka.bootstrap.servers", bootstrap)
       .option("topic", topic)
       .save())


def read_topic(spark, bootstrap: str, topic: str) -> list[tuple[str, str, int, int]]:
    try:
        return _read_topic(spark, bootstrap, topic)
    except Exception as e:
        log(f"  reading {topic}: {type(e).__name__}: {str(e)[:200]}")
        return []


def _read_topic(spark, bootstrap: str, topic: str) -> list[tuple[str, str, int, int]]:
    rows = (spark.read.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
            .selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v", "partition",
                        "offset")
            .collect())
    return [(r.k, r.v, r.partition, r.offset) for r in rows]


def last_per_key(rows) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v, _, _ in sorted(rows, key=lambda r: (r[2], r[3])):
        out[k] = v
    return out


# ---------------------------------------------------------------- queries


def source(spark, bootstrap: str, topic: str):
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
            .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS id"))


def agg_df(spark, bootstrap, topic):
    return (source(spark, bootstrap, topic).groupBy("key").count()
            .selectExpr("key", "CAST(count AS STRING) AS value"))


def dedup_df(spark, bootstrap, topic):
    return (source(spark, bootstrap, topic).dropDuplicates(["id"])
            .selectExpr("id AS key", "key AS value"))


def start(df, bootstrap: str, out_topic: str, ckpt: str, trigger: dict):
    return (df.writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", out_topic)
            .option("checkpointLocation", ckpt)
            .outputMode("update")
            .trigger(**trigger)
            .start())


def state_files(ckpt: str) -> list[str]:
    root = os.path.join(ckpt, "state")
    out = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(out)


def provider_of(ckpt: str, progress: list[dict]) -> str:
    """Which provider wrote a checkpoint's state: by its files and the progress' metrics."""
    files = state_files(ckpt)
    metric_names = set()
    for p in progress:
        for op in p.get("stateOperators", []):
            metric_names.update((op.get("customMetrics") or {}).keys())
    rockstate_metrics = any(m.startswith("rockstate") for m in metric_names)
    rocksdb_metrics = any(m.startswith("rocksdb") for m in metric_names)
    spark_files = any(f.endswith(".zip") or f.endswith(".changelog") for f in files)
    rockstate_files = any("/sst/" in f or f.startswith("sst/") or "/versions/" in f
                          or f.endswith(".version") for f in files)
    # The offset log records the provider each batch ran with.
    offset_conf = set()
    for f in glob.glob(os.path.join(ckpt, "offsets", "[0-9]*")):
        with open(f) as fh:
            for line in fh:
                if PROVIDER_KEY in line:
                    offset_conf.add(json.loads(line)["conf"][PROVIDER_KEY])
    log(f"  state files ({len(files)}): {files[:6]}{' ...' if len(files) > 6 else ''}")
    log(f"  metric names with rockstate*: {rockstate_metrics}, rocksdb*: {rocksdb_metrics}; "
        f"offset log provider: {sorted(offset_conf)}")
    if (rockstate_metrics or rockstate_files) and not spark_files:
        return "rockstate"
    if (rocksdb_metrics or spark_files) and not rockstate_files:
        return "spark-rocksdb"
    return "unknown"


def run_rtm(spark, name, df, bootstrap, out_topic, ckpt, seconds, check, trigger_s):
    """Starts an RTM query, waits until `check()` is true or `seconds` pass, stops it."""
    q = start(df, bootstrap, out_topic, ckpt, {"realTime": trigger_s})
    log(f"{name}: RTM query started (trigger realTime={trigger_s!r})")
    deadline = time.time() + seconds
    ok = False
    while time.time() < deadline:
        if q.exception() is not None:
            break
        time.sleep(3)
        # Right output, and at least two RTM batches committed (so the state is on disk).
        if check():
            ok = True
            if len(q.recentProgress) >= 2:
                break
    time.sleep(1)
    progress = [json.loads(p.json) for p in q.recentProgress]
    exc = q.exception()
    q.stop()
    if exc is not None:
        log(f"{name}: query failed: {str(exc)[:2000]}")
    return ok, progress


def expected(records):
    counts = Counter(k for k, _ in records)
    first_of_id: dict[str, str] = {}
    for k, i in records:
        first_of_id.setdefault(i, k)
    return {k: str(c) for k, c in counts.items()}, first_of_id


def both_queries(spark, label, bootstrap, in_topic, records, work, seconds, trigger_s,
                 ckpt_prefix=None, seed_rows=None) -> dict:
    """Runs agg and dedup in RTM; seed_rows[name]: output an earlier run of the same
    checkpoint wrote (a resumed query's output is checked together with it)."""
    exp_counts, exp_first = expected(records)
    result = {}
    for name, build, want in (
        ("agg", agg_df, lambda rows: last_per_key(rows) == exp_counts),
        # every id exactly once, with the key of its first record
        ("dedup", dedup_df,
         lambda rows: sorted((k, v) for k, v, _, _ in rows) == sorted(exp_first.items())),
    ):
        out_topic = f"{label}-{name}-out-{uuid.uuid4().hex[:6]}"
        ckpt = os.path.join(work, f"{ckpt_prefix or label}-{name}")
        seed = (seed_rows or {}).get(name, [])

        def check(out_topic=out_topic, want=want, seed=seed):
            # seed rows sort first: their partition numbers are shifted below any real one
            return want(seed + read_topic(spark, bootstrap, out_topic))

        ok, progress = run_rtm(spark, f"{label}/{name}", build(spark, bootstrap, in_topic),
                               bootstrap, out_topic, ckpt, seconds, check, trigger_s)
        rows = read_topic(spark, bootstrap, out_topic)
        prov = provider_of(ckpt, progress)
        log(f"{label}/{name}: output right: {ok} ({len(rows)} output records), "
            f"provider: {prov}")
        result[name] = {"ok": ok, "provider": prov, "out_records": len(rows)}
    return result


# ---------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jars", default="/tmp/rt/jars")
    ap.add_argument("--work", default=None, help="default: a fresh folder under /tmp/rt/work")
    ap.add_argument("--records", type=int, default=300)
    ap.add_argument("--keys", type=int, default=25)
    ap.add_argument("--ids", type=int, default=200)
    ap.add_argument("--partitions", type=int, default=2, help="input topic partitions")
    ap.add_argument("--trigger", default="5 seconds")
    ap.add_argument("--seconds", type=int, default=60, help="per RTM query, at most")
    ap.add_argument("--skip-control", action="store_true")
    ap.add_argument("--resume-route", action="store_true")
    args = ap.parse_args()

    work = args.work or os.path.join("/tmp/rt/work", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(work, exist_ok=True)
    conn_jars, broker_cp = ensure_jars(args.jars)

    broker = None
    spark = None
    verdict = {}
    try:
        broker, bootstrap = start_broker(broker_cp, work, args.partitions)

        from pyspark.sql import SparkSession

        import rockstate

        # RTM runs every source task and every shuffle partition's task at once: slots for
        # partitions + shuffle partitions.
        builder = (SparkSession.builder.master("local[6]").appName("try_realtime")
                   .config("spark.jars", ",".join(conn_jars))
                   .config("spark.sql.shuffle.partitions", "2")
                   .config("spark.ui.enabled", "false")
                   .config("spark.driver.memory", "2g"))
        spark = rockstate.configure(builder).getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
        log(f"pyspark {spark.version}, {PROVIDER_KEY}={spark.conf.get(PROVIDER_KEY)}")

        records = make_records(args.records, args.keys, args.ids)
        in_topic = f"rt-in-{uuid.uuid4().hex[:6]}"
        produce(spark, bootstrap, in_topic, records)
        log(f"produced {len(read_topic(spark, bootstrap, in_topic))} records to {in_topic}")

        # 1. RTM on rockstate, as rockstate.configure() leaves the session.
        log("step 1: RTM queries on the rockstate session")
        refused = {}
        for name, build in (("agg", agg_df), ("dedup", dedup_df)):
            ckpt = os.path.join(work, f"rockstate-{name}")
            try:
                q = start(build(spark, bootstrap, in_topic), bootstrap, f"unused-{name}", ckpt,
                          {"realTime": args.trigger})
            except Exception as e:
                msg = str(e)
                log(f"rockstate/{name}: start() refused: {type(e).__name__}: {msg[:1500]}")
                refused[name] = msg
            else:
                time.sleep(15)
                log(f"rockstate/{name}: started! exception={q.exception()}")
                q.stop()
        verdict["rockstate_refused"] = all(
            "SQL_CONFIGURATION_NOT_SUPPORTED" in refused.get(n, "") or
            "CONFIGURATION_NOT_SUPPORTED" in refused.get(n, "")
            for n in ("agg", "dedup"))

        # 2. Control: the provider key unset, so Spark picks its own RocksDB provider for RTM.
        if not args.skip_control:
            log("step 2 (control): the same RTM queries with the provider key unset")
            spark.conf.unset(PROVIDER_KEY)
            res = both_queries(spark, "control", bootstrap, in_topic, records, work,
                               args.seconds, args.trigger)
            verdict["control"] = res
            spark.conf.set(PROVIDER_KEY, ROCKSTATE_PROVIDER)

        # 3. The resume route: a checkpoint made by a ProcessingTime run on rockstate (format
        #    version 2), resumed in RTM with the provider key unset.
        if args.resume_route:
            log("step 3 (resume route): availableNow run on rockstate, then RTM resume")
            half = len(records) // 2
            in2 = f"rt-in2-{uuid.uuid4().hex[:6]}"
            produce(spark, bootstrap, in2, records[:half])
            spark.conf.set("spark.sql.streaming.stateStore.checkpointFormatVersion", "2")
            seed_rows = {}
            for name, build in (("agg", agg_df), ("dedup", dedup_df)):
                ckpt = os.path.join(work, f"resume-{name}")
                seed_topic = f"resume-seed-{name}-{uuid.uuid4().hex[:6]}"
                q = start(build(spark, bootstrap, in2), bootstrap, seed_topic, ckpt,
                          {"availableNow": True})
                q.awaitTermination(120)
                seed_rows[name] = [(k, v, p - 1_000_000, o)
                                   for k, v, p, o in read_topic(spark, bootstrap, seed_topic)]
                log(f"resume/{name}: seed run done ({len(seed_rows[name])} output records), "
                    f"provider {provider_of(ckpt, [])}")
            produce(spark, bootstrap, in2, records[half:])
            spark.conf.unset(PROVIDER_KEY)
            res = both_queries(spark, "resume", bootstrap, in2, records, work, args.seconds,
                               args.trigger, ckpt_prefix="resume", seed_rows=seed_rows)
            verdict["resume"] = res
            spark.conf.set(PROVIDER_KEY, ROCKSTATE_PROVIDER)
    finally:
        if spark is not None:
            for q in spark.streams.active:
                q.stop()
            spark.stop()
        stop(broker)
        log("broker and Spark stopped")

    log("verdict: " + json.dumps(verdict))
    good = verdict.get("rockstate_refused", False)
    if "control" in verdict:
        good = good and all(v["ok"] and v["provider"] == "spark-rocksdb"
                            for v in verdict["control"].values())
    if "resume" in verdict:
        good = good and all(v["ok"] and v["provider"] == "rockstate"
                            for v in verdict["resume"].values())
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
