"""``rockstate.configure`` in a Python process that already made another session.

Each case runs in its own Python process: a JVM, once started, keeps its class path for the
life of the process, which is exactly what these tests are about.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

PRELUDE = """
import json, sys, threading, time
from pyspark.sql import SparkSession, functions as F
import rockstate

def builder():
    return (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2"))

def run_query(spark, ckpt, batches=4):
    # A streaming aggregation over a memory stream; returns its final result.
    from pyspark.sql.streaming.readwriter import DataStreamReader  # noqa: F401
    src = ckpt + "-src"
    import os
    os.makedirs(src, exist_ok=True)
    q = (spark.readStream.schema("k INT").option("maxFilesPerTrigger", 1).json(src)
         .groupBy("k").count().writeStream.outputMode("complete").format("memory")
         .queryName("out_" + str(abs(hash(ckpt)))).option("checkpointLocation", ckpt).start())
    for b in range(batches):
        with open(f"{src}/.b{b}", "w") as f:
            f.write("".join(json.dumps({"k": (b + i) % 3}) + "\\n" for i in range(5)))
        os.rename(f"{src}/.b{b}", f"{src}/b{b}.json")
        q.processAllAvailable()
    rows = sorted(tuple(r) for r in spark.sql("select * from out_" + str(abs(hash(ckpt))))
                  .collect())
    return q, rows
"""


def _run(script: str, tmp_path: Path) -> dict:
    path = tmp_path / "case.py"
    path.write_text(PRELUDE + textwrap.dedent(script))
    out = subprocess.run([sys.executable, str(path), str(tmp_path)], capture_output=True,
                         text=True, timeout=600)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert out.returncode == 0 and lines, (out.stdout[-3000:], out.stderr[-6000:])
    return json.loads(lines[-1][len("RESULT "):])


def test_rockstate_first_then_a_plain_session(spark_home: Path, tmp_path: Path):
    result = _run("""
        work = sys.argv[1]
        spark = rockstate.configure(builder(), snapshotInterval=2).getOrCreate()
        q, mine = run_query(spark, work + "/rs")
        q.stop()
        spark.stop()
        # Spark hands a first session's settings to the JVM it launches as system
        # properties, the defaults of every later context: a session that must not use
        # rockstate names its provider.
        plain = builder().config("spark.sql.streaming.stateStore.providerClass",
                                 "org.apache.spark.sql.execution.streaming.state."
                                 "HDFSBackedStateStoreProvider").getOrCreate()
        q, theirs = run_query(plain, work + "/plain")
        q.stop()
        print("RESULT " + json.dumps({
            "mine": mine, "theirs": theirs,
            "rs_provider": rockstate.provider_class(work + "/rs"),
            "plain_provider": rockstate.provider_class(work + "/plain")}))
    """, tmp_path)
    assert result["rs_provider"] == "io.rockstate.state.RockstateStateStoreProvider"
    assert result["plain_provider"].endswith("HDFSBackedStateStoreProvider")
    assert result["mine"] == result["theirs"] and result["mine"]


def test_a_plain_session_first_then_rockstate(spark_home: Path, tmp_path: Path):
    result = _run("""
        work = sys.argv[1]
        plain = builder().getOrCreate()
        q, theirs = run_query(plain, work + "/plain")
        q.stop()
        plain.stop()
        spark = rockstate.configure(builder(), snapshotInterval=2).getOrCreate()
        seen = []
        # The watcher polls from its own thread (another Java thread behind py4j).
        watcher = rockstate.on_checkpoint_complete(spark, seen.append, poll_seconds=0.2)
        q, mine = run_query(spark, work + "/rs")
        deadline = time.time() + 60
        while time.time() < deadline and not any(c.version == 4 for c in seen):
            time.sleep(0.2)
        view = rockstate.checkpoints(q)
        watcher.stop()
        q.stop()
        print("RESULT " + json.dumps({
            "mine": mine, "theirs": theirs, "seen": [c.version for c in seen],
            "live": [c.version for c in view.completed],
            "rs_provider": rockstate.provider_class(work + "/rs")}))
    """, tmp_path)
    assert result["rs_provider"] == "io.rockstate.state.RockstateStateStoreProvider"
    assert result["mine"] == result["theirs"] and result["mine"]
    assert 4 in result["seen"] and 4 in result["live"], result


def test_a_running_plain_session_is_named_at_configure(spark_home: Path, tmp_path: Path):
    result = _run("""
        plain = builder().getOrCreate()
        try:
            rockstate.configure(builder())
            print("RESULT " + json.dumps({"error": None}))
        except rockstate.RockstateSetupError as e:
            print("RESULT " + json.dumps({"error": str(e)}))
    """, tmp_path)
    assert result["error"] is not None
    assert "already running" in result["error"] and "spark.stop()" in result["error"]
