"""rockstate's checkpoint format, read from Python: manifests and changelog files.

docs/checkpoint-format.md is the one description of the format; this module follows it and
the JVM side writes it. A newer ``formatVersion`` than this module knows is refused.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from rockstate.errors import CorruptCheckpointError

FORMAT_VERSION = 2
CHANGELOG_MAGIC = b"RSCL"
CHANGELOG_FORMAT = 1
CODECS = {0: None, 1: "zstd"}
OPS = {1: "put", 2: "merge", 3: "delete", 4: "deleteRange"}

__all__ = ["CorruptCheckpointError"]  # re-exported: the error the readers raise


@dataclass(frozen=True)
class StateFile:
    local_name: str
    path: str
    size: int
    crc32: int
    kind: str  # "sst" or "meta"


@dataclass(frozen=True)
class ChangelogRef:
    version: int
    path: str
    size: int
    crc32: int
    records: int


@dataclass(frozen=True)
class SnapshotRef:
    version: int
    path: str


@dataclass(frozen=True)
class VersionManifest:
    format_version: int
    version: int
    operator_id: int
    partition_id: int
    store_name: str
    num_keys: int
    use_column_families: bool
    column_families: dict[str, int]
    snapshot: SnapshotRef | None
    changelogs: tuple[ChangelogRef, ...]
    commit: dict
    files: tuple[StateFile, ...]  # format 1 only: the full snapshot

    def references(self) -> list[str]:
        """Every checkpoint path this version needs directly (snapshot manifest, changelogs)."""
        if self.format_version == 1:
            return [f.path for f in self.files]
        return ([self.snapshot.path] if self.snapshot else []) + [c.path for c in self.changelogs]


@dataclass(frozen=True)
class SnapshotManifest:
    version: int
    state_id: str
    num_keys: int
    use_column_families: bool
    column_families: dict[str, int]
    files: tuple[StateFile, ...]
    stats: dict


def load_document(data: bytes, where: str, newest: int = FORMAT_VERSION,
                  what: str = "manifest") -> dict:
    """A JSON document with a ``formatVersion`` this reader knows (at most ``newest``)."""
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise CorruptCheckpointError(
            f"{what} {where} is not valid JSON ({e}); the checkpoint is corrupt. Restore the "
            "file from a backup.") from None
    version = doc.get("formatVersion") if isinstance(doc, dict) else None
    if not isinstance(version, int) or version <= 0:
        raise CorruptCheckpointError(f"{what} {where} has no formatVersion; it is corrupt.")
    if version > newest:
        raise CorruptCheckpointError(
            f"{what} {where} has format version {version}, newer than this rockstate reads "
            f"({newest}); upgrade rockstate.")
    return doc


def _files(items: list) -> tuple[StateFile, ...]:
    return tuple(StateFile(f["localName"], f["path"], int(f["size"]), int(f["crc32"]), f["kind"])
                 for f in items)


def _families(items: list) -> dict[str, int]:
    return {c["name"]: int(c["id"]) for c in items}


def parse_version_manifest(data: bytes, where: str) -> VersionManifest:
    doc = load_document(data, where)
    try:
        snapshot = doc.get("snapshot")
        return VersionManifest(
            format_version=doc["formatVersion"],
            version=int(doc["version"]),
            operator_id=int(doc["operatorId"]),
            partition_id=int(doc["partitionId"]),
            store_name=doc["storeName"],
            num_keys=int(doc["numKeys"]),
            use_column_families=bool(doc["useColumnFamilies"]),
            column_families=_families(doc["columnFamilies"]),
            snapshot=SnapshotRef(int(snapshot["version"]), snapshot["path"]) if snapshot else None,
            changelogs=tuple(ChangelogRef(int(c["version"]), c["path"], int(c["size"]),
                                          int(c["crc32"]), int(c["records"]))
                             for c in doc.get("changelogs") or []),
            commit=doc.get("commit") or {},
            files=_files(doc["files"]) if doc["formatVersion"] == 1 else (),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptCheckpointError(
            f"manifest {where} is missing or has a bad field ({e!r}); it is corrupt.") from None


def parse_snapshot_manifest(data: bytes, where: str) -> SnapshotManifest:
    doc = load_document(data, where)
    try:
        return SnapshotManifest(
            version=int(doc["version"]),
            state_id=doc["stateId"],
            num_keys=int(doc["numKeys"]),
            use_column_families=bool(doc["useColumnFamilies"]),
            column_families=_families(doc["columnFamilies"]),
            files=_files(doc["files"]),
            stats=doc.get("stats") or {},
        )
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptCheckpointError(
            f"snapshot manifest {where} is missing or has a bad field ({e!r}); it is "
            "corrupt.") from None


def changelog_records(data: bytes, where: str) -> Iterator[tuple[str, bytes, bytes | None]]:
    """The records of a changelog file, in order: (op, key, value or None for delete).

    Raises CorruptCheckpointError for a file that is not a changelog, uses an unknown codec,
    or does not end with its end record and count.
    """
    def corrupt(why: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(f"changelog {where} is damaged ({why}).")

    if len(data) < 6 or data[:4] != CHANGELOG_MAGIC:
        raise corrupt("not a rockstate changelog")
    if data[4] != CHANGELOG_FORMAT:
        raise corrupt(f"unknown changelog format {data[4]}")
    if data[5] not in CODECS:
        raise corrupt(f"unknown changelog codec {data[5]}")
    body = data[6:]
    if CODECS[data[5]] == "zstd":
        import pyarrow as pa

        try:
            body = bytes(pa.CompressedInputStream(pa.BufferReader(body), "zstd").read())
        except (OSError, pa.ArrowException) as e:
            raise corrupt(f"zstd: {e}") from None
    # A tight loop over offsets: this runs once per record of every changelog read.
    unpack_int, unpack_long = struct.Struct(">i").unpack_from, struct.Struct(">q").unpack_from
    end = len(body)
    pos, count = 0, 0
    try:
        while True:
            op = body[pos]
            pos += 1
            if op == 0:
                if pos + 8 > end:
                    raise corrupt("it ends inside its end record")
                (expected,) = unpack_long(body, pos)
                if expected != count:
                    raise corrupt(f"{count} records found, the end record says {expected}")
                if pos + 8 != end:
                    raise corrupt("data after the end record")
                return
            name = OPS.get(op)
            if name is None:
                raise corrupt(f"unknown record type {op}")
            (n,) = unpack_int(body, pos)
            pos += 4
            if n < 0 or pos + n > end:
                raise corrupt("it ends before its end record" if n >= 0 else
                              f"record length {n} out of range")
            key = body[pos:pos + n]
            pos += n
            value = None
            if op != 3:
                (n,) = unpack_int(body, pos)
                pos += 4
                if n < 0 or pos + n > end:
                    raise corrupt("it ends before its end record" if n >= 0 else
                                  f"record length {n} out of range")
                value = body[pos:pos + n]
                pos += n
            count += 1
            yield name, key, value
    except (IndexError, struct.error):
        raise corrupt("it ends before its end record") from None
