"""Per-row checksums read from Python (no Spark): CRC32C, opening, and damage found.

The layout is the JVM's (``RowChecksum``); the format 4 fixture
(``tests/test_format_fixtures.py``) ties the two: the bytes the JVM wrote are the bytes
``seal`` makes of what Python opened.
"""

from __future__ import annotations

import random
import struct

import pyarrow as pa
import pytest

from rockstate.encoding.row_checksum import crc32c, open_lists, open_values, seal
from rockstate.errors import CorruptCheckpointError


def test_crc32c_is_castagnoli_and_continues():
    assert crc32c(b"123456789") == 0xE3069283  # the standard check value
    assert crc32c(b"") == 0
    assert crc32c(b"56789", crc32c(b"1234")) == crc32c(b"123456789")


def _sealed_list(key: bytes, parts: list[bytes]) -> bytes:
    return b",".join(seal(key, p) for p in parts)


def test_values_open_alone_merged_and_sliced():
    rng = random.Random(3)
    keys, stored, want = [], [], []
    for i in range(300):
        key = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 30)))
        parts = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 50)))
                 for _ in range(1 + (i % 3 == 0) * rng.randrange(1, 4))]
        keys.append(key)
        stored.append(_sealed_list(key, parts))
        want.append(b",".join(parts))
    assert open_lists(keys, stored, "test") == want
    # Arrow slices (a read's partitions, a family's rows) open in place.
    k, v = pa.array(keys, type=pa.large_binary()), pa.array(stored, type=pa.large_binary())
    assert open_values(k.slice(17, 100), v.slice(17, 100), "test").to_pylist() == want[17:117]
    assert open_values(k.slice(0, 0), v.slice(0, 0), "test").to_pylist() == []


def test_every_damaged_byte_is_found_and_the_row_named():
    key = b"key"
    stored = _sealed_list(key, [b"ab", b"cd"])
    for i in range(len(stored)):  # every byte: checksums, lengths, values, the delimiter
        bad = bytearray(stored)
        bad[i] ^= 0x10
        with pytest.raises(CorruptCheckpointError, match=r"version 3 of store x \(row 1\)"):
            open_lists([b"ok", key], [seal(b"ok", b"v"), bytes(bad)], "version 3 of store x")
    with pytest.raises(CorruptCheckpointError, match="fails its checksum"):
        open_lists([b"another key"], [stored], "test")  # a value moved to another key
    with pytest.raises(CorruptCheckpointError, match="shorter than its checksum header"):
        open_lists([key], [stored[:5]], "test")
    long = struct.pack("<Ii", 0, 1000) + b"x"
    with pytest.raises(CorruptCheckpointError, match="past the value's end"):
        open_lists([key], [long], "test")


def test_a_key_prefix_is_covered_when_given():
    """Spark's own provider's checksum covers the key with its family id: given apart (the
    reader strips it from the keys), it is fed first."""
    stored = seal(b"\x02\x00" + b"key", b"value")
    assert open_lists([b"key"], [stored], "test", key_prefix=b"\x02\x00") == [b"value"]
    with pytest.raises(CorruptCheckpointError, match="fails its checksum"):
        open_lists([b"key"], [stored], "test")  # without its family id: not this row's


def _long_row(n: int) -> bytes:
    """Spark's version byte, then an UnsafeRow of one non-null long."""
    return b"\x00" + bytes(8) + struct.pack("<q", n)


def test_spark_merge_operator_2_lists_read_whatever_their_bytes():
    """Spark's merge operator version 2 (4.2+): a write's list elements are adjacent, merges
    join writes with ``,``. A ``,`` that starts an element's length (an element of 44 bytes)
    or a checksum is not taken for a delimiter, with checksums or without."""
    from rockstate.checkpoint.state_schema import FamilySchema
    from rockstate.checkpoint.tws import decode_variable

    long_schema = {"type": "struct", "fields": [
        {"name": "v", "type": "long", "nullable": False, "metadata": {}}]}
    wide = b"\x00" + bytes(8) + b"\x2c" * 35  # 44 bytes: its length's first byte is ','
    assert struct.pack("<i", len(wide))[0] == 0x2C

    def element(row: bytes) -> bytes:
        return struct.pack("<i", len(row)) + row

    value = element(_long_row(1)) + element(wide) + b"," + element(_long_row(3))
    family = FamilySchema("items", long_schema, long_schema, {}, None)
    table = decode_variable("ListState", family, [_long_row(7)], [value], [0], delimited=False)
    assert table.num_rows == 3
    wide_long = struct.unpack("<q", b"," * 8)[0]  # the wide row's long: its first 8 bytes
    assert [r["v"] for r in table.column("list_element").to_pylist()] == [1, wide_long, 3]
    # The same list with row checksums: a part whose checksum starts with ',' stays whole.
    key = b"\x01\x00" + _long_row(7)
    parts = [element(_long_row(i)) for i in range(200)]
    stored = b"".join(seal(key, p) for p in parts[:100]) + b"," + \
        b"".join(seal(key, p) for p in parts[100:])
    assert any(seal(key, p)[0] == 0x2C for p in parts[1:])  # some checksum starts with ','
    opened = open_lists([key[2:]], [stored], "test", key_prefix=key[:2], delimited=False)
    assert opened == [b"".join(parts[:100]) + b"," + b"".join(parts[100:])]
