"""The state a checkpoint still holds from before a batch, and its removal.

A forget (``rockstate.tools.forget``) writes the state without the forgotten keys as the
version of a new batch; the versions before it still hold their rows until Spark's retention
drops them (``spark.sql.streaming.minBatchesToRetain`` batches later) or ``purge`` removes
them now. What holds older state:

- in a rockstate store, every file the new version does not need: other version files, other
  snapshot manifests and the SSTs, packs and changelogs only they name;
- files of Spark's providers with an older version in their name (``<v>.delta``,
  ``<v>.zip``, ``<v>.changelog``, ...), and Spark's RocksDB provider's ``SSTs/``, which its
  maintenance drops once no retained version names them;
- partition folders a rewrite moved aside (``state/<op>/_retired/``);
- rockstate's completed checkpoints of older versions (``rockstate/checkpoints/<v>/``).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from rockstate.checkpoint.location import CheckpointLocation, StoreRef
from rockstate.checkpoint.model import version_of_batch
from rockstate.checkpoint.paths import is_number
from rockstate.checkpoint.writable_location import WritableLocation
from rockstate.errors import RockstateError

# A rockstate store's folders, and the numbered files Spark's providers write.
_ROCKSTATE_DIRS = ("versions", "snapshots", "sst", "meta", "manifests", "changelog")
_SPARK_FILE = re.compile(r"^\.?(\d+)(_[0-9a-f-]+)?\.(zip|changelog|delta|snapshot)(\.crc)?$")
_RETIRED = "_retired"


@dataclass(frozen=True)
class OlderState:
    """What still holds state of versions before ``version`` (paths relative to the
    checkpoint location)."""

    version: int  # the first state version that does not hold it
    files: tuple[str, ...]  # rockstate's and Spark's files, and retired folders' files
    versions: tuple[int, ...]  # the older versions some store still has
    checkpoints: tuple[int, ...]  # rockstate's completed checkpoints of older versions
    spark_ssts: int  # files in Spark's RocksDB provider's SSTs/, dropped by its maintenance

    def describe(self) -> str:
        if not (self.files or self.checkpoints or self.spark_ssts):
            return f"no file holds state of a version before {self.version}"
        span = (f"versions {self.versions[0]}-{self.versions[-1]}" if len(self.versions) > 1
                else f"version {self.versions[0]}" if self.versions else "older versions")
        n = len(self.checkpoints)
        extra = (f", {n} completed checkpoint{'s' if n > 1 else ''}" if n else "") \
            + (f", {self.spark_ssts} files in Spark's SSTs/ (its maintenance drops them)"
               if self.spark_ssts else "")
        return f"{len(self.files)} files of {span} still hold older state{extra}"


def older_state(checkpoint: str, batch_id: int,
                storage_options: dict[str, Any] | None = None) -> OlderState:
    """What holds state from before batch ``batch_id``'s version, at ``checkpoint`` (the
    location as Spark was given it)."""
    loc = _opened(checkpoint, storage_options)
    version = version_of_batch(batch_id)
    root = loc.root
    files: list[str] = []
    versions: set[int] = set()
    ssts = 0
    for op in loc.operators():
        op_dir = loc.path("state", str(op))
        retired = posixpath.join(op_dir, _RETIRED)
        if loc.fs.isdir(retired):
            files.extend(_all_files(loc, retired))
        for part in loc.subfolders(op_dir):
            if not is_number(part):
                continue
            part_dir = posixpath.join(op_dir, part)
            for path in _all_files(loc, part_dir):
                m = _SPARK_FILE.match(posixpath.basename(path))
                if m and int(m.group(1)) < version:
                    files.append(path)
                    versions.add(int(m.group(1)))
                elif "/SSTs/" in path[len(part_dir):]:
                    ssts += 1
        for store in loc.stores(op):
            held = _held_in_store(loc, store, version)
            files.extend(held)
            versions.update(_version_in_name(p) for p in held if "/versions/" in p)
    versions = {v for v in versions if 0 <= v < version}
    checkpoints = tuple(c.version for c in loc.checkpoints() if c.version < version)
    relative = sorted(posixpath.relpath(f, root) for f in files)
    return OlderState(version, tuple(relative), tuple(sorted(versions)), checkpoints, ssts)


def purge(checkpoint: str, older: OlderState,
          storage_options: dict[str, Any] | None = None) -> int:
    """Removes what ``older`` lists: completed checkpoints first (metadata, then the folder,
    as the coordinator drops them), then the files; returns the files removed. The query
    must be stopped, and the version that replaces them written (a forget's batch)."""
    loc = _opened(checkpoint, storage_options)
    if older.spark_ssts:
        raise RockstateError(
            f"rockstate: {checkpoint} runs on Spark's RocksDB provider, whose SSTs/ rockstate "
            "cannot tell apart; its older versions leave with Spark's retention "
            "(spark.sql.streaming.minBatchesToRetain batches). Nothing was removed.")
    removed = 0
    for v in older.checkpoints:
        top = loc.path("rockstate", "checkpoints", str(v))
        meta = posixpath.join(top, "_metadata")
        if loc.fs.exists(meta):
            loc.fs.rm(meta)
        if loc.fs.exists(top):
            loc.fs.rm(top, recursive=True)
    for relative in older.files:
        path = loc.path(*relative.split("/"))
        if loc.fs.exists(path):
            loc.fs.rm(path)
            removed += 1
    return removed


def _opened(checkpoint: str, storage_options: dict[str, Any] | None) -> CheckpointLocation:
    """The location as Spark names it (``file:``, ``s3a://``), opened; listings fresh (a
    Spark job has just written there)."""
    loc = WritableLocation(checkpoint, storage_options or {}).loc
    loc.fs.invalidate_cache()
    return loc


def _all_files(loc: CheckpointLocation, top: str) -> list[str]:
    return sorted(p for p, info in loc.fs.find(top, detail=True).items()
                  if info.get("type") != "directory")


def _held_in_store(loc: CheckpointLocation, store: StoreRef, version: int) -> list[str]:
    """A rockstate store's files that ``version`` does not need (all of them, when the store
    has no such version: a store the query no longer has)."""
    needed: set[str] = set()
    if version in loc.versions(store):
        entry = loc.landed(store, version)
        manifest = loc.manifest(store, version, entry)
        needed.add(entry.path)
        needed.update(manifest.references())
        if manifest.snapshot is not None:
            snap = loc.snapshot_manifest(store, manifest.snapshot.path, f"version {version}")
            needed.update(f.path for f in snap.files)
    held = []
    for sub in _ROCKSTATE_DIRS:
        top = posixpath.join(store.path, sub)
        if not loc.fs.isdir(top):
            continue
        for path in _all_files(loc, top):
            relative = posixpath.relpath(path, store.path)
            name = posixpath.basename(relative)
            sidecar = name.startswith(".") and name.endswith(".crc")
            plain = posixpath.join(posixpath.dirname(relative), name[1:-4]) if sidecar else ""
            if relative not in needed and plain not in needed:
                held.append(path)
    return held


def _version_in_name(path: str) -> int:
    head = posixpath.basename(path).split("-", 1)[0]
    return int(head) if is_number(head) else -1
