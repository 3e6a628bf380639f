"""Savepoints: a self-contained, relocatable copy of a streaming query at one committed batch.

``savepoint(checkpoint, target)`` copies what restarting the query after batch ``B`` (its
newest committed batch) needs, and nothing after it:

- Spark's ``metadata``, ``offsets/0..B`` and ``commits/0..B``, the sources' logs up to ``B``;
- per stateful operator, Spark's operator metadata and state schemas written up to ``B``;
- per rockstate store, the state version batch ``B`` committed and only the files it needs:
  its version file and lineage, its snapshot manifest and the snapshot's SSTs;
- per store of Spark's own providers, every file of versions up to that one (and the shared
  SSTs of its RocksDB provider).

Then it writes ``_savepoint.json`` last, listing every file with its size and SHA-256 (format
2; format 1 recorded CRC32s), and reads each copied file back against it. The SHA-256 of
``_savepoint.json`` itself is the savepoint's digest: kept apart from the savepoint and given
back as ``expect_digest``, it detects a savepoint rewritten end to end, listing included.

A savepoint is never changed afterwards: ``restore(savepoint, checkpoint)`` copies it to a new
checkpoint location (Flink's NO_CLAIM mode), so one savepoint can start any number of forks.
Everything is read and written with fsspec, so source and target may be on different file
systems.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import posixpath
import re
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.json_text import load_json
from rockstate.checkpoint.location import (
    DEFAULT_STORE,
    CheckpointLocation,
    StoreRef,
    open_location,
)
from rockstate.checkpoint.model import version_of_batch
from rockstate.checkpoint.offsets import log_entries
from rockstate.checkpoint.operator_metadata import parse_operator_metadata, read_operator_metadata
from rockstate.checkpoint.partitions import missing_partitions, recorded_partitions
from rockstate.checkpoint.paths import is_number, relative_path
from rockstate.checkpoint.spark_rocksdb import numbered
from rockstate.errors import CorruptCheckpointError, RockstateError
from rockstate.tools.staged_target import StagedTarget

SAVEPOINT_FILE = "_savepoint.json"
_OPERATOR_METADATA_V2 = re.compile(r"^state/\d+/_metadata/v2/\d+$")
# Where a schema file's path, as Spark recorded it, stops being the checkpoint's root.
_SCHEMA_RELATIVE = re.compile(r"(?:^|/)(state/\d+/_stateSchema/[^:]+)$")
# 2: each file's SHA-256 (1: its CRC32, which finds damage but not a file changed on purpose
# with its CRC32 kept).
SAVEPOINT_FORMAT = 2
_LEADING_NUMBER = re.compile(r"^(\d+)")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
# A partition's state in Spark's own providers: HDFS's version files, RocksDB's.
_SPARK_VERSION_SUFFIXES = (".delta", ".snapshot", ".zip", ".changelog")
# A file directly in a partition folder (the default store) or in a store's folder in it.
_PARTITION_FILE = re.compile(r"^state/([0-9]+)/([0-9]+)/(?:([^/]+)/)?([^/]+)$")


@dataclass(frozen=True)
class SavepointFile:
    path: str  # relative to the savepoint's root
    size: int
    sha256: str | None = None  # format 2 (hex)
    crc32: int | None = None  # format 1

    def problem(self, data: bytes) -> str | None:
        """How ``data`` differs from what the listing records of this file, or None."""
        if len(data) != self.size:
            return f"{len(data)} bytes, the listing records {self.size}"
        if self.sha256 is not None:
            found = hashlib.sha256(data).hexdigest()
            return None if found == self.sha256 else \
                f"SHA-256 {found}, the listing records {self.sha256}"
        crc = zlib.crc32(data)
        return None if crc == self.crc32 else f"CRC32 {crc}, the listing records {self.crc32}"


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
class SavepointManifest:
    """What a savepoint's ``_savepoint.json`` records: its batch, where it was taken from,
    every file with its size and hash, and the listing's own digest. Not to be confused with
    :class:`rockstate.Savepoint`, the handle of a savepoint's location."""

    url: str
    batch_id: int  # the newest committed batch it holds
    state_version: int  # version_of_batch(batch_id): the state version every store holds
    query_id: str
    source: str
    created_at: str
    files: tuple[SavepointFile, ...]
    # The SHA-256 (hex) of ``_savepoint.json`` as written or read. Kept apart from the
    # savepoint and given back as ``expect_digest``, it detects a savepoint rewritten end to
    # end: what the listing alone cannot (whoever rewrites files can rewrite their hashes).
    digest: str = field(default="", compare=False)

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


