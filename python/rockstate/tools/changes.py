"""``read_changes``: the state change feed of a rockstate checkpoint, as Arrow, without Spark.

The same rows Spark's ``statestore`` source gives with ``readChangeFeed`` (on rockstate since
its stores implement Spark's ``SupportsFineGrainedReplay``): every change batches
``from_batch`` to ``to_batch`` made to one operator's store, in the order each batch made them,
as ``batch_id``, ``change_type`` (``update`` or ``delete``), ``key`` and ``value`` (structs;
``value`` is null for a delete) and ``partition_id``.

A batch's changes are the changelog inside the version file of the state version it committed
(``version_of_batch``): the attempt Spark's commit log records (checkpoint format 2), else the
one that landed. Each file is checked whole before a record of it is used.
"""

from __future__ import annotations

import posixpath
from typing import Any

import pyarrow as pa

from rockstate.checkpoint.format import (
    VersionManifest,
    changelog_records,
    changes_of,
    parse_version_file,
)
from rockstate.checkpoint.location import DEFAULT_STORE, CheckpointLocation, StoreRef, open_location
from rockstate.checkpoint.model import batch_of_version, version_of_batch
from rockstate.checkpoint.operator_metadata import is_transform_with_state
from rockstate.checkpoint.schema_changes import changed_at, schemas_before
from rockstate.encoding import row_checksum
from rockstate.encoding.unsaferow import decode_rows
from rockstate.errors import RockstateError
from rockstate.tools.read import ENCODING_VERSION_BYTES, refuse_prefix_keys

# Spark's names for a changelog's record kinds in its change feed.
CHANGE_TYPES = {"put": "update", "delete": "delete"}


def read_changes(location: str | CheckpointLocation, operator: int = 0,
                 from_batch: int = 0, to_batch: int | None = None,
                 partitions: list[int] | None = None, store: str = DEFAULT_STORE,
                 storage_options: dict[str, Any] | None = None) -> pa.Table:
    """Every change batches ``from_batch`` to ``to_batch`` (default: the newest batch every
    partition committed) made to one operator's store, as a table of ``batch_id``,
    ``change_type``, ``key``, ``value`` and ``partition_id``: the rows of Spark's
    ``spark.read.format("statestore").option("readChangeFeed", True)``.

    The function form of ``rockstate.Checkpoint(location, storage_options).read_changes(...)``.
    """
    loc = open_location(location, storage_options)
    stores = [s for s in loc.stores(operator)
              if s.name == store and (partitions is None or s.partition in partitions)]
    if not stores:
        raise RockstateError(
            f"no rockstate store {store!r} of operator {operator} in {loc.url} (operators: "
            f"{loc.operators()}); a checkpoint of Spark's own providers has its change feed in "
            "Spark: spark.read.format('statestore').option('readChangeFeed', True).")
    if is_transform_with_state(loc, operator):
        raise RockstateError(
            f"operator {operator} is a transformWithState operator; its change feed is read "
            "with Spark's statestore source (stateVarName and readChangeFeed).")
    refuse_prefix_keys(loc, operator, store)
    newest = batch_of_version(min(max(loc.versions(s), default=0) for s in stores))
    last = newest if to_batch is None else to_batch
    if from_batch < 0 or last < from_batch:
        raise RockstateError(
            f"no batches {from_batch} to {last} to read: the first must be 0 or more and no "
            f"later than the last (every partition of operator {operator} committed batches up "
            f"to {newest}).")
    if last > newest:
        raise RockstateError(f"batch {last} of operator {operator} is not committed in every "
                             f"partition (the newest all have is {newest}).")
    changed = changed_at(loc, operator, store, from_batch)
    if changed and changed[0][0] <= last:
        raise RockstateError(
            f"batch {changed[0][0]} of operator {operator} store {store} changed its value "
            "schema (a transform); its changes and the earlier ones have different schemas. "
            f"Read batches {from_batch} to {changed[0][0] - 1} and {changed[0][0]} to {last} "
            "separately.")
    # Every change found is after the last batch read: the batches read have the schema
    # before the first of them.
    key_schema, value_schema = schemas_before(loc, operator, store, changed)
    batches: list[int] = []
    types: list[str] = []
    keys: list[bytes] = []
    values: list[bytes | None] = []
    ids: list[int] = []
    for s in stores:
        for batch in range(from_batch, last + 1):
            for kind, key, value in _changes(loc, s, version_of_batch(batch)):
                batches.append(batch)
                types.append(kind)
                keys.append(key)
                values.append(value)
                ids.append(s.partition)
    try:
        key = decode_rows(keys, key_schema, ENCODING_VERSION_BYTES)
        present = [i for i, v in enumerate(values) if v is not None]
        decoded = decode_rows([values[i] for i in present], value_schema, ENCODING_VERSION_BYTES)
    except ValueError as e:
        raise RockstateError(f"operator {operator} store {store}: {e}") from None
    # Deletes have no value: a null struct in their rows, the decoded ones in the others.
    slot = {row: n for n, row in enumerate(present)}
    value = decoded.take(pa.array([slot.get(i) for i in range(len(values))], type=pa.int64()))
    return pa.table({"batch_id": pa.array(batches, type=pa.int64()),
                     "change_type": pa.array(types, type=pa.string()),
                     "key": key, "value": value,
                     "partition_id": pa.array(ids, type=pa.int32())})


def _changes(loc: CheckpointLocation, store: StoreRef, version: int
             ) -> list[tuple[str, bytes, bytes | None]]:
    """The changes version ``version`` of ``store`` made, from its (checked) version file."""
    entry = loc.landed(store, version)
    where = posixpath.join(store.path, entry.path)
    if entry.is_legacy:
        raise RockstateError(f"version {version} of {store} was written in checkpoint format 1 "
                             f"({where}), which keeps no per-version changes to read.")
    data = loc.read(store, entry.path, f"version {version}")
    manifest: VersionManifest = parse_version_file(data, entry.path, where)  # checks it whole
    if manifest.use_column_families:
        raise RockstateError(f"{store} keeps its state in column families; its change feed is "
                             "read with Spark's statestore source.")
    out = []
    for op, key, value in changelog_records(changes_of(data, entry.path, where), where):
        kind = CHANGE_TYPES.get(op)
        if kind is None:
            raise RockstateError(f"{where} holds a {op} record, which only stores with column "
                                 "families write; the checkpoint does not match its operator.")
        out.append((kind, key, value))
    if manifest.row_checksums:  # each put's value is checked and opened
        puts = [i for i, (_, _, v) in enumerate(out) if v is not None]
        opened = row_checksum.open_lists([out[i][1] for i in puts], [out[i][2] for i in puts],
                                         f"version {version} of {store}")
        for i, v in zip(puts, opened, strict=True):
            out[i] = (out[i][0], out[i][1], v)
    return out
