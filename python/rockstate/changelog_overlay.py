"""What a version's changelogs do to the snapshot below it, keeping only the keys they touch.

A version is its snapshot with the changelogs after it replayed on top. Replaying them into
a small overlay (rather than into a dict of every key) lets a reader stream the snapshot's keys
past it in bounded memory (``export``), or apply it to the snapshot's sorted keys and values
by bisection (``read_state``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class ChangelogOverlay:
    """``final``: keys whose value no longer depends on the snapshot (None: deleted);
    ``merged``: what a merge appends to the snapshot's value (Spark joins merged values with
    commas); ``ranges``: the snapshot's keys deleted by a ``deleteRange`` [start, end)."""

    final: dict[bytes, bytes | None] = field(default_factory=dict)
    merged: dict[bytes, bytes] = field(default_factory=dict)
    ranges: list[tuple[bytes, bytes]] = field(default_factory=list)

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

    def apply_to_sorted(self, keys: list[bytes], values: list[bytes]
                        ) -> tuple[list[bytes], list[bytes]]:
        """A snapshot's ``keys`` (sorted, as RocksDB iterates them) and ``values`` at the
        version: each key the changelogs touched is found by bisection; keys they added come
        last. ``values`` may be changed in place."""
        drop: set[int] = set()
        for start, end in self.ranges:
            drop.update(range(bisect_left(keys, start), bisect_left(keys, end)))
        added_keys: list[bytes] = []
        added_values: list[bytes] = []
        for key in (*self.final, *self.merged):
            i = bisect_left(keys, key)
            present = i < len(keys) and keys[i] == key
            value = self.value_of(key, values[i] if present else None)
            if present and value is None:
                drop.add(i)
            elif present:
                values[i] = value  # type: ignore[assignment]
                drop.discard(i)  # put again after a range deleted it
            elif value is not None:
                added_keys.append(key)
                added_values.append(value)
        if drop:
            kept = [i for i in range(len(keys)) if i not in drop]
            keys, values = [keys[i] for i in kept], [values[i] for i in kept]
        return keys + added_keys, values + added_values
