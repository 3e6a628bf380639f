"""Per-row checksums: the values of a store written with them, checked and opened.

A store whose version manifests say ``rowChecksums`` (format 4) keeps every value as
``checksum (4 bytes) + length (4 bytes) + value``, both little-endian, checksum = CRC32C of the
key (without its column family id) then the value; a key's merged values (a list) are such
parts joined by the merge delimiter ``,``. docs/checkpoint-format.md describes it; the JVM's
``RowChecksum`` writes it. The readers here give the values as Spark's encoders wrote them,
every part checked: a mismatch or a length past a value's end is damage, never state.

CRC32C is computed for many rows at once with numpy (one table step per byte position across
all rows), as Python has no CRC32C of its own.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from rockstate.encoding.packed_entries import BINARY, spans
from rockstate.errors import CorruptCheckpointError

HEADER_BYTES = 8
DELIMITER = 0x2C  # ',' : the merge operator's separator between a key's values


def _table() -> np.ndarray:
    """CRC32C's (Castagnoli, reflected polynomial 0x82F63B78) byte table."""
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table[i] = c
    return table


_TABLE = _table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC32C of ``data``, continuing from ``crc`` (the CRC32C of what came before it)."""
    return int(_update(np.array([crc ^ 0xFFFFFFFF], dtype=np.uint32),
                       np.frombuffer(data, dtype=np.uint8), np.zeros(1, dtype=np.int64),
                       np.array([len(data)], dtype=np.int64))[0]) ^ 0xFFFFFFFF


def _update(state: np.ndarray, data: np.ndarray, starts: np.ndarray,
            lengths: np.ndarray) -> np.ndarray:
    """Each row's CRC32C register ``state`` advanced over ``data[starts : starts + lengths]``:
    one step per byte position, over the rows that still have a byte there."""
    if len(state) == 0:
        return state
    order = np.argsort(-lengths, kind="stable")
    reg, at, left = state[order].copy(), starts[order].astype(np.int64), lengths[order]
    # The rows with a byte at position j (longer than j) are a prefix of longest-first order.
    counts = np.searchsorted(-left, -np.arange(int(left[0])), side="left")
    for j, n in enumerate(counts):
        r = reg[:n]
        reg[:n] = _TABLE[(r ^ data[at[:n] + j]) & 0xFF] ^ (r >> 8)
    out = np.empty_like(reg)
    out[order] = reg
    return out


def _parts(offsets: np.ndarray, data: np.ndarray, where: str, delimited: bool,
           key_of: Callable[[int], bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every checksummed part of every value: its row, its header's position in ``data`` and
    its value's length, each header checked to lie within its value.

    Not ``delimited`` (Spark's merge operator version 2): the parts one write put in a value
    are adjacent, but RocksDB's merges still join writes with ``,``. A ``,`` after a part is
    then either that delimiter or a checksum's first byte; the reading whose part checks
    (``key_of(row)``: the key its checksum covers) is taken."""
    n = len(offsets) - 1
    starts, sizes = offsets[:-1], np.diff(offsets)
    short = np.flatnonzero(sizes < HEADER_BYTES)
    if len(short):
        raise _damaged(where, int(short[0]), "a value shorter than its checksum header")
    lengths = _le_int32(data, starts + 4) if n else np.zeros(0, dtype=np.int64)
    single = HEADER_BYTES + lengths == sizes
    rows, heads, lens = [np.flatnonzero(single)], [starts[single]], [lengths[single]]

    def header(at: int, end: int) -> int | None:
        """The length in a part header at ``at``, if one fits before ``end``."""
        if end - at < HEADER_BYTES:
            return None
        (length,) = struct.unpack_from("<i", data, at + 4)
        return length if 0 <= length <= end - at - HEADER_BYTES else None

    def checks(i: int, at: int, length: int) -> bool:
        (expected,) = struct.unpack_from("<I", data, at)
        body = data[at + HEADER_BYTES:at + HEADER_BYTES + length].tobytes()
        return crc32c(body, crc32c(key_of(i))) == expected

    for i in np.flatnonzero(~single):  # a list's merged values: walk its parts
        at, end = int(starts[i]), int(offsets[i + 1])
        while True:
            length = header(at, end)
            if length is None:
                raise _damaged(where, int(i), "a part's header or length past the value's end")
            rows.append(np.array([i]))
            heads.append(np.array([at]))
            lens.append(np.array([length]))
            at += HEADER_BYTES + length
            if at == end:
                break
            if delimited:
                if data[at] != DELIMITER:
                    raise _damaged(where, int(i), "no merge delimiter between two parts")
                at += 1
            elif data[at] == DELIMITER:
                here = header(at, end)
                if here is None or not checks(int(i), at, here):
                    at += 1  # the merge's delimiter
    return (np.concatenate(rows).astype(np.int64), np.concatenate(heads).astype(np.int64),
            np.concatenate(lens).astype(np.int64))


