"""Rescaling and migrating a stopped query's state: one rewrite, as a Spark job.

``rescale(spark, checkpoint, partitions=N)`` gives a stateful query a new shuffle partition
count; ``migrate(spark, checkpoint, to=...)`` moves its state to another state store provider
(into rockstate, or out of it to Spark's RocksDB provider), optionally with a new count.

Both follow the protocol of Spark's own offline repartition (4.2+): the state of the newest
committed batch ``B`` is read through Spark's ``statestore`` source (so any provider can be
read), repartitioned with Spark's own hash partitioning of each operator's partition key (the
shuffle of the restarted query sends every key to the partition that holds it), and written
by the target provider as the whole state of the version batch ``L`` commits, in every new
partition, where ``L = B + 1`` is a new batch that reads no input. Then comes the new offset
log entry ``L`` (the offsets of ``B``, the new partition count and provider in its confs) and
the commit entry ``L``, written last.

The state is written before the offset log entry names it: partitions the query already has
get that version in place (older than any version the query commits later, and of two
attempts of a version the one written last is the version), new partitions are written under
``_rockstate_rewrite/<L>/`` and moved into ``state/`` once every store is written. A rewrite
killed before the offset log entry leaves a checkpoint that restarts exactly as before, and a
rewrite run again completes (it also finishes one killed between the offset and commit
entries). Partition folders a smaller count no longer uses are moved aside
(``state/<op>/_retired/``) after the commit: Spark's state reader counts partitions by folder.

A rewrite may also change the rows themselves (``RowChange``: forgetting keys, in
``rockstate.tools.forget``): each operator's rows pass through it between the read and the
write. Such a rewrite batch keeps the partition count and provider, so its offset log entry
names the change (``CHANGE_KEY``: what it was, and what it was given), which is how a run
killed midway is told from a finished one and resumed only as the same change.
"""

from __future__ import annotations

import json
import posixpath
import time
from dataclasses import dataclass
from typing import Any, Protocol

from rockstate.checkpoint.json_text import load_json
from rockstate.checkpoint.model import version_of_batch
from rockstate.checkpoint.paths import is_number
from rockstate.checkpoint.state_folders import RETIRED, ROCKSTATE_DIRS, SPARK_DIRS, SPARK_FILE
from rockstate.checkpoint.writable_location import WritableLocation
from rockstate.errors import CorruptCheckpointError, RockstateError
from rockstate.session.providers import (
    PROVIDERS,
    ROCKSTATE,
    SPARK_HDFS_CLASS,
    SPARK_ROCKSDB,
    SPARK_ROCKSDB_CLASS,
)
from rockstate.session.spark_conf import PROVIDER_CLASS, PROVIDER_KEY
from rockstate.tools import schema_change

SHUFFLE_PARTITIONS_KEY = "spark.sql.shuffle.partitions"

# Providers a rewrite can write, by their names in the provider table: a class each (the
# checkpoint keeps its own confs).
TARGETS = {name: PROVIDERS[name][0] for name in (ROCKSTATE, SPARK_ROCKSDB)}

# Stateful operators whose state a rewrite moves, by the name Spark records in the operator
# metadata.
_MOVABLE = {
    "stateStoreSave",  # streaming aggregation
    "dedupe",
    "dedupeWithinWatermark",
    "sessionWindowStateStoreSaveExec",
    "symmetricHashJoin",
    "flatMapGroupsWithState",
    "applyInPandasWithState",
}
# transformWithState operators: one column family per state variable, timer and TTL index.
# Within rockstate their rows move as stored; between rockstate and Spark's RocksDB provider
# through each provider's state store API (rockstate serves them on Spark 4.0 and 4.1 only).
_TRANSFORM_WITH_STATE = {
    "transformWithStateExec",
    "transformWithStateInPandasExec",
    "transformWithStateInPySparkExec",
}
_ENCODING_KEY = "spark.sql.streaming.stateStore.encodingFormat"
_STAGING = "_rockstate_rewrite"
# The offset log entry of a rewrite batch that changed rows: ``<kind>:<input>``. Outside
# Spark's and rockstate's conf prefixes: Spark restores only its own confs from the log.
CHANGE_KEY = "rockstate.rewrite.change"