def stop_with_savepoint(query: Any, target: str, **kwargs: Any) -> SavepointManifest:
    """Stops a running query (Spark stops it between batches; a batch it interrupts is not
    committed and not in the savepoint) and writes a savepoint of its last committed batch."""
    checkpoint = checkpoint_of(query)
    query.stop()
    return savepoint(checkpoint, target, **kwargs)


def savepoint(source: Any, target: str, *,
              progress: Callable[[str], None] | None = None,
              storage_options: dict[str, Any] | None = None,
              target_options: dict[str, Any] | None = None) -> SavepointManifest:
    """Writes a savepoint of ``source`` (a checkpoint location, or a ``StreamingQuery``) at
    its newest committed batch to ``target`` (which must not exist, or be an empty directory)
    and returns it.

    The query may be stopped or running: only files a committed batch made are copied, and
    they never change. (A running query's retention may delete an old version's files while
    they are copied; that fails loudly and a second attempt takes a newer batch.) The returned
    savepoint's ``digest`` is the SHA-256 of its ``_savepoint.json``: keep it to check the
    savepoint with later (``expect_digest``).

    For a location, the function form of ``rockstate.Checkpoint(source, storage_options)
    .savepoint(target, storage_options=target_options)``, which returns the savepoint's
    handle."""
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
            files.append(SavepointFile(rel, len(data), sha256=hashlib.sha256(data).hexdigest()))
        sp = SavepointManifest(url=target, batch_id=batch,
                               state_version=version_of_batch(batch),
                               query_id=_query_id(_read_source(loc, "metadata", batch,
                                                               FileKind.QUERY_METADATA)),
                               source=loc.url,
                               created_at=datetime.datetime.now(datetime.UTC).isoformat(
                                   timespec="seconds"),
                               files=tuple(files))
        document = _document(sp)
        sp = replace(sp, digest=hashlib.sha256(document).hexdigest())
        staged.publish(SAVEPOINT_FILE, document)  # last: it is complete
    except BaseException:
        staged.abandon()
        raise
    problems = check_savepoint(target, target_options, expect_digest=sp.digest)
    if problems:
        raise CorruptCheckpointError(f"the savepoint written to {target} does not read back: "
                                     + "; ".join(problems[:5]))
    return sp


def _read_source(loc: CheckpointLocation, rel: str, batch: int,
                 kind: FileKind = FileKind.DATA) -> bytes:
    try:
        return loc.read_file(rel, f"batch {batch}", kind)
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
                   storage_options: dict[str, Any] | None = None) -> SavepointManifest:
    """What the savepoint at ``location`` records; an error if it is not one (or was not
    finished). The function form of ``rockstate.Savepoint(location, storage_options)
    .manifest()``."""
    loc = open_location(location, storage_options)
    return _parse_savepoint(loc, _listing_bytes(loc))


def _listing_bytes(loc: CheckpointLocation) -> bytes:
    """``_savepoint.json``'s bytes, bounded and read through no symbolic link."""
    try:
        return loc.read_path(loc.path(SAVEPOINT_FILE), "the savepoint's file list",
                             FileKind.DOCUMENT)
    except FileNotFoundError:
        raise RockstateError(f"{loc.url} is not a savepoint: it has no {SAVEPOINT_FILE} (a "
                             "savepoint still being written has none yet).") from None


