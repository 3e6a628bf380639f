"""One store's state at a version, read without Spark, whichever provider wrote it.

A version is the newest snapshot its lineage has, plus the changelogs after it. Each provider's
reader finds those in its own layout and stages them (``StagedVersion``): rockstate's stores
(``RockstateStoreReader``) and Spark's own RocksDB provider's (``SparkRocksDBReader``). What is
done with them is the same for both and is here: the changelogs' overlay applied to the
snapshot's keys and values packed in Arrow (``entry_arrays``, what ``read_state`` decodes) or
the snapshot streamed past it a bounded number of rows at a time (``entry_chunks``, what
``export`` writes), one column family's keys taken and stripped of its prefix, and every value
of a store with row checksums checked and opened.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

import pyarrow as pa

from rockstate.checkpoint.location import CheckpointLocation, StoreRef
from rockstate.checkpoint.staged_version import StagedVersion
from rockstate.encoding import packed_entries, row_checksum


@dataclass(frozen=True)
class StoreReader(ABC):
    """One partition's store (``store``: its operator, partition, name and directory) in
    ``loc``, read at any of its versions. A store with column families (transformWithState)
    is read one ``family`` at a time, its keys without the family's id."""

    loc: CheckpointLocation
    store: StoreRef

    @property
    def partition(self) -> int:
        return self.store.partition

    @property
    @abstractmethod
    def label(self) -> str:
        """The store as a read's progress names it."""

    @abstractmethod
    def versions(self) -> list[int]:
        """The versions the store has, ascending."""

    @abstractmethod
    def staged_version(self, version: int, family: str | None
                       ) -> AbstractContextManager[StagedVersion | None]:
        """``version`` staged for reading while the block runs, once the read is known to make
        sense; None when ``family`` holds nothing (a state variable never written)."""

    def entries(self, version: int, family: str | None = None) -> dict[bytes, bytes]:
        """Every key and value at ``version``, as Spark's encoders wrote them."""
        keys, values = self.entry_arrays(version, family)
        return dict(zip(keys.to_pylist(), values.to_pylist(), strict=True))

    def entry_arrays(self, version: int, family: str | None = None
                     ) -> tuple[pa.Array, pa.Array]:
        """The entries of :meth:`entries` as an Arrow array of keys and one of values, in the
        snapshot's key order then the keys the changelogs added, with no Python object per
        entry held (they cost more than RocksDB's iteration)."""
        with self.staged_version(version, family) as staged:
            if staged is None:
                return packed_entries.pack(())
            keys, values = packed_entries.pack(staged.snapshot)
        keys, values = staged.overlay.apply_to_arrays(keys, values)
        if staged.prefix:
            keys, values = packed_entries.with_prefix(keys, values, staged.prefix)
        if staged.row_checksums:
            values = row_checksum.open_values(keys, values, staged.rows_of,
                                              staged.checksum_prefix, staged.delimited)
        return keys, values

    def entry_chunks(self, version: int, family: str | None, rows: int
                     ) -> Iterator[tuple[list[bytes], list[bytes]]]:
        """The entries of :meth:`entries`, ``rows`` at a time, in bounded memory: the
        snapshot's keys stream past the changelogs' overlay (only the keys those touch are
        held), then come the keys the changelogs added."""
        with self.staged_version(version, family) as staged:
            if staged is None:
                return
            for keys, values in staged.overlay.chunks(staged.snapshot, staged.prefix, rows):
                if staged.row_checksums:
                    values = row_checksum.open_lists(keys, values, staged.rows_of,
                                                     staged.checksum_prefix, staged.delimited)
                yield keys, values
