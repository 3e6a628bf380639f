"""Reading what Spark itself recorded in a query's offset log."""

from __future__ import annotations

import json
import posixpath
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fsspec

from rockstate.errors import CorruptCheckpointError, RockstateError

if TYPE_CHECKING:
    from rockstate.checkpoint.location import CheckpointLocation


def log_entries(fs: Any, path: str) -> dict[int, str]:
    """Spark's batch-numbered log entries (``<n>``, ``<n>.compact``) in ``path``: n -> name.
    Hidden names (a writer's temporary files) are not entries."""
    if not fs.isdir(path):
        return {}
    out = {}
    for p in fs.ls(path, detail=False):
        name = posixpath.basename(p.rstrip("/"))
        if not name.startswith(".") and name.split(".")[0].isdigit():
            out[int(name.split(".")[0])] = name
    return out


def entry_lines(data: bytes, path: str) -> list[str]:
    """An offset log entry's lines: the log format version ("v1"), the batch metadata (JSON,
    with the confs), then one line per source."""
    try:
        lines = data.decode().split("\n")
    except UnicodeDecodeError:
        lines = []
    if len(lines) < 2 or not lines[0].startswith("v"):
        raise CorruptCheckpointError(f"rockstate: {path} is not a Spark offset log file (it "
                                     "is damaged)")
    return lines


def entry_confs(lines: list[str]) -> dict[str, str]:
    """The session confs an offset log entry (its ``entry_lines``) recorded."""
    try:
        doc = json.loads(lines[1])
    except ValueError:
        doc = None
    conf = doc.get("conf", {}) if isinstance(doc, dict) else None
    if not isinstance(conf, dict):
        raise CorruptCheckpointError("rockstate: an offset log entry's batch metadata is "
                                     "damaged (not JSON with a conf object)")
    return {str(k): str(v) for k, v in conf.items()}


def recorded_confs(checkpoint_location: str | Path | CheckpointLocation,
                   batch_id: int | None = None,
                   storage_options: dict[str, Any] | None = None) -> dict[str, str]:
    """The session confs Spark wrote into the offset log of ``batch_id`` (default: the latest),
    read from a local path or any fsspec URL (``storage_options`` go to its file system), or
    through an open :class:`~rockstate.checkpoint.location.CheckpointLocation` (its own options).

    Spark records the state store provider there when a query starts and keeps using that
    provider on restart, so this is the ground truth of which provider a query runs on.
    """
    fs, root = _file_system(checkpoint_location, storage_options or {})
    offsets = posixpath.join(root, "offsets")
    batches = sorted(log_entries(fs, offsets))
    if not batches:
        raise RockstateError(
            f"rockstate: no offset log under {offsets}; has the query run a batch yet?"
        )
    chosen = batches[-1] if batch_id is None else batch_id
    path = posixpath.join(offsets, str(chosen))
    return entry_confs(entry_lines(fs.cat_file(path), path))


def _file_system(location: str | Path | CheckpointLocation,
                 storage_options: dict[str, Any]) -> tuple[Any, str]:
    from rockstate.checkpoint.location import CheckpointLocation

    if isinstance(location, CheckpointLocation):
        return location.fs, location.root
    return fsspec.core.url_to_fs(str(location), **storage_options)


def provider_class(checkpoint_location: str | Path | CheckpointLocation,
                   storage_options: dict[str, Any] | None = None) -> str:
    """The state store provider class a query's checkpoint is bound to."""
    confs = recorded_confs(checkpoint_location, storage_options=storage_options)
    key = "spark.sql.streaming.stateStore.providerClass"
    if key not in confs:
        where = getattr(checkpoint_location, "url", checkpoint_location)
        raise RockstateError(f"rockstate: the offset log of {where} names no {key}")
    return confs[key]
