"""``read_state`` and ``export``: a checkpoint's state as Arrow, without Spark.

Reads checkpoints of rockstate and of Spark's own RocksDBStateStoreProvider
(``spark_rocksdb``).

For each store (one per partition), the version's snapshot files are staged to a local
temporary directory (only the files that version needs, each checked against its size and
CRC32), opened read-only with rocksdict, and the changelogs after the snapshot are replayed
on top (``ChangelogOverlay``: only the keys they touch are held; ``read_state`` applies it to
the snapshot's keys and values packed in Arrow, ``export`` streams the snapshot past it). Keys and
values are decoded from Spark's UnsafeRow layout with the schema Spark recorded for the
operator. The table has the columns Spark's ``statestore`` data source has:
``key`` and ``value`` (structs) and ``partition_id``.
"""

from __future__ import annotations

import dataclasses
import functools
import posixpath
import tempfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from rockstate.checkpoint import offsets, spark_rocksdb
from rockstate.checkpoint.format import (
    SnapshotManifest,
    SnapshotRef,
    StateFile,
    VersionManifest,
    changelog_records,
    changes_of,
)
from rockstate.checkpoint.location import (
    DEFAULT_STORE,
    CheckpointLocation,
    StoreRef,
    open_location,
    snapshot_version,
)
from rockstate.checkpoint.operator_metadata import is_transform_with_state, read_operator_metadata
from rockstate.checkpoint.partitions import missing_partitions, recorded_partitions
from rockstate.checkpoint.paths import file_name, local_within
from rockstate.checkpoint.state_schema import family_schemas, v2_schemas
from rockstate.encoding import packed_entries, row_checksum
from rockstate.encoding.changelog_overlay import ChangelogOverlay
from rockstate.encoding.packed_entries import Rows
from rockstate.encoding.unsaferow import decode_rows
from rockstate.errors import CorruptCheckpointError, RockstateError
from rockstate.tools.read_workers import read_in_workers, worker_count

SPARK_ROW_CHECKSUMS = "spark.sql.streaming.stateStore.rowChecksum.enabled"
SPARK_MERGE_OPERATOR = "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion"
SPARK_ENCODING = "spark.sql.streaming.stateStore.encodingFormat"
# Spark's state encoders put one version byte before every key and value's UnsafeRow.
ENCODING_VERSION_BYTES = 1
# Rows export decodes and writes at a time: its memory, whatever the state's size.
EXPORT_CHUNK_ROWS = 65536


def refuse_prefix_keys(loc: CheckpointLocation, operator: int, store: str) -> None:
    """Keys with prefix columns (session windows) have another byte layout: refuse them
    rather than decode them wrong. Spark's operator metadata says how many there are."""
    meta = read_operator_metadata(loc, operator)
    info = meta.store(store) if meta is not None else None
    if info is not None and info.prefix_key_columns > 0:
        raise RockstateError(
            f"operator {operator} ({meta.operator_name}) keys its state with prefix columns "
            "(a session window); reading that key layout is not supported yet.")


def _refuse_missing_partitions(loc: CheckpointLocation, operator: int, version: int,
                               found: set[int], wanted: list[int] | None) -> None:
    """Every partition the batch that wrote ``version`` ran (Spark records its shuffle
    partitions in the offset log) must have its store: a missing folder is damage, never a
    query with fewer partitions."""
    try:
        count = recorded_partitions(loc, version - 1)
    except RockstateError:
        return  # a damaged offset entry gives no count to compare with
    missing = missing_partitions(count, found, wanted) if count is not None else []
    if missing:
        raise CorruptCheckpointError(
            f"operator {operator} ran batch {version - 1} on {count} partitions, but the "
            f"state of partitions {missing} is missing from {loc.url}; the checkpoint is "
            "damaged (restore the folders from a backup).")


def _recorded_confs(loc: CheckpointLocation) -> dict[str, str]:
    """The state confs Spark recorded in the offset log (empty when it has none): whether
    Spark's own provider (4.2+) wrote row checksums (``rowChecksum.enabled``: a checksum
    header before each value, rockstate's layout over the key with its family id), its
    merge operator's version, and the state encoding (UnsafeRow or Avro)."""
    try:
        return offsets.recorded_confs(loc)
    except (RockstateError, FileNotFoundError):
        return {}


