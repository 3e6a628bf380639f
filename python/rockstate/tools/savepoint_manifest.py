"""A savepoint's listing, ``_savepoint.json``: what it records (every file with its size and
SHA-256, format 2; CRC32s in format 1), how it is written and how it is read back as untrusted
input. The SHA-256 of the listing itself is the savepoint's digest."""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.json_text import load_json
from rockstate.checkpoint.location import CheckpointLocation, open_location
from rockstate.checkpoint.model import version_of_batch
from rockstate.checkpoint.paths import relative_path
from rockstate.errors import CorruptCheckpointError, RockstateError

SAVEPOINT_FILE = "_savepoint.json"
# 2: each file's SHA-256 (1: its CRC32, which finds damage but not a file changed on purpose
# with its CRC32 kept).
SAVEPOINT_FORMAT = 2
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class SavepointFile:
    path: str  # relative to the savepoint's root
    size: int
    sha256: str | None = None  # format 2 (hex)
    crc32: int | None = None  # format 1

    def problem(self, data: bytes) -> str | None:
        """How ``data`` differs from what the listing records of this file, or None."""
        if len(data) != self.size:
            return f"{len(data)} bytes, the listing records {self.size}"
        if self.sha256 is not None:
            found = hashlib.sha256(data).hexdigest()
            return None if found == self.sha256 else \
                f"SHA-256 {found}, the listing records {self.sha256}"
        crc = zlib.crc32(data)
        return None if crc == self.crc32 else f"CRC32 {crc}, the listing records {self.crc32}"

@dataclass(frozen=True)
class Recorded:
    """What a rockstate store's manifests record of one file: its size and CRC32 or, for a pack
    of SSTs (format 5), its size and each member's offset, size and CRC32."""

    size: int
    crc32: int | None  # None for a pack: its members are checked
    members: tuple[tuple[int, int, int], ...] = ()

    def problem(self, data: bytes) -> str | None:
        """How ``data`` differs from what is recorded, or None."""
        if len(data) != self.size or (self.crc32 is not None and zlib.crc32(data) != self.crc32):
            crc = "" if self.crc32 is None else f" with CRC32 {self.crc32}"
            return (f"{len(data)} bytes with CRC32 {zlib.crc32(data)}, its store's manifest "
                    f"records {self.size} bytes{crc}")
        for offset, size, crc32 in self.members:
            found = zlib.crc32(memoryview(data)[offset:offset + size])
            if found != crc32:
                return (f"the SST at offset {offset} has CRC32 {found}, its store's manifest "
                        f"records {crc32}")
        return None

@dataclass(frozen=True)
class SavepointManifest:
    """What a savepoint's ``_savepoint.json`` records: its batch, where it was taken from,
    every file with its size and hash, and the listing's own digest. Not to be confused with
    :class:`rockstate.Savepoint`, the handle of a savepoint's location."""

    url: str
    batch_id: int  # the newest committed batch it holds
    state_version: int  # version_of_batch(batch_id): the state version every store holds
    query_id: str
    source: str
    created_at: str
    files: tuple[SavepointFile, ...]
    # The SHA-256 (hex) of ``_savepoint.json`` as written or read. Kept apart from the
    # savepoint and given back as ``expect_digest``, it detects a savepoint rewritten end to
    # end: what the listing alone cannot (whoever rewrites files can rewrite their hashes).
    digest: str = field(default="", compare=False)

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

def read_savepoint(location: str | CheckpointLocation,
                   storage_options: dict[str, Any] | None = None) -> SavepointManifest:
    """What the savepoint at ``location`` records; an error if it is not one (or was not
    finished). The function form of ``rockstate.Savepoint(location, storage_options)
    .manifest()``."""
    loc = open_location(location, storage_options)
    return parse_listing(loc, listing_bytes(loc))

def listing_bytes(loc: CheckpointLocation) -> bytes:
    """``_savepoint.json``'s bytes, bounded and read through no symbolic link."""
    try:
        return loc.read_path(loc.path(SAVEPOINT_FILE), "the savepoint's file list",
                             FileKind.DOCUMENT)
    except FileNotFoundError:
        raise RockstateError(f"{loc.url} is not a savepoint: it has no {SAVEPOINT_FILE} (a "
                             "savepoint still being written has none yet).") from None

