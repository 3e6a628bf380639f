"""What a version's changelogs do to the snapshot below it, keeping only the keys they touch.

A version is its snapshot with the changelogs after it replayed on top. Replaying them into
a small overlay (rather than into a dict of every key) lets a reader stream the snapshot's keys
past it in bounded memory (``export``), or apply it to the snapshot's sorted keys and values
in Arrow (``read_state``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rockstate.encoding.packed_entries import BINARY, SortedKeys, concat


@dataclass
class ChangelogOverlay:
    """``final``: keys whose value no longer depends on the snapshot (None: deleted);
    ``merged``: what a merge appends to the snapshot's value (Spark joins merged values with
    commas); ``ranges``: the snapshot's keys deleted by a ``deleteRange`` [start, end)."""

    final: dict[bytes, bytes | None] = field(default_factory=dict)
    merged: dict[bytes, bytes] = field(default_factory=dict)
    ranges: list[tuple[bytes, bytes]] = field(default_factory=list)

    @classmethod
    def replayed(cls, changelogs: Iterable[Iterable[tuple[str, bytes, bytes | None]]]
                 ) -> ChangelogOverlay:
        """The records of ``changelogs`` (each changelog's in order, the changelogs in
        order), replayed into a new overlay. Each changelog is taken from ``changelogs`` only
        once the one before it is replayed, so a reader reads and checks them one at a time."""
        overlay = cls()
        for records in changelogs:
            for op, key, value in records:
                overlay.apply(op, key, value)
        return overlay

    def put(self, key: bytes, value: bytes) -> None:
        self.final[key] = value
        self.merged.pop(key, None)

    def delete(self, key: bytes) -> None:
        self.final[key] = None
        self.merged.pop(key, None)

    def merge(self, key: bytes, value: bytes) -> None:
        if key in self.final:
            old = self.final[key]
            self.final[key] = value if old is None else old + b"," + value
        elif key in self.merged:
            self.merged[key] += b"," + value
        elif self.in_range(key):  # the snapshot's value is gone: the merge starts afresh
            self.final[key] = value
        else:
            self.merged[key] = value

    def delete_range(self, start: bytes, end: bytes) -> None:
        self.ranges.append((start, end))
        for key in [k for k in (*self.final, *self.merged) if start <= k < end]:
            self.merged.pop(key, None)
            self.final[key] = None

    def apply(self, op: str, key: bytes, value: bytes | None) -> None:
        """One changelog record, as the readers name its kind: ``put``, ``merge``, ``delete``
        or ``deleteRange`` (``value`` then holds the range's end)."""
        if op == "put":
            self.put(key, value)  # type: ignore[arg-type]
        elif op == "merge":
            self.merge(key, value)  # type: ignore[arg-type]
        elif op == "delete":
            self.delete(key)
        elif op == "deleteRange":
            self.delete_range(key, value)  # type: ignore[arg-type]
        else:
            raise ValueError(f"unknown changelog record kind {op!r}")

    def in_range(self, key: bytes) -> bool:
        return any(start <= key < end for start, end in self.ranges)

    def touches(self, key: bytes) -> bool:
        return key in self.final or key in self.merged

    def value_of(self, key: bytes, snapshot_value: bytes | None) -> bytes | None:
        """The key's value at the version, given its value in the snapshot (None: absent)."""
        if key in self.final:
            return self.final[key]
        if key in self.merged:  # no range covers it (a range drops it, or precedes it)
            suffix = self.merged[key]
            return suffix if snapshot_value is None else snapshot_value + b"," + suffix
        return None if self.in_range(key) else snapshot_value

    def stream(self, snapshot: Iterator[tuple[bytes, bytes]]
               ) -> Iterator[tuple[bytes, bytes]]:
        """The version's entries, from the snapshot's (in key order) streamed past the
        overlay, then the keys the changelogs added; nothing but the overlay is held."""
        seen: set[bytes] = set()
        for key, value in snapshot:
            if self.touches(key):
                seen.add(key)
                changed = self.value_of(key, value)
                if changed is not None:
                    yield key, changed
            elif not (self.ranges and self.in_range(key)):
                yield key, value
        for key in (*self.final, *self.merged):
            if key not in seen and (value := self.value_of(key, None)) is not None:
                yield key, value

    def chunks(self, snapshot: Iterator[tuple[bytes, bytes]], prefix: bytes, rows: int
               ) -> Iterator[tuple[list[bytes], list[bytes]]]:
        """The version's entries whose keys start with ``prefix`` (a column family's id,
        stripped), as :meth:`stream` gives them, ``rows`` keys and values at a time."""
        keys: list[bytes] = []
        values: list[bytes] = []
        for key, value in self.stream(snapshot):
            if key.startswith(prefix):
                keys.append(key[len(prefix):])
                values.append(value)
                if len(keys) >= rows:
                    yield keys, values
                    keys, values = [], []
        if keys:
            yield keys, values

    def apply_to_arrays(self, keys: pa.Array, values: pa.Array) -> tuple[pa.Array, pa.Array]:
        """A snapshot's ``keys`` (sorted, as RocksDB iterates them) and ``values``, two
        ``large_binary`` arrays, at the version: the rows of the keys the changelogs touched are
        found by one hash lookup over the snapshot's keys, a range's rows by bisection; keys
        the changelogs added come last. No Python object is made per untouched key."""
        touched = [*self.final, *self.merged]  # disjoint: a key is in one or the other
        if not touched and not self.ranges:
            return keys, values
        keep = np.ones(len(keys), dtype=bool)
        sorted_keys = SortedKeys(keys)
        for start, end in self.ranges:
            keep[bisect_left(sorted_keys, start):bisect_left(sorted_keys, end)] = False
        present: set[int] = set()
        changed_rows: list[int] = []
        changed_values: list[bytes] = []
        if touched:
            where = pc.index_in(keys, value_set=pa.array(touched, type=BINARY))
            rows = np.flatnonzero(where.is_valid().to_numpy(zero_copy_only=False))
            which = where.drop_null().to_numpy()
            for row, j, old in zip(rows.tolist(), which.tolist(),
                                   values.take(rows).to_pylist(), strict=True):
                present.add(j)
                value = self.value_of(touched[j], old)
                keep[row] = value is not None  # put again after a range deleted it
                if value is not None and value != old:
                    changed_rows.append(row)
                    changed_values.append(value)
        if changed_rows:
            mask = np.zeros(len(values), dtype=bool)
            mask[changed_rows] = True  # rows ascend: replacements go in row order
            values = pc.replace_with_mask(values, pa.array(mask),
                                          pa.array(changed_values, type=BINARY))
        if not keep.all():
            kept = pa.array(keep)
            keys, values = keys.filter(kept), values.filter(kept)
        added = [(key, value) for j, key in enumerate(touched) if j not in present
                 and (value := self.value_of(key, None)) is not None]
        if not added:
            return keys, values
        return (concat([keys, pa.array([k for k, _ in added], type=BINARY)]),
                concat([values, pa.array([v for _, v in added], type=BINARY)]))