def _le_int32(data: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The little-endian 32-bit signed integers at positions ``at`` of ``data``."""
    b = [data[at + k].astype(np.uint32) for k in range(4)]
    return (b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24)).view(np.int32).astype(np.int64)


def open_values(keys: pa.Array, values: pa.Array, where: str,
                key_prefix: bytes = b"", delimited: bool = True) -> pa.Array:
    """``values`` without their checksum headers, every part checked against its key in
    ``keys``: the bytes Spark's encoders wrote. rockstate's checksum covers a key without its
    family id; Spark's own provider's (4.2+, the same value layout) covers its family id too,
    given as ``key_prefix`` when ``keys`` come without it. A key's values are joined by ``,``
    unless not ``delimited`` (Spark's merge operator version 2)."""
    if len(values) == 0:
        return values.cast(BINARY)
    offsets, data = spans(values)
    key_offsets, key_data = spans(keys)

    def key_of(row: int) -> bytes:
        return key_prefix + key_data[key_offsets[row]:key_offsets[row + 1]].tobytes()

    rows, heads, lens = _parts(offsets, data, where, delimited, key_of)
    expected = _le_int32(data, heads).astype(np.uint32)
    reg = np.full(len(rows), 0xFFFFFFFF, dtype=np.uint32)
    if key_prefix:
        prefix = np.frombuffer(key_prefix, dtype=np.uint8)
        reg = _update(reg, prefix, np.zeros(len(rows), dtype=np.int64),
                      np.full(len(rows), len(prefix), dtype=np.int64))
    reg = _update(reg, key_data, key_offsets[rows], np.diff(key_offsets)[rows])
    computed = _update(reg, data, heads + HEADER_BYTES, lens) ^ np.uint32(0xFFFFFFFF)
    bad = np.flatnonzero(computed != expected)
    if len(bad):
        b = int(bad[0])
        raise CorruptCheckpointError(
            f"a row of {where} (row {int(rows[b])}) fails its checksum (expected "
            f"{int(expected[b])}, computed {int(computed[b])}): the row is damaged. Restore "
            "the state from an earlier checkpoint.")
    keep = np.ones(len(data), dtype=bool)
    keep[(heads[:, None] + np.arange(HEADER_BYTES)).ravel()] = False
    headers_before = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=len(values)))))
    new_offsets = offsets - HEADER_BYTES * headers_before
    return pa.Array.from_buffers(BINARY, len(values), [
        None, pa.py_buffer(new_offsets.astype(np.int64)), pa.py_buffer(data[keep])])


def open_lists(keys: Sequence[bytes], values: Sequence[bytes], where: str,
               key_prefix: bytes = b"", delimited: bool = True) -> list[bytes]:
    """``open_values`` of rows given as ``bytes``."""
    return open_values(pa.array(keys, type=BINARY), pa.array(values, type=BINARY),
                       where, key_prefix, delimited).to_pylist()


def seal(key: bytes, value: bytes) -> bytes:
    """One value as a store with row checksums keeps it (the JVM's ``RowChecksum.seal``)."""
    return struct.pack("<Ii", crc32c(value, crc32c(key)), len(value)) + value


def _damaged(where: str, row: int, why: str) -> CorruptCheckpointError:
    return CorruptCheckpointError(
        f"a row of {where} (row {row}) has no valid checksum header ({why}): the row is "
        "damaged. Restore the state from an earlier checkpoint.")
