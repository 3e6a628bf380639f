"""The rockstate tab in Spark's web UI and in the History Server, opened in headless Chromium.

A query with two stateful operators runs on rockstate in a session with the UI and the event
log on; the tab must show the checkpoints and per-partition acknowledgements the driver's
coordinator holds (the same numbers), draw its charts, show the query's name (which carries
markup) as text, and raise no console error: while the query runs, after it stops, and in the
History Server started over the event log, for the running and for the finished application.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import rockstate
from rockstate.checkpoint.model import CheckpointRecord, QueryCheckpoints
from support.browser import TabView, read_tab
from support.history_server import history_server
from support.polling import wait_for

SCHEMA = "key STRING, value INT"
NAME = "<b>orders</b> & <img src=x onerror=alert(1)>"
BATCHES = 6  # versions 1..6; checkpoints 2, 4 and 6 (snapshotInterval 2)


@dataclass
class Live:
    spark: object
    query: object
    src: Path
    app_id: str
    ui: str  # the driver's UI root
    batches: int = 0
    views: dict[str, QueryCheckpoints] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return str(self.query.runId)

    def feed(self, n: int) -> None:
        for _ in range(n):
            b = self.batches
            rows = [{"key": f"k{(b * 7 + i) % 13}", "value": (b + i) % 5} for i in range(40)]
            tmp = self.src / f".b{b}"
            tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
            tmp.rename(self.src / f"b{b}.json")
            self.query.processAllAvailable()
            self.batches += 1


def _query(stream):
    return (stream.dropDuplicates(["key", "value"]).groupBy("key")
            .agg(F.count("*").alias("n"), F.sum("value").alias("total")))


@pytest.fixture(scope="module")
def live(sessions, tmp_path_factory):
    spark = sessions.get("ui")
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", rockstate.PROVIDER_CLASS)
    work = tmp_path_factory.mktemp("ui")
    src = work / "src"
    src.mkdir()
    query = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(src))
             .transform(_query).writeStream.outputMode("update").format("noop")
             .queryName(NAME).option("checkpointLocation", str(work / "checkpoint")).start())
    sc = spark.sparkContext
    state = Live(spark, query, src, sc.applicationId, sc.uiWebUrl)
    try:
        state.feed(BATCHES)
        wait_for(lambda: [c.version for c in rockstate.checkpoints(query).completed][-1:] == [6],
                 "checkpoint 6 to complete")
        yield state
    finally:
        if query.isActive:
            query.stop()


def _api(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def _run_summary(base: str, run_id: str) -> dict | None:
    """The tab's summary of a run; None while the tab does not answer with it."""
    try:
        runs = _api(f"{base}/rockstate/api/runs")
    except (OSError, ValueError):  # no tab (yet): an HTTP error or Spark's HTML page
        return None
    return next((r for r in runs if r["runId"] == run_id), None)


def _acks_of(record: CheckpointRecord) -> list[dict]:
    return sorted(({"operator": s.operator, "partition": s.partition, "executor": s.executor_id,
                    "state": s.state_bytes, "uploaded": s.bytes_uploaded,
                    "reused": s.bytes_reused, "keys": s.num_keys} for s in record.stores),
                  key=lambda a: (a["operator"], a["partition"]))


def _shows_the_coordinators(tab: TabView, view: QueryCheckpoints) -> None:
    """Every checkpoint the coordinator completed is on the page with its own numbers, and the
    newest one's acknowledgements are the ones shown."""
    rows = {r["version"]: r for r in tab.checkpoints}
    assert view.completed
    for c in view.completed:
        row = rows.get(c.version)
        assert row is not None, (c.version, sorted(rows))
        assert row["status"] == "completed", row
        assert row["acknowledged"] == len(c.stores) == view.expected_stores, row
        assert row["state"] == sum(s.state_bytes for s in c.stores), row
        assert row["uploaded"] == sum(s.bytes_uploaded for s in c.stores), row
    assert tab.chosen == view.completed[-1].version
    assert sorted(tab.acks, key=lambda a: (a["operator"], a["partition"])) == \
        _acks_of(view.completed[-1])
    # Two operators, two partitions: four stores, each acknowledged by the local executor.
    assert {(a["operator"], a["partition"]) for a in tab.acks} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert set(tab.bars) == {"Checkpoint duration", "Checkpoint size: uploaded and reused"}
    assert all(n > 0 for n in tab.bars.values()), tab.bars
    assert tab.names == [{"text": NAME, "html": tab.names[0]["html"], "children": 0}], tab.names
    assert "<b>" not in tab.names[0]["html"] and "&lt;b&gt;" in tab.names[0]["html"]
    assert tab.console_errors == [] and tab.foreign == [], (tab.console_errors, tab.foreign)


