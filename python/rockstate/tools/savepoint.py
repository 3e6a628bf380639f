"""Savepoints: a self-contained, relocatable copy of a streaming query at one committed batch.

``savepoint(checkpoint, target)`` copies what restarting the query after batch ``B`` (its
newest committed batch) needs, and nothing after it:

- Spark's ``metadata``, ``offsets/0..B`` and ``commits/0..B``, the sources' logs up to ``B``;
- per stateful operator, Spark's operator metadata and state schemas written up to ``B``;
- per rockstate store, version ``B+1`` (the state batch ``B`` committed) and only the files
  it needs: its version file and lineage, its snapshot manifest and the snapshot's SSTs;
- per store of Spark's own providers, every file of versions up to ``B+1`` (and the shared
  SSTs of its RocksDB provider).

Then it writes ``_savepoint.json`` last, listing every file with its size and CRC32, and
reads each copied file back against it. A savepoint is never changed afterwards:
``restore(savepoint, checkpoint)`` copies it to a new checkpoint location (Flink's NO_CLAIM
mode), so one savepoint can start any number of forks. Everything is read and written with
fsspec, so source and target may be on different file systems.
"""

from __future__ import annotations

import datetime
import json
import os
import posixpath
import re
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rockstate.checkpoint.location import CheckpointLocation, StoreRef, open_location
from rockstate.checkpoint.offsets import log_entries
from rockstate.checkpoint.operator_metadata import parse_operator_metadata
from rockstate.checkpoint.paths import relative_path
from rockstate.errors import CorruptCheckpointError, RockstateError
from rockstate.tools.staged_target import StagedTarget

SAVEPOINT_FILE = "_savepoint.json"
_OPERATOR_METADATA_V2 = re.compile(r"^state/\d+/_metadata/v2/\d+$")
# Where a schema file's path, as Spark recorded it, stops being the checkpoint's root.
_SCHEMA_RELATIVE = re.compile(r"(?:^|/)(state/\d+/_stateSchema/[^:]+)$")
SAVEPOINT_FORMAT = 1
_LEADING_NUMBER = re.compile(r"^(\d+)")


@dataclass(frozen=True)
class SavepointFile:
    path: str  # relative to the savepoint's root
    size: int
    crc32: int


@dataclass(frozen=True)
class Recorded:
    """What a rockstate store's manifests record of one file: its size and CRC32 or, for a pack
    of SSTs (format 5), its size and each member's offset, size and CRC32."""

    size: int
    crc32: int | None  # None for a pack: its members are checked
    members: tuple[tuple[int, int, int], ...] = ()

    def problem(self, data: bytes) -> str | None:
        """How ``data`` differs from what is recorded, or None."""
        if len(data) != self.size or (self.crc32 is not None and zlib.crc32(data) != self.crc32):
            crc = "" if self.crc32 is None else f" with CRC32 {self.crc32}"
            return (f"{len(data)} bytes with CRC32 {zlib.crc32(data)}, its store's manifest "
                    f"records {self.size} bytes{crc}")
        for offset, size, crc32 in self.members:
            found = zlib.crc32(memoryview(data)[offset:offset + size])
            if found != crc32:
                return (f"the SST at offset {offset} has CRC32 {found}, its store's manifest "
                        f"records {crc32}")
        return None


@dataclass(frozen=True)
class Savepoint:
    """What ``_savepoint.json`` records."""

    url: str
    batch_id: int  # the newest committed batch it holds
    state_version: int  # batch_id + 1: the state version every store holds
    query_id: str
    source: str
    created_at: str
    files: tuple[SavepointFile, ...]

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)


def last_committed_batch(loc: CheckpointLocation) -> int:
    """The newest batch with a commit log entry; an error when there is none."""
    commits = log_entries(loc.fs, loc.path("commits"))
    if not commits:
        raise RockstateError(f"{loc.url} has no committed batch (commits/ is empty); run the "
                             "query until a batch commits, then take the savepoint.")
    return max(commits)


def checkpoint_of(query: Any) -> str:
    """A PySpark ``StreamingQuery``'s checkpoint location, as an fsspec URL."""
    root = str(query._jsq.streamingQuery().resolvedCheckpointRoot())
    if root.startswith("file:") and not root.startswith("file://"):
        return root[len("file:"):]
    return root


