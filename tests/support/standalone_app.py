"""A PySpark application submitted with ``spark-submit`` by the cluster tests.

``stateful_app.py SPEC``: SPEC is a JSON file naming ``root`` (the run's folder), ``checkpoint``
(a path or URL), ``batches``, ``pause_before`` (a batch number or -1) and ``settings`` (rockstate
settings). The app makes its own input, one JSON file a batch, and runs an aggregation on
rockstate over it, batch by batch, writing each batch's whole result to ``out/<batch>.json``.
Before batch ``pause_before`` it writes ``paused`` and waits for ``resume`` (the test kills a
worker meanwhile). At the end it writes ``result.json``: the application id and every progress.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import rockstate

KEYS = 50


def rows(batch: int) -> list[dict]:
    return [{"key": f"k{(batch * 13 + i) % KEYS}", "value": (batch + i) % 7} for i in range(200)]


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    root = Path(spec["root"])
    source, out = root / "input", root / "out"
    source.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    builder = (SparkSession.builder.appName("rockstate-standalone")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.ui.showConsoleProgress", "false"))
    for k, v in spec.get("confs", {}).items():
        builder = builder.config(k, v)
    spark = rockstate.configure(builder, **spec.get("settings", {})).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")

    def sink(df, batch_id: int) -> None:
        result = sorted([r["key"], r["n"], r["total"]] for r in df.collect())
        tmp = out / f".{batch_id}.json"
        tmp.write_text(json.dumps(result))
        tmp.rename(out / f"{batch_id}.json")

    query = (spark.readStream.schema("key STRING, value INT").option("maxFilesPerTrigger", 1)
             .json(str(source)).groupBy("key")
             .agg(F.count("*").alias("n"), F.sum("value").alias("total"))
             .writeStream.outputMode("complete").foreachBatch(sink)
             .option("checkpointLocation", spec["checkpoint"]).start())
    try:
        for b in range(spec["batches"]):
            if b == spec.get("pause_before", -1):
                (root / "paused").touch()
                while not (root / "resume").exists():
                    time.sleep(0.2)
            tmp = source / f".b{b}"
            tmp.write_text("".join(json.dumps(r) + "\n" for r in rows(b)))
            tmp.rename(source / f"b{b:04d}.json")
            query.processAllAvailable()
        progress = [json.loads(p.json) for p in query.recentProgress]
    finally:
        query.stop()
    (root / "result.json").write_text(json.dumps(
        {"app_id": spark.sparkContext.applicationId, "progress": progress}))
    spark.stop()


def expected(batches: int) -> dict[int, list]:
    """Each batch's whole result, computed here: the oracle."""
    totals: dict[str, list[int]] = {}
    result = {}
    for b in range(batches):
        for r in rows(b):
            t = totals.setdefault(r["key"], [0, 0])
            t[0] += 1
            t[1] += r["value"]
        result[b] = sorted([k, n, s] for k, (n, s) in totals.items())
    return result


if __name__ == "__main__":
    main(sys.argv[1])
