"""Reading what Spark itself recorded in a query's offset log."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.json_text import load_json
from rockstate.checkpoint.location import CheckpointLocation
from rockstate.checkpoint.paths import is_number
from rockstate.errors import CorruptCheckpointError, RockstateError


def log_entries(fs: Any, path: str) -> dict[int, str]:
    """Spark's batch-numbered log entries (``<n>``, ``<n>.compact``) in ``path``: n -> name.
    Hidden names (a writer's temporary files) are not entries."""
    if not fs.isdir(path):
        return {}
    out = {}
    for p in fs.ls(path, detail=False):
        name = posixpath.basename(p.rstrip("/"))
        if not name.startswith(".") and is_number(name.split(".")[0]):
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
        doc = load_json(lines[1], "an offset log entry", "batch metadata of")
    except CorruptCheckpointError:
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
    The function form of ``rockstate.Checkpoint(location, storage_options)
    .recorded_confs(batch_id)``.
    """
    loc = _location(checkpoint_location, storage_options or {})
    offsets = loc.path("offsets")
    batches = sorted(log_entries(loc.fs, offsets))
    if not batches:
        raise RockstateError(
            f"rockstate: no offset log under {offsets}; has the query run a batch yet?"
        )
    chosen = batches[-1] if batch_id is None else batch_id
    path = posixpath.join(offsets, str(chosen))
    try:
        data = loc.read_path(path, "the recorded confs", FileKind.LOG_ENTRY)
    except FileNotFoundError:
        raise RockstateError(f"rockstate: {path} is missing; batch {chosen} has no offset log "
                             "entry.") from None
    return entry_confs(entry_lines(data, path))


def _location(location: str | Path | CheckpointLocation,
              storage_options: dict[str, Any]) -> CheckpointLocation:
    if isinstance(location, CheckpointLocation):
        return location
    return CheckpointLocation(str(location), **storage_options)


def provider_class(checkpoint_location: str | Path | CheckpointLocation,
                   storage_options: dict[str, Any] | None = None) -> str:
    """The state store provider class a query's checkpoint is bound to. The function form of
    ``rockstate.Checkpoint(location, storage_options).provider_class()``."""
    confs = recorded_confs(checkpoint_location, storage_options=storage_options)
    key = "spark.sql.streaming.stateStore.providerClass"
    if key not in confs:
        where = getattr(checkpoint_location, "url", checkpoint_location)
        raise RockstateError(f"rockstate: the offset log of {where} names no {key}")
    return confs[key]
