"""rockstate's checkpoint format, read from Python: version files, manifests, changelogs.

docs/checkpoint-format.md is the one description of the format; this module follows it and
the JVM side writes it. A newer ``formatVersion`` than this module knows is refused.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from rockstate.checkpoint.json_text import load_json
from rockstate.checkpoint.paths import file_name, relative_path
from rockstate.encoding import decompress
from rockstate.errors import CorruptCheckpointError

FORMAT_VERSION = 5
CHANGELOG_MAGIC = b"RSCL"
VERSION_MAGIC = b"RSVF"
VERSION_END = b"RSVE"
VERSION_LAYOUT = 1
_VERSION_HEAD = 9  # magic, layout byte, header length
_VERSION_TRAILER = 8  # CRC32, end magic
CHANGELOG_FORMAT = 1
CODECS = {0: None, 1: "zstd"}
OPS = {1: "put", 2: "merge", 3: "delete", 4: "deleteRange"}

__all__ = ["CorruptCheckpointError"]  # re-exported: the error the readers raise


@dataclass(frozen=True)
class PackSlice:
    """Where a packed SST lies in its pack (format 5): from ``offset`` of the ``pack_size``-byte
    object at the file's path."""

    offset: int
    pack_size: int


@dataclass(frozen=True)
class StateFile:
    local_name: str
    path: str
    size: int
    crc32: int
    kind: str  # "sst" or "meta"
    in_pack: PackSlice | None = None  # format 5: ``size`` bytes of the pack at ``path``

    @property
    def byte_range(self) -> tuple[int, int] | None:
        """Its bytes of the object at ``path`` (start, end) for a pack member; None: all."""
        if self.in_pack is None:
            return None
        return (self.in_pack.offset, self.in_pack.offset + self.size)


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
    # Format 4: every value carries its row checksum (``rockstate.encoding.row_checksum``).
    row_checksums: bool = False

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
    files: tuple[StateFile, ...]  # SSTs (format 2: and the small files, kind "meta")
    stats: dict
    meta_pack: dict | None = None  # format 3: the small files, packed ({size, crc32, data})

    def meta_files(self, where: str) -> list[tuple[str, bytes]]:
        """The snapshot's small RocksDB files from its inline meta pack (format 3), checked;
        empty for format 2, whose ``files`` list them."""
        if self.meta_pack is None:
            return []
        import base64
        import binascii

        try:
            data = base64.b64decode(self.meta_pack["data"], validate=True)
        except (binascii.Error, ValueError, KeyError, TypeError):
            raise CorruptCheckpointError(
                f"the meta pack of {where} is not valid base64; the manifest is damaged."
            ) from None
        if len(data) != int(self.meta_pack["size"]) or \
                zlib.crc32(data) != int(self.meta_pack["crc32"]):
            raise CorruptCheckpointError(
                f"the meta pack of {where} is damaged: expected {self.meta_pack['size']} bytes "
                f"with CRC32 {self.meta_pack['crc32']}, found {len(data)} with CRC32 "
                f"{zlib.crc32(data)}.")
        return unpack_meta(data, where)


def family_prefix(family_id: int) -> bytes:
    """The bytes before every key of a column family in a rockstate store: its id, 2 bytes
    big-endian (``ColumnFamilyCodec``), so each family is one contiguous key range."""
    return family_id.to_bytes(2, "big")


def load_document(data: bytes, where: str, newest: int = FORMAT_VERSION,
                  what: str = "manifest") -> dict:
    """A JSON document with a ``formatVersion`` this reader knows (at most ``newest``)."""
    doc = load_json(data, where, what)
    version = doc.get("formatVersion") if isinstance(doc, dict) else None
    if not isinstance(version, int) or version <= 0:
        raise CorruptCheckpointError(f"{what} {where} has no formatVersion; it is corrupt.")
    if version > newest:
        raise CorruptCheckpointError(
            f"{what} {where} has format version {version}, newer than this rockstate reads "
            f"({newest}); upgrade rockstate.")
    return doc


