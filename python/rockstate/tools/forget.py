"""Forgetting keys: every row of a stopped query's state whose key has given values, removed
from every operator as one new committed batch (an erasure request against streaming state).

``forget(spark, checkpoint, keys)`` takes ``keys``, a DataFrame whose columns name key columns
(``user_id``; or several, matched together). A store matches when its key has every one of
those columns by name: an aggregation's grouping columns, a deduplication's columns, a session
window's keys, a ``flatMapGroupsWithState`` group. A stream-stream join names its key columns
``field0``, ``field1``, ... (Spark's join state), so a join side matches by the columns of its
buffered input rows instead: each matching row leaves the side's ``keyWithIndexToValue``
store, the rows left under each join key are numbered again from 0 in their old order, and
``keyToNumValues`` is counted from them, so the two stores of a side stay one state.

The rows leave through a rewrite (``rockstate.tools.rewrite``: the same protocol as a rescale,
killed midway it restarts as before or completes when run again). What other rows learned
from the forgotten ones stays: an aggregate over a group that held them, a join row's
``matched`` flag. The versions before the new one still hold the rows until Spark's retention
drops them; ``older_state`` lists them and ``purge_history`` removes them now
(``rockstate.tools.history``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from rockstate.checkpoint.offsets import recorded_confs
from rockstate.checkpoint.writable_location import WritableLocation
from rockstate.errors import RockstateError
from rockstate.session.spark_conf import PROVIDER_CLASS, PROVIDER_KEY
from rockstate.tools import history
from rockstate.tools.rewrite import OperatorStore, RewriteResult, rewrite

# A stream-stream join's stores (state format 1 and 2), by the suffix of their names.
_COUNTS = "-keyToNumValues"
_VALUES = "-keyWithIndexToValue"
_JOIN = "symmetricHashJoin"
_INDEX = "index"


@dataclass(frozen=True)
class ForgottenRows:
    """One store's rows before the forget, and how many of them it removed."""

    operator_id: int
    operator_name: str
    store_name: str
    rows_before: int
    rows_removed: int


@dataclass(frozen=True)
class ForgetResult:
    checkpoint: str
    columns: tuple[str, ...]
    rewrite: RewriteResult  # batch_id: the batch whose state no longer holds the keys
    stores: tuple[ForgottenRows, ...]
    history: history.OlderState  # what still holds them (after a purge: nothing)
    purged: int  # files purge_history removed

    @property
    def rows_removed(self) -> int:
        return sum(s.rows_removed for s in self.stores)


def forget(spark: Any, checkpoint: str, keys: Any, *, purge_history: bool = False,
           storage_options: dict[str, Any] | None = None) -> ForgetResult:
    """Removes every row whose key has the values of a row of ``keys`` (a DataFrame; its
    columns are the key columns) from the state of the stopped query at ``checkpoint``; see
    the module. ``purge_history`` also removes the older versions that still hold them. The
    function form of ``rockstate.Checkpoint(checkpoint).forget(spark, keys)``."""
    columns = tuple(keys.columns)
    if not columns:
        raise RockstateError("rockstate: forget takes a DataFrame of keys with at least one "
                             "column (the key column, e.g. user_id); it has none.")
    if len(set(columns)) != len(columns):
        raise RockstateError(f"rockstate: the keys' columns {list(columns)} name a column "
                             "twice; give each key column once.")
    if purge_history:
        _refuse_purge_on_spark(checkpoint, storage_options)
    change = _Forget(keys.distinct(), columns, _digest(keys, columns))
    result = rewrite(spark, checkpoint, storage_options=storage_options, change=change)
    stores = tuple(ForgottenRows(s.operator_id, s.operator_name, s.store_name,
                                 s.rows_read or 0, (s.rows_read or 0) - s.keys)
                   for s in result.stores)
    older = history.older_state(checkpoint, result.batch_id, storage_options)
    purged = history.purge(checkpoint, older, storage_options) if purge_history else 0
    if purged:
        older = history.older_state(checkpoint, result.batch_id, storage_options)
    return ForgetResult(checkpoint, columns, result, stores, older, purged)