@dataclass(frozen=True)
class StoreRewrite:
    """One store of one operator, as rewritten."""

    operator_id: int
    operator_name: str
    store_name: str
    keys: int  # keys written, over every new partition
    keys_per_partition: tuple[int, ...]
    rows_read: int | None = None  # rows of batch B's state, counted when a RowChange ran


@dataclass(frozen=True)
class RewriteResult:
    checkpoint: str
    read_batch: int  # B: the committed batch whose state was read
    batch_id: int  # L: the rewrite's own batch, committed last
    partitions_before: int
    partitions: int
    provider_before: str
    provider: str
    stores: tuple[StoreRewrite, ...]
    seconds: float

    @property
    def keys(self) -> int:
        return sum(s.keys for s in self.stores)


@dataclass(frozen=True)
class OperatorStore:
    """A store of a stateful operator, as its operator metadata names it."""

    operator_id: int
    operator_name: str  # as Spark records it: stateStoreSave, dedupe, symmetricHashJoin, ...
    store_name: str
    num_cols_prefix_key: int

    @property
    def column_families(self) -> bool:
        return self.operator_name in _TRANSFORM_WITH_STATE


class RowChange(Protocol):
    """A change to the rows of a rewritten state (``rockstate.tools.forget``)."""

    @property
    def marker(self) -> str:
        """``<kind>:<input>`` (``forget:<digest of the keys>``, ``transform:operator-<id>``),
        recorded in the rewrite batch's offset log entry."""
        ...

    def check(self, stores: list[OperatorStore], rows: dict[tuple[int, str], Any]) -> None:
        """Refuses, before anything is written, a change that cannot apply to these stores;
        ``rows``: each store's rows, by (operator, store name), as ``apply`` gets them (for
        their schemas; stores with column families have none)."""
        ...

    def apply(self, stores: list[OperatorStore], rows: dict[str, Any]) -> dict[str, Any]:
        """One operator's stores' rows (store name -> DataFrame of ``key``, ``value``), changed;
        each keeps its columns' types."""
        ...


def rescale(spark: Any, checkpoint: str, partitions: int, **kwargs: Any) -> RewriteResult:
    """Rewrites a stopped query's state for ``partitions`` shuffle partitions; the query then
    restarts with that many (Spark takes the count from the checkpoint, not the session).
    The function form of ``rockstate.Checkpoint(checkpoint).rescale(spark, partitions)``."""
    return rewrite(spark, checkpoint, partitions=partitions, **kwargs)


def migrate(spark: Any, checkpoint: str, to: str, partitions: int | None = None,
            **kwargs: Any) -> RewriteResult:
    """Moves a stopped query's state to the provider ``to`` (``"rockstate"`` or
    ``"spark-rocksdb"``), optionally with a new partition count in the same step. The
    function form of ``rockstate.Checkpoint(checkpoint).migrate(spark, to, partitions)``."""
    if to not in TARGETS:
        raise RockstateError(f"rockstate: cannot migrate to {to!r}; the targets are "
                             f"{', '.join(sorted(TARGETS))}.")
    return rewrite(spark, checkpoint, partitions=partitions, provider=TARGETS[to], **kwargs)


