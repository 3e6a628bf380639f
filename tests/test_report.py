"""The checkpoint history report and ``rockstate inspect``'s printed output, on a real
checkpoint: an aggregation after a dropDuplicates (two operators), whose run failed once after
its stores acknowledged checkpoint 4, so that checkpoint was aborted when the query restarted;
checkpoints 2, 4 (of the new run), 6, 8 and 10 completed. The report is opened in headless
Chromium with the network refused, and must draw every chart without a console error.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import rockstate
from rockstate.session.providers import SPARK_ROCKSDB_CLASS
from rockstate.tools.report import chart_names
from rockstate.tools.report_data import collect
from support.browser import distinct_colours, render
from support.cli import run_cli
from support.polling import wait_for
from support.streams import run_stream

SCHEMA = "key STRING, value INT"
BATCHES = 10
# The location as the page shows it, and any element a name's markup would have made.
PROBE_NAMES = """() => ({text: document.querySelector('.sub').textContent, title: document.title,
                         injected: document.querySelectorAll('.sub b, img').length})"""


def _rows(b: int) -> list[dict]:
    return [{"key": f"k{(b * 7 + i) % 11}", "value": (b + i) % 5} for i in range(30)]


def _query(stream):
    return (stream.dropDuplicates(["key", "value"]).groupBy("key")
            .agg(F.count("*").alias("n"), F.sum("value").alias("total")))


@pytest.fixture(scope="module")
def history(sessions, tmp_path_factory) -> Path:
    spark = sessions.get("local")
    work = tmp_path_factory.mktemp("report")
    src, checkpoint, failed = work / "src", work / "checkpoint", work / "failed-once"
    src.mkdir()
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", rockstate.PROVIDER_CLASS)

    def sink(df, batch_id: int) -> None:
        df.collect()  # the stores commit version batch_id + 1
        if batch_id == 3 and not failed.exists():
            failed.touch()
            time.sleep(3)  # checkpoint 4's acknowledgements arrive meanwhile
            raise RuntimeError("the sink failed once")

    def start():
        return (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
                .json(str(src)).transform(_query).writeStream.outputMode("update")
                .foreachBatch(sink).option("checkpointLocation", str(checkpoint)).start())

    query = start()
    try:
        for b in range(BATCHES):
            (src / f".b{b}").write_text("".join(json.dumps(r) + "\n" for r in _rows(b)))
            (src / f".b{b}").rename(src / f"b{b}.json")
            try:
                query.processAllAvailable()
            except Exception as e:
                assert "the sink failed once" in str(e), e
                query.stop()
                query = start()  # the new run aborts the old run's pending checkpoint 4
                query.processAllAvailable()
        wait_for(lambda: (checkpoint / "rockstate/checkpoints/10/_metadata").exists(),
                 "checkpoint 10 to complete", seconds=90)
    finally:
        query.stop()
    return checkpoint


@pytest.fixture(scope="module")
def spark_history(sessions, tmp_path_factory) -> Path:
    spark = sessions.get("local")
    work = tmp_path_factory.mktemp("report-spark")
    run = run_stream(spark, SPARK_ROCKSDB_CLASS, _query, [_rows(b) for b in range(6)], workdir=work,
                     name="spark", schema=SCHEMA,
                     confs={"spark.sql.streaming.stateStore.rocksdb."
                            "changelogCheckpointing.enabled": "true",
                            "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2"})
    return run.checkpoint


def test_report_data_has_completed_and_aborted_checkpoints(spark, history: Path):
    data = collect(rockstate.CheckpointLocation(str(history)))
    assert data.kind == "rockstate"
    completed = [c.version for c in data.checkpoints.completed]
    assert completed == [6, 8, 10], completed  # checkpointsRetained = 3
    aborted = {c.version: c for c in data.checkpoints.aborted}
    assert 4 in aborted and "restarted" in aborted[4].reason, aborted
    assert aborted[4].expected == 4 and aborted[4].acknowledged == 4  # 2 operators x 2
    stores = {(c.operator, c.partition) for c in data.commits}
    assert stores == {(op, p) for op in (0, 1) for p in (0, 1)}
    assert all(c.commit_ms is not None for c in data.commits)
    assert {s.num_keys for s in data.store_sizes} != {0}
    assert rockstate.checkpoints(str(history)).aborted[-1].version == 4


def test_report_draws_every_chart_with_no_network(spark, history: Path, tmp_path: Path):
    page = rockstate.report(str(history), tmp_path / "report.html")
    html = page.read_text()
    assert "cdn" not in html.lower().split("<script>", 1)[0]  # nothing fetched in the head
    expected = chart_names(collect(rockstate.CheckpointLocation(str(history))))
    assert expected == ["Checkpoint duration", "Checkpoint size", "Uploaded vs reused bytes",
                        "Acknowledgement spread", "Commit time per batch",
                        "Bytes committed per batch", "State per partition"]
    shown = render(page, tmp_path / "report.png")
    assert shown.console_errors == [] and shown.network == [], (shown.console_errors,
                                                               shown.network)
    assert len(shown.charts) == len(expected), shown.charts
    for chart, name in zip(shown.charts, expected, strict=True):
        assert chart["title"].startswith(name.split(" of ")[0]), (chart, name)
        assert chart["svgs"] > 0 and chart["marks"] > 0 and chart["width"] > 100, chart
    assert shown.table_rows.count("aborted") == 1 and shown.table_rows.count("completed") == 3
    assert distinct_colours(shown.screenshot) > 20, "the screenshot looks blank"
    target = os.environ.get("ROCKSTATE_REPORT_SCREENSHOT")
    if target:  # how docs/report.png is made
        shutil.copy(shown.screenshot, target)


def test_report_shows_a_location_carrying_markup_as_text(spark, history: Path, tmp_path: Path):
    named = tmp_path / "<b>orders</b><img src=x onerror=alert(1)>"
    shutil.copytree(history, named)
    page = rockstate.report(str(named), tmp_path / "named.html")
    shown = render(page, tmp_path / "named.png", probe=PROBE_NAMES)
    assert shown.console_errors == [] and shown.network == [], (shown.console_errors,
                                                               shown.network)
    assert str(named) in shown.probed["text"] and str(named) in shown.probed["title"]
    assert shown.probed["injected"] == 0, shown.probed


def test_report_of_a_spark_rocksdb_checkpoint(spark, spark_history: Path, tmp_path: Path):
    data = collect(rockstate.CheckpointLocation(str(spark_history)))
    assert data.kind == "spark-rocksdb"
    snapshots = [v for v in data.spark_versions if v.snapshot_bytes]
    assert snapshots, data.spark_versions
    # Whether a later snapshot shares SSTs depends on when Spark's maintenance took it; a
    # store's first snapshot can share nothing, and every snapshot names some SST bytes.
    firsts = {}
    for v in snapshots:
        firsts.setdefault((v.operator, v.partition, v.store), v)
    assert all(v.sst_reused_bytes == 0 and v.sst_uploaded_bytes > 0 for v in firsts.values())
    assert all(v.sst_uploaded_bytes + v.sst_reused_bytes > 0 and v.num_keys for v in snapshots)
    assert {(v.operator, v.partition) for v in data.spark_versions} == {
        (op, p) for op in (0, 1) for p in (0, 1)}
    assert chart_names(data) == ["Bytes written per version", "SST reuse per snapshot",
                                 "State per partition"]
    page = rockstate.report(str(spark_history), tmp_path / "spark.html")
    shown = render(page, tmp_path / "spark.png")
    assert shown.console_errors == [] and shown.network == []
    assert [c["marks"] > 0 for c in shown.charts] == [True, True, True], shown.charts


def test_cli_report_and_inspect_print_what_they_should(spark, history: Path, tmp_path: Path):
    out = run_cli("report", str(history), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / "r.html")
    assert (tmp_path / "r.html").stat().st_size > 1_000_000  # plotly.js is inlined
    inspect = run_cli("inspect", str(history))
    assert inspect.returncode == 0, inspect.stderr
    summary = json.loads(run_cli("inspect", str(history), "--json").stdout)
    lines = inspect.stdout.splitlines()
    # Spark numbers operators from the sink down: the aggregation is 0, the dedupe 1.
    assert lines[0] == f"{history}: operators 0 (stateStoreSave), 1 (dedupe)"
    assert summary["operatorKinds"] == {"0": "stateStoreSave", "1": "dedupe"}
    assert lines[1].split() == ["op", "part", "store", "versions", "snapshots", "keys",
                                "column", "families"]
    for store, line in zip(summary["stores"], lines[2:], strict=False):
        snaps, versions = store["snapshots"], store["versions"]
        # The spans are numeric: a text sort would print 10..8.
        assert snaps[0] < 10 <= snaps[-1], snaps
        assert line.split()[:6] == [str(store["operator"]), str(store["partition"]), "default",
                                    f"{versions[0]}..{versions[-1]}", f"({len(versions)})",
                                    f"{snaps[0]}..{snaps[-1]}"], line
    tail = lines[2 + len(summary["stores"]):]
    assert tail[0].split()[:3] == ["completed", "checkpoints:", "version"]
    assert [row.split()[0] for row in tail[1:]] == ["6", "8", "10"]


def test_progress_bar_on_a_terminal(spark, history: Path, tmp_path: Path):
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    # A terminal 100 columns wide (a fresh pseudo-terminal has no size).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    try:
        out = run_cli("verify", str(history), stderr=follower)
    finally:
        os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    bar = b"".join(chunks).decode(errors="replace")
    assert out.returncode == 0 and "OK" in out.stdout, out.stdout
    assert "checking" in bar and "100%" in bar and "4/4" in bar, bar[-500:]


class _FakeHandle:
    """What IPython's ``display(obj, display_id=True)`` returns, recording each update."""

    def __init__(self, obj) -> None:
        self.shown = [obj._repr_html_()]

    def update(self, obj) -> None:
        self.shown.append(obj._repr_html_())