def _whole(value: object, what: str) -> int:
    """A JSON integer (not a bool, a float or text); ValueError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} is {str(value)[:40]!r}, not a whole number")
    return value

def _listed_file(entry: Any, fmt: int, where: str) -> SavepointFile:
    """One entry of ``files``: its path checked first (a path that leaves the savepoint is
    named as such), then its size and the hash its format records."""
    path = relative_path(entry["path"], where)
    size = _whole(entry["size"], "size")
    if fmt >= 2:
        digest = entry["sha256"]
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise ValueError(f"sha256 {str(digest)[:80]!r} is not 64 lowercase hex digits")
        return SavepointFile(path, size, sha256=digest)
    crc32 = _whole(entry["crc32"], "crc32")
    if not 0 <= crc32 < 1 << 32:
        raise ValueError(f"crc32 {crc32} is not a CRC32")
    return SavepointFile(path, size, crc32=crc32)

def parse_listing(loc: CheckpointLocation, data: bytes) -> SavepointManifest:
    """``_savepoint.json``'s bytes as a :class:`SavepointManifest` (its digest theirs); damage is
    CorruptCheckpointError naming the file."""
    path = loc.path(SAVEPOINT_FILE)
    doc = load_json(data, path, "the savepoint's file list")
    try:
        fmt = _whole(doc.get("savepointFormat", 0), "savepointFormat")
        if fmt > SAVEPOINT_FORMAT:
            raise RockstateError(f"{loc.url} was written by a newer rockstate (savepoint format "
                                 f"{fmt}); upgrade rockstate to read it.")
        files = tuple(_listed_file(f, fmt, f"{path} (files[{i}])")
                      for i, f in enumerate(doc["files"]))
        sp = SavepointManifest(url=loc.url, batch_id=_whole(doc["batchId"], "batchId"),
                               state_version=_whole(doc["stateVersion"], "stateVersion"),
                               query_id=str(doc["queryId"]), source=str(doc["source"]),
                               created_at=str(doc["createdAt"]), files=files,
                               digest=hashlib.sha256(data).hexdigest())
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise CorruptCheckpointError(f"{path} is damaged ({e!r} missing or wrong); restore the "
                                     "savepoint from a trusted copy.") from None
    seen: set[str] = set()
    for f in files:
        if f.path in seen or f.size < 0 or f.path == SAVEPOINT_FILE:
            raise CorruptCheckpointError(f"{path} lists {f.path!r} twice, with a negative size "
                                         "or as itself; it is damaged.")
        seen.add(f.path)
    if sp.state_version != version_of_batch(sp.batch_id):
        raise CorruptCheckpointError(f"{path}: state version {sp.state_version} is not batch "
                                     f"{sp.batch_id} + 1; it is damaged.")
    return sp

def is_savepoint(location: CheckpointLocation) -> bool:
    return bool(location.fs.exists(location.path(SAVEPOINT_FILE)))

def expected_digest(value: str) -> str:
    """A digest given to check a savepoint with, as ``SavepointManifest.digest`` spells it; a
    value that is no SHA-256 is a mistake to name, not a mismatch."""
    digest = value.strip().lower()
    if not _SHA256.match(digest):
        raise RockstateError(
            f"the expected digest {value[:80]!r} is not a SHA-256 (64 hex digits); give the "
            "digest `rockstate savepoint` printed (SavepointManifest.digest), or the output of "
            f"`sha256sum {SAVEPOINT_FILE}` taken when the savepoint was made.")
    return digest

def listing_document(sp: SavepointManifest) -> bytes:
    return (json.dumps({
        "savepointFormat": SAVEPOINT_FORMAT, "batchId": sp.batch_id,
        "stateVersion": sp.state_version, "queryId": sp.query_id, "source": sp.source,
        "createdAt": sp.created_at,
        "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in sp.files],
    }, indent=1) + "\n").encode()
