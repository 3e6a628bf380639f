"""``verify``: check a checkpoint location against docs/checkpoint-format.md, without Spark.

Every version manifest, snapshot manifest and completed checkpoint's metadata present must
parse; every snapshot a completed checkpoint names must be present; every file one of them
references must be present with the size and CRC32 its manifest records; every changelog must
hold whole records and end with its end record. Each problem names the file and the versions
that need it.
"""

from __future__ import annotations

import itertools
import posixpath
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.format import (
    SnapshotManifest,
    changelog_records,
    changes_of,
    family_prefix,
)
from rockstate.checkpoint.location import CheckpointLocation, StoreRef, VersionEntry, open_location
from rockstate.checkpoint.model import parse_checkpoint_metadata
from rockstate.checkpoint.paths import is_number
from rockstate.checkpoint.rockstate_store_reader import stage_snapshot
from rockstate.checkpoint.staged_snapshot import staged_snapshot
from rockstate.encoding import row_checksum
from rockstate.errors import CorruptCheckpointError, MissingCheckpointFileError, RockstateError
from rockstate.tools.savepoint_check import read_checked
from rockstate.tools.savepoint_manifest import is_savepoint


@dataclass(frozen=True)
class Problem:
    store: str
    path: str
    what: str
    versions: tuple[int, ...] = ()

    def __str__(self) -> str:
        needed = f" (needed by version {', '.join(map(str, self.versions))})" \
            if self.versions else ""
        return f"{self.store}: {self.path}: {self.what}{needed}"


@dataclass
class VerifyReport:
    location: str
    stores: int = 0
    versions: int = 0
    checkpoints: int = 0
    files_checked: int = 0
    bytes_checked: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {"location": self.location, "ok": self.ok, "stores": self.stores,
                "versions": self.versions, "checkpoints": self.checkpoints,
                "filesChecked": self.files_checked,
                "bytesChecked": self.bytes_checked,
                "problems": [{"store": p.store, "path": p.path, "what": p.what,
                              "versions": list(p.versions)} for p in self.problems]}


def verify(location: str | CheckpointLocation,
           progress: Callable[[str], None] | None = None,
           storage_options: dict[str, Any] | None = None,
           expect_digest: str | None = None) -> VerifyReport:
    """Checks a checkpoint location or a savepoint. ``expect_digest`` (savepoints only): the
    ``digest`` ``savepoint`` returned; a ``_savepoint.json`` with another is a problem.

    The function form of ``rockstate.Checkpoint(location, storage_options).verify()`` and of
    ``rockstate.Savepoint(location, storage_options).verify(expect_digest)``."""
    loc = open_location(location, storage_options)
    report = VerifyReport(loc.url)
    if is_savepoint(loc):
        return _verify_savepoint(loc, report, expect_digest)
    if expect_digest is not None:
        raise RockstateError(f"{loc.url} is not a savepoint (it has no _savepoint.json), so "
                             "there is no digest to compare; leave out the expected digest "
                             "to verify a checkpoint location.")
    for store in loc.stores():
        if progress:
            progress(str(store))
        _verify_store(loc, store, report)
    _verify_checkpoints(loc, report)
    if report.stores == 0:
        report.problems.append(Problem(loc.url, "state/", "no rockstate store found; is this "
                                       "the checkpointLocation of a query run on rockstate?"))
    return report


def _verify_savepoint(loc: CheckpointLocation, report: VerifyReport,
                      expect_digest: str | None = None) -> VerifyReport:
    """A savepoint holds one state version per store: every file it lists must read back with
    its size and SHA-256 (format 1: CRC32), each store's version must find all it needs among
    them, and every store the query needs must be there (``check_savepoint``)."""
    sp, problems = read_checked(loc, expect_digest)
    if sp is not None:  # None: its listing is not the expected one, and nothing was checked
        report.stores = len(loc.stores())
        report.versions = report.stores
        report.files_checked = len(sp.files)
        report.bytes_checked = sp.bytes
    where = "savepoint" if sp is None else f"savepoint of batch {sp.batch_id}"
    report.problems += [Problem(where, p.split(":", 1)[0], p.split(": ", 1)[-1])
                        for p in problems]
    return report


