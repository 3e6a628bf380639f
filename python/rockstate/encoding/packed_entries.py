"""A store's entries as two Arrow arrays, its keys and its values (``large_binary``).

RocksDB hands its entries over one Python ``bytes`` pair at a time. Holding a million of those
alive costs more than RocksDB's own iteration (each is an allocation that stays), so the
readers pack them into Arrow a batch at a time and let each batch's objects go: what stays is
two buffers and their offsets, which the UnsafeRow decoder reads in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain, islice

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BINARY = pa.large_binary()

# Rows as the decoders take them: an Arrow binary array, or ``bytes`` one by one.
Rows = pa.Array | Sequence[bytes]

# Entries packed at a time: small enough that a batch's bytes objects are reused memory.
_BATCH = 8192


def pack(entries: Iterable[tuple[bytes, bytes]]) -> tuple[pa.Array, pa.Array]:
    """``entries`` (key, value) as an array of their keys and one of their values."""
    flat = chain.from_iterable(entries)
    keys: list[pa.Array] = []
    values: list[pa.Array] = []
    while batch := list(islice(flat, 2 * _BATCH)):
        keys.append(pa.array(batch[0::2], type=BINARY))
        values.append(pa.array(batch[1::2], type=BINARY))
    return concat(keys), concat(values)


def concat(arrays: Sequence[pa.Array]) -> pa.Array:
    """``arrays`` of binaries joined into one ``large_binary`` array (empty for none)."""
    if not arrays:
        return pa.array([], type=BINARY)
    return pa.concat_arrays([a.cast(BINARY) for a in arrays])


def with_prefix(keys: pa.Array, values: pa.Array, prefix: bytes) -> tuple[pa.Array, pa.Array]:
    """The entries whose key starts with ``prefix`` (a column family's id), stripped of it."""
    ours = pc.starts_with(keys, pattern=prefix)
    return _without_first_bytes(keys.filter(ours), len(prefix)), values.filter(ours)


def _without_first_bytes(items: pa.Array, count: int) -> pa.Array:
    """``items`` (each at least ``count`` bytes long) without their first ``count`` bytes.
    (Arrow's ``binary_slice`` fails on some arrays in pyarrow 26.)"""
    items = items.cast(BINARY)
    n = len(items)
    if n == 0 or count == 0:
        return items
    offsets, data = spans(items)
    keep = np.ones(len(data), dtype=bool)
    for i in range(count):
        keep[offsets[:-1] + i] = False
    shorter = offsets - count * np.arange(n + 1)
    return pa.Array.from_buffers(BINARY, n, [None, pa.py_buffer(shorter),
                                             pa.py_buffer(data[keep])])


def spans(items: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A binary array's ``len + 1`` offsets (from 0) and the bytes they point into, read in
    place. A slice starts ``offset`` rows into its offsets, and its first row may start past
    its data buffer's first byte: both are taken off."""
    items = items.cast(BINARY)
    if len(items) == 0:
        return np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.uint8)
    _, offsets_buf, data_buf = items.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64, count=len(items) + 1,
                            offset=items.offset * 8)
    first = int(offsets[0])
    offsets = offsets - first
    total = int(offsets[-1])
    data = (np.frombuffer(data_buf, dtype=np.uint8, count=total, offset=first) if total
            else np.empty(0, dtype=np.uint8))
    return offsets, data


def as_binary(items: Rows) -> pa.Array:
    """``items`` as a ``large_binary`` array."""
    if isinstance(items, pa.Array):
        return items.cast(BINARY)
    return pa.array(items, type=BINARY)


def as_bytes(items: Rows) -> list[bytes]:
    """``items`` as a list of ``bytes`` (for the decoders that walk them one at a time)."""
    if isinstance(items, pa.Array):
        return items.to_pylist()
    return items if isinstance(items, list) else list(items)


class SortedKeys(Sequence[bytes]):
    """The keys of a ``large_binary`` array as ``bytes``, one at a time, for ``bisect``: a
    key is made only when a search probes it, never a list of them all."""

    def __init__(self, keys: pa.Array) -> None:
        self._offsets, data = spans(keys)
        self._data = memoryview(data)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            raise TypeError("SortedKeys is read one key at a time")
        if not 0 <= i < len(self):
            raise IndexError(i)
        return bytes(self._data[int(self._offsets[i]):int(self._offsets[i + 1])])
