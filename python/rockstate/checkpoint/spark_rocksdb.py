"""Checkpoints of Spark's own ``RocksDBStateStoreProvider``, read without Spark.

Per partition (and store name) Spark writes, under ``state/<op>/<partition>[/<store>]/``:

- ``<v>.zip``: a snapshot of version ``v``. It holds RocksDB's small files and a ``metadata``
  file (a ``v1`` line, then JSON) that maps each local SST name to its shared copy in
  ``SSTs/``, and each column family name to its id.
- ``<v>.changelog``: in changelog checkpointing mode, version ``v``'s changes. The file is
  compressed with ``spark.sql.streaming.stateStore.compression.codec`` (lz4 by default, in
  lz4-java's block format, or zstd). Its records are big-endian length-prefixed keys and
  values. Changelog format 1 has a value length of -1 for a delete and a key length of -1 at
  the end. Format 2 prefixes each record with a type byte (0x01 put, 0x10 delete,
  0x11 merge, 0x00 end) after a ``v2`` header.

Version ``v`` is the newest snapshot at or below ``v``, plus the changelogs after it. This
module reads the layout and the files; ``SparkRocksDBReader`` reads a partition's state at a
version from them.
"""

from __future__ import annotations

import io
import posixpath
import struct
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.json_text import load_json
from rockstate.checkpoint.location import DEFAULT_STORE, CheckpointLocation
from rockstate.checkpoint.paths import is_number, local_within, relative_path
from rockstate.encoding import decompress
from rockstate.errors import CorruptCheckpointError, RockstateError

_LZ4_MAGIC = b"LZ4Block"
# The zip methods Spark's snapshot zips use (java.util.zip writes no others).
_ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def partitions(loc: CheckpointLocation, operator: int, store: str) -> dict[int, str]:
    """Partition directories Spark's provider wrote (with ``.zip`` or ``.changelog`` files)."""
    out = {}
    for part in loc.subfolders(loc.path("state", str(operator))):
        if not is_number(part):
            continue
        path = loc.path("state", str(operator), part,
                         *([] if store == DEFAULT_STORE else [store]))
        if loc.fs.isdir(path) and any(p.endswith((".zip", ".changelog"))
                                      for p in loc.fs.ls(path, detail=False)):
            out[int(part)] = path
    return out


def numbered(names: Iterable[str], suffix: str) -> list[int]:
    """Versions of the files named ``<version><suffix>`` among ``names``, ascending."""
    return sorted(int(n[:-len(suffix)]) for n in names
                  if n.endswith(suffix) and is_number(n[:-len(suffix)]))


def _numbered(loc: CheckpointLocation, path: str, suffix: str) -> list[int]:
    return numbered((posixpath.basename(p) for p in loc.fs.ls(path, detail=False)), suffix)


def versions_in(names: Iterable[str]) -> list[int]:
    """Versions with a snapshot zip or a changelog among a store directory's file names."""
    names = list(names)
    return sorted(set(numbered(names, ".zip")) | set(numbered(names, ".changelog")))


def versions(loc: CheckpointLocation, path: str) -> list[int]:
    return versions_in(posixpath.basename(p) for p in loc.fs.ls(path, detail=False))


def base_snapshot(loc: CheckpointLocation, path: str, version: int) -> int:
    """The newest snapshot (``<v>.zip``) at or below ``version`` in a partition's directory;
    0: none (version 0 is the empty state)."""
    return max((v for v in _numbered(loc, path, ".zip") if v <= version), default=0)


def parse_snapshot_metadata(text: str, where: str) -> dict:
    """A snapshot zip's ``metadata`` member: a ``v1`` line, then JSON."""
    try:
        doc = load_json(text.split("\n", 1)[1] if text.startswith("v") else text, where,
                        "the metadata in")
    except IndexError:
        raise CorruptCheckpointError(f"the metadata in {where} is unreadable (no JSON after "
                                     "its version line).") from None
    if not isinstance(doc, dict):
        raise CorruptCheckpointError(f"the metadata in {where} is not a JSON object.")
    return doc


def snapshot_metadata(loc: CheckpointLocation, zip_path: str) -> dict:
    """The ``metadata`` of a snapshot zip, without extracting the rest."""
    data = read_file(loc, zip_path, "its column families")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            text = _member(z, z.getinfo("metadata"), zip_path, len(data)).decode()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, KeyError, EOFError, ValueError,
            UnicodeDecodeError) as e:
        raise CorruptCheckpointError(f"{zip_path} has no readable metadata ({e}).") from None
    return parse_snapshot_metadata(text, zip_path)


