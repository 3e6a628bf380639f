"""rockstate's stores read without Spark (docs/checkpoint-format.md).

A version's manifest names its lineage: a snapshot (a snapshot manifest listing its SSTs, and
from format 3 RocksDB's small files packed in it) and the changelogs after it. The snapshot's
files are staged, each checked against its size and CRC32 (only the files that version
needs), and the changelogs, each checked, are replayed on top.
"""

from __future__ import annotations

import dataclasses
import posixpath
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from rockstate.checkpoint.format import (
    ChangelogRef,
    SnapshotManifest,
    SnapshotRef,
    StateFile,
    VersionManifest,
    changelog_records,
    changes_of,
    family_prefix,
)
from rockstate.checkpoint.location import (
    DEFAULT_STORE,
    CheckpointLocation,
    StoreRef,
    snapshot_version,
)
from rockstate.checkpoint.paths import local_within
from rockstate.checkpoint.staged_snapshot import staged_snapshot
from rockstate.checkpoint.staged_version import StagedVersion
from rockstate.checkpoint.store_reader import StoreReader
from rockstate.encoding.changelog_overlay import ChangelogOverlay
from rockstate.errors import CorruptCheckpointError, RockstateError


@dataclass(frozen=True)
class RockstateStoreReader(StoreReader):
    """A rockstate store, read at a version from the newest snapshot of its lineage."""

    @classmethod
    def of_operator(cls, loc: CheckpointLocation, operator: int, store: str = DEFAULT_STORE,
                    partitions: list[int] | None = None) -> list[RockstateStoreReader]:
        """The readers of ``operator``'s rockstate stores named ``store`` (of ``partitions``,
        default: every one), by partition."""
        return [cls(loc, s) for s in loc.stores(operator)
                if s.name == store and (partitions is None or s.partition in partitions)]

    @property
    def label(self) -> str:
        return str(self.store)

    def versions(self) -> list[int]:
        return self.loc.versions(self.store)

    @contextmanager
    def staged_version(self, version: int, family: str | None
                       ) -> Iterator[StagedVersion | None]:
        named = self._checked_manifest(version, family)
        if named is None:
            yield None
            return
        prefix = b"" if family is None else family_prefix(named.column_families[family])
        with self._snapshot_entries(version, named) as (m, items):
            yield StagedVersion(items, self._overlay(version, m), prefix,
                                f"version {version} of {self.store}"
                                + (f", state variable {family!r}" if family else ""),
                                m.row_checksums)

    def _checked_manifest(self, version: int, family: str | None) -> VersionManifest | None:
        """The version's manifest once the read is known to make sense; None when the store
        has never written to ``family`` (a state variable with nothing in it)."""
        loc, store = self.loc, self.store
        if version not in loc.versions(store):
            raise RockstateError(f"version {version} of {store} is not in the checkpoint (it "
                                 f"has {loc.versions(store)[:1]}..{loc.versions(store)[-1:]}).")
        m = loc.manifest(store, version)
        if m.use_column_families and family is None:
            raise RockstateError(
                f"{store} keeps its state in column families {sorted(m.column_families)}; name "
                "one (state_var=<name>, --state-var).")
        if family is not None and not m.use_column_families:
            raise RockstateError(f"{store} has no column families; read it without a state "
                                 f"variable (not {family!r}).")
        if family is not None and family not in m.column_families:
            return None  # the manifest lists every family the store created: this one is empty
        return m

    @contextmanager
    def _snapshot_entries(self, version: int, m: VersionManifest
                          ) -> Iterator[tuple[VersionManifest, Iterator[tuple[bytes, bytes]]]]:
        """The snapshot entries a read of ``version`` starts from, with the manifest whose
        changelogs then complete it: the newest snapshot of the version's own lineage when one
        landed after the version file was written (``_rebased``), else the one it names. A
        later snapshot that cannot be staged (cleanup took it meanwhile, or it is damaged) is
        passed over for the named one: the read is then slower, never different."""
        rebased = self._rebased(version, m)
        with ExitStack() as stack:
            chosen, items = m, None
            if rebased is not None:
                try:  # only the staging: what the caller's block raises is its own
                    items = stack.enter_context(self._staged_snapshot(version, *rebased))
                    chosen = rebased[0]
                except (CorruptCheckpointError, FileNotFoundError):
                    pass
            if items is None:
                items = stack.enter_context(self._staged_snapshot(version, m))
            yield chosen, items

    def _rebased(self, version: int, m: VersionManifest
                 ) -> tuple[VersionManifest, SnapshotManifest] | None:
        """``m`` rebased onto the newest snapshot taken of a version of its own lineage after
        its named one, with that snapshot's manifest; or None. A version file names the
        snapshot that had landed when it was committed; the snapshot of that very version (or
        of one in its chain) lands after, and its manifest's state id is the exact version file
        it was taken from. Replaying a load's changelog instead held every key it wrote (a
        64M-key load: 5.1M keys a partition, 25 s and 2.3 GB to read one)."""
        if m.format_version == 1 or not m.changelogs:
            return None
        lineage = {c.version: c.path for c in m.changelogs}  # the versions after its snapshot
        for path in reversed(self.loc.snapshots(self.store)):
            taken = snapshot_version(path)
            if taken not in lineage:
                continue
            try:
                s = self.loc.snapshot_manifest(self.store, path, f"version {version}")
            except (CorruptCheckpointError, FileNotFoundError):
                continue  # withdrawn or damaged: the lineage reads without it
            if s.version == taken and s.state_id == lineage[taken]:
                return dataclasses.replace(
                    m, snapshot=SnapshotRef(taken, path),
                    changelogs=tuple(c for c in m.changelogs if c.version > taken)), s
        return None

    @contextmanager
    def _staged_snapshot(self, version: int, m: VersionManifest,
                         snapshot: SnapshotManifest | None = None,
                         ) -> Iterator[Iterator[tuple[bytes, bytes]]]:
        """The entries of the snapshot at or before ``version`` (none if it has no snapshot
        yet), staged and open while the block runs. ``snapshot``: the manifest of ``m``'s
        snapshot, when the caller has read it already."""
        if m.format_version != 1 and m.snapshot is None:
            yield iter(())
            return
        loc, store = self.loc, self.store

        def stage(into: Path) -> None:
            if m.snapshot is None:  # format 1 versions list their full snapshot's files
                stage_files(loc, store, m.files, into, version)
            else:
                path = m.snapshot.path
                named = snapshot or loc.snapshot_manifest(store, path, f"version {version}")
                stage_snapshot(loc, store, named, path, into, version)

        with staged_snapshot(stage, f"of version {version} of {store}") as (_, items):
            yield items

    def _overlay(self, version: int, m: VersionManifest) -> ChangelogOverlay:
        """The changelogs after the version's snapshot, each checked, replayed."""
        return ChangelogOverlay.replayed(self._changelog(version, c) for c in m.changelogs)

    def _changelog(self, version: int, c: ChangelogRef
                   ) -> Iterator[tuple[str, bytes, bytes | None]]:
        """The records of one changelog of ``version``'s lineage, the file checked whole
        against its manifest first."""
        store = self.store
        data = self.loc.read(store, c.path, f"version {version}")
        if len(data) != c.size or zlib.crc32(data) != c.crc32:
            raise CorruptCheckpointError(
                f"{posixpath.join(store.path, c.path)}, needed by version {version} of {store}, "
                "does not match its manifest; the checkpoint is damaged.")
        where = posixpath.join(store.path, c.path)
        return changelog_records(changes_of(data, c.path, where), where)


