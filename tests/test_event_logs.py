"""Event logs from someone else, in a shared History Server.

A History Server usually serves many teams' applications, so an event log is untrusted input
(docs/guarantees.md, "Trust model"). A crafted application's log, zstd-compressed as Spark
writes it by default, holds what once exhausted a History Server with a 256 MB heap: 60,000
acknowledgements of checkpoints that never complete, each naming a 4 KB checkpoint root (264 MB
of JSON), 20,000 executors, and 60,000 acknowledgements of one checkpoint. Beside it, another
application's ordinary log. The History Server, with that heap, must keep answering for the
other application, and the crafted one's tab must show what the caps keep, no more.
"""

from __future__ import annotations

import itertools
import json
import urllib.request
import uuid
from pathlib import Path

import pytest

import rockstate
from support.event_logs import App, acknowledged, completed, executor, write
from support.history_server import applications, history_server
from support.polling import wait_for

# (pending checkpoints, executors, acknowledgements of one checkpoint) per status store: the
# sizes that exhausted a 256 MB heap, and on disk the acknowledgements whose cost grew with the
# square of their number (5,000 took 44 s; 20,000 would take ten minutes).
SIZES = {"memory": (60_000, 20_000, 60_000), "disk": (2_000, 2_000, 20_000)}


def _get(url: str, timeout: float = 120) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def _crafted_events(run: str, pending: int, executors: int, acks_of_one: int):
    root = "file:/tmp/" + "r" * 4096
    return itertools.chain(
        (acknowledged(run, 2 * v, 0, root=root) for v in range(1, pending + 1)),
        (executor(f"exec-{i}") for i in range(executors)),
        (acknowledged(run, 10 * pending, p, expected=acks_of_one) for p in range(acks_of_one)))


@pytest.mark.parametrize("status_store", ["memory", "disk"])
def test_a_crafted_event_log_cannot_take_down_a_shared_history_server(spark_home: Path,
                                                                        tmp_path: Path,
                                                                        status_store: str):
    """In the History Server's in-memory status store (its default) and in the disk-backed one
    (``spark.history.store.path``, usual on large deployments, where a list rewritten per
    acknowledgement cost time in the square of their number)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    crafted_run, other_run = str(uuid.uuid4()), str(uuid.uuid4())
    pending, executors, acks_of_one = SIZES[status_store]
    crafted = write(logs, App("app-20261207000000-0001", "crafted"),
                    _crafted_events(crafted_run, pending, executors, acks_of_one), zstd=True)
    assert crafted.stat().st_size < 5 << 20  # a small file: the 264 MB are in its JSON
    write(logs, App("app-20261207000000-0002", "ordinary", 1_765_000_100_000),
          [acknowledged(other_run, 2, 0), acknowledged(other_run, 2, 1),
           completed(other_run, 2)])

    options = {"spark.history.store.path": str(tmp_path / "store")} \
        if status_store == "disk" else {}
    with history_server(logs, tmp_path, rockstate.jar_path(), heap="256m",
                        options=options) as url:
        wait_for(lambda: len(applications(url)) == 2, "the History Server to list both logs",
                 seconds=120)
        crafted_app = f"{url}/history/app-20261207000000-0001"
        page = _get(f"{crafted_app}/rockstate/")
        assert len(page) < 4 << 20, len(page)
        runs = json.loads(_get(f"{crafted_app}/rockstate/api/runs"))
        assert [r["runId"] for r in runs] == [crafted_run]
        assert runs[0]["pending"] == 20  # spark.rockstate.ui.retainedPendingCheckpoints
        assert len(runs[0]["checkpointRoot"]) < 1100
        assert len(json.loads(_get(f"{crafted_app}/rockstate/api/executors"))) == 1000
        one = json.loads(_get(f"{crafted_app}/rockstate/api/runs/{crafted_run}/checkpoints/"
                              f"{10 * pending}"))
        assert one["acknowledged"] == acks_of_one
        assert one["acksKept"] == 20_000 and len(one["stores"]) == 1000
        assert one["nextOffset"] == 1000

        # The other application answers, after the crafted one was loaded.
        other = json.loads(_get(f"{url}/history/app-20261207000000-0002/rockstate/api/runs"))
        assert [(r["runId"], r["latestCompleted"]) for r in other] == [(other_run, 2)]
        assert len(applications(url)) == 2
