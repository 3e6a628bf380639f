"""A planned read of one operator's store at one version: what ``read_state`` and ``export``
run once ``plan_read`` has checked it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rockstate.checkpoint.store_reader import StoreReader
from rockstate.encoding import packed_entries
from rockstate.encoding.packed_entries import Rows


@dataclass(frozen=True)
class StateRead:
    """A checked plan to read one operator's store (or one state variable, ``state_var``) at
    ``version``: the readers of its partitions' stores, and the decoder of their rows into the
    table Spark's ``statestore`` source gives."""

    operator: int
    store: str
    version: int
    state_var: str | None
    partitions: tuple[StoreReader, ...]
    # Keys, values (Arrow arrays, or lists of bytes) and partition ids into the table.
    decode: Callable[[Rows, Rows, Sequence[int]], pa.Table]

    def progress_label(self, part: StoreReader) -> str:
        """What a read tells ``progress`` of ``part``."""
        return f"{part.label}: version {self.version}"

    def read(self, partitions: tuple[StoreReader, ...] | None = None,
             progress: Callable[[str], None] | None = None) -> pa.Table:
        """The rows of ``partitions`` (default: all), as one table: each partition decoded
        on its own (a table of several chunks, no copy of every partition's entries joined)."""
        tables = []
        for part in self.partitions if partitions is None else partitions:
            if progress:
                progress(self.progress_label(part))
            keys, values = part.entry_arrays(self.version, self.state_var)
            tables.append(self.decode(keys, values,
                                      np.full(len(keys), part.partition, dtype=np.int32)))
        if not tables:
            return self.decode(*packed_entries.pack(()), np.empty(0, dtype=np.int32))
        # A partition past 2 GiB of strings decodes to large_string: the others follow it.
        return pa.concat_tables(tables, promote_options="permissive")
