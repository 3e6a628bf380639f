"""A savepoint checked against the truth, not against itself: every file it lists is there with
its size and hash, every rockstate store's version holds what its own manifests say it needs,
and every store the query needs is there (Spark's offset log and operator metadata say which).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import zlib
from typing import Any

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.location import DEFAULT_STORE, CheckpointLocation, open_location
from rockstate.checkpoint.operator_metadata import read_operator_metadata
from rockstate.checkpoint.partitions import missing_partitions, recorded_partitions
from rockstate.checkpoint.spark_rocksdb import numbered
from rockstate.errors import CorruptCheckpointError
from rockstate.tools.savepoint_files import store_files
from rockstate.tools.savepoint_manifest import (
    SAVEPOINT_FILE,
    Recorded,
    SavepointFile,
    SavepointManifest,
    expected_digest,
    listing_bytes,
    parse_listing,
)

# A partition's state in Spark's own providers: HDFS's version files, RocksDB's.
_SPARK_VERSION_SUFFIXES = (".delta", ".snapshot", ".zip", ".changelog")
# A file directly in a partition folder (the default store) or in a store's folder in it.
_PARTITION_FILE = re.compile(r"^state/([0-9]+)/([0-9]+)/(?:([^/]+)/)?([^/]+)$")


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
    data = listing_bytes(loc)
    found = hashlib.sha256(data).hexdigest()
    if expected is not None and found != expected:
        return None, [f"{SAVEPOINT_FILE}: its SHA-256 is {found}, not the expected digest "
                      f"{expected}: the savepoint was changed since it was taken (or the "
                      "digest is another savepoint's); use a savepoint that matches the "
                      "digest it was taken with, or take a new one"]
    sp = parse_listing(loc, data)
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
            needed = store_files(loc, store, sp.state_version)
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