def _files(items: list, where: str, fmt: int = FORMAT_VERSION) -> tuple[StateFile, ...]:
    files = tuple(StateFile(file_name(f["localName"], f"{where} (files[{i}].localName)"),
                            relative_path(f["path"], f"{where} (files[{i}].path)"),
                            _length(f["size"], f"{where} (files[{i}].size)"), int(f["crc32"]),
                            f["kind"], _pack_slice(f, i, where, fmt))
                  for i, f in enumerate(items))
    sizes: dict[str, set[int]] = {}
    for f in files:
        if f.in_pack is not None:
            sizes.setdefault(f.path, set()).add(f.in_pack.pack_size)
    for path, found in sizes.items():
        if len(found) > 1:
            raise CorruptCheckpointError(
                f"manifest {where} gives pack {path} several sizes ({sorted(found)}); it is "
                "corrupt.")
    plain = {f.path for f in files if f.in_pack is None}
    if plain & sizes.keys():
        raise CorruptCheckpointError(
            f"manifest {where} names {sorted(plain & sizes.keys())[0]} both as a file and as "
            "a pack; it is corrupt.")
    return files


def _pack_slice(f: dict, i: int, where: str, fmt: int) -> PackSlice | None:
    """A file's ``inPack`` (format 5), checked to lie inside its pack."""
    ref = f.get("inPack")
    if ref is None:
        return None
    if fmt < 5 or not isinstance(ref, dict):
        raise CorruptCheckpointError(
            f"manifest {where} of format {fmt} names a packed file (files[{i}].inPack), which "
            "only format 5 has; it is corrupt.")
    offset, pack_size, size = int(ref["offset"]), int(ref["packSize"]), int(f["size"])
    if offset < 0 or pack_size < 0 or size < 0 or offset > pack_size - size:
        raise CorruptCheckpointError(
            f"manifest {where}, files[{i}] ({f['path']}) lies outside its pack: {size} bytes at "
            f"offset {offset} of a {pack_size}-byte pack. The manifest is corrupt; restore it "
            "from a trusted copy.")
    return PackSlice(offset, pack_size)


def _length(value: object, where: str) -> int:
    """A size read from a manifest: a whole number of bytes, never negative."""
    n = int(value)  # type: ignore[call-overload]
    if n < 0:
        raise CorruptCheckpointError(f"{where} is {n}, a negative size; the manifest is damaged.")
    return n


def _families(items: list) -> dict[str, int]:
    return {c["name"]: int(c["id"]) for c in items}


def parse_version_manifest(data: bytes, where: str) -> VersionManifest:
    """A format 1 or 2 manifest (``manifests/<version>.json``), or a version file's header."""
    doc = load_document(data, where)
    if doc["formatVersion"] >= 3 and not isinstance(doc.get("commit"), dict):
        raise CorruptCheckpointError(f"manifest {where} has no commit; it is corrupt.")
    # Format 4 says whether values carry checksums: without the flag they would read wrong.
    if doc["formatVersion"] >= 4 and not isinstance(doc.get("rowChecksums"), bool):
        raise CorruptCheckpointError(f"manifest {where} has no rowChecksums flag; it is corrupt.")
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
            snapshot=SnapshotRef(int(snapshot["version"]), relative_path(
                snapshot["path"], f"{where} (snapshot.path)")) if snapshot else None,
            changelogs=tuple(ChangelogRef(int(c["version"]), relative_path(
                c["path"], f"{where} (changelogs[{i}].path)"),
                _length(c["size"], f"{where} (changelogs[{i}].size)"), int(c["crc32"]),
                int(c["records"]))
                for i, c in enumerate(doc.get("changelogs") or [])),
            commit=doc.get("commit") or {},
            files=_files(doc["files"], where) if doc["formatVersion"] == 1 else (),
            row_checksums=doc.get("rowChecksums") is True,
        )
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as e:
        raise CorruptCheckpointError(
            f"manifest {where} is missing or has a bad field ({e!r}); it is corrupt.") from None


def is_version_file(path: str) -> bool:
    """Whether a store-relative path names a version file (format 3)."""
    return path.startswith("versions/")


def _version_corrupt(where: str, why: str) -> CorruptCheckpointError:
    return CorruptCheckpointError(
        f"version file {where} is damaged ({why}). Restore the file or restart the query from "
        "an earlier version.")


def version_header_length(prefix: bytes, where: str) -> int:
    """How many bytes a version file's start (magic, layout, header) takes, from its first 9."""
    if len(prefix) < _VERSION_HEAD or prefix[:4] != VERSION_MAGIC:
        raise _version_corrupt(where, "not a rockstate version file")
    if prefix[4] != VERSION_LAYOUT:
        raise _version_corrupt(where, f"unknown version file layout {prefix[4]}")
    (n,) = struct.unpack_from(">i", prefix, 5)
    if n <= 0 or n > 64 << 20:
        raise _version_corrupt(where, f"header length {n} out of range")
    return _VERSION_HEAD + n


