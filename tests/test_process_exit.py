"""A Python process that ran a query on rockstate and stopped its session ends, JVM and all.

Spark's ``SparkContext.stop()`` deletes the driver's ``userFiles`` directory, where a local-mode
store keeps its RocksDB files, while Spark still holds the store open. A compaction then fails
on a vanished file and RocksDB reports it through rockstate's JNI logger, again every second.
Once the JVM exits, its VM thread waits for RocksDB's threads while one of them waits to
attach to the exiting VM to log: the JVM never ends (seen with gdb in
``bench/cold_load_bench.py``, which then waited forever on its child). The executor plugin's
shutdown stops every store's background work before Spark deletes anything.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from support.polling import wait_for

# One partition of `keys` keys: `build` writes it in five batches; `restart` is a new
# application that loads it cold for a one-row batch and stops at once, while the compaction
# the loaded SSTs call for is still running.
CHILD = """
import os, sys, time
from pathlib import Path
import pyarrow as pa, pyarrow.parquet as pq
from pyspark.sql import SparkSession, functions as F
import rockstate

work, mode, keys = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
src = work / "src"
src.mkdir(exist_ok=True)
spark = rockstate.configure(
    SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "1")
    .config("spark.sql.streaming.stateStore.maintenanceInterval", "1s"),
    snapshotInterval=2).getOrCreate()
(work / f"{mode}.pid").write_text(str(spark.sparkContext._jvm.ProcessHandle.current().pid()))
query = (spark.readStream.schema("key STRING, value INT").option("maxFilesPerTrigger", 1)
         .parquet(str(src)).groupBy("key").agg(F.count("*").alias("n"), F.sum("value"))
         .writeStream.outputMode("update").format("noop")
         .option("checkpointLocation", str(work / "checkpoint")).start())

def add(name, ids, value):
    pq.write_table(pa.table({"key": [f"key-{i:08d}" for i in ids],
                             "value": pa.array([value] * len(ids), pa.int32())}),
                   src / f".{name}")
    os.rename(src / f".{name}", src / f"{name}.parquet")
    query.processAllAvailable()

if mode == "build":
    add("b0", range(keys), 0)
    for b in range(1, 5):
        add(f"b{b}", [(b * keys // 7 + i) % keys for i in range(keys // 20)], b)
    time.sleep(8)  # the snapshots land
else:
    query.processAllAvailable()
    add("one-row", [1], 1)
query.stop()
spark.stop()
print("STOPPED", flush=True)
"""


def _jvm_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended: no longer in /proc, or a zombie (it has exited and
    lingers only until init reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _run_and_exit(tmp_path: Path, mode: str, keys: int) -> None:
    """Runs the child in `mode`; fails if it fails, or if its JVM outlives it."""
    log = tmp_path / f"{mode}.txt"
    with log.open("w") as out:
        # To a file, not a pipe: a JVM that never ends would hold a pipe, and this test, open.
        child = subprocess.Popen([sys.executable, str(tmp_path / "child.py"), str(tmp_path),
                                  mode, str(keys)], stdout=out, stderr=subprocess.STDOUT)
        child.wait(timeout=600)
    text = log.read_text()
    assert child.returncode == 0 and "STOPPED" in text, text[-6000:]
    pid = int((tmp_path / f"{mode}.pid").read_text())
    try:
        wait_for(lambda: _jvm_gone(pid), f"the JVM of the {mode} child to end after it did",
                 seconds=90)
    finally:
        if not _jvm_gone(pid):
            os.kill(pid, signal.SIGKILL)
            time.sleep(1)


def test_jvm_exits_after_a_session_stops_during_compaction(spark_home: Path, tmp_path: Path):
    (tmp_path / "child.py").write_text(textwrap.dedent(CHILD))
    _run_and_exit(tmp_path, "build", 1_000_000)
    _run_and_exit(tmp_path, "restart", 1_000_000)