def _refuse_purge_on_spark(checkpoint: str, storage_options: dict[str, Any] | None) -> None:
    """``purge_history`` removes rockstate's files; a query on Spark's providers keeps its
    older versions until Spark's retention drops them: refused before anything is written."""
    loc = WritableLocation(checkpoint, storage_options or {}).loc  # file:, s3a:// as Spark's
    provider = recorded_confs(loc).get(PROVIDER_KEY)
    if provider != PROVIDER_CLASS:
        raise RockstateError(
            f"rockstate: {checkpoint} runs on {provider or 'no recorded provider'}; "
            "purge_history removes the older versions of rockstate's stores only. Forget "
            "without it (Spark's retention drops them, spark.sql.streaming.minBatchesToRetain "
            "batches later), or migrate the query to rockstate first. Nothing was written.")


def _digest(keys: Any, columns: tuple[str, ...]) -> str:
    """A digest of the key set (its rows in any order), so an interrupted forget is resumed
    only with the same keys: 16 hex digits of SHA-256 over the sorted rows' hashes."""
    from pyspark.sql import functions as F

    hashed = keys.select(F.sha2(F.to_json(F.struct(*columns)), 256).alias("h")).distinct()
    rows = sorted(r["h"] for r in hashed.collect())
    text = "\n".join([",".join(columns), *rows])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class _Forget:
    """The row change of a forget (``rewrite.RowChange``)."""

    keys: Any
    columns: tuple[str, ...]
    digest: str

    @property
    def marker(self) -> str:
        return f"forget:{self.digest}"

    def check(self, stores: list[OperatorStore], rows: dict[tuple[int, str], Any]) -> None:
        tws = [s for s in stores if s.column_families]
        if tws:
            raise RockstateError(
                f"rockstate: operator {tws[0].operator_id} ({tws[0].operator_name}) is a "
                "transformWithState operator; forget removes keys from aggregations, "
                "deduplications, session windows, stream-stream joins and "
                "(flat)MapGroupsWithState / applyInPandasWithState. transformWithState has "
                "its own TTL and state variables' clear() (nothing was written).")
        for s in stores:
            if s.operator_name == _JOIN and not s.store_name.endswith((_COUNTS, _VALUES)):
                raise RockstateError(
                    f"rockstate: operator {s.operator_id} is a stream-stream join whose state "
                    f"is in the store {s.store_name!r}, a join state format forget does not "
                    "know; it knows formats 1 and 2 (keyToNumValues and keyWithIndexToValue "
                    "per side). Nothing was written.")
        columns = {s: self._columns(s, rows[(s.operator_id, s.store_name)]) for s in stores
                   if not s.store_name.endswith(_COUNTS)}
        matched = [s for s, fields in columns.items() if self._matches(fields, s)]
        for s in matched:  # every value casts to the state's type, checked before writing
            struct = "value" if s.store_name.endswith(_VALUES) else "key"
            _keys_as(self.keys, rows[(s.operator_id, s.store_name)].schema[struct].dataType,
                     self.columns, f"operator {s.operator_id}'s {s.store_name}")
        if not matched:
            seen = "; ".join(f"operator {s.operator_id} ({s.operator_name}, {s.store_name}): "
                             f"{fields}" for s, fields in columns.items())
            raise RockstateError(
                f"rockstate: no operator's key has the columns {list(self.columns)} ({seen}); "
                "name the key columns as the state has them (rockstate read shows them). "
                "Nothing was written.")

    @staticmethod
    def _columns(s: OperatorStore, frame: Any) -> list[str]:
        """The columns a store matches by: its key's, or a join side's input row's."""
        struct = "value" if s.store_name.endswith(_VALUES) else "key"
        return [f.name for f in frame.schema[struct].dataType.fields]

    def apply(self, stores: list[OperatorStore], rows: dict[str, Any]) -> dict[str, Any]:
        out = dict(rows)
        for s in stores:
            if s.store_name.endswith(_COUNTS):
                continue  # a join side's counts follow its values, below
            frame = rows[s.store_name]
            if not self._matches(self._columns(s, frame), s):
                continue
            if s.store_name.endswith(_VALUES):
                side = s.store_name[:-len(_VALUES)]
                out[s.store_name], out[side + _COUNTS] = _forget_join_side(
                    frame, rows[side + _COUNTS], self.keys, self.columns)
            else:
                out[s.store_name] = _without(frame, "key", self.keys, self.columns)
        return out

    def _matches(self, fields: list[str], s: OperatorStore) -> bool:
        """Whether a store's key (a join side's rows) has every key column; one that has some
        of them but not all is refused: matching on fewer columns would forget more rows."""
        have = [c for c in self.columns if c in fields]
        if have and len(have) < len(self.columns):
            raise RockstateError(
                f"rockstate: operator {s.operator_id} ({s.operator_name}, {s.store_name}) has the "
                f"columns {have} but not {[c for c in self.columns if c not in fields]}; "
                f"its columns are {fields}. Forget with the columns every matching operator "
                "has, or forget from this query in two steps (nothing was written).")
        return bool(have)


