"""A partition of Spark's own ``RocksDBStateStoreProvider`` read without Spark (its layout and
files: ``spark_rocksdb``).

Version ``v`` is the newest snapshot zip at or below it, staged (the zip's small files, and
the shared SSTs and logs its metadata lists, each size checked), plus the changelogs of the
versions after that snapshot replayed on top.
"""

from __future__ import annotations

import posixpath
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rockstate.checkpoint import spark_rocksdb
from rockstate.checkpoint.location import DEFAULT_STORE, CheckpointLocation, StoreRef
from rockstate.checkpoint.paths import file_name, local_within
from rockstate.checkpoint.staged_snapshot import staged_snapshot
from rockstate.checkpoint.staged_version import StagedVersion
from rockstate.checkpoint.store_reader import StoreReader
from rockstate.encoding.changelog_overlay import ChangelogOverlay
from rockstate.errors import CorruptCheckpointError, RockstateError

# A snapshot's column families: name -> id, and name -> whether Spark keeps it for itself.
_Families = tuple[dict, dict]


@dataclass(frozen=True)
class SparkRocksDBReader(StoreReader):
    """A partition's store of Spark's RocksDB provider (``store.path``: its directory). With
    ``row_checksums`` (Spark 4.2+'s ``rowChecksum.enabled``) every value is checked against
    its key and opened; a key's values are joined by ``,`` unless not ``delimited`` (merge
    operator version 2)."""

    row_checksums: bool = False
    delimited: bool = True

    @classmethod
    def of_operator(cls, loc: CheckpointLocation, operator: int, store: str = DEFAULT_STORE,
                    partitions: list[int] | None = None, row_checksums: bool = False,
                    delimited: bool = True) -> list[SparkRocksDBReader]:
        """The readers of the partitions of ``operator`` (of ``partitions``, default: every
        one) that Spark's provider wrote store ``store`` in, by partition."""
        return [cls(loc, StoreRef(operator, p, store, path), row_checksums, delimited)
                for p, path in sorted(spark_rocksdb.partitions(loc, operator, store).items())
                if partitions is None or p in partitions]

    @property
    def label(self) -> str:
        return f"{self.store} (Spark RocksDB)"

    def versions(self) -> list[int]:
        return spark_rocksdb.versions(self.loc, self.store.path)

    @contextmanager
    def staged_version(self, version: int, family: str | None
                       ) -> Iterator[StagedVersion | None]:
        path = self.store.path
        if version not in self.versions():
            raise RockstateError(f"version {version} of {path} is not in the checkpoint")
        base = spark_rocksdb.base_snapshot(self.loc, path, version)
        overlay = self._overlay(base, version)
        with self._staged_snapshot(base) as ((families, internal), items):
            prefix = _family_prefix(path, version, families, internal, family)
            if prefix is None:  # a state variable with nothing written yet
                yield None
                return
            yield StagedVersion(items, overlay, prefix, f"version {version} of {path}",
                                self.row_checksums, prefix, self.delimited)

    def _overlay(self, base: int, version: int) -> ChangelogOverlay:
        """The changelogs of versions ``base`` + 1 to ``version``, replayed into an overlay."""
        return ChangelogOverlay.replayed(self._changelog(v, version)
                                         for v in range(base + 1, version + 1))

    def _changelog(self, v: int, version: int) -> Iterator[tuple[str, bytes, bytes | None]]:
        """The records of ``<v>.changelog``, which ``version`` needs."""
        where = posixpath.join(self.store.path, f"{v}.changelog")
        return spark_rocksdb.changelog_records(
            spark_rocksdb.read_file(self.loc, where, f"version {version}"), where)

    @contextmanager
    def _staged_snapshot(self, version: int
                         ) -> Iterator[tuple[_Families, Iterator[tuple[bytes, bytes]]]]:
        """((column family ids, which families are internal), entries in key order) of
        ``<version>.zip``, staged and open while the block runs; version 0: empty state."""
        if version == 0:
            yield ({}, {}), iter(())
            return
        zip_path = posixpath.join(self.store.path, f"{version}.zip")

        def stage(into: Path) -> _Families:
            spark_rocksdb.extract_zip(
                spark_rocksdb.read_file(self.loc, zip_path, f"version {version}"), into,
                zip_path)
            metadata_file = into / "metadata"
            try:
                text = metadata_file.read_text()
            except OSError as e:
                raise CorruptCheckpointError(
                    f"the metadata in {zip_path} is unreadable ({e}).") from None
            metadata = spark_rocksdb.parse_snapshot_metadata(text, zip_path)
            metadata_file.unlink()
            try:
                for kind, sub, local_sub in (("sstFiles", "SSTs", ""),
                                             ("logFiles", "logs", "archive")):
                    for f in metadata.get(kind) or []:
                        self._stage_shared_file(f, f"{zip_path} metadata ({kind})", sub,
                                                into / local_sub, version)
            except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as e:
                raise CorruptCheckpointError(
                    f"the metadata in {zip_path} has a missing or bad field ({e!r}); the "
                    "snapshot is damaged.") from None
            return (metadata.get("columnFamilyMapping") or {},
                    metadata.get("columnFamilyTypeMap") or {})

        with staged_snapshot(stage, zip_path, "rockstate-read-spark-") as (families, items):
            yield families, items

    def _stage_shared_file(self, f: dict, entry: str, sub: str, into: Path,
                           version: int) -> None:
        """Copies one shared file a snapshot's metadata lists (``SSTs/`` or ``logs/``) to its
        local name in ``into``, its size checked; both names must be plain file names."""
        dfs = posixpath.join(self.store.path, sub, file_name(
            f.get("dfsSstFileName") or f["dfsLogFileName"], entry))
        data = spark_rocksdb.read_file(self.loc, dfs, f"version {version}")
        if len(data) != int(f["sizeBytes"]):
            raise CorruptCheckpointError(f"{dfs} has {len(data)} bytes, its version's "
                                         f"metadata says {f['sizeBytes']}.")
        target = local_within(into, file_name(f["localFileName"], entry), entry)
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(data)


def _family_prefix(path: str, version: int, families: dict, internal: dict,
                   family: str | None) -> bytes | None:
    """The key prefix of ``family`` (b"": every key; None: a variable with nothing written
    yet), or why the read makes no sense."""
    variables = sorted(n for n in families if n != "default" and not internal.get(n))
    if family is None:
        if variables:
            raise RockstateError(f"{path} holds the state variables {variables}; read one "
                                 "with state_var=<name> (--state-var).")
        return b""
    if not families:
        raise RockstateError(f"{path} has no snapshot at or below version {version}, so "
                             "which column family has which id is unknown; read a version "
                             "after the first snapshot.")
    if family not in families:
        return None
    return struct.pack("<H", int(families[family]))