def stop_with_savepoint(query: Any, target: str, **kwargs: Any) -> Savepoint:
    """Stops a running query (Spark stops it between batches; a batch it interrupts is not
    committed and not in the savepoint) and writes a savepoint of its last committed batch."""
    checkpoint = checkpoint_of(query)
    query.stop()
    return savepoint(checkpoint, target, **kwargs)


def savepoint(source: Any, target: str, *,
              progress: Callable[[str], None] | None = None,
              storage_options: dict[str, Any] | None = None,
              target_options: dict[str, Any] | None = None) -> Savepoint:
    """Writes a savepoint of ``source`` (a checkpoint location, or a ``StreamingQuery``) at
    its newest committed batch to ``target`` (which must not exist, or be an empty directory)
    and returns it.

    The query may be stopped or running: only files a committed batch made are copied, and
    they never change. (A running query's retention may delete an old version's files while
    they are copied; that fails loudly and a second attempt takes a newer batch.)"""
    if hasattr(source, "_jsq"):
        source = checkpoint_of(source)
    loc = open_location(source, storage_options)
    batch = last_committed_batch(loc)
    plan = _files_of(loc, batch)
    staged = StagedTarget(target, loc.url, "savepoint", target_options)
    try:
        files = []
        for rel, expected in plan.items():
            if progress:
                progress(rel)
            data = _read_source(loc, rel, batch)
            _check_against_manifest(loc, rel, data, expected)
            staged.write(rel, data)
            files.append(SavepointFile(rel, len(data), zlib.crc32(data)))
        sp = Savepoint(url=target, batch_id=batch, state_version=batch + 1,
                       query_id=_query_id(_read_source(loc, "metadata", batch)), source=loc.url,
                       created_at=datetime.datetime.now(datetime.UTC).isoformat(
                           timespec="seconds"),
                       files=tuple(files))
        staged.publish(SAVEPOINT_FILE, _document(sp))  # last: it is complete
    except BaseException:
        staged.abandon()
        raise
    problems = check_savepoint(target, target_options)
    if problems:
        raise CorruptCheckpointError(f"the savepoint written to {target} does not read back: "
                                     + "; ".join(problems[:5]))
    return sp


def _read_source(loc: CheckpointLocation, rel: str, batch: int) -> bytes:
    try:
        return loc.read_file(rel, f"batch {batch}")
    except CorruptCheckpointError as e:
        raise CorruptCheckpointError(
            f"{e} (If the query is running, its cleanup may have removed it while the savepoint "
            "was written: take the savepoint again.)") from None


def _check_against_manifest(loc: CheckpointLocation, rel: str, data: bytes,
                            expected: Recorded | None) -> None:
    """A file a rockstate store's manifest describes must be the file it describes: a damaged
    source is never saved (and then reported as checked)."""
    problem = expected.problem(data) if expected is not None else None
    if problem:
        raise CorruptCheckpointError(
            f"{loc.path(rel)} is damaged in the checkpoint: {problem}. Nothing was saved; "
            "restore the file from a backup, or run `rockstate verify` to see what else is "
            "damaged.")


