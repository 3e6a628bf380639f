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

from rockstate.errors import CorruptCheckpointError
from rockstate.row_checksum import crc32c, open_lists, open_value, open_values, seal


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
        open_value(b"another key", stored, "test")  # a value moved to another key
    with pytest.raises(CorruptCheckpointError, match="shorter than its checksum header"):
        open_value(key, stored[:5], "test")
    long = struct.pack("<Ii", 0, 1000) + b"x"
    with pytest.raises(CorruptCheckpointError, match="past the value's end"):
        open_value(key, long, "test")
