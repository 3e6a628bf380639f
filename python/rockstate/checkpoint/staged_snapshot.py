"""A snapshot of either provider staged to a temporary directory and opened read-only.

A store's snapshot is a RocksDB database whose files lie in the checkpoint location: a reader
lays them out, each checked, as a plain RocksDB directory in a new temporary directory, opens it
read-only with rocksdict, and iterates its keys and values in key order. Each provider's reader
knows how to lay its snapshots out (``RockstateStoreReader``, ``SparkRocksDBReader``); the
directory, the open and the scan are here, once.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from rockstate.errors import CorruptCheckpointError

if TYPE_CHECKING:
    from rocksdict import ReadOptions

# Bytes RocksDB reads ahead of a scan of a snapshot's SSTs.
_READAHEAD = 4 << 20

Laid = TypeVar("Laid")


@contextmanager
def staged_snapshot(stage: Callable[[Path], Laid], where: str, prefix: str = "rockstate-read-"
                    ) -> Iterator[tuple[Laid, Iterator[tuple[bytes, bytes]]]]:
    """The snapshot ``stage`` lays out (its files, each checked) in a new temporary directory
    (named from ``prefix``), opened read-only while the block runs: what ``stage`` returned,
    and the snapshot's keys and values in key order. The directory is removed after."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        laid = stage(Path(tmp))
        with read_only_items(tmp, where) as items:
            yield laid, items


@contextmanager
def read_only_items(directory: str, where: str) -> Iterator[Iterator[tuple[bytes, bytes]]]:
    """The keys and values of the RocksDB in ``directory``, in key order, while the block
    runs; one that RocksDB cannot open is CorruptCheckpointError."""
    from rocksdict import AccessType, Options, Rdict

    try:
        # Raw: the entries are Spark's bytes, not rocksdict's tagged Python values, so it need
        # not look at each one's type.
        db = Rdict(directory, Options(raw_mode=True), access_type=AccessType.read_only())
    except Exception as e:  # rocksdict raises a bare Exception with RocksDB's status
        raise CorruptCheckpointError(
            f"RocksDB cannot open the snapshot {where} ({e}); it is damaged or incomplete. "
            "Run `rockstate verify` to see what else is.") from None
    try:
        yield iter(db.items(read_opt=_one_scan()))
    finally:
        db.close()


def _one_scan() -> ReadOptions:
    """Read options for one pass over every entry: blocks read once are not cached (they would
    only push each other out) and files are read ahead. Block checksums stay checked: the
    snapshot is untrusted input."""
    from rocksdict import ReadOptions

    options = ReadOptions()
    options.fill_cache(False)
    options.set_readahead_size(_READAHEAD)
    return options