def read_savepoint(location: str | CheckpointLocation,
                   storage_options: dict[str, Any] | None = None) -> Savepoint:
    """The savepoint at ``location``; an error if it is not one (or was not finished)."""
    loc = open_location(location, storage_options)
    path = loc.path(SAVEPOINT_FILE)
    try:
        doc = json.loads(loc.fs.cat_file(path))
    except FileNotFoundError:
        raise RockstateError(f"{loc.url} is not a savepoint: it has no {SAVEPOINT_FILE} (a "
                             "savepoint still being written has none yet).") from None
    except (ValueError, IsADirectoryError) as e:
        raise CorruptCheckpointError(f"{path} is damaged ({e}).") from None
    try:
        fmt = int(doc.get("savepointFormat", 0))
        if fmt > SAVEPOINT_FORMAT:
            raise RockstateError(f"{loc.url} was written by a newer rockstate (savepoint format "
                                 f"{fmt}); upgrade rockstate to read it.")
        files = tuple(SavepointFile(relative_path(f["path"], f"{path} (files[{i}])"),
                                    int(f["size"]), int(f["crc32"]))
                      for i, f in enumerate(doc["files"]))
        sp = Savepoint(url=loc.url, batch_id=int(doc["batchId"]),
                       state_version=int(doc["stateVersion"]), query_id=str(doc["queryId"]),
                       source=str(doc["source"]), created_at=str(doc["createdAt"]),
                       files=files)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CorruptCheckpointError(f"{path} is damaged ({e!r} missing or wrong).") from None
    seen: set[str] = set()
    for f in files:
        if f.path in seen or f.size < 0 or f.path == SAVEPOINT_FILE:
            raise CorruptCheckpointError(f"{path} lists {f.path!r} twice, with a negative size "
                                         "or as itself; it is damaged.")
        seen.add(f.path)
    if sp.state_version != sp.batch_id + 1:
        raise CorruptCheckpointError(f"{path}: state version {sp.state_version} is not batch "
                                     f"{sp.batch_id} + 1; it is damaged.")
    return sp


def is_savepoint(location: CheckpointLocation) -> bool:
    return bool(location.fs.exists(location.path(SAVEPOINT_FILE)))


def check_savepoint(location: str | CheckpointLocation,
                    storage_options: dict[str, Any] | None = None) -> list[str]:
    """Problems of the savepoint at ``location`` (none: sound): every file it lists is there
    with its size and CRC32, and every store's version holds all it needs."""
    loc = open_location(location, storage_options)
    sp = read_savepoint(loc)
    problems = []
    for f in sp.files:
        try:
            data = loc.read_file(f.path, f"the savepoint of batch {sp.batch_id}")
        except CorruptCheckpointError:
            problems.append(f"{f.path}: missing")
            continue
        if len(data) != f.size or zlib.crc32(data) != f.crc32:
            problems.append(f"{f.path}: size {len(data)} (recorded {f.size}) or CRC32 differs")
    if problems:
        return problems
    listed = {f.path: f for f in sp.files}
    for store in loc.stores():
        rel = posixpath.relpath(store.path, loc.root)
        try:
            needed = _store_files(loc, store, sp.state_version)
        except CorruptCheckpointError as e:
            problems.append(str(e))
            continue
        for p, expected in needed.items():
            f = listed.get(posixpath.join(rel, p))
            if f is None:
                problems.append(f"{rel}/{p}: needed by version {sp.state_version} of {store}, "
                                "not listed")
            elif expected is not None and (problem := _listed_problem(loc, f, expected)):
                # The listing agrees with the file, but not with the store's own manifest:
                # the file was replaced and the listing written to match it.
                problems.append(f"{rel}/{p}: {problem} (damaged)")
    return problems


def _listed_problem(loc: CheckpointLocation, f: SavepointFile, expected: Recorded) -> str | None:
    """How a savepoint's file differs from its store's manifest: by the listing's size and
    CRC32, or for a pack by its members' bytes (read again)."""
    if not expected.members:
        return None if (f.size, f.crc32) == (expected.size, expected.crc32) else (
            f"{f.size} bytes with CRC32 {f.crc32}, the store's manifest records "
            f"{expected.size} bytes with CRC32 {expected.crc32}")
    return expected.problem(loc.read_file(f.path, "the savepoint's check"))