def _keep(tab: TabView, name: str) -> None:
    target = os.environ.get("ROCKSTATE_UI_SCREENSHOTS")
    if target:  # how docs/ui-*.png are made
        shutil.copy(tab.screenshot, Path(target) / name)


def test_the_tab_shows_the_coordinators_checkpoints_while_the_query_runs(live, tmp_path):
    view = rockstate.checkpoints(live.query)
    latest = view.completed[-1].version
    wait_for(lambda: (_run_summary(live.ui, live.run_id) or {}).get("latestCompleted") == latest,
             "the tab to hear of the latest completed checkpoint")
    tab = read_tab(f"{live.ui}/rockstate/", live.run_id, tmp_path / "tab.png")
    _shows_the_coordinators(tab, view)
    assert tab.statuses == ["running"]
    _keep(tab, "ui-tab.png")

    # A chosen checkpoint's acknowledgements, from its link's URL.
    older = view.completed[0]
    chosen = read_tab(f"{live.ui}/rockstate/?run={live.run_id}&version={older.version}",
                      live.run_id, tmp_path / "chosen.png")
    assert chosen.chosen == older.version
    assert sorted(chosen.acks, key=lambda a: (a["operator"], a["partition"])) == _acks_of(older)

    # The JSON endpoint: the same checkpoint with every acknowledgement.
    one = _api(f"{live.ui}/rockstate/api/runs/{live.run_id}/checkpoints/{latest}")
    assert one["status"] == "completed" and one["version"] == latest
    assert sorted((s["operatorId"], s["partitionId"], s["figures"]["stateBytes"])
                  for s in one["stores"]) == sorted(
        (s.operator, s.partition, s.state_bytes) for s in view.completed[-1].stores)
    summary = _run_summary(live.ui, live.run_id)
    assert summary["name"] == NAME and summary["status"] == "running"
    assert {o["operatorName"] for o in summary["operators"]} == {"dedupe", "stateStoreSave"}
    executors = _api(f"{live.ui}/rockstate/api/executors")
    assert [e["executorId"] for e in executors] == ["driver"]
    with pytest.raises(urllib.error.HTTPError) as missing:
        _api(f"{live.ui}/rockstate/api/runs/{live.run_id}/checkpoints/3")
    assert missing.value.code == 404
    live.views["running"] = view


def test_the_tab_after_the_query_stops(live, tmp_path):
    live.feed(2)  # checkpoint 8
    wait_for(lambda: rockstate.checkpoints(live.query).completed[-1].version == 8,
             "checkpoint 8 to complete")
    view = rockstate.checkpoints(live.query)
    live.query.stop()
    wait_for(lambda: (_run_summary(live.ui, live.run_id) or {}).get("status") == "stopped",
             "the tab to hear that the query stopped")
    tab = read_tab(f"{live.ui}/rockstate/", live.run_id, tmp_path / "stopped.png")
    _shows_the_coordinators(tab, view)
    assert tab.statuses == ["stopped"]
    live.views["stopped"] = view


def test_the_history_server_rebuilds_the_tab_from_the_event_log(live, sessions, tmp_path):
    view = live.views.get("stopped")
    assert view is not None, "runs after test_the_tab_after_the_query_stops"
    jar = rockstate.jar_path()
    with history_server(sessions.event_log_dir, tmp_path, jar) as url:
        # The application still running: its log so far.
        page = f"{url}/history/{live.app_id}/rockstate/"
        wait_for(lambda: (_run_summary(f"{url}/history/{live.app_id}", live.run_id) or {})
                 .get("latestCompleted") == view.completed[-1].version,
                 "the History Server to read the running application's checkpoints", seconds=90)
        running = read_tab(page, live.run_id, tmp_path / "history-running.png")
        _shows_the_coordinators(running, view)

        # Finished: the session stops, its log is complete.
        sessions.stop()
        wait_for(lambda: any(a["id"] == live.app_id and a["attempts"][0]["completed"]
                             for a in _api(f"{url}/api/v1/applications")),
                 "the History Server to see the application finish", seconds=90)
        finished = read_tab(page, live.run_id, tmp_path / "history.png")
        _shows_the_coordinators(finished, view)
        assert finished.statuses == ["stopped"]
        _keep(finished, "ui-history.png")


def test_no_tab_and_nothing_broken_without_the_ui(spark):
    """The shared sessions run with spark.ui.enabled=false: no UI, the coordinator runs."""
    sc = spark.sparkContext
    assert sc.uiWebUrl is None
    assert sc._jvm.io.rockstate.plugin.RockstateDriverPlugin.coordinatorRunning()