def _whole(value: object, what: str) -> int:
    """A JSON integer (not a bool, a float or text); ValueError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} is {str(value)[:40]!r}, not a whole number")
    return value


def _listed_file(entry: Any, fmt: int, where: str) -> SavepointFile:
    """One entry of ``files``: its path checked first (a path that leaves the savepoint is
    named as such), then its size and the hash its format records."""
    path = relative_path(entry["path"], where)
    size = _whole(entry["size"], "size")
    if fmt >= 2:
        digest = entry["sha256"]
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise ValueError(f"sha256 {str(digest)[:80]!r} is not 64 lowercase hex digits")
        return SavepointFile(path, size, sha256=digest)
    crc32 = _whole(entry["crc32"], "crc32")
    if not 0 <= crc32 < 1 << 32:
        raise ValueError(f"crc32 {crc32} is not a CRC32")
    return SavepointFile(path, size, crc32=crc32)


def _parse_savepoint(loc: CheckpointLocation, data: bytes) -> SavepointManifest:
    """``_savepoint.json``'s bytes as a :class:`SavepointManifest` (its digest theirs); damage is
    CorruptCheckpointError naming the file."""
    path = loc.path(SAVEPOINT_FILE)
    doc = load_json(data, path, "the savepoint's file list")
    try:
        fmt = _whole(doc.get("savepointFormat", 0), "savepointFormat")
        if fmt > SAVEPOINT_FORMAT:
            raise RockstateError(f"{loc.url} was written by a newer rockstate (savepoint format "
                                 f"{fmt}); upgrade rockstate to read it.")
        files = tuple(_listed_file(f, fmt, f"{path} (files[{i}])")
                      for i, f in enumerate(doc["files"]))
        sp = SavepointManifest(url=loc.url, batch_id=_whole(doc["batchId"], "batchId"),
                               state_version=_whole(doc["stateVersion"], "stateVersion"),
                               query_id=str(doc["queryId"]), source=str(doc["source"]),
                               created_at=str(doc["createdAt"]), files=files,
                               digest=hashlib.sha256(data).hexdigest())
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise CorruptCheckpointError(f"{path} is damaged ({e!r} missing or wrong); restore the "
                                     "savepoint from a trusted copy.") from None
    seen: set[str] = set()
    for f in files:
        if f.path in seen or f.size < 0 or f.path == SAVEPOINT_FILE:
            raise CorruptCheckpointError(f"{path} lists {f.path!r} twice, with a negative size "
                                         "or as itself; it is damaged.")
        seen.add(f.path)
    if sp.state_version != version_of_batch(sp.batch_id):
        raise CorruptCheckpointError(f"{path}: state version {sp.state_version} is not batch "
                                     f"{sp.batch_id} + 1; it is damaged.")
    return sp


def is_savepoint(location: CheckpointLocation) -> bool:
    return bool(location.fs.exists(location.path(SAVEPOINT_FILE)))


def expected_digest(value: str) -> str:
    """A digest given to check a savepoint with, as ``SavepointManifest.digest`` spells it; a
    value that is no SHA-256 is a mistake to name, not a mismatch."""
    digest = value.strip().lower()
    if not _SHA256.match(digest):
        raise RockstateError(
            f"the expected digest {value[:80]!r} is not a SHA-256 (64 hex digits); give the "
            "digest `rockstate savepoint` printed (SavepointManifest.digest), or the output of "
            f"`sha256sum {SAVEPOINT_FILE}` taken when the savepoint was made.")
    return digest


def check_savepoint(location: str | CheckpointLocation,
                    storage_options: dict[str, Any] | None = None, *,
                    expect_digest: str | None = None) -> list[str]:
    """Problems of the savepoint at ``location`` (none: sound): its ``_savepoint.json`` is the
    one with ``expect_digest`` (the ``digest`` ``savepoint`` returned), when given; every file
    it lists is there with its size and SHA-256 (format 1: CRC32); every store's version
    holds all it needs; and every store the query needs is there (Spark's offset log records
    its partitions, its operator metadata each operator's stores)."""
    return read_checked(open_location(location, storage_options), expect_digest)[1]


def read_checked(loc: CheckpointLocation, expect_digest: str | None = None
                 ) -> tuple[SavepointManifest | None, list[str]]:
    """The savepoint, read once, and its problems (the savepoint is None when its listing is
    not the expected one: nothing it says is trusted then)."""
    expected = None if expect_digest is None else expected_digest(expect_digest)
    data = _listing_bytes(loc)
    found = hashlib.sha256(data).hexdigest()
    if expected is not None and found != expected:
        return None, [f"{SAVEPOINT_FILE}: its SHA-256 is {found}, not the expected digest "
                      f"{expected}: the savepoint was changed since it was taken (or the "
                      "digest is another savepoint's); use a savepoint that matches the "
                      "digest it was taken with, or take a new one"]
    sp = _parse_savepoint(loc, data)
    return sp, _problems(loc, sp)


def _problems(loc: CheckpointLocation, sp: SavepointManifest) -> list[str]:
    problems = []
    crc32s: dict[str, int] = {}  # each file's CRC32 as read: the stores' manifests record them
    for f in sp.files:
        try:
            data = loc.read_path(loc.path(f.path), f"the savepoint of batch {sp.batch_id}",
                                 FileKind.DATA)
        except FileNotFoundError:
            problems.append(f"{f.path}: missing")
            continue
        except CorruptCheckpointError as e:
            problems.append(f"{f.path}: {e}")
            continue
        problem = f.problem(data)
        if problem:
            problems.append(f"{f.path}: {problem} (damaged or changed)")
            continue
        crc32s[f.path] = zlib.crc32(data)
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
            elif expected is not None and (
                    problem := _listed_problem(loc, f, crc32s[f.path], expected)):
                # The listing agrees with the file, but not with the store's own manifest:
                # the file was replaced and the listing written to match it.
                problems.append(f"{rel}/{p}: {problem} (damaged)")
    return problems + _missing_state(loc, sp, set(listed))


def _missing_state(loc: CheckpointLocation, sp: SavepointManifest, listed: set[str]
                   ) -> list[str]:
    """The stores the query needs that the savepoint holds no state of. Spark's offset log
    entry of the savepoint's batch records how many partitions it ran on, its operator
    metadata which stores each operator keeps (and its commit log, in checkpoint format 2,
    which operators ran): every operator, partition and store must have its state version,
    or the restored query would start that state empty."""
    batch, version = sp.batch_id, sp.state_version
    entry = f"offsets/{batch}"
    if entry not in listed:
        return [f"{entry}: not listed: the savepoint's batch has no offset log entry, which "
                "records the partitions the query ran on; the savepoint is damaged (take it "
                "again)"]
    try:
        count = recorded_partitions(loc, batch)
    except CorruptCheckpointError as e:
        return [f"{entry}: {e}"]
    operators = set(loc.operators())
    try:
        operators |= set(loc.recorded_state_ids(batch))
    except CorruptCheckpointError as e:
        return [f"commits/{batch}: {e}"]
    # (operator, partition, store) that hold state version `version`: rockstate's stores
    # (their files are checked above), Spark's own providers' version files.
    held = {(s.operator, s.partition, s.name) for s in loc.stores()}
    spark_files: dict[tuple[int, int, str], list[str]] = {}
    for path in listed:
        m = _PARTITION_FILE.match(path)
        if m:
            key = (int(m.group(1)), int(m.group(2)), m.group(3) or DEFAULT_STORE)
            spark_files.setdefault(key, []).append(m.group(4))
    held |= {key for key, names in spark_files.items()
             if any(version in numbered(names, suffix) for suffix in _SPARK_VERSION_SUFFIXES)}
    problems = []
    for op in sorted(operators):
        try:
            meta = read_operator_metadata(loc, op, batch)
        except CorruptCheckpointError as e:
            problems.append(f"state/{op}/_metadata: {e}")
            continue
        found = {(p, n) for o, p, n in held if o == op}
        if meta is not None and meta.stores:
            # The offset log's count, else the metadata's (a query that records none).
            wanted = {i.name: count if count is not None else i.partitions for i in meta.stores}
            named = f"Spark's operator metadata {posixpath.relpath(meta.where, loc.root)}"
        else:  # no metadata (Spark 3, or the schema check off): the stores found
            wanted = dict.fromkeys({n for _, n in found} or {DEFAULT_STORE}, count)
            named = "the operator's other partitions"
        ran_on = f"offsets/{batch}" if count is not None else named
        for name, partitions in sorted(wanted.items()):
            if partitions is None:
                continue  # nothing records how many there are
            for part in missing_partitions(partitions, {p for p, n in found if n == name}):
                folder = f"state/{op}/{part}" + ("" if name == DEFAULT_STORE else f"/{name}")
                problems.append(
                    f"{folder}: missing: operator {op} partition {part} store {name} has no "
                    f"state version {version} in the savepoint, yet batch {batch} ran on "
                    f"{partitions} partitions ({ran_on}) and {named} names store {name}; the "
                    "savepoint lost state (restoring it would start that store empty): take "
                    "it again from the query's checkpoint")
    return problems


def _listed_problem(loc: CheckpointLocation, f: SavepointFile, crc32: int,
                    expected: Recorded) -> str | None:
    """How a savepoint's file (read with ``crc32``) differs from its store's manifest: by its
    size and CRC32, or for a pack by its members' bytes (read again)."""
    if not expected.members:
        return None if (f.size, crc32) == (expected.size, expected.crc32) else (
            f"{f.size} bytes with CRC32 {crc32}, the store's manifest records "
            f"{expected.size} bytes with CRC32 {expected.crc32}")
    return expected.problem(loc.read_file(f.path, "the savepoint's check"))


def restore(savepoint_url: str, checkpoint: str, *, new_query_id: bool = True,
            storage_options: dict[str, Any] | None = None,
            target_options: dict[str, Any] | None = None,
            expect_digest: str | None = None) -> str:
    """Makes ``checkpoint`` (new, or an empty directory) a copy of the savepoint, checked
    first, and returns it: start the query with it as its checkpointLocation. The savepoint
    is only read. ``new_query_id``: the restored query gets an id of its own (Spark's
    ``metadata``), so it can run beside the original and other forks. ``expect_digest``: the
    ``digest`` ``savepoint`` returned; a savepoint whose ``_savepoint.json`` has another is
    refused, nothing published.

    The function form of ``rockstate.Savepoint(savepoint_url, storage_options)
    .restore(checkpoint, storage_options=target_options, ...)``, which returns the new
    location's handle."""
    src = open_location(savepoint_url, storage_options)
    sp, problems = read_checked(src, expect_digest)  # the listing read once: the one copied
    if problems or sp is None:
        raise CorruptCheckpointError(f"the savepoint {savepoint_url} is damaged: "
                                     + "; ".join(problems[:5]))
    listed = {f.path for f in sp.files}
    if "metadata" not in listed:
        raise CorruptCheckpointError(f"the savepoint {savepoint_url} lists no Spark metadata "
                                     "file; it is damaged.")
    staged = StagedTarget(checkpoint, f"{src.url}#{sp.batch_id}", "restore", target_options)
    try:
        for f in sp.files:
            data = src.read_file(f.path, f"the savepoint of batch {sp.batch_id}")
            if f.problem(data):
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


def _document(sp: SavepointManifest) -> bytes:
    return (json.dumps({
        "savepointFormat": SAVEPOINT_FORMAT, "batchId": sp.batch_id,
        "stateVersion": sp.state_version, "queryId": sp.query_id, "source": sp.source,
        "createdAt": sp.created_at,
        "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in sp.files],
    }, indent=1) + "\n").encode()


def _query_id(metadata: bytes) -> str:
    try:
        doc = load_json(metadata.split(b"\n")[0], "metadata", "the checkpoint's")
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
            raise ValueError("no query id")
        return doc["id"]
    except (CorruptCheckpointError, ValueError):
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
            if not is_number(part):
                continue
            expected.update(_partition_files(loc, f"{base}/{part}", rockstate_stores,
                                             version_of_batch(batch)))
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
