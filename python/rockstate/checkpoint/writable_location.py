"""A checkpoint location opened for writing: what a rewrite (rescale, migrate) changes in a
stopped query's checkpoint, beside the read-only
:class:`~rockstate.checkpoint.location.CheckpointLocation`.
"""

from __future__ import annotations

import json
import os
import posixpath
import uuid
from typing import Any

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.json_text import load_json
from rockstate.checkpoint.location import CheckpointLocation
from rockstate.checkpoint.offsets import entry_confs, entry_lines, log_entries
from rockstate.checkpoint.operator_metadata import OperatorMetadata, read_operator_metadata
from rockstate.errors import CorruptCheckpointError, RockstateError


class WritableLocation:
    """A stopped query's checkpoint location opened for writing: the read-only
    :class:`~rockstate.checkpoint.location.CheckpointLocation` (``loc``), the path Spark reads it by
    (``spark_url``), Spark's logs and operator metadata as of a batch, and writes that Spark
    never sees half done (``publish``: a log entry renamed into place; ``move_dir``)."""

    def __init__(self, url: str, storage_options: dict[str, Any]) -> None:
        self.url = url
        scheme, sep, rest = url.partition("://")
        if not sep:
            self.spark_url = "file:" + os.path.abspath(url)
            fs_url = os.path.abspath(url)
        elif scheme == "file":
            self.spark_url, fs_url = url, url
        else:
            self.spark_url = url
            fs_url = ("s3://" + rest) if scheme == "s3a" else url
        self.loc = CheckpointLocation(fs_url, **storage_options)
        self.fs = self.loc.fs
        if not self.fs.isdir(self.path("offsets")):
            raise RockstateError(f"rockstate: {url} is not a streaming query's checkpoint "
                                 "location (it has no offsets/ folder).")
        # Offset log entries read so far (an entry never changes once written).
        self._entries: dict[int, list[str]] = {}

    def path(self, relative: str) -> str:
        return self.loc.path(relative)

    def spark_path(self, relative: str) -> str:
        return self.spark_url.rstrip("/") + "/" + relative

    def same_location(self, root: str) -> bool:
        return root.rstrip("/").split("://")[-1].removeprefix("file:") == \
            self.spark_url.rstrip("/").split("://")[-1].removeprefix("file:")

    def read(self, relative: str) -> bytes:
        try:
            return self.loc.read_path(self.path(relative), "the rewrite", FileKind.LOG_ENTRY)
        except FileNotFoundError:
            raise RockstateError(f"rockstate: {self.url} has no {relative}; the checkpoint is "
                                 "incomplete.") from None

    def numbered(self, folder: str) -> list[int]:
        return list(log_entries(self.fs, self.path(folder)))

    def offsets_lines(self, batch: int) -> list[str]:
        if batch not in self._entries:
            relative = f"offsets/{batch}"
            self._entries[batch] = entry_lines(self.read(relative), self.path(relative))
        return self._entries[batch]

    def confs(self, batch: int) -> dict[str, str]:
        return entry_confs(self.offsets_lines(batch))

    def offsets_entry(self, batch: int, confs: dict[str, str]) -> bytes:
        """Batch ``batch``'s offset log entry with ``confs``: the same offsets, watermark and
        timestamp (the rewrite batch reads no input)."""
        lines = self.offsets_lines(batch)
        meta = load_json(lines[1], self.path(f"offsets/{batch}"), "offset log entry")
        if not isinstance(meta, dict):
            raise CorruptCheckpointError(f"rockstate: {self.path(f'offsets/{batch}')} is "
                                         "damaged (its batch metadata is not a JSON object).")
        meta["conf"] = confs
        return "\n".join([lines[0], json.dumps(meta, separators=(",", ":")), *lines[2:]]
                         ).encode()

    def operators(self) -> list[int]:
        return self.loc.operators()

    def operator_metadata(self, op: int, batch: int) -> OperatorMetadata:
        """The operator's metadata as of ``batch``: the newest versioned (v2, written by
        transformWithState) entry at or before it, else the one v1 file."""
        meta = read_operator_metadata(self.loc, op, batch)
        if meta is None:
            raise RockstateError(
                f"rockstate: operator {op} of {self.url} has no operator metadata "
                f"(state/{op}/_metadata); it was written by a Spark older than 4.0 or the "
                "query ran with spark.sql.streaming.stateStore.stateSchemaCheck off. Run one "
                "batch on Spark 4 to write it, then rewrite (nothing was written).")
        return meta

    def publish(self, relative: str, data: bytes) -> None:
        """Writes a log entry under a temporary name, then renames it into place: Spark never
        sees half an entry. An entry that exists already must hold the same bytes."""
        path = self.path(relative)
        if self.fs.exists(path):
            if self.loc.read_path(path, "the rewrite", FileKind.LOG_ENTRY) != data:
                raise RockstateError(f"rockstate: {self.url} already has a different "
                                     f"{relative}; another query or rewrite wrote it.")
            return
        self._renamed_into_place(path, data)

    def replace(self, relative: str, data: bytes) -> None:
        """Replaces a file Spark wrote (a state schema) by one rename: Spark reads the old
        bytes or the new ones. Hadoop's checksum beside it (``.<name>.crc``) is removed first:
        a file without one reads, a file with a stale one does not."""
        path = self.path(relative)
        folder, name = posixpath.split(path)
        self.fs.makedirs(folder, exist_ok=True)
        crc = posixpath.join(folder, f".{name}.crc")
        if self.fs.exists(crc):
            self.fs.rm(crc)
        self._renamed_into_place(path, data)

    def _renamed_into_place(self, path: str, data: bytes) -> None:
        """``data`` written under a hidden temporary name beside ``path``, then renamed to it."""
        folder, name = posixpath.split(path)
        tmp = posixpath.join(folder, f".{name}.{uuid.uuid4()}.tmp")
        self.fs.pipe_file(tmp, data)
        self.fs.mv(tmp, path)

    def remove(self, relative: str) -> None:
        if self.fs.exists(self.path(relative)):
            self.fs.rm(self.path(relative), recursive=True)

    def move_dir(self, source: str, target: str) -> None:
        """Moves a folder: one rename on a local disk; file by file (copy, then delete the
        source) on an object store, where a move interrupted midway is completed by the next
        run."""
        local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple)
                           else (self.fs.protocol,))
        if local and not self.fs.exists(target):
            self.fs.mv(source, target, recursive=True)
            return
        self.fs.invalidate_cache()  # Spark wrote these files, not this file system object
        for path, info in self.fs.find(source, detail=True).items():
            if info.get("type") != "file" or path.endswith("/"):
                continue  # a directory marker object (Hadoop's s3a writes them)
            dest = posixpath.join(target, posixpath.relpath(path, source))
            if not self.fs.exists(dest):
                self.fs.cp_file(path, dest)
        self.fs.rm(source, recursive=True)