def restore(savepoint_url: str, checkpoint: str, *, new_query_id: bool = True,
            storage_options: dict[str, Any] | None = None,
            target_options: dict[str, Any] | None = None) -> str:
    """Makes ``checkpoint`` (new, or an empty directory) a copy of the savepoint, checked
    first, and returns it: start the query with it as its checkpointLocation. The savepoint
    is only read. ``new_query_id``: the restored query gets an id of its own (Spark's
    ``metadata``), so it can run beside the original and other forks."""
    problems = check_savepoint(savepoint_url, storage_options)
    if problems:
        raise CorruptCheckpointError(f"the savepoint {savepoint_url} is damaged: "
                                     + "; ".join(problems[:5]))
    src = open_location(savepoint_url, storage_options)
    sp = read_savepoint(src)
    listed = {f.path for f in sp.files}
    if "metadata" not in listed:
        raise CorruptCheckpointError(f"the savepoint {savepoint_url} lists no Spark metadata "
                                     "file; it is damaged.")
    staged = StagedTarget(checkpoint, f"{src.url}#{sp.batch_id}", "restore", target_options)
    try:
        for f in sp.files:
            data = src.read_file(f.path, f"the savepoint of batch {sp.batch_id}")
            if len(data) != f.size or zlib.crc32(data) != f.crc32:
                raise CorruptCheckpointError(f"{src.path(f.path)} changed while it was "
                                             "restored; the savepoint must not be modified.")
            if f.path == "metadata" and new_query_id:
                # Stays the same when an interrupted restore into an object store resumes.
                data = (json.dumps({"id": str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                         staged.resumed_id))}) + "\n").encode()
            elif _OPERATOR_METADATA_V2.match(f.path):
                data = _relocated_schema_paths(data, checkpoint, f.path, listed)
            if f.path == "metadata":
                metadata = data  # written last: Spark reads a location without it as new
                continue
            staged.write(f.path, data)
        staged.publish("metadata", metadata)
    except BaseException:
        staged.abandon()
        raise
    return checkpoint


def _relocated_schema_paths(data: bytes, checkpoint: str, where: str,
                            listed: set[str]) -> bytes:
    """Spark's operator metadata v2 (transformWithState) names its state schema files by
    absolute path: point them into the restored location, or the fork would read the
    original's files (and fail once it is gone). The path inside the checkpoint is what
    follows ``state/<op>/_stateSchema/`` (the checkpoint's own root may hold ``/state/``
    too), and it must be a file the savepoint holds."""
    meta = parse_operator_metadata(data, f"{where} in the savepoint")
    relocated = {}
    for info in meta.stores:
        for p in info.schema_paths:
            m = _SCHEMA_RELATIVE.search(p)
            relative = m.group(1) if m else None
            if relative is None or relative_path(relative, where) not in listed:
                raise CorruptCheckpointError(
                    f"{where} in the savepoint names the state schema file {p!r}, which "
                    "is not one of the savepoint's files; it is damaged.")
            relocated[p] = _spark_path(checkpoint, relative, p)
    return meta.encode(schema_paths=relocated)


def _spark_path(checkpoint: str, relative: str, recorded: str) -> str:
    """``relative`` under ``checkpoint`` as Spark writes a path: a local one as ``file:/...``,
    a remote one with the scheme the recorded path had (``s3a`` for fsspec's ``s3``)."""
    scheme, sep, rest = checkpoint.partition("://")
    if not sep:
        return "file:" + posixpath.join(os.path.abspath(checkpoint), relative)
    if scheme == "file":
        return "file:" + posixpath.join(rest, relative)
    recorded_scheme = recorded.partition(":")[0]
    return f"{recorded_scheme if recorded_scheme != 'file' else scheme}://" + posixpath.join(
        rest, relative)


def _document(sp: Savepoint) -> bytes:
    return (json.dumps({
        "savepointFormat": SAVEPOINT_FORMAT, "batchId": sp.batch_id,
        "stateVersion": sp.state_version, "queryId": sp.query_id, "source": sp.source,
        "createdAt": sp.created_at,
        "files": [{"path": f.path, "size": f.size, "crc32": f.crc32} for f in sp.files],
    }, indent=1) + "\n").encode()


def _query_id(metadata: bytes) -> str:
    try:
        return json.loads(metadata.decode().splitlines()[0])["id"]
    except (IndexError, KeyError, ValueError):
        raise CorruptCheckpointError("the checkpoint's metadata file is damaged (no query id)."
                                     ) from None


def _number(name: str) -> int | None:
    m = _LEADING_NUMBER.match(name)
    return int(m.group(1)) if m else None


