"""One version of a store as its provider's reader opens it: the snapshot it starts from, the
changelogs after it, and how its keys and values are laid out."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rockstate.encoding.changelog_overlay import ChangelogOverlay


@dataclass(frozen=True)
class StagedVersion:
    """A version of one store, open for reading while its provider's staging block runs.
    ``snapshot``: the entries of the snapshot it starts from, in key order (empty before the
    first); ``overlay``: the changelogs after that snapshot, replayed. ``prefix``: the bytes
    before every key of the column family read (stripped from the keys given; empty: every
    key). With ``row_checksums`` every value is checked and opened (``row_checksum``): the
    checksum also covers ``checksum_prefix`` before the stripped key (Spark's provider covers
    the family's id, rockstate does not), and a key's merged values are joined by ``,``
    unless not ``delimited``; a damaged row's error names ``rows_of``."""

    snapshot: Iterator[tuple[bytes, bytes]]
    overlay: ChangelogOverlay
    prefix: bytes
    rows_of: str
    row_checksums: bool = False
    checksum_prefix: bytes = b""
    delimited: bool = True
