"""Spark's UnsafeRow binary layout, decoded into Arrow without a JVM.

An UnsafeRow of ``n`` fields is a null bitset (``ceil(n / 64)`` 8-byte words), then one 8-byte
slot per field, then a variable-length region. A fixed-width value (boolean, byte, short, int,
long, float, double, date, timestamp, decimal of precision <= 18) lives in its slot,
little-endian. Anything else (string, binary, larger decimal, struct, array, map) has
``offset << 32 | size`` in its slot, the offset counted from the row's start. Nested structs
are UnsafeRows; arrays are UnsafeArrayData (element count, null bitset, elements, variable
region); maps are a key array and a value array.

Top-level fixed-width columns, strings and binaries are decoded with numpy over all rows at
once; other variable-length and nested values one row at a time.
"""

from __future__ import annotations

import datetime
import decimal
import json
import re
import struct
from typing import Any

import numpy as np
import pyarrow as pa

from rockstate.encoding.packed_entries import Rows, as_binary, as_bytes, spans
from rockstate.errors import RockstateError

_DECIMAL = re.compile(r"decimal\((\d+),\s*(-?\d+)\)")
_EPOCH = datetime.date(1970, 1, 1)
# Spark's DecimalType.MAX_PRECISION.
MAX_DECIMAL_PRECISION = 38

# Spark type name -> (numpy dtype of the slot, width in bytes inside an array element)
_FIXED = {
    "boolean": ("?", 1), "byte": ("<i1", 1), "short": ("<i2", 2), "integer": ("<i4", 4),
    "long": ("<i8", 8), "float": ("<f4", 4), "double": ("<f8", 8), "date": ("<i4", 4),
    "timestamp": ("<i8", 8), "timestamp_ntz": ("<i8", 8),
}


class UnsupportedTypeError(RockstateError, ValueError):
    """A Spark type the decoder does not know (or not with those parameters)."""


def arrow_type(spark_type: Any) -> pa.DataType:
    """The Arrow type for a Spark type given as its JSON form (``StructType.jsonValue()``)."""
    if isinstance(spark_type, str):
        simple = {
            "boolean": pa.bool_(), "byte": pa.int8(), "short": pa.int16(),
            "integer": pa.int32(), "long": pa.int64(), "float": pa.float32(),
            "double": pa.float64(), "string": pa.string(), "binary": pa.binary(),
            "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"),
            "timestamp_ntz": pa.timestamp("us"), "void": pa.null(), "null": pa.null(),
        }
        if spark_type in simple:
            return simple[spark_type]
        if is_decimal(spark_type):
            return pa.decimal128(*decimal_precision(spark_type))
        raise UnsupportedTypeError(f"Spark type {spark_type!r} is not supported by the reader")
    kind = spark_type.get("type")
    if kind == "struct":
        return pa.struct([pa.field(f["name"], arrow_type(f["type"]), f.get("nullable", True))
                          for f in spark_type["fields"]])
    if kind == "array":
        return pa.list_(arrow_type(spark_type["elementType"]))
    if kind == "map":
        return pa.map_(arrow_type(spark_type["keyType"]), arrow_type(spark_type["valueType"]))
    if kind == "udt":
        return arrow_type(spark_type["sqlType"])
    raise UnsupportedTypeError(f"Spark type {json.dumps(spark_type)} is not supported")


def _bitset_words(n: int) -> int:
    return (n + 63) // 64


def decimal_value(unscaled: int, scale: int) -> decimal.Decimal:
    """A decimal from its unscaled integer and scale."""
    return decimal.Decimal(unscaled).scaleb(-scale)


