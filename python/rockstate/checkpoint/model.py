"""A query's checkpoints as values: what the driver's coordinator completes, records as aborted or
still waits for, and the parsers of the files and documents that describe them (their format is
in docs/checkpoint-format.md). Nothing here talks to Spark: the live view
(``rockstate.live.view``) and the checkpoint location (``rockstate.checkpoint.location``) build
on it.

How a store's state versions relate to Spark's micro-batches is named here once for Python
(the JVM's ``io.rockstate.storage.format.StateVersion``), and every module goes through
:func:`version_of_batch` and :func:`batch_of_version`::

    version 0        the empty state, before batch 0
    version b + 1    what batch b committed
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rockstate.checkpoint.format import load_document
from rockstate.checkpoint.paths import relative_path
from rockstate.errors import CorruptCheckpointError

METADATA_FORMAT_VERSION = 1
ABORT_RECORD_FORMAT_VERSION = 1


def version_of_batch(batch_id: int) -> int:
    """The state version micro-batch ``batch_id`` commits."""
    return batch_id + 1


def batch_of_version(version: int) -> int:
    """The micro-batch that committed state ``version``."""
    return version - 1


@dataclass(frozen=True)
class StoreAck:
    """One store's acknowledged snapshot within a checkpoint, with its figures."""

    operator: int
    store: str
    partition: int
    executor_id: str
    store_dir: str  # relative to the checkpoint location
    snapshot_manifest: str  # relative to store_dir
    version_manifest: str  # relative to store_dir
    sync_ms: int
    async_ms: int
    bytes_uploaded: int
    bytes_reused: int
    files_uploaded: int
    files_reused: int
    state_bytes: int
    num_keys: int
    acked_at_ms: int


@dataclass(frozen=True)
class CheckpointRecord:
    """What is recorded of one checkpoint (Flink's CompletedCheckpoint, PendingCheckpoint and
    failed checkpoint in one value): ``status`` is ``completed``, ``pending`` or ``aborted``.
    Not to be confused with :class:`rockstate.Checkpoint`, the handle of a checkpoint
    location."""

    version: int  # the state version; its micro-batch is batch_id
    status: str
    stores: tuple[StoreAck, ...] = ()
    missing: tuple[tuple[int, str, int], ...] = ()  # (operator, store, partition), if pending
    reason: str | None = None  # why it was aborted
    triggered_at_ms: int | None = None
    completed_at_ms: int | None = None
    run_id: str | None = None
    aborted_at_ms: int | None = None  # when it was aborted, if it was
    acknowledged: int | None = None  # stores that had acknowledged it when it was aborted
    expected: int | None = None  # stores it was waiting for, if aborted

    @property
    def duration_ms(self) -> int | None:
        """From the first acknowledgement to completion (or abort)."""
        end = self.completed_at_ms if self.completed_at_ms is not None else self.aborted_at_ms
        if end is None or self.triggered_at_ms is None:
            return None
        return end - self.triggered_at_ms

    @property
    def bytes_reused(self) -> int:
        return sum(s.bytes_reused for s in self.stores)

    @property
    def slowest(self) -> StoreAck | None:
        """The store that acknowledged last (the checkpoint's straggler)."""
        return max(self.stores, key=lambda s: s.acked_at_ms, default=None)

    @property
    def batch_id(self) -> int:
        return batch_of_version(self.version)

    @property
    def state_bytes(self) -> int:
        return sum(s.state_bytes for s in self.stores)

    @property
    def num_keys(self) -> int:
        return sum(s.num_keys for s in self.stores)

    @property
    def bytes_uploaded(self) -> int:
        return sum(s.bytes_uploaded for s in self.stores)


@dataclass(frozen=True)
class QueryCheckpoints:
    """What is known of a query's checkpoints, newest last in each list."""

    location: str
    run_id: str | None = None
    query_id: str | None = None
    snapshot_interval: int | None = None
    expected_stores: int | None = None
    completed: tuple[CheckpointRecord, ...] = ()
    pending: tuple[CheckpointRecord, ...] = ()
    aborted: tuple[CheckpointRecord, ...] = ()
    consecutive_failures: int = 0
    failure: str | None = None
    untracked_reason: str | None = None  # set while the coordinator cannot track the query
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def latest(self) -> CheckpointRecord | None:
        return self.completed[-1] if self.completed else None

    @property
    def history(self) -> tuple[CheckpointRecord, ...]:
        """Completed, aborted and pending checkpoints in one list, oldest version first."""
        return tuple(sorted([*self.completed, *self.aborted, *self.pending],
                            key=lambda c: (c.version, c.triggered_at_ms or 0)))

    def _repr_html_(self) -> str:
        from rockstate.checkpoint.model_html import checkpoints_html

        return checkpoints_html(self)