def rewrite(spark: Any, checkpoint: str, *, partitions: int | None = None,
            provider: str | None = None, storage_options: dict[str, Any] | None = None,
            change: RowChange | None = None,
            value_schemas: dict[tuple[int, str], dict] | None = None) -> RewriteResult:
    """Rewrites the state of the stopped query at ``checkpoint`` (the location Spark was
    given) for ``partitions`` and/or ``provider``, its rows through ``change`` if given, as a
    new committed batch; see the module. ``value_schemas``: a new value schema (Spark's type
    as JSON) by (operator, store), for a ``change`` whose rows have it
    (``rockstate.tools.schema_change``)."""
    started = time.monotonic()
    ckpt = WritableLocation(checkpoint, storage_options or {})
    _refuse_running(spark, ckpt)
    if partitions is not None and partitions < 1:
        raise RockstateError(f"rockstate: partitions must be at least 1, got {partitions}.")
    if provider is not None and provider not in TARGETS.values():
        raise RockstateError(f"rockstate: cannot write state with {provider}; the providers "
                             f"a rewrite writes are {', '.join(sorted(TARGETS.values()))}.")

    marker = change.marker if change is not None else None
    read_batch, batch, resumed = _batches(ckpt, partitions, provider, marker)
    confs = ckpt.confs(read_batch)
    schemas = schema_change.recorded(ckpt, ckpt.confs(batch)) if resumed else []
    schema_change.put(ckpt, schemas, "before")  # before the old rows are read again
    before_n = int(confs.get(SHUFFLE_PARTITIONS_KEY, "0"))
    before_provider = confs.get(PROVIDER_KEY, SPARK_HDFS_CLASS)
    n = partitions if partitions is not None else before_n
    target = provider if provider is not None else before_provider
    if target not in TARGETS.values():
        raise RockstateError(
            f"rockstate: {checkpoint} runs on {before_provider}, which a rewrite cannot write; "
            "migrate it with to='rockstate' or to='spark-rocksdb'.")
    stores = _stores(ckpt, read_batch)
    _refuse_unmovable_families(spark, ckpt, stores, confs, before_provider, target)
    session = None
    read_rows: dict[tuple[int, str], Any] = {}
    if change is not None:
        session = _rewrite_session(spark)
        read_rows = {(s.operator_id, s.store_name): _read_rows(session, ckpt, s, read_batch)
                     for s in stores if not s.column_families}
        change.check(stores, read_rows)
        if not resumed:
            schemas = schema_change.planned(ckpt, value_schemas or {})
    elif not resumed and (n, target) == (before_n, before_provider):
        _retire_partitions(ckpt, before_n, batch - 1)
        raise RockstateError(
            f"rockstate: {checkpoint} already has {n} partitions on {target}; nothing to do.")
    _refuse_state_ids(ckpt, read_batch)

    # Folders at or past the count in effect hold no state of batch B: a shrink's leftovers
    # (their move aside was interrupted) or an abandoned rewrite's partial output.
    _retire_partitions(ckpt, before_n, read_batch)
    retire_files_of_other_providers(ckpt, before_provider, read_batch)
    ckpt.remove(_STAGING)
    new_confs = dict(confs)
    new_confs[SHUFFLE_PARTITIONS_KEY] = str(n)
    new_confs[PROVIDER_KEY] = target
    staging = f"{_STAGING}/{batch}"
    session = session or _rewrite_session(spark)
    written: list[StoreRewrite] = []
    for op in sorted({s.operator_id for s in stores}):
        of_op = [s for s in stores if s.operator_id == op]
        if change is None or of_op[0].column_families:
            written.extend(_rewrite_store(session, ckpt, s, read_batch, batch, n, before_n,
                                          staging, before_provider, target, new_confs)
                           for s in of_op)
            continue
        of_op_rows = {s.store_name: read_rows[(op, s.store_name)] for s in of_op}
        changed = change.apply(of_op, of_op_rows)
        for s in of_op:
            new_value = next((c.after for c in schemas if (c.operator_id, c.store_name) ==
                              (op, s.store_name)), None)
            written.append(_write_rows(session, ckpt, s, changed[s.store_name], batch, n,
                                       before_n, staging, target, new_confs,
                                       read=of_op_rows[s.store_name], value=new_value))
    _move_staged(ckpt, staging, before_n)
    if not resumed:
        entry_confs = new_confs if marker is None else {**new_confs, CHANGE_KEY: marker}
        if schemas:
            entry_confs[schema_change.SCHEMAS_KEY] = schema_change.conf_value(schemas)
        ckpt.publish(f"offsets/{batch}", ckpt.offsets_entry(read_batch, entry_confs))
    for op in sorted({s.operator_id for s in stores if s.column_families}):
        ckpt.publish(f"state/{op}/_metadata/v2/{batch}",
                     # Spark's offline repartition writes the same for its rewrite batch.
                     ckpt.operator_metadata(op, read_batch).encode({"numPartitions": n}))
    schema_change.put(ckpt, schemas, "after")
    ckpt.publish(f"commits/{batch}", ckpt.read(f"commits/{read_batch}"))
    _retire_partitions(ckpt, n, batch)
    retire_files_of_other_providers(ckpt, target, batch)
    return RewriteResult(checkpoint, read_batch, batch, before_n, n, before_provider, target,
                         tuple(written), time.monotonic() - started)


