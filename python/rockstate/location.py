"""A query's checkpoint location, read with fsspec: no Spark, any file system fsspec knows.

``CheckpointLocation("s3://bucket/query")`` (or a local path, ``file://``, ``memory://``...)
lists the stateful operators, their stores and partitions, and each store's versions,
snapshots and changelogs as docs/checkpoint-format.md lays them out.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

import fsspec

from rockstate.checkpoints import Checkpoint, parse_abort_record, parse_checkpoint_metadata
from rockstate.errors import CorruptCheckpointError
from rockstate.format import (
    SnapshotManifest,
    VersionManifest,
    parse_snapshot_manifest,
    parse_version_manifest,
)

DEFAULT_STORE = "default"


@dataclass(frozen=True, order=True)
class StoreRef:
    """One state store: an operator's partition, and the store's name within it."""

    operator: int
    partition: int
    name: str
    path: str  # the store's directory, in the location's file system

    def __str__(self) -> str:
        return f"operator {self.operator} partition {self.partition} store {self.name}"


class CheckpointLocation:
    """A streaming query's checkpoint location, opened read-only through fsspec."""

    def __init__(self, url: str, **storage_options: Any) -> None:
        self.url = url
        self.fs, self.root = fsspec.core.url_to_fs(url, **storage_options)
        if not self.fs.isdir(self.root):
            raise CorruptCheckpointError(
                f"{url} is not a directory; give the query's checkpointLocation.")

    def _path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts)

    def _dirs(self, path: str) -> list[str]:
        if not self.fs.isdir(path):
            return []
        return sorted(posixpath.basename(p.rstrip("/"))
                      for p in self.fs.ls(path, detail=False) if self.fs.isdir(p))

    def operators(self) -> list[int]:
        """Ids of the stateful operators that have state here."""
        return sorted(int(d) for d in self._dirs(self._path("state")) if d.isdigit())

    def stores(self, operator: int | None = None) -> list[StoreRef]:
        """rockstate stores (directories with ``manifests/``), optionally of one operator."""
        out = []
        for op in self.operators() if operator is None else [operator]:
            for part in self._dirs(self._path("state", str(op))):
                if not part.isdigit():
                    continue
                base = self._path("state", str(op), part)
                if self.fs.isdir(posixpath.join(base, "manifests")):
                    out.append(StoreRef(op, int(part), DEFAULT_STORE, base))
                for name in self._dirs(base):
                    sub = posixpath.join(base, name)
                    if self.fs.isdir(posixpath.join(sub, "manifests")):
                        out.append(StoreRef(op, int(part), name, sub))
        return sorted(out)

    def read(self, store: StoreRef, relative: str, needed_by: str) -> bytes:
        """A file of a store; a missing one is an error naming what needs it."""
        path = posixpath.join(store.path, relative)
        try:
            return self.fs.cat_file(path)
        except FileNotFoundError:
            raise CorruptCheckpointError(
                f"{path}, needed by {needed_by} of {store}, is missing from the checkpoint "
                "location.") from None

    def _listing(self, store: StoreRef, sub: str, suffix: str) -> list[str]:
        path = posixpath.join(store.path, sub)
        if not self.fs.isdir(path):
            return []
        return sorted(posixpath.basename(p) for p in self.fs.ls(path, detail=False)
                      if p.endswith(suffix) and not posixpath.basename(p).startswith("."))

    def versions(self, store: StoreRef) -> list[int]:
        """Committed versions (those with a manifest), ascending."""
        names = self._listing(store, "manifests", ".json")
        return sorted(int(n[:-5]) for n in names if n[:-5].isdigit())

    def manifest(self, store: StoreRef, version: int) -> VersionManifest:
        rel = f"manifests/{version}.json"
        return parse_version_manifest(self.read(store, rel, f"version {version}"),
                                      posixpath.join(store.path, rel))

    def snapshots(self, store: StoreRef) -> list[str]:
        """Snapshot manifests (``snapshots/<version>-<id>.json``) relative to the store, oldest
        version first."""
        names = self._listing(store, "snapshots", ".json")
        return [f"snapshots/{n}" for n in sorted(names, key=_snapshot_order)]

    def snapshot_manifest(self, store: StoreRef, relative: str, needed_by: str
                          ) -> SnapshotManifest:
        return parse_snapshot_manifest(self.read(store, relative, needed_by),
                                       posixpath.join(store.path, relative))

    def changelogs(self, store: StoreRef) -> list[str]:
        return [f"changelog/{n}" for n in self._listing(store, "changelog", ".log")]

    def data_files(self, store: StoreRef) -> dict[str, int]:
        """Every data file (sst/, meta/, changelog/) with its size; checksum sidecars skipped."""
        out = {}
        for sub in ("sst", "meta", "changelog"):
            top = posixpath.join(store.path, sub)
            if not self.fs.isdir(top):
                continue
            for path, info in self.fs.find(top, detail=True).items():
                name = posixpath.basename(path)
                if name.endswith(".crc") and name.startswith("."):
                    continue
                out[posixpath.relpath(path, store.path)] = int(info["size"])
        return out

    def checkpoints(self) -> list[Checkpoint]:
        """Completed checkpoints (``rockstate/checkpoints/<version>/_metadata``), oldest first."""
        top = self._path("rockstate", "checkpoints")
        out = []
        for name in self._dirs(top):
            path = posixpath.join(top, name, "_metadata")
            if name.isdigit() and self.fs.exists(path):
                out.append(parse_checkpoint_metadata(self.fs.cat_file(path), path))
        return sorted(out, key=lambda c: c.version)

    def aborted_checkpoints(self) -> list[Checkpoint]:
        """The newest aborted checkpoints the driver recorded, oldest first."""
        top = self._path("rockstate", "checkpoints", "aborted")
        if not self.fs.isdir(top):
            return []
        out = []
        for path in self.fs.ls(top, detail=False):
            name = posixpath.basename(path)
            if name.endswith(".json") and name[:-5].isdigit():
                out.append(parse_abort_record(self.fs.cat_file(path), path))
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


def _snapshot_order(name: str) -> tuple[int, str]:
    """Sort key of a snapshot manifest name: its version as a number, then the name."""
    head = name.split("-", 1)[0]
    return (int(head) if head.isdigit() else -1, name)