def test_notebook_view_refreshes_from_the_driver_and_live_report(spark, tmp_path: Path):
    src, checkpoint = tmp_path / "src", tmp_path / "checkpoint"
    src.mkdir()
    handles: list[_FakeHandle] = []

    def display(obj, display_id=False):
        assert display_id is True
        handles.append(_FakeHandle(obj))
        return handles[-1]

    def feed(b: int) -> None:
        (src / f".b{b}").write_text("".join(json.dumps(r) + "\n" for r in _rows(b)))
        (src / f".b{b}").rename(src / f"b{b}.json")

    query = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(src))
             .transform(_query).writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", str(checkpoint)).start())
    try:
        feed(0)
        query.processAllAvailable()
        live = rockstate.show_checkpoints(query, refresh_seconds=0.2, display=display)
        assert "no checkpoint yet" in handles[0].shown[0]
        for b in range(1, 4):
            feed(b)
            query.processAllAvailable()
        wait_for(lambda: any("<td>4</td><td>completed</td>" in h for h in handles[0].shown),
                 "the notebook view to show checkpoint 4", seconds=90, every=0.25)
        html = rockstate.checkpoints(query)._repr_html_()
        assert "<svg class='rockstate-durations'" in html and "<td>2</td>" in html
        page = rockstate.report(query, tmp_path / "live.html")
        assert "<td>4</td><td>3</td>" in page.read_text()
    finally:
        query.stop()
    time.sleep(0.5)
    live.stop()
    assert live.updates >= 2


def test_report_reads_any_fsspec_location(spark, history: Path):
    import fsspec

    memory = fsspec.filesystem("memory")
    memory.put(str(history), "/report-copy", recursive=True)
    copied = collect(rockstate.CheckpointLocation("memory://report-copy"))
    local = collect(rockstate.CheckpointLocation(str(history)))
    assert copied.provider == local.provider == rockstate.PROVIDER_CLASS
    assert copied.checkpoints.completed == local.checkpoints.completed
    assert copied.checkpoints.aborted == local.checkpoints.aborted
    assert copied.commits == local.commits and copied.store_sizes == local.store_sizes


def test_a_damaged_abort_record_is_named_never_skipped(spark, history: Path, tmp_path: Path):
    copy = tmp_path / "checkpoint"
    shutil.copytree(history, copy)
    record = copy / "rockstate" / "checkpoints" / "aborted" / "4.json"
    record.write_text(record.read_text()[:40])  # cut short
    with pytest.raises(rockstate.CorruptCheckpointError, match=r"aborted/4\.json"):
        rockstate.checkpoints(str(copy))
    out = run_cli("report", str(copy), "-o", str(tmp_path / "r.html"))
    assert out.returncode == 2 and "aborted/4.json" in out.stderr, out.stderr
