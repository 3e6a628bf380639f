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
from dataclasses import dataclass
from typing import Any

from rockstate.checkpoint.location import CheckpointLocation, StoreRef
from rockstate.checkpoint.model import version_of_batch
from rockstate.checkpoint.paths import is_number
from rockstate.checkpoint.state_folders import RETIRED, ROCKSTATE_DIRS, SPARK_FILE
from rockstate.checkpoint.writable_location import WritableLocation
from rockstate.errors import RockstateError


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
    location as Spark was given it): each operator's folder listed once."""
    loc = _opened(checkpoint, storage_options)
    version = version_of_batch(batch_id)
    files: list[str] = []
    versions: set[int] = set()
    ssts = 0
    for op in loc.operators():
        op_dir = loc.path("state", str(op))
        needed = {posixpath.relpath(posixpath.join(store.path, f), op_dir)
                  for store in loc.stores(op) for f in _needed(loc, store, version)}
        for path in _all_files(loc, op_dir):
            relative = posixpath.relpath(path, op_dir)
            parts = relative.split("/")
            spark = SPARK_FILE.match(parts[-1])
            if parts[0] == RETIRED:
                files.append(path)
            elif not is_number(parts[0]):  # _metadata, _stateSchema: no rows
                continue
            elif spark:
                if int(spark.group(1)) < version:
                    files.append(path)
                    versions.add(int(spark.group(1)))
            elif "SSTs" in parts[1:-1]:
                ssts += 1
            elif ROCKSTATE_DIRS & set(parts[1:-1]) and relative not in needed \
                    and _sidecar_of(relative) not in needed:
                files.append(path)
                if "versions" in parts[1:-1]:
                    versions.add(_version_in_name(path))
    versions = {v for v in versions if 0 <= v < version}
    checkpoints = tuple(c.version for c in loc.checkpoints() if c.version < version)
    relative = sorted(posixpath.relpath(f, loc.root) for f in files)
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


def _needed(loc: CheckpointLocation, store: StoreRef, version: int) -> set[str]:
    """The files of a rockstate store (relative to it) that ``version`` needs: its version
    file, what its lineage links, its snapshot's files; none when the store has no such
    version (a store the query no longer has)."""
    if version not in loc.versions(store):
        return set()
    entry = loc.landed(store, version)
    manifest = loc.manifest(store, version, entry)
    needed = {entry.path, *manifest.references()}
    if manifest.snapshot is not None:
        snap = loc.snapshot_manifest(store, manifest.snapshot.path, f"version {version}")
        needed.update(f.path for f in snap.files)
    return needed


def _sidecar_of(path: str) -> str:
    """For a checksum sidecar (``.<name>.crc``), the file it checks; else ``""``."""
    name = posixpath.basename(path)
    if name.startswith(".") and name.endswith(".crc"):
        return posixpath.join(posixpath.dirname(path), name[1:-4])
    return ""


def _version_in_name(path: str) -> int:
    head = posixpath.basename(path).split("-", 1)[0]
    return int(head) if is_number(head) else -1
