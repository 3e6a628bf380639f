"""A real streaming aggregation on rockstate, on an embedded local Spark.

``python -m rockstate.demo`` feeds three micro-batches of events through a grouped count,
prints each batch's result and how rockstate checkpointed its state, then stops the query,
restarts it from its checkpoint and shows the state carried over.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

BATCHES = [
    ["click", "view", "click", "buy"],
    ["view", "view", "click"],
    ["buy", "click", "refund"],
]


def _session(app: str):
    from pyspark.sql import SparkSession

    import rockstate

    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    # A snapshot every 2 versions (default 10), so three batches show the whole pipeline.
    return rockstate.configure(builder, snapshotInterval=2).getOrCreate()


def _progress_line(progress: dict) -> str:
    op = progress["stateOperators"][0]
    m = op.get("customMetrics", {})
    line = (
        f"batch {progress['batchId']}: {op['numRowsTotal']} keys in state; loaded with "
        f"{m.get('rockstateBytesDownloaded', 0)} bytes downloaded; commit wrote "
        f"{m.get('rockstateChangelogRecords', 0)} changes in "
        f"{m.get('rockstateCommitBytes', 0)} bytes"
    )
    if m.get("rockstateSnapshotsCompleted"):
        line += (
            f"; {m['rockstateSnapshotsCompleted']} background snapshot(s) uploaded "
            f"{m.get('rockstateBytesUploaded', 0)} new bytes, reused "
            f"{m.get('rockstateBytesReused', 0)}"
        )
    return line


def run(workdir: Path) -> int:
    from pyspark.sql import functions as F

    import rockstate

    spark = _session("rockstate-demo")
    spark.sparkContext.setLogLevel("ERROR")
    source, checkpoint = workdir / "events", workdir / "checkpoint"
    source.mkdir(parents=True, exist_ok=True)

    def start():
        events = spark.readStream.schema("event STRING").json(str(source))
        counts = events.groupBy("event").agg(F.count("*").alias("n"))
        return (
            counts.writeStream.outputMode("complete")
            .format("memory")
            .queryName("demo_counts")
            .option("checkpointLocation", str(checkpoint))
            .start()
        )

    def feed(i: int, names: list[str]) -> None:
        (source / f"batch-{i}.json").write_text("".join(f'{{"event":"{n}"}}\n' for n in names))

    query = start()
    for i, names in enumerate(BATCHES[:2]):
        feed(i, names)
        query.processAllAvailable()
        print(_progress_line(query.lastProgress))
    query.stop()
    print(f"stopped; the checkpoint is bound to {rockstate.provider_class(checkpoint)}")

    query = start()  # restart: the state comes back from the checkpoint location
    feed(2, BATCHES[2])
    query.processAllAvailable()
    print(_progress_line(query.lastProgress))
    rows = spark.sql("SELECT event, n FROM demo_counts ORDER BY event").collect()
    print("counts after restart:", ", ".join(f"{r.event}={r.n}" for r in rows))
    query.stop()
    spark.stop()
    expected = {"buy": 2, "click": 4, "refund": 1, "view": 3}
    if {r.event: r.n for r in rows} != expected:
        print(f"unexpected counts; expected {expected}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rockstate.demo", description=__doc__)
    parser.add_argument("--workdir", type=Path, help="keep the data and checkpoint here")
    args = parser.parse_args(argv)
    if args.workdir:
        return run(args.workdir)
    tmp = Path(tempfile.mkdtemp(prefix="rockstate-demo-"))
    try:
        return run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
