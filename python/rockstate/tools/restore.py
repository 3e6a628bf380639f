"""``restore(savepoint, checkpoint)``: a new checkpoint location made a copy of a savepoint,
checked first (Flink's NO_CLAIM mode: the savepoint is only read, so one savepoint can start
any number of forks). Everything is read and written with fsspec."""

from __future__ import annotations

import json
import os
import posixpath
import re
import uuid
from typing import Any

from rockstate.checkpoint.location import open_location
from rockstate.checkpoint.operator_metadata import parse_operator_metadata
from rockstate.checkpoint.paths import relative_path
from rockstate.errors import CorruptCheckpointError
from rockstate.tools.savepoint_check import read_checked
from rockstate.tools.staged_target import StagedTarget

_OPERATOR_METADATA_V2 = re.compile(r"^state/\d+/_metadata/v2/\d+$")
# Where a schema file's path, as Spark recorded it, stops being the checkpoint's root.
_SCHEMA_RELATIVE = re.compile(r"(?:^|/)(state/\d+/_stateSchema/[^:]+)$")


def restore(savepoint_url: str, checkpoint: str, *, new_query_id: bool = True,
            storage_options: dict[str, Any] | None = None,
            target_options: dict[str, Any] | None = None,
            expect_digest: str | None = None) -> str:
    """Makes ``checkpoint`` (new, or an empty directory) a copy of the savepoint, checked
    first, and returns it: start the query with it as its checkpointLocation. The savepoint
    is only read. ``new_query_id``: the restored query gets an id of its own (Spark's
    ``metadata``), so it can run beside the original and other forks. ``expect_digest``: the
    ``digest`` ``savepoint`` returned; a savepoint whose ``_savepoint.json`` has another is
    refused, nothing published.

    The function form of ``rockstate.Savepoint(savepoint_url, storage_options)
    .restore(checkpoint, storage_options=target_options, ...)``, which returns the new
    location's handle."""
    src = open_location(savepoint_url, storage_options)
    sp, problems = read_checked(src, expect_digest)  # the listing read once: the one copied
    if problems or sp is None:
        raise CorruptCheckpointError(f"the savepoint {savepoint_url} is damaged: "
                                     + "; ".join(problems[:5]))
    listed = {f.path for f in sp.files}
    if "metadata" not in listed:
        raise CorruptCheckpointError(f"the savepoint {savepoint_url} lists no Spark metadata "
                                     "file; it is damaged.")
    staged = StagedTarget(checkpoint, f"{src.url}#{sp.batch_id}", "restore", target_options)
    try:
        for f in sp.files:
            data = src.read_file(f.path, f"the savepoint of batch {sp.batch_id}")
            if f.problem(data):
                raise CorruptCheckpointError(f"{src.path(f.path)} changed while it was "
                                             "restored; the savepoint must not be modified.")
            if f.path == "metadata" and new_query_id:
                # Stays the same when an interrupted restore into an object store resumes.
                data = (json.dumps({"id": str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                         staged.resumed_id))}) + "\n").encode()
            elif _OPERATOR_METADATA_V2.match(f.path):
                data = _relocated_schema_paths(data, checkpoint, f.path, listed)
            if f.path == "metadata":
                metadata = data  # written last: Spark reads a location without it as new
                continue
            staged.write(f.path, data)
        staged.publish("metadata", metadata)
    except BaseException:
        staged.abandon()
        raise
    return checkpoint

def _relocated_schema_paths(data: bytes, checkpoint: str, where: str,
                            listed: set[str]) -> bytes:
    """Spark's operator metadata v2 (transformWithState) names its state schema files by
    absolute path: point them into the restored location, or the fork would read the
    original's files (and fail once it is gone). The path inside the checkpoint is what
    follows ``state/<op>/_stateSchema/`` (the checkpoint's own root may hold ``/state/``
    too), and it must be a file the savepoint holds."""
    meta = parse_operator_metadata(data, f"{where} in the savepoint")
    relocated = {}
    for info in meta.stores:
        for p in info.schema_paths:
            m = _SCHEMA_RELATIVE.search(p)
            relative = m.group(1) if m else None
            if relative is None or relative_path(relative, where) not in listed:
                raise CorruptCheckpointError(
                    f"{where} in the savepoint names the state schema file {p!r}, which "
                    "is not one of the savepoint's files; it is damaged.")
            relocated[p] = _spark_path(checkpoint, relative, p)
    return meta.encode(schema_paths=relocated)

def _spark_path(checkpoint: str, relative: str, recorded: str) -> str:
    """``relative`` under ``checkpoint`` as Spark writes a path: a local one as ``file:/...``,
    a remote one with the scheme the recorded path had (``s3a`` for fsspec's ``s3``)."""
    scheme, sep, rest = checkpoint.partition("://")
    if not sep:
        return "file:" + posixpath.join(os.path.abspath(checkpoint), relative)
    if scheme == "file":
        return "file:" + posixpath.join(rest, relative)
    recorded_scheme = recorded.partition(":")[0]
    return f"{recorded_scheme if recorded_scheme != 'file' else scheme}://" + posixpath.join(
        rest, relative)
