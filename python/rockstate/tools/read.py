"""``read_state`` and ``export``: a checkpoint's state as Arrow, without Spark.

Reads checkpoints of rockstate and of Spark's own RocksDBStateStoreProvider. This module plans
a read (which operator, stores, partitions, version and workers; ``plan_read``) and makes its
output (Arrow tables, ``export``'s parquet datasets); each partition's store is read by its
provider's ``StoreReader`` (``rockstate.checkpoint.store_reader``): the version's snapshot
staged and checked, the changelogs after it replayed on top, ``read_state`` taking the entries
packed in Arrow and ``export`` a bounded number at a time. Keys and values are decoded from
Spark's UnsafeRow layout (or its Avro rows, or transformWithState's) with the schema Spark
recorded for the operator. The table has the columns Spark's ``statestore`` data source has:
``key`` and ``value`` (structs) and ``partition_id``.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from rockstate.checkpoint import offsets
from rockstate.checkpoint.location import DEFAULT_STORE, CheckpointLocation, open_location
from rockstate.checkpoint.model import batch_of_version
from rockstate.checkpoint.operator_metadata import is_transform_with_state, read_operator_metadata
from rockstate.checkpoint.partitions import missing_partitions, recorded_partitions
from rockstate.checkpoint.paths import file_name
from rockstate.checkpoint.rockstate_store_reader import RockstateStoreReader
from rockstate.checkpoint.schema_changes import schemas_of_batch
from rockstate.checkpoint.spark_rocksdb_reader import SparkRocksDBReader
from rockstate.checkpoint.state_schema import family_schemas
from rockstate.encoding.unsaferow import decode_rows
from rockstate.errors import CorruptCheckpointError, RockstateError
from rockstate.tools.read_workers import read_in_workers, worker_count
from rockstate.tools.state_read import StateRead

if TYPE_CHECKING:
    from rockstate.checkpoint.store_reader import StoreReader
    from rockstate.encoding.packed_entries import Rows

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
    batch = batch_of_version(version)
    try:
        count = recorded_partitions(loc, batch)
    except RockstateError:
        return  # a damaged offset entry gives no count to compare with
    missing = missing_partitions(count, found, wanted) if count is not None else []
    if missing:
        raise CorruptCheckpointError(
            f"operator {operator} ran batch {batch} on {count} partitions, but the "
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


def plan_read(loc: CheckpointLocation, operator: int = 0, version: int | None = None,
              partitions: list[int] | None = None, store: str = DEFAULT_STORE,
              state_var: str | None = None) -> StateRead:
    """Everything :func:`read_state` checks before it reads a row: the stores, the version
    (default: the newest every partition has), that no partition is missing, and the schema."""
    readers: list[StoreReader] = [*RockstateStoreReader.of_operator(loc, operator, store,
                                                                    partitions)]
    delimited = True  # rockstate joins a key's values with ','
    recorded: dict[str, str] | None = None  # the offset log's confs, read where they matter
    if not readers:  # Spark's own RocksDB provider
        recorded = _recorded_confs(loc)
        checked = recorded.get(SPARK_ROW_CHECKSUMS, "false").strip().lower() == "true"
        # Merge operator version 2 (Spark 4.2+) joins a key's values without a delimiter;
        # a checkpoint that predates the setting has version 1 (Spark's rule).
        delimited = recorded.get(SPARK_MERGE_OPERATOR, "1").strip() != "2"
        readers = [*SparkRocksDBReader.of_operator(loc, operator, store, partitions, checked,
                                                   delimited)]
    if not readers:
        raise RockstateError(f"no rockstate store {store!r} of operator {operator} in "
                             f"{loc.url} (operators: {loc.operators()})")
    listed = [r.versions() for r in readers]  # every store's, before a row is read
    if version is None:
        version = min(versions[-1] for versions in listed if versions)
    _refuse_missing_partitions(loc, operator, version, {r.partition for r in readers},
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
        # The schema the version was written with (a transform may have changed it since).
        key_schema, value_schema = schemas_of_batch(loc, operator, store,
                                                    batch_of_version(version))

        def decode(keys: Rows, values: Rows, ids: Sequence[int]) -> pa.Table:
            try:
                key = decode_rows(keys, key_schema, ENCODING_VERSION_BYTES)
                value = decode_rows(values, value_schema, ENCODING_VERSION_BYTES)
            except ValueError as e:
                raise RockstateError(f"operator {operator} store {store}: {e}") from None
            return pa.table({"key": key, "value": value,
                             "partition_id": pa.array(ids, type=pa.int32())})
    return StateRead(operator, store, version, state_var, tuple(readers), decode)


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
    partition without rows writes nothing. Each store is read and written a chunk of rows at
    a time, so memory is bounded by the chunk and what the changelogs changed since the
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
            for keys, values in part.entry_chunks(plan.version, plan.state_var,
                                                  EXPORT_CHUNK_ROWS):
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
                    if SparkRocksDBReader.of_operator(loc, op)})
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
