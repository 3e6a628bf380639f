"""What a savepoint of a checkpoint at one committed batch holds: the files restarting the query
after that batch needs, and nothing after it, with what a rockstate store's manifests record of
each (its size and CRC32, or a pack's members)."""

from __future__ import annotations

import posixpath
import re

from rockstate.checkpoint.location import CheckpointLocation, StoreRef
from rockstate.checkpoint.model import version_of_batch
from rockstate.checkpoint.offsets import log_entries
from rockstate.checkpoint.paths import is_number
from rockstate.errors import CorruptCheckpointError, RockstateError
from rockstate.tools.savepoint_manifest import Recorded

_LEADING_NUMBER = re.compile(r"^(\d+)")


def last_committed_batch(loc: CheckpointLocation) -> int:
    """The newest batch with a commit log entry; an error when there is none."""
    commits = log_entries(loc.fs, loc.path("commits"))
    if not commits:
        raise RockstateError(f"{loc.url} has no committed batch (commits/ is empty); run the "
                             "query until a batch commits, then take the savepoint.")
    return max(commits)

def files_of(loc: CheckpointLocation, batch: int) -> dict[str, Recorded | None]:
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
        out.update({posixpath.join(rel, f): e for f, e in store_files(loc, s, version).items()})
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

def store_files(loc: CheckpointLocation, store: StoreRef, version: int
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

def _number(name: str) -> int | None:
    m = _LEADING_NUMBER.match(name)
    return int(m.group(1)) if m else None
