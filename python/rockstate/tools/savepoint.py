"""Savepoints: a self-contained, relocatable copy of a streaming query at one committed batch.

``savepoint(checkpoint, target)`` copies what restarting the query after batch ``B`` (its
newest committed batch) needs, and nothing after it (``savepoint_files``):

- Spark's ``metadata``, ``offsets/0..B`` and ``commits/0..B``, the sources' logs up to ``B``;
- per stateful operator, Spark's operator metadata and state schemas written up to ``B``;
- per rockstate store, the state version batch ``B`` committed and only the files it needs:
  its version file and lineage, its snapshot manifest and the snapshot's SSTs;
- per store of Spark's own providers, every file of versions up to that one (and the shared
  SSTs of its RocksDB provider).

Then it writes ``_savepoint.json`` last (``savepoint_manifest``), listing every file with its
size and SHA-256, and checks what it wrote (``savepoint_check``). A savepoint is never changed
afterwards: ``restore`` (``rockstate.tools.restore``) copies it to a new checkpoint location.
Everything is read and written with fsspec, so source and target may be on different file
systems.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.json_text import load_json
from rockstate.checkpoint.location import CheckpointLocation, open_location
from rockstate.checkpoint.model import version_of_batch
from rockstate.errors import CorruptCheckpointError
from rockstate.tools.savepoint_check import check_savepoint
from rockstate.tools.savepoint_files import files_of, last_committed_batch
from rockstate.tools.savepoint_manifest import (
    SAVEPOINT_FILE,
    Recorded,
    SavepointFile,
    SavepointManifest,
    listing_document,
)
from rockstate.tools.staged_target import StagedTarget


def checkpoint_of(query: Any) -> str:
    """A PySpark ``StreamingQuery``'s checkpoint location, as an fsspec URL."""
    root = str(query._jsq.streamingQuery().resolvedCheckpointRoot())
    if root.startswith("file:") and not root.startswith("file://"):
        return root[len("file:"):]
    return root

def stop_with_savepoint(query: Any, target: str, **kwargs: Any) -> SavepointManifest:
    """Stops a running query (Spark stops it between batches; a batch it interrupts is not
    committed and not in the savepoint) and writes a savepoint of its last committed batch."""
    checkpoint = checkpoint_of(query)
    query.stop()
    return savepoint(checkpoint, target, **kwargs)

def savepoint(source: Any, target: str, *,
              progress: Callable[[str], None] | None = None,
              storage_options: dict[str, Any] | None = None,
              target_options: dict[str, Any] | None = None) -> SavepointManifest:
    """Writes a savepoint of ``source`` (a checkpoint location, or a ``StreamingQuery``) at
    its newest committed batch to ``target`` (which must not exist, or be an empty directory)
    and returns it.

    The query may be stopped or running: only files a committed batch made are copied, and
    they never change. (A running query's retention may delete an old version's files while
    they are copied; that fails loudly and a second attempt takes a newer batch.) The returned
    savepoint's ``digest`` is the SHA-256 of its ``_savepoint.json``: keep it to check the
    savepoint with later (``expect_digest``).

    For a location, the function form of ``rockstate.Checkpoint(source, storage_options)
    .savepoint(target, storage_options=target_options)``, which returns the savepoint's
    handle."""
    if hasattr(source, "_jsq"):
        source = checkpoint_of(source)
    loc = open_location(source, storage_options)
    batch = last_committed_batch(loc)
    plan = files_of(loc, batch)
    staged = StagedTarget(target, loc.url, "savepoint", target_options)
    try:
        files = []
        for rel, expected in plan.items():
            if progress:
                progress(rel)
            data = _read_source(loc, rel, batch)
            _check_against_manifest(loc, rel, data, expected)
            staged.write(rel, data)
            files.append(SavepointFile(rel, len(data), sha256=hashlib.sha256(data).hexdigest()))
        sp = SavepointManifest(url=target, batch_id=batch,
                               state_version=version_of_batch(batch),
                               query_id=_query_id(_read_source(loc, "metadata", batch,
                                                               FileKind.QUERY_METADATA)),
                               source=loc.url,
                               created_at=datetime.datetime.now(datetime.UTC).isoformat(
                                   timespec="seconds"),
                               files=tuple(files))
        document = listing_document(sp)
        sp = replace(sp, digest=hashlib.sha256(document).hexdigest())
        staged.publish(SAVEPOINT_FILE, document)  # last: it is complete
    except BaseException:
        staged.abandon()
        raise
    problems = check_savepoint(target, target_options, expect_digest=sp.digest)
    if problems:
        raise CorruptCheckpointError(f"the savepoint written to {target} does not read back: "
                                     + "; ".join(problems[:5]))
    return sp

def _read_source(loc: CheckpointLocation, rel: str, batch: int,
                 kind: FileKind = FileKind.DATA) -> bytes:
    try:
        return loc.read_file(rel, f"batch {batch}", kind)
    except CorruptCheckpointError as e:
        raise CorruptCheckpointError(
            f"{e} (If the query is running, its cleanup may have removed it while the savepoint "
            "was written: take the savepoint again.)") from None

def _check_against_manifest(loc: CheckpointLocation, rel: str, data: bytes,
                            expected: Recorded | None) -> None:
    """A file a rockstate store's manifest describes must be the file it describes: a damaged
    source is never saved (and then reported as checked)."""
    problem = expected.problem(data) if expected is not None else None
    if problem:
        raise CorruptCheckpointError(
            f"{loc.path(rel)} is damaged in the checkpoint: {problem}. Nothing was saved; "
            "restore the file from a backup, or run `rockstate verify` to see what else is "
            "damaged.")

def _query_id(metadata: bytes) -> str:
    try:
        doc = load_json(metadata.split(b"\n")[0], "metadata", "the checkpoint's")
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
            raise ValueError("no query id")
        return doc["id"]
    except (CorruptCheckpointError, ValueError):
        raise CorruptCheckpointError("the checkpoint's metadata file is damaged (no query id)."
                                     ) from None