def _keys_as(keys: Any, struct: Any, columns: tuple[str, ...], source: str) -> Any:
    """The keys cast to the types of the state's columns, named ``__forget_<column>``; a value
    that does not cast (``abc`` for a bigint column) is refused, never matched as null."""
    from pyspark.sql import functions as F

    types = {f.name: f.dataType for f in struct.fields}
    cast = keys.select(*[F.col(c).try_cast(types[c]).alias(f"__forget_{c}") for c in columns],
                       *[F.col(c).alias(f"__given_{c}") for c in columns])
    for c in columns:
        bad = cast.where(F.col(f"__forget_{c}").isNull() & F.col(f"__given_{c}").isNotNull()
                         ).limit(1).collect()
        if bad:
            raise RockstateError(
                f"rockstate: the key value {bad[0][f'__given_{c}']!r} of column {c} is not a "
                f"{types[c].simpleString()}, the type of {c} in {source}; fix the keys "
                "(nothing was written).")
    return cast.select(*[f"__forget_{c}" for c in columns])


def _without(frame: Any, struct_column: str, keys: Any, columns: tuple[str, ...]) -> Any:
    """``frame``'s rows whose ``struct_column`` has no row of ``keys`` in ``columns`` (null
    matching null: a null key is a key)."""
    keyed = _keys_as(keys, frame.schema[struct_column].dataType, columns, struct_column)
    on = None
    for c in columns:
        term = frame[struct_column][c].eqNullSafe(keyed[f"__forget_{c}"])
        on = term if on is None else on & term
    return frame.join(keyed, on, "left_anti")


def _forget_join_side(values: Any, counts: Any, keys: Any, columns: tuple[str, ...]
                      ) -> tuple[Any, Any]:
    """A join side's two stores without the rows whose input columns match: the values left
    under each join key numbered 0.. in their old order, and the counts made from them."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    kept = _without(values, "value", keys, columns)
    key_fields = [f for f in values.schema["key"].dataType.fields if f.name != _INDEX]
    index_type = values.schema["key"].dataType[_INDEX].dataType
    join_key = [F.col("key")[f.name].alias(f.name) for f in key_fields]
    order = Window.partitionBy(*[F.col("key")[f.name] for f in key_fields]) \
        .orderBy(F.col("key")[_INDEX])
    renumbered = kept.select(
        F.struct(*join_key,
                 (F.row_number().over(order) - 1).cast(index_type).alias(_INDEX)).alias("key"),
        "value")
    count_field = counts.schema["value"].dataType.fields[0]
    new_counts = (kept.groupBy(F.struct(*join_key).alias("key")).count()
                  .select("key", F.struct(F.col("count").cast(count_field.dataType)
                                          .alias(count_field.name)).alias("value")))
    return renumbered, new_counts