def _stage_files(loc: CheckpointLocation, store: StoreRef, files: tuple[StateFile, ...],
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
    _stage_files(loc, store, snapshot.files, into, version)
    for name, content in snapshot.meta_files(posixpath.join(store.path, path)):
        local_within(into, name, posixpath.join(store.path, path)).write_bytes(content)
    if not (into / "CURRENT").is_file():  # RocksDB needs it; never read as empty state
        raise CorruptCheckpointError(
            f"the snapshot {posixpath.join(store.path, path)} of version {version} of {store} "
            "has no RocksDB CURRENT file; it is damaged.")


def family_prefix(family_id: int) -> bytes:
    """The bytes before every key of a column family in a rockstate store: its id, 2 bytes
    big-endian (``ColumnFamilyCodec``), so each family is one contiguous key range."""
    return family_id.to_bytes(2, "big")


def _checked_manifest(loc: CheckpointLocation, store: StoreRef, version: int,
                      family: str | None) -> VersionManifest | None:
    """The version's manifest once the read is known to make sense; None when the store has
    never written to ``family`` (a state variable with nothing in it)."""
    if version not in loc.versions(store):
        raise RockstateError(f"version {version} of {store} is not in the checkpoint (it has "
                             f"{loc.versions(store)[:1]}..{loc.versions(store)[-1:]}).")
    m = loc.manifest(store, version)
    if m.use_column_families and family is None:
        raise RockstateError(
            f"{store} keeps its state in column families {sorted(m.column_families)}; name one "
            "(state_var=<name>, --state-var).")
    if family is not None and not m.use_column_families:
        raise RockstateError(f"{store} has no column families; read it without a state "
                             f"variable (not {family!r}).")
    if family is not None and family not in m.column_families:
        return None  # the manifest lists every family the store created: this one holds nothing
    return m


def store_entries(loc: CheckpointLocation, store: StoreRef, version: int,
                  family: str | None = None) -> dict[bytes, bytes]:
    """Every key and value of one store at ``version``, as Spark's encoders wrote them (in a
    store with row checksums each value is checked and opened). A store with column families
    (transformWithState) is read one ``family`` at a time, its keys without the family's id."""
    keys, values = store_entry_arrays(loc, store, version, family)
    return dict(zip(keys.to_pylist(), values.to_pylist(), strict=True))


def store_entry_arrays(loc: CheckpointLocation, store: StoreRef, version: int,
                       family: str | None = None) -> tuple[pa.Array, pa.Array]:
    """The entries of :func:`store_entries` as an Arrow array of keys and one of values, in
    the snapshot's key order then the keys the changelogs added: what ``read_state`` decodes,
    with no Python object per entry held (they cost more than RocksDB's iteration)."""
    named = _checked_manifest(loc, store, version, family)
    if named is None:
        return packed_entries.pack(())
    with _snapshot_entries(loc, store, version, named) as (m, items):
        overlay = _overlay(loc, store, version, m)
        keys, values = packed_entries.pack(items)
    keys, values = overlay.apply_to_arrays(keys, values)
    if family is not None:
        keys, values = packed_entries.with_prefix(keys, values,
                                                  family_prefix(m.column_families[family]))
    if m.row_checksums:
        values = row_checksum.open_values(keys, values, _rows_of(store, version, family))
    return keys, values


def _rows_of(store: StoreRef, version: int, family: str | None) -> str:
    """What a damaged row's error names."""
    return f"version {version} of {store}" + (f", state variable {family!r}" if family else "")


def store_entry_chunks(loc: CheckpointLocation, store: StoreRef, version: int,
                       family: str | None = None, rows: int | None = None,
                       ) -> Iterator[tuple[list[bytes], list[bytes]]]:
    """The entries of :func:`store_entries`, ``rows`` at a time, in bounded memory: the
    snapshot's keys stream past the changelogs' overlay (only the keys those touch are held),
    then come the keys the changelogs added."""
    rows = rows or EXPORT_CHUNK_ROWS
    named = _checked_manifest(loc, store, version, family)
    if named is None:
        return
    prefix = b"" if family is None else family_prefix(named.column_families[family])
    with _snapshot_entries(loc, store, version, named) as (m, items):
        overlay = _overlay(loc, store, version, m)
        for keys, values in overlay.chunks(items, prefix, rows):
            if m.row_checksums:
                values = row_checksum.open_lists(keys, values, _rows_of(store, version, family))
            yield keys, values


@contextmanager
def _snapshot_entries(loc: CheckpointLocation, store: StoreRef, version: int,
                      m: VersionManifest,
                      ) -> Iterator[tuple[VersionManifest, Iterator[tuple[bytes, bytes]]]]:
    """The snapshot entries a read of ``version`` starts from, with the manifest whose
    changelogs then complete it: the newest snapshot of the version's own lineage when one
    landed after the version file was written (``_rebased``), else the one it names. A later
    snapshot that cannot be staged (cleanup took it meanwhile, or it is damaged) is passed
    over for the named one: the read is then slower, never different."""
    rebased = _rebased(loc, store, version, m)
    with ExitStack() as stack:
        chosen, items = m, None
        if rebased is not None:
            try:  # only the staging: what the caller's block raises is its own
                items = stack.enter_context(_staged_snapshot(loc, store, version, *rebased))
                chosen = rebased[0]
            except (CorruptCheckpointError, FileNotFoundError):
                pass
        if items is None:
            items = stack.enter_context(_staged_snapshot(loc, store, version, m))
        yield chosen, items


def _rebased(loc: CheckpointLocation, store: StoreRef, version: int, m: VersionManifest,
             ) -> tuple[VersionManifest, SnapshotManifest] | None:
    """``m`` rebased onto the newest snapshot taken of a version of its own lineage after its
    named one, with that snapshot's manifest; or None. A version file names the snapshot that
    had landed when it was committed; the snapshot of that very version (or of one in its
    chain) lands after, and its manifest's state id is the exact version file it was taken
    from. Replaying a load's changelog instead held every key it wrote (a 64M-key load: 5.1M
    keys a partition, 25 s and 2.3 GB to read one, stop 57)."""
    if m.format_version == 1 or not m.changelogs:
        return None
    lineage = {c.version: c.path for c in m.changelogs}  # the versions after its snapshot
    for path in reversed(loc.snapshots(store)):
        taken = snapshot_version(path)
        if taken not in lineage:
            continue
        try:
            s = loc.snapshot_manifest(store, path, f"version {version}")
        except (CorruptCheckpointError, FileNotFoundError):
            continue  # withdrawn or damaged: the lineage reads without it
        if s.version == taken and s.state_id == lineage[taken]:
            return dataclasses.replace(
                m, snapshot=SnapshotRef(taken, path),
                changelogs=tuple(c for c in m.changelogs if c.version > taken)), s
    return None


@contextmanager
def _staged_snapshot(loc: CheckpointLocation, store: StoreRef, version: int,
                     m: VersionManifest, snapshot: SnapshotManifest | None = None,
                     ) -> Iterator[Iterator[tuple[bytes, bytes]]]:
    """The entries of the snapshot at or before ``version`` (none if it has no snapshot yet),
    staged to a temporary directory and opened read-only while the block runs. ``snapshot``:
    the manifest of ``m``'s snapshot, when the caller has read it already."""
    if m.format_version != 1 and m.snapshot is None:
        yield iter(())
        return
    with tempfile.TemporaryDirectory(prefix="rockstate-read-") as tmp:
        if m.snapshot is None:  # format 1 versions list their full snapshot's files themselves
            _stage_files(loc, store, m.files, Path(tmp), version)
        else:
            snapshot = snapshot or loc.snapshot_manifest(store, m.snapshot.path,
                                                         f"version {version}")
            stage_snapshot(loc, store, snapshot, m.snapshot.path, Path(tmp), version)
        with spark_rocksdb.read_only_items(tmp, f"of version {version} of {store}") as items:
            yield items


def _overlay(loc: CheckpointLocation, store: StoreRef, version: int,
             m: VersionManifest) -> ChangelogOverlay:
    """The changelogs after the version's snapshot, each checked, replayed into an overlay."""
    overlay = ChangelogOverlay()
    for c in m.changelogs:
        data = loc.read(store, c.path, f"version {version}")
        if len(data) != c.size or zlib.crc32(data) != c.crc32:
            raise CorruptCheckpointError(
                f"{posixpath.join(store.path, c.path)}, needed by version {version} of {store}, "
                "does not match its manifest; the checkpoint is damaged.")
        where = posixpath.join(store.path, c.path)
        for op, key, value in changelog_records(changes_of(data, c.path, where), where):
            overlay.apply(op, key, value)
    return overlay


@dataclass(frozen=True)
class StatePartition:
    """One partition's store of a planned read, and how to read its entries at a version."""

    partition: int
    label: str
    versions: list[int]
    entries_at: Callable[[int], tuple[pa.Array, pa.Array]]  # its keys, its values
    # The same entries a bounded number at a time.
    chunks_at: Callable[[int], Iterator[tuple[list[bytes], list[bytes]]]]


@dataclass(frozen=True)
class StateRead:
    """A checked plan to read one operator's store (or one state variable) at ``version``:
    its partitions, and the decoder of their rows into the table Spark's ``statestore``
    source gives."""

    operator: int
    store: str
    version: int
    partitions: tuple[StatePartition, ...]
    # Keys, values (Arrow arrays, or lists of bytes) and partition ids into the table.
    decode: Callable[[Rows, Rows, Sequence[int]], pa.Table]

    def progress_label(self, part: StatePartition) -> str:
        """What a read tells ``progress`` of ``part``."""
        return f"{part.label}: version {self.version}"

    def read(self, partitions: tuple[StatePartition, ...] | None = None,
             progress: Callable[[str], None] | None = None) -> pa.Table:
        """The rows of ``partitions`` (default: all), as one table: each partition decoded
        on its own (a table of several chunks, no copy of every partition's entries joined)."""
        tables = []
        for part in self.partitions if partitions is None else partitions:
            if progress:
                progress(self.progress_label(part))
            keys, values = part.entries_at(self.version)
            tables.append(self.decode(keys, values,
                                      np.full(len(keys), part.partition, dtype=np.int32)))
        if not tables:
            return self.decode(*packed_entries.pack(()), np.empty(0, dtype=np.int32))
        # A partition past 2 GiB of strings decodes to large_string: the others follow it.
        return pa.concat_tables(tables, promote_options="permissive")


def plan_read(loc: CheckpointLocation, operator: int = 0, version: int | None = None,
              partitions: list[int] | None = None, store: str = DEFAULT_STORE,
              state_var: str | None = None) -> StateRead:
    """Everything :func:`read_state` checks before it reads a row: the stores, the version
    (default: the newest every partition has), that no partition is missing, and the schema."""
    sources = [StatePartition(s.partition, str(s), loc.versions(s),
                              lambda v, s=s: store_entry_arrays(loc, s, v, state_var),
                              lambda v, s=s: store_entry_chunks(loc, s, v, state_var))
               for s in loc.stores(operator)
               if s.name == store and (partitions is None or s.partition in partitions)]
    delimited = True  # rockstate joins a key's values with ','
    recorded: dict[str, str] | None = None  # the offset log's confs, read where they matter
    if not sources:  # Spark's own RocksDB provider
        recorded = _recorded_confs(loc)
        checked = recorded.get(SPARK_ROW_CHECKSUMS, "false").strip().lower() == "true"
        # Merge operator version 2 (Spark 4.2+) joins a key's values without a delimiter;
        # a checkpoint that predates the setting has version 1 (Spark's rule).
        delimited = recorded.get(SPARK_MERGE_OPERATOR, "1").strip() != "2"
        sources = [StatePartition(p, f"operator {operator} partition {p} store {store} "
                                     "(Spark RocksDB)", spark_rocksdb.versions(loc, path),
                                  lambda v, path=path: spark_rocksdb.entry_arrays(
                                      loc, path, v, state_var, checked, delimited),
                                  lambda v, path=path: spark_rocksdb.entry_chunks(
                                      loc, path, v, state_var, EXPORT_CHUNK_ROWS, checked,
                                      delimited))
                   for p, path in sorted(spark_rocksdb.partitions(loc, operator, store).items())
                   if partitions is None or p in partitions]
    if not sources:
        raise RockstateError(f"no rockstate store {store!r} of operator {operator} in "
                             f"{loc.url} (operators: {loc.operators()})")
    if version is None:
        version = min(s.versions[-1] for s in sources if s.versions)
    _refuse_missing_partitions(loc, operator, version, {s.partition for s in sources},
                               partitions)
    if state_var is not None:
        from rockstate.checkpoint import tws

        kinds = tws.state_variables(loc, operator)
        if state_var not in kinds:
            raise RockstateError(f"operator {operator} has no state variable {state_var!r} "
                                 f"(it has {sorted(kinds)})")
        recorded = _recorded_confs(loc) if recorded is None else recorded
        avro = recorded.get(SPARK_ENCODING, "unsaferow").strip().lower() == "avro"
        # Avro rows name the schema they were written with: every earlier one is needed.
        family = family_schemas(loc, operator, store, value_history=avro)[state_var]

        def decode(keys: Rows, values: Rows, ids: Sequence[int]) -> pa.Table:
            return tws.decode_variable(kinds[state_var], family, keys, values, ids, delimited,
                                       avro)
    else:
        if is_transform_with_state(loc, operator):
            from rockstate.checkpoint import tws

            names = sorted(tws.state_variables(loc, operator))
            raise RockstateError(f"operator {operator} is a transformWithState operator with "
                                 f"the state variables {names}; read one with "
                                 "state_var=<name> (--state-var).")
        refuse_prefix_keys(loc, operator, store)
        key_schema, value_schema = v2_schemas(loc, operator, store)

        def decode(keys: Rows, values: Rows, ids: Sequence[int]) -> pa.Table:
            try:
                key = decode_rows(keys, key_schema, ENCODING_VERSION_BYTES)
                value = decode_rows(values, value_schema, ENCODING_VERSION_BYTES)
            except ValueError as e:
                raise RockstateError(f"operator {operator} store {store}: {e}") from None
            return pa.table({"key": key, "value": value,
                             "partition_id": pa.array(ids, type=pa.int32())})
    return StateRead(operator, store, version, tuple(sources), decode)


def read_state(location: str | CheckpointLocation, operator: int = 0,
               version: int | None = None, partitions: list[int] | None = None,
               store: str = DEFAULT_STORE,
               progress: Callable[[str], None] | None = None,
               state_var: str | None = None,
               storage_options: dict[str, Any] | None = None,
               workers: int | None = None) -> pa.Table:
    """The state of one operator's store at ``version`` (default: the newest every partition
    has), as a table of ``key``, ``value`` and ``partition_id``.

    The partitions of a checkpoint on a local disk are read by ``workers`` processes (default:
    one per CPU this process may use; 1 reads in this process).

    For a transformWithState operator (Spark's RocksDB provider), ``state_var`` names the
    state variable; the columns are then those Spark's ``statestore`` source gives it
    (``list_element`` for a list, ``user_map_key`` and ``user_map_value`` for a map).

    The function form of ``rockstate.Checkpoint(location, storage_options).read(...)``."""
    loc = open_location(location, storage_options)
    plan = plan_read(loc, operator, version, partitions, store, state_var)
    count = worker_count(loc.local, len(plan.partitions), workers)
    if count == 1:
        return plan.read(progress=progress)
    share = functools.partial(_read_share, loc, plan.operator, plan.version, plan.store,
                              state_var)
    return read_in_workers(share, [(p.partition, plan.progress_label(p))
                                   for p in plan.partitions], count, progress)


def _read_share(loc: CheckpointLocation, operator: int, version: int, store: str,
                state_var: str | None, partitions: list[int]) -> pa.Table:
    """A worker's share of :func:`read_state`: its partitions, planned again and read."""
    return plan_read(loc, operator, version, partitions, store, state_var).read()


def _write_partitions(plan: StateRead, fs: Any, path: str,
                      progress: Callable[[str], None] | None) -> None:
    """Each partition of ``plan`` as ``<path>/partition_id=<p>/part-0.parquet`` (hive
    partitioning, as ``pyarrow.dataset`` reads it back), replacing what that folder held; a
    partition without rows writes nothing. A rockstate store is read and written a chunk of
    rows at a time, so memory is bounded by the chunk and what the changelogs changed since the
    snapshot, whatever the partition's size."""
    import pyarrow.parquet as pq

    for part in plan.partitions:
        folder = posixpath.join(path, f"partition_id={part.partition}")
        if fs.exists(folder):
            fs.rm(folder, recursive=True)
        if progress:
            progress(plan.progress_label(part))
        with ExitStack() as open_files:
            writer = None
            for keys, values in part.chunks_at(plan.version):
                ids = np.full(len(keys), part.partition, dtype=np.int32)
                table = plan.decode(keys, values, ids).drop_columns(["partition_id"])
                if writer is None:
                    fs.makedirs(folder, exist_ok=True)
                    out = open_files.enter_context(
                        fs.open(posixpath.join(folder, "part-0.parquet"), "wb"))
                    writer = open_files.enter_context(pq.ParquetWriter(out, table.schema))
                writer.write_table(table)
                del table
        # Before the next partition is read: one chunk's rows are the peak.
        pa.default_memory_pool().release_unused()


def _python_values(arr: pa.Array) -> list:
    if pa.types.is_struct(arr.type):
        names, seen = [], {}
        for f in arr.type:  # Spark's aggregation buffers may repeat a name: number repeats
            seen[f.name] = seen.get(f.name, 0) + 1
            names.append(f.name if seen[f.name] == 1 else f"{f.name}#{seen[f.name]}")
        children = [_python_values(arr.field(i)) for i in range(arr.type.num_fields)]
        nulls = arr.is_null().to_pylist()
        return [None if nulls[j] else dict(zip(names, (c[j] for c in children), strict=True))
                for j in range(len(arr))]
    return arr.to_pylist()


def table_rows(table: pa.Table) -> list[dict]:
    """A state table's rows as Python dicts (``Table.to_pylist`` refuses a struct with a
    repeated field name, which Spark's aggregation buffers can have: repeats get ``#2``)."""
    columns = {name: _python_values(table.column(name).combine_chunks())
               for name in table.column_names}
    return [dict(zip(columns, values, strict=True))
            for values in zip(*columns.values(), strict=True)]


def export(location: str | CheckpointLocation, dest: str, format: str = "parquet",
           version: int | None = None, progress: Callable[[str], None] | None = None,
           storage_options: dict[str, Any] | None = None,
           dest_options: dict[str, Any] | None = None) -> list[str]:
    """Writes every operator's state (each store name, and each state variable of a
    transformWithState operator, its own dataset) under ``dest``, as
    ``<dest>/operator=<op>/store=<name>[/column_family=<var>]/partition_id=<p>/...``;
    returns the dataset paths. ``storage_options`` open the checkpoint, ``dest_options``
    the destination's file system. Every store is streamed, rockstate's and Spark's RocksDB
    provider's: its snapshot's rows pass what its changelogs changed and are written 65,536
    at a time, so memory does not grow with the state (only with what the changelogs after
    the snapshot wrote).

    The function form of ``rockstate.Checkpoint(location, storage_options).export(dest, ...,
    storage_options=dest_options)``."""
    if format != "parquet":
        raise RockstateError(f"export writes parquet; {format!r} is not supported")
    loc = open_location(location, storage_options)
    import fsspec

    fs, root = fsspec.core.url_to_fs(dest, **(dest_options or {}))
    written = []
    names = sorted({(s.operator, s.name) for s in loc.stores()} |
                   {(op, DEFAULT_STORE) for op in loc.operators()
                    if spark_rocksdb.partitions(loc, op, DEFAULT_STORE)})
    for operator, name in names:
        where = f"operator {operator} of {loc.url}"
        base = posixpath.join(root, f"operator={operator}",
                              file_name(f"store={name}", f"the store names of {where}"))
        if is_transform_with_state(loc, operator):
            from rockstate.checkpoint import tws

            # transformWithState: one dataset per state variable (column family), each in
            # a folder named after it (checked first: the name comes from the checkpoint).
            datasets = [(var, posixpath.join(base, file_name(
                f"column_family={var}", f"the state variables of {where}")))
                for var in sorted(tws.state_variables(loc, operator))]
        else:
            datasets = [(None, base)]
        for var, path in datasets:
            plan = plan_read(loc, operator, version=version, store=name, state_var=var)
            _write_partitions(plan, fs, path, progress)
            written.append(path)
    return written