def _verify_checkpoints(loc: CheckpointLocation, report: VerifyReport) -> None:
    """Every completed checkpoint's metadata parses and names snapshots that are present (the
    store checks then cover the files of those snapshots)."""
    top = posixpath.join(loc.root, "rockstate", "checkpoints")
    if not loc.fs.isdir(top):
        return
    for entry in sorted(loc.fs.ls(top, detail=False)):
        name = posixpath.basename(entry.rstrip("/"))
        meta = posixpath.join(top, name, "_metadata")
        if not is_number(name) or not loc.fs.exists(meta):
            continue
        report.checkpoints += 1
        where = f"checkpoint {name}"
        try:
            checkpoint = parse_checkpoint_metadata(
                loc.read_path(meta, where, FileKind.DOCUMENT), meta)
        except CorruptCheckpointError as e:
            report.problems.append(Problem(where, f"rockstate/checkpoints/{name}/_metadata",
                                           str(e)))
            continue
        for ack in checkpoint.stores:
            store_dir = loc.store_dir_at(ack.store_dir, checkpoint.version)
            path = posixpath.join(loc.root, store_dir, ack.snapshot_manifest)
            if not loc.fs.exists(path):
                report.problems.append(Problem(
                    where, f"{store_dir}/{ack.snapshot_manifest}",
                    f"missing: the snapshot of operator {ack.operator} partition "
                    f"{ack.partition} store {ack.store} this completed checkpoint needs",
                    (checkpoint.version,)))


# How often one store is read again when it changed while it was checked.
MAX_READS = 5


def _verify_store(loc: CheckpointLocation, store: StoreRef, report: VerifyReport) -> None:
    """Checks one store; a check counts only if the store's version files and snapshot
    manifests were the same before and after it. A stopped query's executors still run
    maintenance, which may expire a version (its files with it) while it is being checked:
    that check is redone, never reported as missing files."""
    report.stores += 1

    def listing() -> tuple[list[VersionEntry], list[str]]:
        for sub in ("versions", "manifests", "snapshots"):  # an object store caches listings
            loc.fs.invalidate_cache(f"{store.path}/{sub}")
        return loc.version_entries(store), loc.snapshots(store)

    def paths(listed: tuple[list[VersionEntry], list[str]]) -> tuple[list[str], list[str]]:
        return [e.path for e in listed[0]], listed[1]

    for _ in range(MAX_READS):
        before = listing()
        checked = VerifyReport(report.location)
        _check_store(loc, store, checked, *before)
        if paths(listing()) == paths(before):
            report.versions += checked.versions
            report.files_checked += checked.files_checked
            report.bytes_checked += checked.bytes_checked
            report.problems.extend(checked.problems)
            return
    report.problems.append(Problem(
        str(store), "versions/", f"the store changed during each of {MAX_READS} checks; stop "
        "the query (and let its executors' maintenance finish) before verifying"))


def _check_store(loc: CheckpointLocation, store: StoreRef, report: VerifyReport,
                 entries: list[VersionEntry], snapshot_paths: list[str]) -> None:
    """One check of a store whose version entries and snapshot manifests were listed."""
    name = str(store)
    # (path, a pack member's byte range or None) -> (size, crc32, kind, versions needing it)
    needed: dict[tuple[str, tuple[int, int] | None], tuple[int, int, str, set[int]]] = {}
    snapshots: dict[str, set[int]] = {p: set() for p in snapshot_paths}
    # Changelogs and snapshots of stores with row checksums -> how many bytes of each key are
    # its family id.
    checksummed: dict[str, int] = {}

    def need(path: str, size: int, crc: int, kind: str, versions: set[int],
             byte_range: tuple[int, int] | None = None) -> None:
        needed.setdefault((path, byte_range), (size, crc, kind, set()))[3].update(versions)

    for v in sorted({e.version for e in entries}):
        report.versions += 1
        try:
            entry = loc.landed(store, v, entries)
        except CorruptCheckpointError as e:  # the attempt Spark recorded is missing
            report.problems.append(Problem(name, f"versions/{v}-*.rsv", str(e), (v,)))
            continue
        try:
            # A version file is read and checked whole here (trailer and CRC32).
            m = loc.manifest(store, v, entry)
        except CorruptCheckpointError as e:
            report.problems.append(Problem(name, entry.path, str(e), (v,)))
            continue
        for f in m.files:  # format 1
            need(f.path, f.size, f.crc32, f.kind, {v})
        key_from = len(family_prefix(0)) if m.use_column_families else 0
        for c in m.changelogs:
            need(c.path, c.size, c.crc32, "changelog", {v})
            if m.row_checksums:
                checksummed[c.path] = key_from
        if m.snapshot:
            snapshots.setdefault(m.snapshot.path, set()).add(v)
            if m.row_checksums:
                checksummed[m.snapshot.path] = key_from
    manifests: dict[str, SnapshotManifest] = {}
    for path, versions in sorted(snapshots.items()):
        try:
            s = loc.snapshot_manifest(store, path, "verify")
            s.meta_files(path)  # format 3: its packed small files, checked and unpacked
        except CorruptCheckpointError as e:
            report.problems.append(Problem(name, path, str(e), tuple(sorted(versions))))
            continue
        manifests[path] = s
        for f in s.files:
            need(f.path, f.size, f.crc32, f.kind, versions, f.byte_range)
    damaged = set()
    # By path, then range (a path both plain and packed, in two damaged manifests, sorts too).
    for key, (size, crc, kind, versions) in sorted(
            needed.items(), key=lambda item: (item[0][0], item[0][1] or (-1, -1))):
        path, byte_range = key
        problem = _check_file(loc, store, path, size, crc, kind, checksummed.get(path),
                              byte_range)
        report.files_checked += 1
        report.bytes_checked += size
        if problem:
            damaged.add(key)
            report.problems.append(Problem(name, path, problem, tuple(sorted(versions))))
    for path, s in manifests.items():
        versions = snapshots[path]
        if versions and not any((f.path, f.byte_range) in damaged for f in s.files):
            problem = _open_snapshot(loc, store, s, path, min(versions), checksummed.get(path))
            if problem:
                report.problems.append(Problem(name, path, problem, tuple(sorted(versions))))