def read_file(loc: CheckpointLocation, path: str, needed_by: str) -> bytes:
    """A file of Spark's provider (a zip, changelog or shared file), bounded; missing is
    damage naming what needs it."""
    try:
        return loc.read_path(path, needed_by, FileKind.DATA)
    except FileNotFoundError:
        raise CorruptCheckpointError(f"{path}, needed by {needed_by}, is missing; the "
                                     "checkpoint is damaged.") from None


def _member(z: zipfile.ZipFile, m: zipfile.ZipInfo, where: str, zip_size: int) -> bytes:
    """One member of a snapshot zip, read only as Spark writes them (stored or deflated) and
    only up to the size it declares, which must be within a member's bound."""
    if m.compress_type not in _ZIP_METHODS:
        raise CorruptCheckpointError(
            f"{where}: the member {m.filename[:100]!r} is compressed with zip method "
            f"{m.compress_type}; Spark writes only stored and deflated members. The zip is "
            "damaged or hostile; restore it from a trusted copy.")
    bound = min(FileKind.DOCUMENT.limit, decompress.limit_for(zip_size))
    if m.file_size > bound:
        raise CorruptCheckpointError(
            f"{where}: the member {m.filename[:100]!r} declares {m.file_size} bytes, more than "
            f"a snapshot's small file may hold ({bound}); restore it from a trusted copy.")
    with z.open(m) as src:
        data = src.read(m.file_size + 1)  # zipfile stops at the declared size, then checks CRC
    if len(data) != m.file_size:
        raise CorruptCheckpointError(f"{where}: the member {m.filename[:100]!r} holds "
                                     f"{len(data)} bytes, not the {m.file_size} it declares.")
    return data


def column_families(loc: CheckpointLocation, path: str, version: int) -> set[str]:
    """The column families of one partition as of its newest snapshot at or below
    ``version`` (empty without one): a family is created with a snapshot, which is uploaded
    when the maintenance gets to it, so a newer family may be missing here."""
    base = base_snapshot(loc, path, version)
    if not base:
        return set()
    metadata = snapshot_metadata(loc, posixpath.join(path, f"{base}.zip"))
    return set(metadata.get("columnFamilyMapping") or {})


def _decompressed(data: bytes, where: str) -> Iterator[bytes]:
    """A changelog file of Spark's provider decompressed, a piece at a time (an lz4 block, or
    ``decompress.CHUNK_BYTES`` of zstd), within ``decompress.limit_for`` its size in all."""
    if data.startswith(_ZSTD_MAGIC):
        yield from decompress.zstd_chunks(data, where)
        return
    if not data.startswith(_LZ4_MAGIC):
        raise RockstateError(f"{where} is compressed with a codec this reader does not know "
                             "(it reads lz4 and zstd, spark.sql.streaming.stateStore."
                             "compression.codec)")
    at, codec = 0, pa.Codec("lz4_raw")
    allowed = decompress.limit_for(len(data))
    try:
        while True:  # lz4-java's LZ4BlockOutputStream blocks, then an empty end block
            if data[at:at + 8] != _LZ4_MAGIC:
                raise CorruptCheckpointError(
                    f"{where} is damaged: no lz4 block at byte {at} (truncated?)")
            token = data[at + 8]
            compressed, original = struct.unpack_from("<ii", data, at + 9)
            if compressed < 0 or original < 0 or original > allowed:
                raise CorruptCheckpointError(
                    f"{where} is damaged: an lz4 block of {compressed} bytes declares "
                    f"{original} bytes, out of range (at most {allowed} more)")
            allowed -= original
            body = data[at + 21:at + 21 + compressed]
            if len(body) != compressed:
                raise CorruptCheckpointError(f"{where} is damaged: its last lz4 block is cut")
            at += 21 + compressed
            if original == 0:
                return
            if token & 0xF0 == 0x10:  # stored raw
                yield body
            else:
                yield codec.decompress(body, decompressed_size=original).to_pybytes()
    except (struct.error, pa.ArrowException, OSError) as e:
        raise CorruptCheckpointError(f"{where} is damaged ({e}).") from None


def _coalesced(pieces: Iterator[bytes], at_least: int = 4 << 20) -> Iterator[bytes]:
    """``pieces`` joined into runs of ``at_least`` bytes (lz4-java's blocks are 64 KB: a
    record spanning many would otherwise be carried over, and copied, once per block)."""
    run: list[bytes] = []
    size = 0
    for piece in pieces:
        run.append(piece)
        size += len(piece)
        if size >= at_least:
            yield run[0] if len(run) == 1 else b"".join(run)
            run, size = [], 0
    if run:
        yield b"".join(run)