def decimal_precision(spark_type: Any) -> tuple[int, int]:
    """(precision, scale) of a Spark decimal type (``decimal`` alone: Spark's 10, 0). A schema
    file is untrusted: precision and scale past Spark's (``DecimalType.MAX_PRECISION``, 38)
    are refused before they size any work."""
    if spark_type == "decimal":
        return (10, 0)
    m = _DECIMAL.fullmatch(spark_type) if isinstance(spark_type, str) else None
    if m is None or len(m.group(1)) > 2 or len(m.group(2)) > 3:
        raise UnsupportedTypeError(f"Spark type {str(spark_type)[:60]!r} is not a decimal "
                                   "Spark writes")
    precision, scale = int(m.group(1)), int(m.group(2))
    if not (1 <= precision <= MAX_DECIMAL_PRECISION and -precision <= scale <= precision):
        raise UnsupportedTypeError(
            f"Spark type {spark_type!r} has a precision or scale outside Spark's (precision 1 "
            f"to {MAX_DECIMAL_PRECISION}, scale at most the precision); the schema is damaged")
    return precision, scale


def is_decimal(spark_type: Any) -> bool:
    """Whether a Spark type (as JSON) is a decimal."""
    return isinstance(spark_type, str) and spark_type.startswith("decimal")


def _slot_value(buf: bytes, base: int, slot: int, spark_type: Any) -> Any:
    """One non-null value whose slot (or array element) starts at ``slot``."""
    if isinstance(spark_type, str) and spark_type in _FIXED:
        dtype = _FIXED[spark_type][0]
        raw = struct.unpack_from({"?": "<?", "<i1": "<b", "<i2": "<h", "<i4": "<i",
                                  "<i8": "<q", "<f4": "<f", "<f8": "<d"}[dtype], buf, slot)[0]
        if spark_type == "date":
            return _EPOCH + datetime.timedelta(days=raw)
        if spark_type in ("timestamp", "timestamp_ntz"):
            tz = datetime.UTC if spark_type == "timestamp" else None
            return datetime.datetime(1970, 1, 1, tzinfo=tz) + datetime.timedelta(microseconds=raw)
        return raw
    if spark_type in ("void", "null"):
        return None
    if is_decimal(spark_type):
        precision, scale = decimal_precision(spark_type)
        if precision <= 18:
            return decimal_value(struct.unpack_from("<q", buf, slot)[0], scale)
    word = struct.unpack_from("<q", buf, slot)[0]
    offset, size = base + (word >> 32), word & 0xFFFFFFFF
    body = buf[offset:offset + size]
    if spark_type == "string":
        return body.decode("utf-8")
    if spark_type == "binary":
        return bytes(body)
    if is_decimal(spark_type):
        return decimal_value(int.from_bytes(body, "big", signed=True),
                              decimal_precision(spark_type)[1])
    kind = spark_type.get("type") if isinstance(spark_type, dict) else None
    if kind == "struct":
        return _row_dict(buf, offset, spark_type)
    if kind == "array":
        return _array(buf, offset, spark_type["elementType"])
    if kind == "map":
        key_bytes = struct.unpack_from("<q", buf, offset)[0]
        keys = _array(buf, offset + 8, spark_type["keyType"])
        values = _array(buf, offset + 8 + key_bytes, spark_type["valueType"])
        return list(zip(keys, values, strict=True))
    if kind == "udt":
        return _slot_value(buf, base, slot, spark_type["sqlType"])
    raise UnsupportedTypeError(f"Spark type {json.dumps(spark_type)} is not supported")


def _is_null(buf: bytes, bitset_at: int, i: int) -> bool:
    return bool(buf[bitset_at + (i >> 3)] >> (i & 7) & 1)


def _row_dict(buf: bytes, base: int, schema: dict) -> dict:
    fields = schema["fields"]
    slots = base + _bitset_words(len(fields)) * 8
    return {f["name"]: None if _is_null(buf, base, i) else
            _slot_value(buf, base, slots + 8 * i, f["type"]) for i, f in enumerate(fields)}


