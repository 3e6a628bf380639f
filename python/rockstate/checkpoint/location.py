"""A query's checkpoint location, read with fsspec: no Spark, any file system fsspec knows.

``CheckpointLocation("s3://bucket/query")`` (or a local path, ``file://``, ``memory://``...)
lists the stateful operators, their stores and partitions, and each store's versions,
snapshots and changelogs as docs/checkpoint-format.md lays them out.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import Any

import fsspec

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.format import (
    SnapshotManifest,
    VersionManifest,
    parse_snapshot_manifest,
    parse_version_file,
    parse_version_manifest,
)
from rockstate.checkpoint.json_text import load_json
from rockstate.checkpoint.local_read import read_local_file
from rockstate.checkpoint.model import (
    CheckpointRecord,
    batch_of_version,
    parse_abort_record,
    parse_checkpoint_metadata,
    version_of_batch,
)
from rockstate.checkpoint.paths import is_number, join_within, relative_path
from rockstate.checkpoint.state_folders import RETIRED
from rockstate.errors import CorruptCheckpointError, MissingCheckpointFileError

DEFAULT_STORE = "default"
# The order of a stream-stream join's four stores in Spark's per-partition state id arrays.
JOIN_STORE_ORDER = ("left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues",
                    "right-keyWithIndexToValue")


@dataclass(frozen=True, order=True)
class StoreRef:
    """One state store: an operator's partition, and the store's name within it."""

    operator: int
    partition: int
    name: str
    path: str  # the store's directory, in the location's file system

    def __str__(self) -> str:
        return f"operator {self.operator} partition {self.partition} store {self.name}"


def open_location(location: str | os.PathLike | CheckpointLocation,
                  storage_options: dict[str, Any] | None = None) -> CheckpointLocation:
    """What every offline entry point takes: a path or fsspec URL (``storage_options`` go to
    its file system: credentials, endpoint), or a :class:`CheckpointLocation` opened with its
    own options."""
    if isinstance(location, CheckpointLocation):
        if storage_options:
            raise TypeError("storage_options apply to a path or URL; a CheckpointLocation "
                            "carries its own (CheckpointLocation(url, **storage_options)).")
        return location
    return CheckpointLocation(os.fspath(location), **(storage_options or {}))


class CheckpointLocation:
    """A streaming query's checkpoint location, opened read-only through fsspec."""

    def __init__(self, url: str, **storage_options: Any) -> None:
        self.url = url
        self.fs, root = fsspec.core.url_to_fs(url, **storage_options)
        protocols = (self.fs.protocol,) if isinstance(self.fs.protocol, str) else \
            tuple(self.fs.protocol)
        self._local = "file" in protocols
        # The user named the root: links on the way to it are theirs to make. Links inside it
        # are the checkpoint's, and never followed.
        self.root = os.path.realpath(root) if self._local else root.rstrip("/") or root
        # Spark's commit log entries read so far (they never change once written).
        self._recorded: dict[int, dict[int, list[list[str]]]] = {}
        if not self.fs.isdir(self.root):
            raise CorruptCheckpointError(
                f"{url} is not a directory; give the query's checkpointLocation.")

    @property
    def local(self) -> bool:
        """Whether the location is on this machine's disk (not an object store)."""
        return self._local

    def path(self, *parts: str) -> str:
        """A path inside the location, in its file system (for listings: reads go through
        :meth:`read_file`, which checks that the path stays inside)."""
        return posixpath.join(self.root, *parts)

    def subfolders(self, path: str) -> list[str]:
        """The names of the folders in ``path`` (a path in the location's file system)."""
        if not self.fs.isdir(path):
            return []
        return sorted(posixpath.basename(p.rstrip("/"))
                      for p in self.fs.ls(path, detail=False) if self.fs.isdir(p))

    def operators(self) -> list[int]:
        """Ids of the stateful operators that have state here."""
        return sorted(int(d) for d in self.subfolders(self.path("state")) if is_number(d))

    def stores(self, operator: int | None = None) -> list[StoreRef]:
        """rockstate stores (directories with ``versions/`` or, written by rockstate before
        format 3, ``manifests/``), optionally of one operator."""
        out = []
        for op in self.operators() if operator is None else [operator]:
            for part in self.subfolders(self.path("state", str(op))):
                if not is_number(part):
                    continue
                base = self.path("state", str(op), part)
                if self._is_store(base):
                    out.append(StoreRef(op, int(part), DEFAULT_STORE, base))
                for name in self.subfolders(base):
                    sub = posixpath.join(base, name)
                    if self._is_store(sub):
                        out.append(StoreRef(op, int(part), name, sub))
        return sorted(out)

    def _is_store(self, path: str) -> bool:
        return any(self.fs.isdir(posixpath.join(path, d)) for d in ("versions", "manifests"))

    def read(self, store: StoreRef, relative: str, needed_by: str,
             byte_range: tuple[int, int] | None = None, kind: FileKind = FileKind.DATA) -> bytes:
        """A file of a store (only ``byte_range``, start and end, of it when given: a pack
        member's, one ranged read; a pack cut short gives fewer bytes, which the caller's size
        check names); a missing one is an error naming what needs it."""
        return self._cat(join_within(store.path, relative, f"{needed_by} of {store}"),
                         f"{needed_by} of {store}", kind, byte_range)

    def read_file(self, relative: str, needed_by: str, kind: FileKind = FileKind.DATA) -> bytes:
        """A file of the checkpoint, by its path inside it (checked to stay inside it)."""
        return self._cat(join_within(self.root, relative, needed_by), needed_by, kind)

    def read_path(self, path: str, needed_by: str, kind: FileKind) -> bytes:
        """A file of the checkpoint by its path in the location's file system (one a listing
        gave, or :meth:`path` made); FileNotFoundError when it is missing, so a caller that
        expects it absent at times can tell."""
        return self._bounded(path, needed_by, kind, None)

    def _cat(self, path: str, needed_by: str, kind: FileKind,
             byte_range: tuple[int, int] | None = None) -> bytes:
        """A file's bytes (those of ``byte_range``, start and end, when given); missing is
        CorruptCheckpointError naming what needs it."""
        try:
            return self._bounded(path, needed_by, kind, byte_range)
        except FileNotFoundError:
            raise MissingCheckpointFileError(
                f"{path}, needed by {needed_by}, is missing from the checkpoint location."
            ) from None

    def _bounded(self, path: str, needed_by: str, kind: FileKind,
                 byte_range: tuple[int, int] | None) -> bytes:
        """The one way a file of the location is read: on the local disk no symbolic link at
        any component and only a regular file (``local_read``); anywhere, at most
        ``kind.limit`` bytes."""
        relative = self._inside(path, needed_by)
        if self._local:
            return read_local_file(self.root, relative, kind.limit, needed_by, byte_range)
        # Unranged: one byte past the limit, so a larger file is seen without being fetched.
        start, end = byte_range if byte_range is not None else (0, kind.limit + 1)
        if byte_range is not None and end - start > kind.limit:
            raise CorruptCheckpointError(
                f"{path}, needed by {needed_by}, is asked for {end - start} bytes, more than "
                f"such a file may hold ({kind.limit}); the manifest naming it is damaged.")
        try:
            data = self.fs.cat_file(path, start=start, end=end)
        except (IsADirectoryError, PermissionError, NotADirectoryError) as e:
            raise CorruptCheckpointError(
                f"{path}, needed by {needed_by}, cannot be read as a file ({e.strerror}).") \
                from None
        if len(data) > kind.limit:
            raise CorruptCheckpointError(
                f"{path}, needed by {needed_by}, holds more than such a file may "
                f"({kind.limit} bytes). Restore it from a trusted copy; nothing was read from "
                "it.")
        return data

    def _inside(self, path: str, needed_by: str) -> str:
        """``path`` relative to the root; a path outside it (one a file named) is refused."""
        relative = posixpath.relpath(path, self.root)
        if relative == "." or relative == ".." or relative.startswith("../"):
            raise CorruptCheckpointError(
                f"{path}, needed by {needed_by}, is outside the checkpoint location {self.url}; "
                "a checkpoint's files stay inside it. Restore it from a trusted copy.")
        return relative_path(relative, needed_by)

    def _unlinked(self, path: str, needed_by: str) -> str:
        """``path``, a folder to list; on the local disk a symbolic link at any of its
        components below the root is refused, as a read through it would be (a listing through
        a link would name files that are elsewhere)."""
        if self._local:
            at = self.root
            for part in self._inside(path, needed_by).split("/"):
                at = os.path.join(at, part)
                if os.path.islink(at):
                    raise CorruptCheckpointError(
                        f"{path}, needed by {needed_by}, goes through the symbolic link {at}; "
                        "rockstate follows no link in a checkpoint. Replace the link with the "
                        "folder itself.")
        return path

    def _listing(self, store: StoreRef, sub: str, suffix: str) -> list[str]:
        path = self._unlinked(posixpath.join(store.path, sub), str(store))
        if not self.fs.isdir(path):
            return []
        return sorted(posixpath.basename(p) for p in self.fs.ls(path, detail=False)
                      if p.endswith(suffix) and not posixpath.basename(p).startswith("."))

    def version_entries(self, store: StoreRef) -> list[VersionEntry]:
        """Every version file and format 1/2 manifest present (several per version: attempts),
        by version."""
        out = []
        for sub, suffix in (("versions", ".rsv"), ("manifests", ".json")):
            path = self._unlinked(posixpath.join(store.path, sub), str(store))
            if not self.fs.isdir(path):
                continue
            for info in self.fs.ls(path, detail=True):
                name = posixpath.basename(info["name"])
                head = name[:-len(suffix)] if sub == "manifests" else name.split("-", 1)[0]
                if name.endswith(suffix) and not name.startswith(".") and is_number(head) \
                        and info.get("type") != "directory":
                    out.append(VersionEntry(int(head), f"{sub}/{name}", _mtime(info),
                                            int(info["size"])))
        return sorted(out, key=lambda e: (e.version, e.mtime, e.path))

    def versions(self, store: StoreRef) -> list[int]:
        """Committed versions (those with a version file or manifest), ascending."""
        return sorted({e.version for e in self.version_entries(store)})

    def recorded_state_ids(self, batch_id: int) -> dict[int, list[list[str]]]:
        """The state checkpoint ids Spark's commit log records for ``batch_id`` (checkpoint
        format 2): operator -> one list of store ids per partition; empty for format 1."""
        if batch_id not in self._recorded:
            path = self.path("commits", str(batch_id))
            try:
                lines = self.read_path(path, f"batch {batch_id}", FileKind.LOG_ENTRY).split(
                    b"\n")
            except FileNotFoundError:
                lines = []
            doc = load_json(lines[1], path, "commit log entry") if len(lines) > 1 else {}
            if not isinstance(doc, dict):
                raise CorruptCheckpointError(
                    f"commit log entry {path} is damaged (its second line is not a JSON "
                    "object); restore it from a trusted copy.")
            ids = doc.get("stateUniqueIds")
            self._recorded[batch_id] = _state_ids(ids, path)
        return self._recorded[batch_id]

    def landed(self, store: StoreRef, version: int,
               entries: list[VersionEntry] | None = None) -> VersionEntry:
        """The attempt of ``version`` that counts: the one Spark's commit log recorded
        (checkpoint format 2), else the one the storage wrote last (``_written_last``).
        ``entries`` is the store's listing, when the caller has it already."""
        listing = self.version_entries(store) if entries is None else entries
        attempts = [e for e in listing if e.version == version]
        parts = self.recorded_state_ids(batch_of_version(version)).get(store.operator, [])
        ids = parts[store.partition] if store.partition < len(parts) else []
        index = 0 if len(ids) == 1 else (
            JOIN_STORE_ORDER.index(store.name) if store.name in JOIN_STORE_ORDER else -1)
        if 0 <= index < len(ids):
            path = f"versions/{version}-{ids[index]}.rsv"
            found = next((e for e in attempts if e.path == path), None)
            if found is None:
                raise CorruptCheckpointError(
                    f"version {version} of {store}: Spark's commit log records the state id "
                    f"{ids[index]}, but {path} is missing from the checkpoint location.")
            return found
        found = _written_last(attempts)
        if found is None:
            raise CorruptCheckpointError(
                f"version {version} of {store} has no version file nor manifest in the "
                "checkpoint location.")
        return found

    def manifest(self, store: StoreRef, version: int,
                 entry: VersionEntry | None = None) -> VersionManifest:
        """A version's manifest, its lineage complete: a version file is read whole and
        checked; a format 1/2 manifest is read as it is."""
        e = entry or self.landed(store, version)
        data = self.read(store, e.path, f"version {version}",
                         kind=FileKind.DOCUMENT if e.is_legacy else FileKind.DATA)
        where = posixpath.join(store.path, e.path)
        if e.is_legacy:
            return parse_version_manifest(data, where)
        return parse_version_file(data, e.path, where)

    def snapshots(self, store: StoreRef) -> list[str]:
        """Snapshot manifests (``snapshots/<version>-<id>.json``) relative to the store, oldest
        version first."""
        names = self._listing(store, "snapshots", ".json")
        return [f"snapshots/{n}" for n in sorted(names, key=_snapshot_order)]

    def snapshot_manifest(self, store: StoreRef, relative: str, needed_by: str
                          ) -> SnapshotManifest:
        return parse_snapshot_manifest(self.read(store, relative, needed_by,
                                                 kind=FileKind.DOCUMENT),
                                       posixpath.join(store.path, relative))

    def changelogs(self, store: StoreRef) -> list[str]:
        return [f"changelog/{n}" for n in self._listing(store, "changelog", ".log")]

    def data_files(self, store: StoreRef) -> dict[str, int]:
        """Every data file (sst/, meta/, changelog/) with its size; checksum sidecars skipped."""
        out = {}
        for sub in ("sst", "meta", "changelog"):
            top = self._unlinked(posixpath.join(store.path, sub), str(store))
            if not self.fs.isdir(top):
                continue
            for path, info in self.fs.find(top, detail=True).items():
                name = posixpath.basename(path)
                if name.endswith(".crc") and name.startswith("."):
                    continue
                out[posixpath.relpath(path, store.path)] = int(info["size"])
        return out

    def store_dir_at(self, store_dir: str, version: int) -> str:
        """Where the store a completed checkpoint of state ``version`` recorded at
        ``store_dir`` (``state/<op>/<partition>[/<name>]``) is now. A rewrite that shrank the
        query moved partition folders it no longer uses to
        ``state/<op>/_retired/<batch>-<partition>`` (``batch``: the last batch that used it),
        and a migration away from rockstate moved its stores' folders to
        ``state/<op>/_retired/<batch>-<partition>-rockstate``; a later one may have made a new
        store under the old name."""
        parts = store_dir.split("/")
        if len(parts) < 3 or parts[0] != "state" or not is_number(parts[2]):
            return store_dir
        retired = self.path("state", parts[1], RETIRED)
        folders = {}  # last batch that used it -> retired folder
        for n in self.subfolders(retired):
            batch, _, rest = n.partition("-")
            if is_number(batch) and rest in (parts[2], f"{parts[2]}-rockstate"):
                folders[int(batch)] = n
        used_until = [b for b in folders if version <= version_of_batch(b)]
        if not used_until:
            return store_dir
        return "/".join(["state", parts[1], RETIRED, folders[min(used_until)], *parts[3:]])

    def checkpoints(self) -> list[CheckpointRecord]:
        """Completed checkpoints (``rockstate/checkpoints/<version>/_metadata``), oldest first."""
        top = self.path("rockstate", "checkpoints")
        out = []
        for name in self.subfolders(top):
            path = posixpath.join(top, name, "_metadata")
            if is_number(name) and self.fs.exists(path):
                out.append(parse_checkpoint_metadata(
                    self.read_path(path, "the checkpoint history", FileKind.DOCUMENT), path))
        return sorted(out, key=lambda c: c.version)

    def aborted_checkpoints(self) -> list[CheckpointRecord]:
        """The newest aborted checkpoints the driver recorded, oldest first."""
        top = self.path("rockstate", "checkpoints", "aborted")
        if not self.fs.isdir(top):
            return []
        out = []
        for path in self.fs.ls(top, detail=False):
            name = posixpath.basename(path)
            if name.endswith(".json") and is_number(name[:-5]):
                out.append(parse_abort_record(
                    self.read_path(path, "the checkpoint history", FileKind.DOCUMENT), path))
        return sorted(out, key=lambda c: c.version)

    def summary(self) -> dict:
        """What ``rockstate inspect`` shows: every store with its versions and snapshots."""
        stores = []
        for s in self.stores():
            versions = self.versions(s)
            latest = self.manifest(s, versions[-1]) if versions else None
            stores.append({
                "operator": s.operator, "partition": s.partition, "store": s.name,
                "versions": versions,
                "snapshots": [int(posixpath.basename(p).split("-")[0])
                              for p in self.snapshots(s)],  # in version order
                "changelogs": len(self.changelogs(s)),
                "columnFamilies": sorted(latest.column_families) if latest else [],
                "numKeys": latest.num_keys if latest else 0,
            })
        checkpoints = [{
            "version": c.version, "batchId": c.batch_id, "stores": len(c.stores),
            "numKeys": c.num_keys, "stateBytes": c.state_bytes,
            "bytesUploaded": c.bytes_uploaded, "completedAtMs": c.completed_at_ms,
        } for c in self.checkpoints()]
        return {"location": self.url, "operators": self.operators(), "stores": stores,
                "checkpoints": checkpoints}


