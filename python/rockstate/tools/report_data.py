"""The figures a checkpoint history report shows, gathered from a checkpoint location.

For a rockstate checkpoint: completed checkpoints (their ``_metadata``), aborted ones (the
driver's abort records, and the live view's for a running query), pending ones (live view
only), and each store's version files (commit time and changelog bytes per batch). For a
checkpoint of Spark's own ``RocksDBStateStoreProvider``: each store's versions, changelog and
snapshot sizes, and which SST files each snapshot uploaded or shared. Nothing here needs Spark.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from rockstate.checkpoint import spark_rocksdb
from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.format import (
    is_version_file,
    parse_version_header,
    parse_version_manifest,
    version_header_length,
)
from rockstate.checkpoint.location import (
    DEFAULT_STORE,
    CheckpointLocation,
    StoreRef,
    VersionEntry,
)
from rockstate.checkpoint.model import CheckpointRecord, QueryCheckpoints
from rockstate.checkpoint.offsets import provider_class
from rockstate.checkpoint.paths import is_number
from rockstate.errors import CorruptCheckpointError
from rockstate.session.providers import SPARK_ROCKSDB

ROCKSTATE = "rockstate"
OTHER = "other"

Progress = Callable[[Iterable], Iterable]


@dataclass(frozen=True)
class CommitFigure:
    """One store's commit of one version, from its version manifest."""

    operator: int
    partition: int
    store: str
    version: int
    changelog_bytes: int
    records: int
    commit_ms: int | None  # None when the manifest does not record it
    num_keys: int


@dataclass(frozen=True)
class StoreSize:
    """A store's state at its newest known point."""

    operator: int
    partition: int
    store: str
    version: int
    state_bytes: int | None  # None when unknown (no snapshot figures)
    num_keys: int


@dataclass(frozen=True)
class SparkVersionFigure:
    """One version of a store of Spark's RocksDB provider, as its files show it."""

    operator: int
    partition: int
    store: str
    version: int
    changelog_bytes: int  # 0 without a changelog file
    snapshot_bytes: int  # the zip, 0 when this version has no snapshot
    sst_uploaded_bytes: int  # SSTs this snapshot names that no earlier snapshot named
    sst_reused_bytes: int
    num_keys: int | None  # from the snapshot's metadata


@dataclass(frozen=True)
class ReportData:
    location: str
    provider: str  # the provider class Spark recorded
    kind: str  # ROCKSTATE, SPARK_ROCKSDB or OTHER
    checkpoints: QueryCheckpoints
    commits: tuple[CommitFigure, ...] = ()
    store_sizes: tuple[StoreSize, ...] = ()
    spark_versions: tuple[SparkVersionFigure, ...] = ()
    notes: tuple[str, ...] = field(default=())  # what could not be shown, and why


def kind_of(provider: str) -> str:
    if provider.startswith("io.rockstate."):
        return ROCKSTATE
    if provider.endswith(".RocksDBStateStoreProvider"):
        return SPARK_ROCKSDB
    return OTHER


def collect(loc: CheckpointLocation, live: QueryCheckpoints | None = None,
            progress: Progress | None = None) -> ReportData:
    """Everything the report shows for ``loc``; ``live`` adds a running query's driver view."""
    try:
        provider = provider_class(loc)
    except Exception as e:  # no offset log yet, or an unreadable one: still show the state
        provider, note = "unknown", f"the provider is unknown ({e})"
    else:
        note = None
    kind = kind_of(provider)
    if kind == OTHER and loc.stores():
        kind = ROCKSTATE  # rockstate's own layout is there whatever the offset log says
    notes = (note,) if note else ()
    each = progress or (lambda items: items)
    if kind == ROCKSTATE:
        checkpoints = merge_live(
            QueryCheckpoints(location=loc.url, completed=tuple(loc.checkpoints()),
                             aborted=tuple(loc.aborted_checkpoints())), live)
        commits, sizes = _rockstate_stores(loc, checkpoints.latest, each)
        return ReportData(loc.url, provider, kind, checkpoints, commits, sizes, notes=notes)
    empty = merge_live(QueryCheckpoints(location=loc.url), live)
    if kind == SPARK_ROCKSDB:
        return ReportData(loc.url, provider, kind, empty,
                          spark_versions=_spark_versions(loc, each), notes=notes)
    return ReportData(loc.url, provider, kind, empty, notes=(
        *notes, f"{provider} keeps no per-version figures this report can show; only "
        "rockstate's and Spark's RocksDB provider's checkpoints are charted."))


def merge_live(offline: QueryCheckpoints, live: QueryCheckpoints | None) -> QueryCheckpoints:
    """The offline history plus what the driver knows of the running query."""
    if live is None:
        return offline

    def union(a: Iterable[CheckpointRecord], b: Iterable[CheckpointRecord]
              ) -> tuple[CheckpointRecord, ...]:
        by_key = {(c.version, c.run_id): c for c in a}
        by_key.update({(c.version, c.run_id): c for c in b})
        return tuple(sorted(by_key.values(), key=lambda c: (c.version, c.run_id or "")))

    completed = {c.version: c for c in offline.completed}
    completed.update({c.version: c for c in live.completed})
    return QueryCheckpoints(
        location=offline.location, run_id=live.run_id, query_id=live.query_id,
        snapshot_interval=live.snapshot_interval, expected_stores=live.expected_stores,
        completed=tuple(completed[v] for v in sorted(completed)),
        pending=live.pending, aborted=union(offline.aborted, live.aborted),
        consecutive_failures=live.consecutive_failures, failure=live.failure,
        untracked_reason=live.untracked_reason)