def _store_ack(doc: dict, where: str) -> StoreAck:
    """One store's acknowledgement; its paths become file paths, so each is contained."""
    f = doc["figures"]
    return StoreAck(
        operator=int(doc["operatorId"]), store=doc["storeName"],
        partition=int(doc["partitionId"]), executor_id=str(doc["executorId"]),
        store_dir=relative_path(doc["storeDir"], f"{where} (storeDir)"),
        snapshot_manifest=relative_path(doc["snapshotManifest"], f"{where} (snapshotManifest)"),
        version_manifest=relative_path(doc["versionManifest"], f"{where} (versionManifest)"),
        sync_ms=int(f["syncMs"]),
        async_ms=int(f["asyncMs"]), bytes_uploaded=int(f["bytesUploaded"]),
        bytes_reused=int(f["bytesReused"]), files_uploaded=int(f["filesUploaded"]),
        files_reused=int(f["filesReused"]), state_bytes=int(f["stateBytes"]),
        num_keys=int(f["numKeys"]), acked_at_ms=int(doc["ackedAtMs"]))


def parse_completed(doc: dict, where: str = "the driver's checkpoint") -> CheckpointRecord:
    """A completed checkpoint's document (a ``_metadata`` file's, or the driver's)."""
    return CheckpointRecord(
        version=int(doc["version"]), status="completed",
        stores=tuple(_store_ack(s, where) for s in doc["stores"]),
        triggered_at_ms=int(doc["triggeredAtMs"]), completed_at_ms=int(doc["completedAtMs"]),
        run_id=doc.get("runId"))


def parse_checkpoint_metadata(data: bytes, where: str) -> CheckpointRecord:
    """A completed checkpoint's ``_metadata`` file; a damaged one is an error naming it."""
    doc = load_document(data, where, METADATA_FORMAT_VERSION, "checkpoint metadata")
    try:
        return parse_completed(doc, where)
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as e:
        raise CorruptCheckpointError(
            f"checkpoint metadata {where} is missing or has a bad field ({e!r}).") from None


def parse_abort_record(data: bytes, where: str) -> CheckpointRecord:
    """An aborted checkpoint's record (``rockstate/checkpoints/aborted/<version>.json``)."""
    doc = load_document(data, where, ABORT_RECORD_FORMAT_VERSION, "aborted checkpoint record")
    try:
        return CheckpointRecord(
            version=int(doc["version"]), status="aborted", reason=str(doc["reason"]),
            triggered_at_ms=int(doc["triggeredAtMs"]), aborted_at_ms=int(doc["abortedAtMs"]),
            acknowledged=int(doc["acknowledged"]), expected=int(doc["expected"]),
            run_id=doc.get("runId"))
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as e:
        raise CorruptCheckpointError(
            f"aborted checkpoint record {where} is missing or has a bad field ({e!r}).") from None


def parse_live_view(doc: dict) -> QueryCheckpoints:
    """The driver coordinator's view of one run (``checkpointsJson``), as a document."""
    return QueryCheckpoints(
        location=doc["checkpointRoot"], run_id=doc["runId"], query_id=doc["queryId"],
        snapshot_interval=int(doc["snapshotInterval"]),
        expected_stores=int(doc["expectedStores"]),
        completed=tuple(parse_completed(c) for c in doc["completed"]),
        pending=tuple(
            CheckpointRecord(version=int(p["version"]), status="pending",
                             stores=tuple(_store_ack(s, "the driver's view")
                                          for s in p["stores"]),
                             missing=tuple((int(m["operatorId"]), m["storeName"],
                                            int(m["partitionId"])) for m in p["missing"]),
                             triggered_at_ms=int(p["triggeredAtMs"]), run_id=doc["runId"])
            for p in doc["pending"]),
        aborted=tuple(
            CheckpointRecord(version=int(a["version"]), status="aborted", reason=a["reason"],
                             run_id=doc["runId"], aborted_at_ms=int(a["abortedAtMs"]),
                             acknowledged=int(a["acknowledged"]), expected=int(a["expected"]))
            for a in doc["aborted"]),
        consecutive_failures=int(doc["consecutiveFailures"]),
        failure=doc.get("failure"), untracked_reason=doc.get("untrackedReason"))