def _array(buf: bytes, base: int, element: Any) -> list:
    n = struct.unpack_from("<q", buf, base)[0]
    if n < 0 or n > len(buf):  # every element takes a bit at least
        raise ValueError(f"an array of {n} elements in a {len(buf)}-byte row is damaged")
    bitset = base + 8
    elements = bitset + _bitset_words(n) * 8
    width = 8
    if isinstance(element, str) and element in _FIXED:
        width = _FIXED[element][1]
    elif is_decimal(element) and decimal_precision(element)[0] <= 18:
        width = 8
    return [None if _is_null(buf, bitset, i) else
            _slot_value(buf, base, elements + width * i, element) for i in range(n)]


# Rows gathered at a time: bounds the index arrays numpy builds.
_CHUNK = 65536


def _fixed_regions(joined: np.ndarray, starts: np.ndarray, lengths: np.ndarray, skip: int,
                   fixed_len: int) -> np.ndarray:
    """The bitset and slots of every row as an (rows x fixed_len) byte matrix. ``joined``: the
    rows back to back; ``starts``, ``lengths``: where each row is in it."""
    n = len(lengths)
    short = np.flatnonzero(lengths - skip < fixed_len)
    if short.size:
        i = int(short[0])
        raise ValueError(f"row {i} has {lengths[i] - skip} bytes, fewer than the "
                         f"{fixed_len} its schema's fixed region needs: the schema does not "
                         "match the state")
    if lengths.min() == lengths.max():  # fixed-width rows: a plain reshape
        return joined.reshape(n, int(lengths[0]))[:, skip:skip + fixed_len]
    # The region is whole 8-byte words: gathered a word per row at a time, from a view that
    # reads the 8 bytes at every byte offset (rows start anywhere), not byte by byte.
    words = np.ndarray((len(joined) - 7,), dtype="<u8", buffer=joined, strides=(1,))
    out = np.empty((n, fixed_len // 8), dtype="<u8")
    firsts = starts + skip
    for w in range(fixed_len // 8):
        out[:, w] = words[firsts + 8 * w]
    return out.view(np.uint8)


def _variable_bytes(joined: np.ndarray, starts: np.ndarray, offsets: np.ndarray,
                    sizes: np.ndarray, nulls: np.ndarray) -> pa.Array:
    """A binary column of the spans ``offsets``/``sizes`` (checked by :func:`_spans`) of every
    row, gathered with numpy: no Python object per row."""
    n = len(starts)
    sizes = np.where(nulls, 0, sizes)
    ends = np.cumsum(sizes)
    total = int(ends[-1]) if n else 0
    data = np.empty(total, dtype=np.uint8)
    begins = starts + offsets
    for at in range(0, n, _CHUNK):
        part = sizes[at:at + _CHUNK]
        count = int(part.sum())
        if count == 0:
            continue
        first = int(ends[at] - sizes[at])
        # Each byte's source: its place in the output, moved by how far its span's start in
        # the rows is from its start in the output.
        shift = begins[at:at + _CHUNK] - (ends[at:at + _CHUNK] - part - first)
        data[first:first + count] = joined[np.arange(count) + np.repeat(shift, part)]
    large = total >= 2**31 - 1
    offsets_out = np.zeros(n + 1, dtype=np.int64 if large else np.int32)
    offsets_out[1:] = ends
    validity = pa.array(~nulls).buffers()[1] if nulls.any() else None
    return pa.Array.from_buffers(pa.large_binary() if large else pa.binary(), n,
                                 [validity, pa.py_buffer(offsets_out), pa.py_buffer(data)],
                                 null_count=int(nulls.sum()))


def _spans(lengths: np.ndarray, fixed: np.ndarray, slot: int, skip: int,
           nulls: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The (offset, size) of a variable-length field in every row (``lengths``: the rows'
    sizes), each checked to lie inside its row: a damaged offset is an error, never bytes from
    elsewhere."""
    words = np.ascontiguousarray(fixed[:, slot:slot + 8]).view("<i8").reshape(len(lengths))
    offsets, sizes = (words >> 32) + skip, words & 0xFFFFFFFF
    bad = np.flatnonzero(~nulls & ((offsets < skip) | (offsets + sizes > lengths)))
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"field {name!r} of row {j} points at bytes {int(offsets[j])}.."
                         f"{int(offsets[j] + sizes[j])} of a {int(lengths[j])}-byte row; the "
                         "row is damaged")
    return offsets, sizes


def _packed(rows: Rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each row starts in one buffer of them all, its length, and that buffer: read in
    place from an Arrow array, or built from ``bytes`` by Arrow's converter in C (a third of
    the time of joining the bytes and taking each one's length in Python)."""
    offsets, joined = spans(as_binary(rows))
    return offsets[:-1], np.diff(offsets), joined


def decode_rows(rows: Rows, schema: dict, skip: int = 0) -> pa.StructArray:
    """Decodes UnsafeRows (each starting ``skip`` bytes in) into a struct array of ``schema``.

    ``schema`` is a Spark StructType in its JSON form. Rows shorter than the schema's fixed
    region are an error naming the row, never silently a null.
    """
    fields = schema["fields"]
    n = len(rows)
    bitset_len = _bitset_words(len(fields)) * 8
    fixed_len = bitset_len + 8 * len(fields)
    typ = arrow_type(schema)
    if n == 0:
        return pa.array([], type=typ)
    starts, lengths, joined = _packed(rows)
    fixed = _fixed_regions(joined, starts, lengths, skip, fixed_len)
    listed: list[bytes] | None = None  # the rows as bytes, for the fields decoded one by one
    children = []
    for i, f in enumerate(fields):
        nulls = (fixed[:, i >> 3] >> (i & 7) & 1).astype(bool)
        slot = bitset_len + 8 * i
        t = f["type"]
        if isinstance(t, str) and t in _FIXED:
            dtype, width = _FIXED[t]
            values = np.ascontiguousarray(fixed[:, slot:slot + width]).view(dtype).reshape(n)
            if t == "date":
                arr = pa.array(values.astype("<i4"), mask=nulls).cast(pa.date32())
            elif t in ("timestamp", "timestamp_ntz"):
                arr = pa.array(values, mask=nulls).cast(arrow_type(t))
            else:
                arr = pa.array(values, mask=nulls, type=arrow_type(t))
        elif t in ("void", "null"):
            arr = pa.nulls(n)
        elif t in ("string", "binary"):
            offsets, sizes = _spans(lengths, fixed, slot, skip, nulls, f["name"])
            arr = _variable_bytes(joined, starts, offsets, sizes, nulls)
            if t == "string":
                arr = arr.cast(pa.large_string() if arr.type == pa.large_binary()
                               else pa.string())
        elif isinstance(t, dict) and t.get("type") == "struct":
            offsets, sizes = _spans(lengths, fixed, slot, skip, nulls, f["name"])
            nested = _variable_bytes(joined, starts, offsets, sizes, nulls)
            inner = decode_rows(nested.filter(pa.array(~nulls)), t)
            # Back to every position: a null index takes a null struct.
            at = pa.array(np.cumsum(~nulls) - 1, mask=nulls, type=pa.int64())
            arr = inner.take(at)
        else:
            listed = as_bytes(rows) if listed is None else listed
            try:
                items = [None if nulls[j] else
                         _slot_value(listed[j], skip, skip + slot, t) for j in range(n)]
            except (struct.error, IndexError, OverflowError, MemoryError) as e:
                raise ValueError(f"field {f['name']!r} of a row is damaged ({e})") from None
            arr = pa.array(items, type=arrow_type(t))
        children.append(arr)
    # A column past 2 GiB is large_string/large_binary: its field says so.
    return pa.StructArray.from_arrays(children, fields=[
        f if f.type == c.type else pa.field(f.name, c.type, f.nullable)
        for f, c in zip(typ, children, strict=True)])