def _batches(ckpt: WritableLocation, partitions: int | None, provider: str | None,
             marker: str | None) -> tuple[int, int, bool]:
    """(B, L, whether L's offset entry exists already: an interrupted rewrite to finish)."""
    committed = ckpt.numbered("commits")
    offsets = ckpt.numbered("offsets")
    if not committed:
        raise RockstateError(f"rockstate: {ckpt.url} has no committed batch; run the query "
                             "until a batch commits, stop it, then rewrite its state.")
    last_commit, last_offset = max(committed), max(offsets)
    if last_offset == last_commit:
        return last_commit, last_commit + 1, False
    if last_offset == last_commit + 1 and _is_rewrite_batch(ckpt, last_offset):
        recorded = ckpt.confs(last_offset)
        wanted = (partitions if partitions is not None else
                  int(recorded[SHUFFLE_PARTITIONS_KEY]),
                  provider if provider is not None else recorded.get(PROVIDER_KEY))
        got = (int(recorded[SHUFFLE_PARTITIONS_KEY]), recorded.get(PROVIDER_KEY))
        if (*wanted, marker) != (*got, recorded.get(CHANGE_KEY)):
            what = f" that {recorded[CHANGE_KEY].split(':')[0]}s rows" \
                if CHANGE_KEY in recorded else ""
            raise RockstateError(
                f"rockstate: batch {last_offset} of {ckpt.url} is an interrupted rewrite{what} "
                f"to {got[0]} partitions on {got[1]}; finish it first (run the same command "
                "again, with the same input), then rewrite anything else.")
        return last_commit, last_offset, True
    raise RockstateError(
        f"rockstate: batch {last_offset} of {ckpt.url} has started but not committed (the query "
        "is running, or stopped mid-batch). Restart the query until that batch commits, stop "
        "it, then rewrite its state (nothing was written).")


def _is_rewrite_batch(ckpt: WritableLocation, batch: int) -> bool:
    """A batch that reads no input and changes the partition count or provider (Spark's own
    offline repartition makes the same kind of batch) or the rows (``CHANGE_KEY``)."""
    if batch == 0:
        return False
    a, b = ckpt.confs(batch - 1), ckpt.confs(batch)
    changed = (a.get(SHUFFLE_PARTITIONS_KEY), a.get(PROVIDER_KEY)) != \
        (b.get(SHUFFLE_PARTITIONS_KEY), b.get(PROVIDER_KEY)) or CHANGE_KEY in b
    # The source offsets: every line after the metadata.
    return changed and ckpt.offsets_lines(batch - 1)[2:] == ckpt.offsets_lines(batch)[2:]


def _stores(ckpt: WritableLocation, batch: int) -> list[OperatorStore]:
    stores = []
    for op in ckpt.operators():
        meta = ckpt.operator_metadata(op, batch)
        name = meta.operator_name
        if name not in _MOVABLE and name not in _TRANSFORM_WITH_STATE:
            raise RockstateError(
                f"rockstate: operator {op} ({name}) of {ckpt.url} cannot be rescaled or "
                "migrated: rockstate moves the state of aggregations, deduplication, session "
                "windows, stream-stream joins, flatMapGroupsWithState / "
                "applyInPandasWithState and transformWithState (nothing was written).")
        stores.extend(OperatorStore(op, name, info.name, info.prefix_key_columns)
                      for info in meta.stores)
    if not stores:
        raise RockstateError(f"rockstate: {ckpt.url} has no stateful operator with operator "
                             f"metadata at batch {batch}; a stateless query needs no rewrite.")
    return stores


