"""Spark's Avro state encoding (``spark.sql.streaming.stateStore.encodingFormat=avro``),
decoded into Arrow without a JVM.

Spark's ``AvroStateEncoder`` (4.0+, transformWithState) writes each row as a version byte
(0), for keys and values a schema id (2 bytes, little-endian), then the Avro binary datum of
the row, without a container or fingerprint. The Avro schema is derived from the Spark
schema by ``SchemaConverters.toAvroTypeWithDefaults``:

- every field of a struct, at any depth, is the union ``["null", T]`` (one zig-zag varint
  branch index, 0 for null, 1 for a value), except a field of type null, which takes no
  bytes; nested structs, arrays and maps are that union already, not wrapped twice;
- an array's elements and a map's values are plain ``T`` for atomic types and
  ``["null", T]`` for structs, arrays and maps; map keys are strings;
- boolean: 1 byte; byte, short, integer, date (days), long, timestamp and timestamp_ntz
  (microseconds): zig-zag varints; float and double: little-endian IEEE; string and binary:
  a varint length, then the bytes; decimal(p, s): a fixed of the fewest bytes that hold
  precision p, the unscaled value big-endian two's complement; arrays and maps: blocks of a
  varint count and that many items, ending with a count of 0.

Values are read with the schema of their id (schema evolution), then matched by field name
to the schema the reader asks for, a field the writer did not have read as null, as Avro's
schema resolution does. Keys are read with the current key schema (key schemas never evolve).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from rockstate.encoding.packed_entries import Rows, as_bytes
from rockstate.encoding.unsaferow import (
    UnsupportedTypeError,
    arrow_type,
    decimal_precision,
    decimal_value,
    is_decimal,
)
from rockstate.errors import CorruptCheckpointError

VERSION = 0  # Spark's STATE_ENCODING_VERSION: the first byte of every row
_VARINT = frozenset({"byte", "short", "integer", "date", "long", "timestamp", "timestamp_ntz"})
_NULL = frozenset({"null", "void"})


class _Reader:
    """A position in one row's bytes; every read is checked against the row's end."""

    __slots__ = ("at", "buf")

    def __init__(self, buf: bytes, at: int) -> None:
        self.buf = buf
        self.at = at

    def take(self, n: int) -> bytes:
        if n < 0 or self.at + n > len(self.buf):
            raise ValueError(f"{n} bytes at byte {self.at} run past the row's {len(self.buf)}")
        out = self.buf[self.at:self.at + n]
        self.at += n
        return out

    def long(self) -> int:
        shift = result = 0
        while True:
            if self.at >= len(self.buf):
                raise ValueError(f"a number at byte {self.at} runs past the row's end")
            b = self.buf[self.at]
            self.at += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7
            if shift > 63:
                raise ValueError(f"a number at byte {self.at} is longer than 10 bytes")


def _decimal_bytes(precision: int) -> int:
    """Spark's ``minBytesForPrecision``: the fewest bytes whose signed range holds 10^p."""
    n = 1
    while 2 ** (8 * n - 1) < 10 ** precision:
        n += 1
    return n


def _is_complex(t: Any) -> bool:
    return isinstance(t, dict) and t.get("type") in ("struct", "array", "map")


def _nullable(r: _Reader, t: Any) -> Any:
    """A ``["null", T]`` union."""
    branch = r.long()
    if branch == 0:
        return None
    if branch != 1:
        raise ValueError(f"a union branch {branch} at byte {r.at} is neither null nor a value")
    return _value(r, t)


def _is_null_type(t: Any) -> bool:
    return isinstance(t, str) and t in _NULL


def _field(r: _Reader, t: Any) -> Any:
    return None if _is_null_type(t) else _nullable(r, t)


def _element(r: _Reader, t: Any) -> Any:
    return _nullable(r, t) if _is_complex(t) else _value(r, t)


# Items of type null take no bytes: how many a block of them may claim.
_MAX_EMPTY_ITEMS = 1 << 20