def parse_version_header(prefix: bytes, where: str) -> VersionManifest:
    """A version file's header from the file's first bytes (at least its header): the lineage
    without the file's own changes. The trailer is not checked; ``parse_version_file`` does."""
    end = version_header_length(prefix, where)
    if len(prefix) < end:
        raise _version_corrupt(where, "it ends inside its header")
    m = parse_version_manifest(prefix[_VERSION_HEAD:end], where)
    if m.format_version < 3:
        raise _version_corrupt(where, f"its header has format {m.format_version}")
    return m


def with_own_changes(m: VersionManifest, path: str, size: int, crc32: int) -> VersionManifest:
    """The lineage ending with the version file's own changes, unless its snapshot is of this
    very version (taken on the commit path): then they are in the snapshot already."""
    if m.snapshot is not None and m.snapshot.version >= m.version:
        return m
    own = ChangelogRef(m.version, path, size, crc32, int(m.commit["changelogRecords"]))
    return replace(m, changelogs=(*m.changelogs, own))


def check_version_file(data: bytes, where: str) -> None:
    """Raises CorruptCheckpointError unless ``data`` is a whole version file whose trailer's
    CRC32 matches every byte before it."""
    if len(data) < _VERSION_HEAD + _VERSION_TRAILER:
        raise _version_corrupt(where, "it is shorter than a header")
    if data[-4:] != VERSION_END:
        raise _version_corrupt(where, "it does not end with its trailer (cut short?)")
    (expected,) = struct.unpack_from(">I", data, len(data) - _VERSION_TRAILER)
    found = zlib.crc32(memoryview(data)[:len(data) - _VERSION_TRAILER])
    if found != expected:
        raise _version_corrupt(where, f"its CRC32 is {found}, its trailer says {expected}")


def parse_version_file(data: bytes, path: str, where: str) -> VersionManifest:
    """A whole version file (``versions/<version>-<id>.rsv``), checked; its lineage ends with
    its own changes."""
    check_version_file(data, where)
    m = parse_version_header(data, where)
    return with_own_changes(m, path, len(data), zlib.crc32(data))


def changes_of(data: bytes, path: str, where: str) -> bytes:
    """The changelog bytes a lineage link holds: a changelog file is one; a (checked) version
    file embeds one between its header and its trailer."""
    if not is_version_file(path):
        return data
    return data[version_header_length(data, where):len(data) - _VERSION_TRAILER]


META_PACK_MAGIC = b"RSMP"