def _refuse_unmovable_families(spark: Any, ckpt: WritableLocation, stores: list[OperatorStore],
                               confs: dict[str, str], provider: str, target: str) -> None:
    """transformWithState state moves between rockstate and Spark's RocksDB provider (the
    providers with column families), and within either, in either row encoding (UnsafeRow or
    Avro); into rockstate from elsewhere only on a line where rockstate serves it (the
    restarted query must start)."""
    from rockstate.session.spark_lines import find

    tws = [s for s in stores if s.column_families]
    if not tws:
        return
    what = (f"rockstate: operator {tws[0].operator_id} ({tws[0].operator_name}) of {ckpt.url} "
            f"is a transformWithState operator with state on {provider}")
    encoding = confs.get(_ENCODING_KEY, "unsaferow").strip().lower()
    if encoding not in ("unsaferow", "avro"):
        raise RockstateError(
            f"{what}, encoded as {confs[_ENCODING_KEY]} ({_ENCODING_KEY}), which no Spark "
            "provider reads; a rewrite moves unsaferow or avro state (nothing was written).")
    if (provider, target) == (PROVIDER_CLASS, PROVIDER_CLASS):
        return
    if provider not in (PROVIDER_CLASS, SPARK_ROCKSDB_CLASS):
        raise RockstateError(f"{what}; rockstate moves such state from rockstate or Spark's "
                             "RocksDB provider only (nothing was written).")
    line = find(spark.version)
    if target == PROVIDER_CLASS and line is not None and not line.transform_with_state:
        raise RockstateError(
            f"{what}. Spark {line.line} runs transformWithState on its own "
            "RocksDBStateStoreProvider only (SPARK-54117), so a query migrated to rockstate "
            "could not start; rescale it on Spark's provider instead (rockstate.rescale, or "
            "Spark's StreamingCheckpointManager.repartition). Nothing was written.")


def _written_by(name: str, is_dir: bool) -> str | None:
    """Which kind of provider writes an entry of this name in a partition's folder."""
    if name in SPARK_DIRS if is_dir else SPARK_FILE.match(name):
        return "spark"
    return "rockstate" if is_dir and name in ROCKSTATE_DIRS else None


def _refuse_state_ids(ckpt: WritableLocation, batch: int) -> None:
    lines = ckpt.read(f"commits/{batch}").split(b"\n")
    entry = load_json(lines[1] if len(lines) > 1 else b"", ckpt.path(f"commits/{batch}"),
                      "commit log entry")
    if not isinstance(entry, dict):
        raise CorruptCheckpointError(f"rockstate: {ckpt.path(f'commits/{batch}')} is damaged "
                                     "(its second line is not a JSON object).")
    if entry.get("stateUniqueIds"):
        raise RockstateError(
            f"rockstate: {ckpt.url} uses Spark's state checkpoint format 2 (state ids in the "
            "commit log); a rewrite writes format 1 checkpoints only (nothing was written).")


def _partition_key(s: OperatorStore, key_fields: list[str]) -> list[str]:
    """The key fields Spark's shuffle hashes for a store's key (Spark's partition key)."""
    if s.num_cols_prefix_key > 0:  # session windows: the key without the session start
        return key_fields[:s.num_cols_prefix_key]
    if s.store_name.endswith("-keyWithIndexToValue"):  # join values: the key without the index
        return key_fields[:-1]
    return key_fields


def _rewrite_store(session: Any, ckpt: WritableLocation, s: OperatorStore, read_batch: int,
                   batch: int, n: int, new_from: int, staging: str, source: str, provider: str,
                   confs: dict[str, str]) -> StoreRewrite:
    if s.column_families:
        return _rewrite_families(session, ckpt, s, read_batch, batch, n, new_from, staging,
                                 source, provider, confs)
    return _write_rows(session, ckpt, s, _read_rows(session, ckpt, s, read_batch), batch, n,
                       new_from, staging, provider, confs)


def _read_rows(session: Any, ckpt: WritableLocation, s: OperatorStore, read_batch: int) -> Any:
    """A store's rows at batch ``read_batch`` (``key``, ``value``), through Spark's reader."""
    return (session.read.format("statestore")
            .option("batchId", read_batch)
            .option("operatorId", s.operator_id)
            .option("storeName", s.store_name)
            .load(ckpt.spark_url)
            .select("key", "value"))