def _open_snapshot(loc: CheckpointLocation, store: StoreRef, s: SnapshotManifest, path: str,
                   version: int, row_checksums_from: int | None = None) -> str | None:
    """Whether RocksDB opens the snapshot as its manifest lays it out and reads every row: a
    ``files`` list that lacks an SST RocksDB's own MANIFEST names passes every size and CRC
    check, and only an open finds it. With ``row_checksums_from`` (the store's values carry
    row checksums; the key bytes before it are a family id) every row's checksum is checked:
    a row damaged before its file was written passes the file's CRC32."""
    where = posixpath.join(store.path, path)
    try:
        with staged_snapshot(lambda into: stage_snapshot(loc, store, s, path, into, version),
                             where, "rockstate-verify-") as (_, items):
            if row_checksums_from is None:
                for _ in items:  # every row read: RocksDB checks its blocks
                    pass
            else:
                while chunk := list(itertools.islice(items, ROWS_PER_CHECK)):
                    row_checksum.open_lists([k[row_checksums_from:] for k, _ in chunk],
                                            [v for _, v in chunk], where)
    except CorruptCheckpointError as e:
        return str(e)
    return None


# Snapshot rows checked at a time: verify's memory, whatever the snapshot's size.
ROWS_PER_CHECK = 8192


def _check_file(loc: CheckpointLocation, store: StoreRef, path: str, size: int, crc: int,
                kind: str, row_checksums_from: int | None = None,
                byte_range: tuple[int, int] | None = None) -> str | None:
    """What is wrong with a file (or with a pack member's ``byte_range`` of it), or None. A
    changelog is parsed record by record; with ``row_checksums_from`` (its store's values carry
    row checksums; the key bytes before it are a family id) every value it writes is checked
    against its checksum."""
    member = f"the SST at offset {byte_range[0]}: " if byte_range else ""
    try:
        data = loc.read(store, path, "verify", byte_range)
    except MissingCheckpointFileError:
        return "missing"
    except CorruptCheckpointError as e:  # there, but not a file it may read
        return str(e)
    if len(data) != size:
        return f"{member}size {len(data)}, the manifest says {size} (truncated or replaced)"
    found = zlib.crc32(data)
    if found != crc:
        return f"{member}CRC32 {found}, the manifest says {crc} (damaged)"
    try:
        if kind == "changelog":
            records = changelog_records(changes_of(data, path, path), path)
            if row_checksums_from is None:
                for _ in records:
                    pass
            else:
                written = [(k, v) for op, k, v in records if op in ("put", "merge")]
                row_checksum.open_lists([k[row_checksums_from:] for k, _ in written],
                                        [v for _, v in written], path)
    except CorruptCheckpointError as e:
        return str(e)
    return None
