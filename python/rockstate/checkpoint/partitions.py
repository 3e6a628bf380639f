"""How many partitions a batch ran on, and which of them lack their state.

Spark records the number of shuffle partitions in every batch's offset log entry, and each
stateful operator keeps one store per partition and store name. A partition whose state is
absent is damage (a lost folder, a savepoint cut short), never a query that ran on fewer
partitions: ``read_state`` and ``check_savepoint`` both compare against this count.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.offsets import entry_confs, entry_lines
from rockstate.checkpoint.paths import is_number
from rockstate.errors import CorruptCheckpointError

if TYPE_CHECKING:
    from rockstate.checkpoint.location import CheckpointLocation

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def recorded_partitions(loc: CheckpointLocation, batch_id: int) -> int | None:
    """How many shuffle partitions ``batch_id`` ran on, as its offset log entry
    (``offsets/<batch_id>``, the conf ``spark.sql.shuffle.partitions``) records it. None when
    the entry is gone (the log expired it) or records no count: there is nothing to compare
    with. A damaged entry is a CorruptCheckpointError naming it."""
    path = loc.path("offsets", str(batch_id))
    try:
        data = loc.read_path(path, f"batch {batch_id}'s partition count", FileKind.LOG_ENTRY)
    except FileNotFoundError:
        return None
    value = entry_confs(entry_lines(data, path)).get(SHUFFLE_PARTITIONS)
    if value is None:
        return None
    # At most 18 ASCII digits (is_number): int() never sees a number it cannot hold.
    if not is_number(value.strip()) or int(value) < 1:
        raise CorruptCheckpointError(
            f"rockstate: {path} records {value[:40]!r} as {SHUFFLE_PARTITIONS}, not a whole "
            "number of 1 or more; the offset log entry is damaged (restore it from a backup).")
    return int(value)


def missing_partitions(count: int, found: Iterable[int],
                       wanted: Iterable[int] | None = None) -> list[int]:
    """The partitions of a batch that ran on ``count`` partitions (``recorded_partitions``),
    among ``wanted`` (default: all of them), that are not in ``found``, ascending."""
    ran = set(range(count))
    return sorted((ran if wanted is None else ran & set(wanted)) - set(found))