def _write_rows(session: Any, ckpt: WritableLocation, s: OperatorStore, state: Any, batch: int,
                n: int, new_from: int, staging: str, provider: str, confs: dict[str, str],
                read: Any = None, value: dict | None = None) -> StoreRewrite:
    """Writes ``state`` (``key``, ``value``) as the store's version of ``batch`` in each of
    the ``n`` partitions. ``read``: the rows a RowChange changed into ``state``, whose schema
    (nullability included) is the store's, and which are counted. ``value``: the store's new
    value schema, if the change gave it one."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = (read if read is not None else state).schema
    key_type = schema["key"].dataType
    value_type = schema["value"].dataType if value is None else StructType.fromJson(value)
    fields = _partition_key(s, [f.name for f in key_type.fields])
    # Spark's HashPartitioning over the same values of the same types as the query's shuffle.
    placed = state.select("key", "value").repartition(n, *[F.col("key")[f] for f in fields])
    counts = session._jvm.io.rockstate.spark.rewrite.StateRewrite.write(
        placed._jdf, ckpt.spark_path("state"), ckpt.spark_path(staging), new_from,
        s.operator_id, s.store_name, batch, provider, key_type.json(), value_type.json(),
        s.num_cols_prefix_key, _java_map(session, confs))
    return _written(s, counts, n, read.count() if read is not None else None)


def _rewrite_families(session: Any, ckpt: WritableLocation, s: OperatorStore, read_batch: int,
                      batch: int, n: int, new_from: int, staging: str, source: str,
                      provider: str, confs: dict[str, str]) -> StoreRewrite:
    """A transformWithState store: every column family's rows move to the new partition of
    the grouping key in them; within rockstate as stored, else through the providers' API."""
    from rockstate.checkpoint import spark_rocksdb
    from rockstate.checkpoint.state_schema import schema_files
    from rockstate.checkpoint.tws import DUMMY_VALUE_SCHEMA, family_layouts

    version = version_of_batch(read_batch)  # the state version batch B committed
    families: set[str] = set()
    if source == PROVIDER_CLASS:
        for store in ckpt.loc.stores(s.operator_id):
            if store.name == s.store_name and store.partition < new_from:
                families |= set(ckpt.loc.manifest(store, version).column_families)
    else:
        for p, path in spark_rocksdb.partitions(ckpt.loc, s.operator_id, s.store_name).items():
            if p < new_from:
                families |= spark_rocksdb.column_families(ckpt.loc, path, version)
    stored = (source, provider) == (PROVIDER_CLASS, PROVIDER_CLASS)
    key, layouts = family_layouts(
        ckpt.loc, s.operator_id, read_batch, families, declared=source != PROVIDER_CLASS,
        lists=ckpt.operator_metadata(s.operator_id, read_batch).list_variables)
    # The providers read and write Avro rows through the schemas these files hold, as Spark
    # gives them to a transformWithState operator's stores.
    schemas = session._jvm.java.util.ArrayList()
    for path in schema_files(ckpt.loc, s.operator_id, s.store_name, read_batch):
        schemas.add(ckpt.spark_path(f"state/{s.operator_id}/_stateSchema/{s.store_name}/"
                                    f"{posixpath.basename(path)}"))
    job = session._jvm.io.rockstate.spark.rewrite.StateRewrite
    common = (session._jsparkSession, ckpt.spark_path("state"), ckpt.spark_path(staging),
              new_from, s.operator_id, s.store_name, batch, provider)
    rest = (json.dumps(key), json.dumps(DUMMY_VALUE_SCHEMA), _java_map(session, confs),
            json.dumps(layouts), schemas, version, new_from, n)
    counts = job.writeStored(*common, *rest) if stored else job.writeRows(*common, source, *rest)
    return _written(s, counts, n)


def _java_map(session: Any, values: dict[str, str]) -> Any:
    out = session._jvm.java.util.HashMap()
    for k, v in values.items():
        out.put(k, v)
    return out