def unpack_meta(data: bytes, where: str) -> list[tuple[str, bytes]]:
    """The files of a meta pack (a snapshot manifest's ``metaPack``): RocksDB's small files of
    one snapshot, as (name, content). Raises CorruptCheckpointError for a damaged pack."""
    def corrupt(why: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(f"the meta pack of {where} is damaged ({why}).")

    if len(data) < 5 or data[:4] != META_PACK_MAGIC:
        raise corrupt("not a rockstate meta pack")
    if data[4] != 1:
        raise corrupt(f"unknown format {data[4]}")
    body = decompress.zstd(memoryview(data)[5:], f"the meta pack of {where}", len(data))
    try:
        (count,) = struct.unpack_from(">i", body, 0)
        pos, out = 4, []
        # The JVM's limits (MetaPack): at most 10,000 files, names of at most 4,096 bytes;
        # each entry takes 13 bytes at least.
        if count < 0 or count > min(10_000, (len(body) - pos) // 13):
            raise corrupt(f"file count {count} out of range")
        for i in range(count):
            (n,) = struct.unpack_from(">i", body, pos)
            if n <= 0 or n > 4096 or pos + 4 + n > len(body):
                raise corrupt(f"name length {n} of entry {i} out of range")
            name = file_name(body[pos + 4:pos + 4 + n].decode(),
                             f"the meta pack of {where} (entry {i})")
            pos += 4 + n
            (length,) = struct.unpack_from(">q", body, pos)
            pos += 8
            if length < 0 or pos + length > len(body):
                raise corrupt(f"length {length} of {name!r} out of range")
            if any(name == seen for seen, _ in out):
                raise corrupt(f"{name!r} is in it twice")
            out.append((name, body[pos:pos + length]))
            pos += length
    except (struct.error, UnicodeDecodeError) as e:
        raise corrupt(str(e)) from None
    return out


def parse_snapshot_manifest(data: bytes, where: str) -> SnapshotManifest:
    doc = load_document(data, where)
    try:
        return SnapshotManifest(
            version=int(doc["version"]),
            state_id=doc["stateId"],
            num_keys=int(doc["numKeys"]),
            use_column_families=bool(doc["useColumnFamilies"]),
            column_families=_families(doc["columnFamilies"]),
            files=_files(doc["files"], where, doc["formatVersion"]),
            stats=doc.get("stats") or {},
            meta_pack=_meta_pack_ref(doc["metaPack"], where) if doc["formatVersion"] >= 3
            else None,
        )
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as e:
        raise CorruptCheckpointError(
            f"snapshot manifest {where} is missing or has a bad field ({e!r}); it is "
            "corrupt.") from None


def _meta_pack_ref(ref: object, where: str) -> dict:
    """A format 3 snapshot manifest's ``metaPack``: required (RocksDB cannot open without its
    small files), with a size, a CRC32 and the data."""
    if not isinstance(ref, dict) or not isinstance(ref.get("data"), str):
        raise CorruptCheckpointError(
            f"snapshot manifest {where} has no meta pack (RocksDB's small files); it is "
            "corrupt.")
    _length(ref["size"], f"{where} (metaPack.size)")
    int(ref["crc32"])  # a number, or the ValueError the caller reports as damage
    return ref


def changelog_records(data: bytes, where: str) -> Iterator[tuple[str, bytes, bytes | None]]:
    """The records of a changelog file, in order: (op, key, value or None for delete).

    Raises CorruptCheckpointError for a file that is not a changelog, uses an unknown codec,
    or does not end with its end record and count. A compressed body is decompressed as it is
    read, a chunk at a time (``decompress.zstd_chunks``): what is held is one chunk and the
    record that spans it, never the whole body.
    """
    def corrupt(why: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(f"changelog {where} is damaged ({why}).")

    if len(data) < 6 or data[:4] != CHANGELOG_MAGIC:
        raise corrupt("not a rockstate changelog")
    if data[4] != CHANGELOG_FORMAT:
        raise corrupt(f"unknown changelog format {data[4]}")
    if data[5] not in CODECS:
        raise corrupt(f"unknown changelog codec {data[5]}")
    if CODECS[data[5]] == "zstd":
        chunks: Iterator[bytes] = decompress.zstd_chunks(memoryview(data)[6:],
                                                         f"changelog {where}", len(data))
    else:
        chunks = iter((data[6:],))
    return _records(chunks, corrupt)


def _records(chunks: Iterator[bytes], corrupt: Callable[[str], CorruptCheckpointError]
             ) -> Iterator[tuple[str, bytes, bytes | None]]:
    """The records of a changelog body that arrives in ``chunks``: each record is parsed from
    the chunk it ends in, with the unparsed rest of the chunks before it carried over."""
    # A tight loop over offsets: this runs once per record of every changelog read.
    unpack_int, unpack_long = struct.Struct(">i").unpack_from, struct.Struct(">q").unpack_from
    body, pos, count, ended = b"", 0, 0, False
    for chunk in chunks:
        if ended:
            if chunk:
                raise corrupt("data after the end record")
            continue
        body = body[pos:] + chunk if pos < len(body) else chunk
        pos, end = 0, len(body)
        while pos < end:
            start = pos
            op = body[pos]
            pos += 1
            if op == 0:
                if pos + 8 > end:
                    pos = start
                    break
                (expected,) = unpack_long(body, pos)
                if expected != count:
                    raise corrupt(f"{count} records found, the end record says {expected}")
                if pos + 8 != end:
                    raise corrupt("data after the end record")
                ended, pos = True, end
                break
            name = OPS.get(op)
            if name is None:
                raise corrupt(f"unknown record type {op}")
            if pos + 4 > end:
                pos = start
                break
            (n,) = unpack_int(body, pos)
            if n < 0:
                raise corrupt(f"record length {n} out of range")
            pos += 4
            if pos + n > end:
                pos = start
                break
            key = body[pos:pos + n]
            pos += n
            value = None
            if op != 3:
                if pos + 4 > end:
                    pos = start
                    break
                (n,) = unpack_int(body, pos)
                if n < 0:
                    raise corrupt(f"record length {n} out of range")
                pos += 4
                if pos + n > end:
                    pos = start
                    break
                value = body[pos:pos + n]
                pos += n
            count += 1
            yield name, key, value
    if not ended:
        raise corrupt("it ends before its end record")
