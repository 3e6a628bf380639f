"""What kind of file a reader asks a checkpoint location for, and how many bytes it may be.

Every read of a checkpoint file names its kind; a file larger than its kind's limit is refused
before its bytes are held (docs/guarantees.md, "Trust model"). The limits sit far above what
Spark or rockstate write for each kind (their sizes at 4,000 partitions with four stores each
are in the comments) and far below what would exhaust a reader's memory.
"""

from __future__ import annotations

from enum import Enum

_MIB = 1 << 20


class FileKind(Enum):
    """A kind of checkpoint file and the most bytes one may hold."""

    # Spark's query metadata: one line of JSON with the query id.
    QUERY_METADATA = 1 * _MIB
    # A commit log entry (state ids: about 600 KB at 4,000 partitions x 4 stores) or an offset
    # log entry (confs and every source's offsets).
    LOG_ENTRY = 64 * _MIB
    # Spark's operator metadata and state schema files.
    SPARK_METADATA = 16 * _MIB
    # rockstate's JSON documents: snapshot and format 1/2 manifests (a meta pack inline),
    # the coordinator's checkpoint metadata (one acknowledgement a store) and abort records,
    # a savepoint's file list, a staging claim.
    DOCUMENT = 256 * _MIB
    # Data: version files (a changelog inline), SSTs and packs, changelogs, Spark's snapshot
    # zips and shared files, files a savepoint copies whole.
    DATA = 4096 * _MIB

    @property
    def limit(self) -> int:
        """The most bytes a file of this kind may hold."""
        return self.value
