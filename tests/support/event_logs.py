"""Spark event logs written by hand, as a crafted application would: the events rockstate's tab
reads (in the JSON Spark's ``JsonProtocol`` writes for them) between an application's start and
end, in one file, plain or compressed with zstd (Spark's default event-log codec)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ACKNOWLEDGED = "io.rockstate.checkpoint.CheckpointAcknowledged"
COMPLETED = "io.rockstate.checkpoint.CheckpointCompleted"
EXECUTOR = "io.rockstate.storage.ExecutorStoreFigures"


@dataclass(frozen=True)
class App:
    app_id: str
    name: str
    started_ms: int = 1_765_000_000_000


def acknowledged(run_id: str, version: int, partition: int, root: str = "file:/tmp/query",
                 expected: int = 2, store_name: str = "default") -> dict:
    return {"Event": ACKNOWLEDGED, "queryId": "query-1", "runId": run_id,
            "checkpointRoot": root, "version": version, "triggeredAtMs": 90,
            "expected": expected,
            "store": {"operatorId": 0, "storeName": store_name, "partitionId": partition,
                      "executorId": f"exec-{partition % 4}",
                      "storeDir": f"state/0/{partition}", "snapshotManifest": "snapshots/2.json",
                      "versionManifest": "manifests/2.json",
                      "figures": {"syncMs": 1, "asyncMs": 2, "bytesUploaded": 100,
                                  "bytesReused": 50, "filesUploaded": 1, "filesReused": 1,
                                  "stateBytes": 150, "numKeys": 10},
                      "ackedAtMs": 100 + partition}}


def completed(run_id: str, version: int, root: str = "file:/tmp/query") -> dict:
    return {"Event": COMPLETED, "queryId": "query-1", "runId": run_id, "checkpointRoot": root,
            "version": version, "triggeredAtMs": 90, "completedAtMs": 120,
            "totals": {"stores": 2, "stateBytes": 300, "numKeys": 20, "bytesUploaded": 200,
                       "bytesReused": 100, "maxSyncMs": 1, "maxAsyncMs": 2}}


def executor(executor_id: str) -> dict:
    return {"Event": EXECUTOR, "executorId": executor_id, "openStores": 1,
            "rocksdbInstancesOpen": 1, "rocksdbMemoryUsedBytes": 10,
            "rocksdbMemoryCapacityBytes": 20, "localCacheBytes": 30,
            "snapshotUploadsInFlight": 0, "reportedAtMs": 77}


def _lines(app: App, events: Iterable[dict]) -> Iterator[bytes]:
    yield from (json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in (
        {"Event": "SparkListenerLogStart", "Spark Version": "4.3.0"},
        {"Event": "SparkListenerApplicationStart", "App Name": app.name, "App ID": app.app_id,
         "Timestamp": app.started_ms, "User": "someone"}))
    for e in events:
        yield json.dumps(e, separators=(",", ":")).encode() + b"\n"
    yield json.dumps({"Event": "SparkListenerApplicationEnd",
                      "Timestamp": app.started_ms + 60_000}).encode() + b"\n"


def write(folder: Path, app: App, events: Iterable[dict], zstd: bool = False) -> Path:
    """Writes ``app``'s log with ``events`` into ``folder`` (``<app id>.zstd`` compressed, as
    Spark names it) and returns its path."""
    path = folder / (app.app_id + (".zstd" if zstd else ""))
    with path.open("wb") as raw:
        if zstd:
            import zstandard

            with zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False) as out:
                for line in _lines(app, events):
                    out.write(line)
        else:
            for line in _lines(app, events):
                raw.write(line)
    return path