# A version file's header is a few KB: one ranged read of this much gets it almost always.
_HEADER_READ = 64 * 1024


def _version_headers(loc: CheckpointLocation, store: StoreRef
                     ) -> list[tuple[int, str, bytes]]:
    """Each version's (landed attempt's) manifest bytes: a format 1/2 manifest whole, a version
    file's start up to its header's end. Batched reads: on an object store fsspec fetches them
    concurrently. Versions dropped by cleanup between the listing and the read are skipped."""
    entries = loc.version_entries(store)
    chosen = []
    for v in sorted({e.version for e in entries}):
        try:
            chosen.append(loc.landed(store, v, entries))
        except CorruptCheckpointError:
            continue  # the report shows what is there; `rockstate verify` names what is not
    paths = [posixpath.join(store.path, e.path) for e in chosen]
    ends = [None if e.is_legacy else min(e.size, _HEADER_READ) for e in chosen]
    if not paths:
        return []
    if loc.local:  # one by one: the bounded reads that follow no link
        found: list[object] = [_header_or_error(loc, store, e, end) for e, end in
                               zip(chosen, ends, strict=True)]
    else:
        found = loc.fs.cat_ranges(paths, [0] * len(paths),
                                  [end or FileKind.DOCUMENT.limit + 1 for end in ends],
                                  on_error="return")
    out = []
    for e, path, data in zip(chosen, paths, found, strict=True):
        if not isinstance(data, bytes) or (e.is_legacy and len(data) > FileKind.DOCUMENT.limit):
            continue
        if not e.is_legacy and len(data) < version_header_length(data, path):
            data = loc.read(store, e.path, "the report")
        out.append((e.version, e.path, data))
    return out


def _header_or_error(loc: CheckpointLocation, store: StoreRef, e: VersionEntry,
                     end: int | None) -> bytes | CorruptCheckpointError:
    """A version's manifest bytes (its start up to ``end``), or why they cannot be read."""
    try:
        return loc.read(store, e.path, "the report", None if end is None else (0, end),
                        FileKind.DOCUMENT if end is None else FileKind.DATA)
    except CorruptCheckpointError as error:
        return error


def _rockstate_stores(loc: CheckpointLocation, latest: CheckpointRecord | None, each: Progress
                      ) -> tuple[tuple[CommitFigure, ...], tuple[StoreSize, ...]]:
    acked = {(s.operator, s.partition, s.store): s for s in (latest.stores if latest else ())}
    commits: list[CommitFigure] = []
    sizes: list[StoreSize] = []
    for store in each(loc.stores()):
        newest = None
        for v, path, data in _version_headers(loc, store):
            m = (parse_version_header(data, path) if is_version_file(path)
                 else parse_version_manifest(data, path))
            commit = m.commit or {}
            commits.append(CommitFigure(
                store.operator, store.partition, store.name, v,
                int(commit.get("changelogBytes", 0)), int(commit.get("changelogRecords", 0)),
                int(commit["commitMs"]) if "commitMs" in commit else None, m.num_keys))
            newest = m
        ack = acked.get((store.operator, store.partition, store.name))
        if ack is not None:
            sizes.append(StoreSize(store.operator, store.partition, store.name,
                                   latest.version if latest else 0, ack.state_bytes,
                                   ack.num_keys))
        elif newest is not None:
            sizes.append(StoreSize(store.operator, store.partition, store.name, newest.version,
                                   None, newest.num_keys))
    return tuple(commits), tuple(sizes)


def _spark_stores(loc: CheckpointLocation) -> list[StoreRef]:
    out = []
    for op in loc.operators():
        names = {DEFAULT_STORE}
        for part in loc.subfolders(loc.path("state", str(op))):
            if is_number(part):
                names.update(n for n in loc.subfolders(loc.path("state", str(op), part))
                             if n not in ("SSTs", "logs", "_metadata"))
        for name in sorted(names):
            for part, path in sorted(spark_rocksdb.partitions(loc, op, name).items()):
                out.append(StoreRef(op, part, name, path))
    return out


def _spark_versions(loc: CheckpointLocation, each: Progress) -> tuple[SparkVersionFigure, ...]:
    out: list[SparkVersionFigure] = []
    for store in each(_spark_stores(loc)):
        # One listing gives the versions and every file's size.
        sizes = {posixpath.basename(i["name"].rstrip("/")): int(i["size"] or 0)
                 for i in loc.fs.ls(store.path, detail=True)}
        seen: set[str] = set()
        for v in spark_rocksdb.versions_in(sizes):
            zip_name = f"{v}.zip"
            uploaded = reused = 0
            keys = None
            if zip_name in sizes:
                metadata = spark_rocksdb.snapshot_metadata(loc, posixpath.join(store.path,
                                                                             zip_name))
                keys = metadata.get("numKeys")
                for f in metadata.get("sstFiles") or []:
                    name, size = f.get("dfsSstFileName"), int(f.get("sizeBytes", 0))
                    if name in seen:
                        reused += size
                    else:
                        uploaded += size
                        seen.add(name)
            out.append(SparkVersionFigure(
                store.operator, store.partition, store.name, v,
                sizes.get(f"{v}.changelog", 0), sizes.get(zip_name, 0), uploaded, reused,
                int(keys) if keys is not None else None))
    return tuple(out)

