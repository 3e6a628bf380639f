"""Reading what Spark itself recorded in a query's offset log."""

from __future__ import annotations

import json
import posixpath
from pathlib import Path
from typing import Any

import fsspec

from rockstate.errors import RockstateError


def recorded_confs(checkpoint_location: str | Path, batch_id: int | None = None,
                   **storage_options: Any) -> dict[str, str]:
    """The session confs Spark wrote into the offset log of ``batch_id`` (default: the latest),
    read from a local path or any fsspec URL (``storage_options`` go to its file system).

    Spark records the state store provider there when a query starts and keeps using that
    provider on restart, so this is the ground truth of which provider a query runs on.
    """
    fs, root = fsspec.core.url_to_fs(str(checkpoint_location), **storage_options)
    offsets = posixpath.join(root, "offsets")
    names = [posixpath.basename(p) for p in fs.ls(offsets, detail=False)] \
        if fs.isdir(offsets) else []
    batches = sorted(int(n) for n in names if n.isdigit())
    if not batches:
        raise RockstateError(
            f"rockstate: no offset log under {offsets}; has the query run a batch yet?"
        )
    chosen = batches[-1] if batch_id is None else batch_id
    path = posixpath.join(offsets, str(chosen))
    lines = fs.cat_file(path).decode().splitlines()
    # Line 0 is the log format version ("v1"), line 1 the batch metadata with the confs.
    if len(lines) < 2 or not lines[0].startswith("v"):
        raise RockstateError(f"rockstate: {path} is not a Spark offset log file")
    meta = json.loads(lines[1])
    return dict(meta.get("conf", {}))


def provider_class(checkpoint_location: str | Path, **storage_options: Any) -> str:
    """The state store provider class a query's checkpoint is bound to."""
    confs = recorded_confs(checkpoint_location, **storage_options)
    key = "spark.sql.streaming.stateStore.providerClass"
    if key not in confs:
        raise RockstateError(f"rockstate: the offset log of {checkpoint_location} names no {key}")
    return confs[key]