def stage_files(loc: CheckpointLocation, store: StoreRef, files: tuple[StateFile, ...],
                into: Path, version: int) -> None:
    """Copies a snapshot's files into ``into``, each checked against its size and CRC32."""
    for f in files:
        data = loc.read(store, f.path, f"version {version}", f.byte_range)
        if len(data) != f.size or zlib.crc32(data) != f.crc32:
            member = f" (the SST at offset {f.in_pack.offset})" if f.in_pack else ""
            raise CorruptCheckpointError(
                f"{posixpath.join(store.path, f.path)}{member}, needed by version {version} of "
                f"{store}, does not match its manifest (size {len(data)} vs {f.size}); the "
                "checkpoint is damaged. Run `rockstate verify` to see what else is.")
        local_within(into, f.local_name, f"the manifest of version {version} of {store}"
                     ).write_bytes(data)


def stage_snapshot(loc: CheckpointLocation, store: StoreRef, snapshot: SnapshotManifest,
                   path: str, into: Path, version: int) -> None:
    """Lays a snapshot out in ``into`` as a plain RocksDB directory: its files, each checked,
    and (format 3) the small files packed in its manifest at ``path``."""
    stage_files(loc, store, snapshot.files, into, version)
    for name, content in snapshot.meta_files(posixpath.join(store.path, path)):
        local_within(into, name, posixpath.join(store.path, path)).write_bytes(content)
    if not (into / "CURRENT").is_file():  # RocksDB needs it; never read as empty state
        raise CorruptCheckpointError(
            f"the snapshot {posixpath.join(store.path, path)} of version {version} of {store} "
            "has no RocksDB CURRENT file; it is damaged.")