def _files_of(loc: CheckpointLocation, batch: int) -> dict[str, Recorded | None]:
    """Every path (relative to the checkpoint) restarting after ``batch`` needs, with the size
    and CRC32 a rockstate store's manifest records for it (None: nothing records one)."""
    out: list[str] = ["metadata"]
    logs = {log: log_entries(loc.fs, loc.path(log)) for log in ("offsets", "commits")}
    for log, entries in logs.items():
        out += [f"{log}/{name}" for n, name in sorted(entries.items()) if n <= batch]
    if batch not in logs["offsets"]:
        raise CorruptCheckpointError(f"{loc.url}: batch {batch} is committed but offsets/{batch}"
                                     " is missing; the checkpoint is damaged.")
    out += _batch_files(loc, "sources", batch)
    rockstate_stores = {s.path: s for s in loc.stores()}
    expected: dict[str, Recorded | None] = {}
    for op in loc.operators():
        base = f"state/{op}"
        out += _batch_files(loc, f"{base}/_metadata", batch)
        out += _batch_files(loc, f"{base}/_stateSchema", batch)
        for part in loc.subfolders(loc.path(base)):
            if not part.isdigit():
                continue
            expected.update(_partition_files(loc, f"{base}/{part}", rockstate_stores,
                                             batch + 1))
    return {**dict.fromkeys(out), **expected}


def _batch_files(loc: CheckpointLocation, top: str, batch: int) -> list[str]:
    """Files under ``top`` written for batches up to ``batch`` (named ``<n>``, ``<n>.compact``,
    ``<n>_<uuid>``), and any file not named by a batch."""
    path = loc.path(top)
    if not loc.fs.isdir(path):
        return []
    out = []
    for p in sorted(loc.fs.find(path)):
        name = posixpath.basename(p)
        n = _number(name)
        if not name.startswith(".") and (n is None or n <= batch):
            out.append(posixpath.relpath(p, loc.root))
    return out


def _partition_files(loc: CheckpointLocation, part: str, rockstate_stores: dict[str, StoreRef],
                     version: int) -> dict[str, Recorded | None]:
    path = loc.path(part)
    stores = [s for p, s in rockstate_stores.items()
              if p == path or posixpath.dirname(p) == path]
    out: dict[str, Recorded | None] = {}
    for s in stores:
        rel = posixpath.relpath(s.path, loc.root)
        out.update({posixpath.join(rel, f): e for f, e in _store_files(loc, s, version).items()})
    # Spark's own providers: every file of versions up to `version`, and shared SSTs.
    skip = {s.path for s in stores}
    for p in sorted(loc.fs.find(path)):
        if any(p == d or p.startswith(d + "/") for d in skip):
            continue
        name = posixpath.basename(p)
        n = _number(name)
        in_ssts = "/SSTs/" in p
        if not name.startswith(".") and (in_ssts or (n is not None and n <= version)):
            out[posixpath.relpath(p, loc.root)] = None
    return out


def _store_files(loc: CheckpointLocation, store: StoreRef, version: int
                 ) -> dict[str, Recorded | None]:
    """The files (relative to the store) that ``version`` of a rockstate store needs, with the
    size and CRC32 its manifests record: its version file (checked whole when read here),
    its lineage, its snapshot manifest and the snapshot's files."""
    if version not in loc.versions(store):
        raise CorruptCheckpointError(f"version {version} of {store} is missing; the checkpoint "
                                     "does not hold the state its last committed batch made.")
    entry = loc.landed(store, version)
    m = loc.manifest(store, version, entry)
    out: dict[str, Recorded | None] = {entry.path: None}
    for f in m.files:  # format 1: the full snapshot
        out.setdefault(f.path, Recorded(f.size, f.crc32))
    for c in m.changelogs:
        out.setdefault(c.path, Recorded(c.size, c.crc32))
    if m.snapshot is not None:
        out.setdefault(m.snapshot.path, None)
        snapshot = loc.snapshot_manifest(store, m.snapshot.path, f"version {version}")
        snapshot.meta_files(posixpath.join(store.path, m.snapshot.path))  # checked, unpacked
        for f in snapshot.files:
            if f.in_pack is None:
                out.setdefault(f.path, Recorded(f.size, f.crc32))
            else:
                pack = out.get(f.path) or Recorded(f.in_pack.pack_size, None)
                out[f.path] = Recorded(pack.size, None, (*pack.members,
                                                         (f.in_pack.offset, f.size, f.crc32)))
    return out