def _written(s: OperatorStore, counts: Any, n: int, rows_read: int | None = None
             ) -> StoreRewrite:
    per_partition = tuple(int(c) for c in counts)
    if len(per_partition) != n:
        raise RockstateError(f"rockstate: the rewrite of {s.store_name} of operator "
                             f"{s.operator_id} wrote {len(per_partition)} partitions, not {n}.")
    return StoreRewrite(s.operator_id, s.operator_name, s.store_name, sum(per_partition),
                        per_partition, rows_read)


def _rewrite_session(spark: Any) -> Any:
    """A session of the same application for the rewrite job: adaptive execution off, so
    every one of the N shuffle partitions runs (an empty one still writes its empty state)."""
    session = spark.newSession()
    session.conf.set("spark.sql.adaptive.enabled", "false")
    return session


def _refuse_running(spark: Any, ckpt: WritableLocation) -> None:
    for q in spark.streams.active:
        root = str(q._jsq.streamingQuery().resolvedCheckpointRoot())
        if ckpt.same_location(root):
            raise RockstateError(
                f"rockstate: query {q.name or q.id} is running on {ckpt.url}; stop it first "
                "(nothing was written).")


def _move_staged(ckpt: WritableLocation, staging: str, new_from: int) -> None:
    """Moves the new partitions' folders (``new_from`` and up) from ``staging`` into
    ``state/``, then removes ``staging``."""
    root = ckpt.path(staging)
    for op_dir in (ckpt.fs.ls(root, detail=False) if ckpt.fs.isdir(root) else []):
        op = posixpath.basename(op_dir.rstrip("/"))
        for p in ckpt.fs.ls(op_dir, detail=False):
            part = posixpath.basename(p.rstrip("/"))
            if is_number(part) and int(part) >= new_from:
                ckpt.move_dir(p, ckpt.path(f"state/{op}/{part}"))
    ckpt.remove(_STAGING)


def _retire_partitions(ckpt: WritableLocation, n: int, batch: int) -> None:
    """Moves partition folders ``n`` and up of every operator to
    ``state/<op>/_retired/<batch>-<partition>``: no state the query reads is there, and
    Spark's state reader counts partitions by folder."""
    for op in ckpt.operators():
        base = ckpt.path(f"state/{op}")
        for p in ckpt.fs.ls(base, detail=False):
            name = posixpath.basename(p.rstrip("/"))
            if is_number(name) and int(name) >= n and ckpt.fs.isdir(p):
                target = posixpath.join(base, RETIRED, f"{batch}-{name}")
                ckpt.fs.makedirs(posixpath.dirname(target), exist_ok=True)
                ckpt.move_dir(p, target)


def retire_files_of_other_providers(ckpt: WritableLocation, provider: str, batch: int) -> None:
    """Moves what another provider wrote in the partition folders aside, to
    ``state/<op>/_retired/<batch>-<partition>-<kind>/``: after a migration the old
    provider's files hold state of batches before it, which the query never reads again
    and which offline tools must not take for its state. Also done before a rewrite
    starts, for a migration interrupted after its commit entry."""
    mine = "rockstate" if provider == PROVIDER_CLASS else "spark"
    for op in ckpt.operators():
        base = ckpt.path(f"state/{op}")
        for p in ckpt.fs.ls(base, detail=False):
            part = posixpath.basename(p.rstrip("/"))
            if not (is_number(part) and ckpt.fs.isdir(p)):
                continue
            folders = [p] + [d for d in ckpt.fs.ls(p, detail=False) if ckpt.fs.isdir(d)
                             and posixpath.basename(d.rstrip("/")) not in
                             SPARK_DIRS | ROCKSTATE_DIRS | {"_metadata"}]
            entries = [e for folder in folders for e in ckpt.fs.ls(folder, detail=True)]
            for entry in entries:
                path = entry["name"].rstrip("/")
                is_dir = entry.get("type") == "directory"
                kind = _written_by(posixpath.basename(path), is_dir)
                if kind is None or kind == mine:
                    continue
                target = posixpath.join(base, RETIRED, f"{batch}-{part}-{kind}",
                                        posixpath.relpath(path, p))
                ckpt.fs.makedirs(posixpath.dirname(target), exist_ok=True)
                if is_dir:
                    ckpt.move_dir(path, target)
                else:
                    ckpt.fs.mv(path, target)