def _blocks(r: _Reader, item: Callable[[], Any], sized: bool = True) -> list:
    """Avro's array and map blocks; ``sized``: each item takes a byte at least."""
    out: list = []
    while True:
        count = r.long()
        if count == 0:
            return out
        if count < 0:  # a block that also gives its size in bytes
            count = -count
            r.long()
        if count > (len(r.buf) - r.at if sized else _MAX_EMPTY_ITEMS):
            raise ValueError(f"a block of {count} items at byte {r.at} cannot fit the row")
        out.extend(item() for _ in range(count))


def _value(r: _Reader, t: Any) -> Any:
    if isinstance(t, str):
        if t in _VARINT:
            return r.long()
        if t == "boolean":
            return r.take(1) != b"\x00"
        if t == "double":
            return struct.unpack("<d", r.take(8))[0]
        if t == "float":
            return struct.unpack("<f", r.take(4))[0]
        if t == "string":
            return r.take(r.long()).decode("utf-8")
        if t == "binary":
            return r.take(r.long())
        if is_decimal(t):
            precision, scale = decimal_precision(t)
            unscaled = int.from_bytes(r.take(_decimal_bytes(precision)), "big", signed=True)
            return decimal_value(unscaled, scale)
        raise UnsupportedTypeError(f"Spark type {t!r} has no Avro state encoding")
    kind = t.get("type")
    if kind == "struct":
        return {f["name"]: _field(r, f["type"]) for f in t["fields"]}
    if kind == "array":
        return _blocks(r, lambda: _element(r, t["elementType"]),
                       not _is_null_type(t["elementType"]))
    if kind == "map":
        return _blocks(r, lambda: (r.take(r.long()).decode("utf-8"),
                                   _element(r, t["valueType"])))
    if kind == "udt":
        return _value(r, t["sqlType"])
    raise UnsupportedTypeError(f"Spark type {t!r} has no Avro state encoding")


def _resolve(value: Any, writer: Any, reader: Any) -> Any:
    """A value read with the writer's schema, shaped as the reader's: struct fields matched
    by name (a field the writer lacks is null), recursively through arrays and maps."""
    if value is None or not isinstance(reader, dict) or writer == reader:
        return value
    kind = reader.get("type")
    if kind == "struct" and isinstance(writer, dict) and writer.get("type") == "struct":
        types = {f["name"]: f["type"] for f in writer["fields"]}
        return {f["name"]: _resolve(value.get(f["name"]), types[f["name"]], f["type"])
                if f["name"] in types else None for f in reader["fields"]}
    if kind == "array" and isinstance(writer, dict):
        return [_resolve(v, writer["elementType"], reader["elementType"]) for v in value]
    if kind == "map" and isinstance(writer, dict):
        return [(k, _resolve(v, writer["valueType"], reader["valueType"])) for k, v in value]
    return value


def decode_rows(rows: Rows, schema: dict, *, schema_id: bool = True,
                writers: Mapping[int, dict] | None = None) -> pa.StructArray:
    """Decodes rows of Spark's Avro state encoding into a struct array of ``schema`` (a Spark
    StructType as JSON). Each row is the version byte, with ``schema_id`` the 2-byte id of
    its schema, then the datum. With ``writers`` (schema id -> the schema it names) a row is
    read with its own id's schema and resolved to ``schema``; without, with ``schema``.
    Damage (a short row, a bad union branch, an unknown id) raises CorruptCheckpointError."""
    out = []
    for i, row in enumerate(as_bytes(rows)):
        try:
            r = _Reader(row, 0)
            if r.take(1)[0] != VERSION:
                raise ValueError(f"its encoding version is {row[0]}, not {VERSION}")
            writer = schema
            if schema_id:
                (sid,) = struct.unpack("<h", r.take(2))
                if writers is not None:
                    if sid not in writers:
                        raise ValueError(f"its schema id {sid} is in no state schema file "
                                         f"(ids {sorted(writers)})")
                    writer = writers[sid]
            value = _value(r, writer)
            if r.at != len(row):
                raise ValueError(f"{len(row) - r.at} bytes follow its last field")
        except (ValueError, UnicodeDecodeError, IndexError, struct.error) as e:
            raise CorruptCheckpointError(
                f"an Avro-encoded state row (row {i} of {len(rows)}) is damaged: {e}.") from None
        out.append(_resolve(value, writer, schema))
    return pa.array(out, type=arrow_type(schema))
