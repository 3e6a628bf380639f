"""Checkpoints as the driver's coordinator completes them, seen from Python.

``rockstate.checkpoints(query)`` asks the running driver (pending, completed and aborted
checkpoints of the query's current run); ``rockstate.checkpoints("s3://bucket/query")`` reads
the completed ones from the checkpoint location with fsspec, no Spark needed.
``rockstate.on_checkpoint_complete`` calls back for each checkpoint the driver completes.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rockstate.checkpoint.location import CheckpointLocation, open_location
from rockstate.checkpoint.model import (
    CheckpointRecord,
    QueryCheckpoints,
    parse_completed,
    parse_live_view,
)
from rockstate.errors import RockstateSetupError
from rockstate.live.coordinator_channel import (
    CoordinatorChannel,
    active_connect_session,
    channel,
    is_connect,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

_log = logging.getLogger(__name__)


def checkpoints(source: StreamingQuery | str | CheckpointLocation,
                storage_options: dict[str, Any] | None = None,
                spark: SparkSession | None = None) -> QueryCheckpoints:
    """The checkpoints of a running query, or the completed ones at a checkpoint location
    (a path or fsspec URL with its ``storage_options``, or a ``CheckpointLocation``).

    A query's view comes from its driver's coordinator: through py4j in a classic session,
    through rockstate's SQL functions over Spark Connect (``spark``: the query's Connect
    session, by default the active one). For a location, the function form of
    ``rockstate.Checkpoint(location, storage_options).checkpoints()``."""
    if hasattr(source, "runId") and hasattr(source, "lastProgress"):
        query: Any = source
        if is_connect(query) and spark is None:
            spark = active_connect_session()
            if spark is None:
                raise RockstateSetupError(
                    "no active Spark Connect session in this thread; pass the query's session: "
                    "rockstate.checkpoints(query, spark=spark).")
        text = channel(spark).checkpoints_json(str(query.runId))
        if text == "null":  # no store of this run has acknowledged anything yet
            return QueryCheckpoints(location="", run_id=str(query.runId),
                                    query_id=str(query.id))
        return parse_live_view(json.loads(text))
    loc = open_location(source, storage_options)
    return QueryCheckpoints(location=loc.url, completed=tuple(loc.checkpoints()),
                            aborted=tuple(loc.aborted_checkpoints()))


class CheckpointWatcher:
    """Calls ``callback(checkpoint)`` for each checkpoint the driver completes; ``stop()`` ends it.

    The driver cannot call into Python, so a daemon thread asks it every ``poll_seconds`` (in a
    Spark Connect client, with one small SQL query each time).
    """

    def __init__(self, spark: SparkSession, callback: Callable[[CheckpointRecord], None],
                 poll_seconds: float = 0.5) -> None:
        self._channel: CoordinatorChannel = channel(spark)
        self._callback = callback
        self._poll = poll_seconds
        self._stop = threading.Event()
        # Only completions from now on.
        seen = json.loads(self._channel.completed_since_json(-1))
        self._after = max((s for s, _, _ in seen), default=0)
        self._thread = threading.Thread(target=self._run, name="rockstate-checkpoint-watcher",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._channel.bind_thread()
        while not self._stop.wait(self._poll):
            try:
                self.poll_once()
            except Exception:  # a dead driver or a failing callback must not end the thread
                _log.exception("rockstate checkpoint watcher: polling the driver failed")

    def poll_once(self) -> None:
        for seq, run_id, version in json.loads(self._channel.completed_since_json(self._after)):
            self._after = seq
            view = json.loads(self._channel.checkpoints_json(run_id))
            found = [c for c in (view or {}).get("completed", []) if c["version"] == version]
            if found:  # dropped by retention already if not
                self._callback(parse_completed(found[0]))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def on_checkpoint_complete(spark: SparkSession, callback: Callable[[CheckpointRecord], None],
                           poll_seconds: float = 0.5) -> CheckpointWatcher:
    """Invokes ``callback`` with each checkpoint completed from now on, for every query."""
    return CheckpointWatcher(spark, callback, poll_seconds)