class _NeedMore(Exception):
    """A record runs past the bytes decompressed so far."""


def _changelog_records(pieces: Iterator[bytes], where: str
                       ) -> Iterator[tuple[str, bytes, bytes | None]]:
    """The records of one changelog file, decompressed ``pieces`` at a time, in order:
    (``put``, ``merge`` or ``delete``, key, value or None). A record is parsed from the piece
    it ends in, with the rest of the pieces before it carried over: one piece and one record
    are held, never the whole file."""
    data, at, typed, header, ended = b"", 0, False, True, False

    def length(at: int, what: str, delete_marker: bool) -> int:
        if at + 4 > len(data):
            raise _NeedMore
        (n,) = struct.unpack_from(">i", data, at)
        if n < 0 and not (delete_marker and n == -1):
            raise CorruptCheckpointError(f"{where}: a {what} length of {n} at byte {at} is out "
                                         "of range; the changelog is damaged.")
        if at + 4 + max(n, 0) > len(data):
            raise _NeedMore
        return n

    for piece in pieces:
        if ended:
            continue  # Spark's writer may pad after its end marker; nothing there is read
        data = data[at:] + piece if at < len(data) else piece
        at = 0
        if header:
            if len(data) < 4:
                continue
            (n,) = struct.unpack_from(">H", data, 0)
            if data[2:3] == b"v" and len(data) < 2 + n:
                continue
            if data[2:3] == b"v" and data[3:2 + n].isdigit():
                fmt = int(data[3:2 + n])
                if fmt != 2:
                    raise RockstateError(f"{where} has changelog format {fmt}; this reader "
                                         "reads 1 and 2")
                typed, at = True, 2 + n
            header = False
        while at < len(data):
            start = at
            try:
                kind = 0x01
                if typed:
                    kind = data[at]
                    at += 1
                    if kind == 0x00:
                        ended = True
                        break
                if not typed:
                    if at + 4 > len(data):
                        raise _NeedMore
                    if struct.unpack_from(">i", data, at)[0] == -1:
                        ended = True  # format 1's end: a key length of -1
                        break
                klen = length(at, "key", delete_marker=False)
                vlen = length(at + 4 + klen, "value", delete_marker=True)
            except _NeedMore:
                at = start
                break
            key = data[at + 4:at + 4 + klen]
            at += 8 + klen
            if vlen < 0:
                yield "delete", key, None
                continue
            value = data[at:at + vlen]
            at += vlen
            if kind == 0x11:  # merge: RocksDB's string append with ","
                yield "merge", key, value
            elif kind == 0x01:
                yield "put", key, value
            else:
                raise CorruptCheckpointError(f"{where}: unknown record type {kind}")
    if not ended:
        raise CorruptCheckpointError(f"{where} ends before its end record; it is damaged.")


def changelog_records(data: bytes, where: str) -> Iterator[tuple[str, bytes, bytes | None]]:
    """The records of one changelog file of Spark's provider, as stored (compressed), in
    order, decompressed and parsed as they are taken (see ``_changelog_records``)."""
    return _changelog_records(_coalesced(_decompressed(data, where)), where)


def apply_changelog(entries: dict[bytes, bytes], data: bytes, where: str) -> None:
    """Applies one changelog file of Spark's provider, as stored (compressed), to ``entries``."""
    for op, key, value in changelog_records(data, where):
        if op == "delete":
            entries.pop(key, None)
        elif op == "merge" and key in entries:
            entries[key] = entries[key] + b"," + value  # type: ignore[operator]
        else:
            entries[key] = value  # type: ignore[assignment]


def extract_zip(data: bytes, into: Path, where: str) -> None:
    """Extracts a snapshot zip into ``into``: every member's name contained, and no more bytes
    than a checkpoint file of its size may expand to (members declare their sizes)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = z.infolist()
            declared = sum(m.file_size for m in members)
            if declared > decompress.limit_for(len(data)):
                raise CorruptCheckpointError(
                    f"{where} declares {declared} bytes from {len(data)}, more than a "
                    "checkpoint file may expand to; restore it from a trusted copy.")
            for m in members:
                if m.is_dir():
                    continue
                target = local_within(into, relative_path(m.filename, f"{where} (a member)"),
                                      where)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(_member(z, m, where, len(data)))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as e:
        raise CorruptCheckpointError(f"{where} is not a valid zip file ({e}).") from None