@dataclass(frozen=True)
class VersionEntry:
    """A version file (``versions/<version>-<id>.rsv``) or format 1/2 manifest present."""

    version: int
    path: str  # relative to the store
    mtime: float  # seconds, as the file system reports it
    size: int

    @property
    def is_legacy(self) -> bool:
        return self.path.startswith("manifests/")


def _state_ids(ids: object, where: str) -> dict[int, list[list[str]]]:
    """A commit log entry's ``stateUniqueIds`` (operator -> per partition, the store ids),
    each part checked for its type: they become file names."""
    if ids is None:
        return {}
    ok = isinstance(ids, dict) and all(
        is_number(op) and isinstance(parts, list) and all(
            isinstance(p, list) and all(isinstance(i, str) for i in p) for p in parts)
        for op, parts in ids.items())
    if not ok:
        raise CorruptCheckpointError(
            f"commit log entry {where} is damaged (its stateUniqueIds is not operator -> "
            "lists of store ids); restore it from a trusted copy.")
    return {int(op): parts for op, parts in ids.items()}  # type: ignore[union-attr]


def _written_last(attempts: list[VersionEntry]) -> VersionEntry | None:
    """Of several attempts of one version, the one the storage wrote last (then the greatest
    name): the JVM's rule (``VersionEntry.landed``), so every reader picks the same."""
    return max(attempts, key=lambda e: (e.mtime, e.path), default=None)


def _mtime(info: dict) -> float:
    """A listing entry's modification time in seconds, whatever fsspec backend listed it."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        if isinstance(value, str):
            from datetime import datetime

            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        return float(value)
    return 0.0


def snapshot_version(path: str) -> int:
    """The version a snapshot manifest's name (``<version>-<id>.json``, with or without its
    folder) carries; -1 for a name without one."""
    head = posixpath.basename(path).split("-", 1)[0]
    return int(head) if is_number(head) else -1


def _snapshot_order(name: str) -> tuple[int, str]:
    """Sort key of a snapshot manifest name: its version as a number, then the name."""
    return (snapshot_version(name), name)
