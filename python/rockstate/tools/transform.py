"""Transforming an operator's rows: a stopped query's state of one operator, through the user's
function, written back as one new committed batch (Flink's State Processor API modifies a
savepoint the same way).

``transform(spark, checkpoint, operator, fn)`` hands ``fn`` the operator's rows as a DataFrame
of ``key`` and ``value`` (the columns ``rockstate read`` and Spark's ``statestore`` source
show) and writes what it returns: the same two columns of the same types (the query restarts
on the schema its checkpoint records, which Spark checks), each key at most once. A changed key
is written to the partition Spark's shuffle sends it to.

With ``value_schema`` (a ``StructType``, or its DDL: ``"sum BIGINT, max INT"``) the value
may change its columns: ``fn`` returns values of that schema, and the schema Spark checks the
restarted query against becomes it (``rockstate.tools.schema_change``). That is how a
streaming aggregation gains an aggregate column, which Spark alone refuses: its buffer's new
field starts from the aggregate's empty value (0 for a count, null for a sum, min or max).

The other operators are written unchanged. It runs as a rewrite (``rockstate.tools.rewrite``):
the query must be stopped, and a run killed midway leaves a checkpoint that restarts as before,
or completes when run again.

One store per operator: a stream-stream join keeps each side in two stores that must agree,
and transformWithState in column families; both are refused (forget keys from a join with
``rockstate.tools.forget``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rockstate.checkpoint.location import DEFAULT_STORE
from rockstate.errors import RockstateError
from rockstate.tools.rewrite import OperatorStore, RewriteResult, StoreRewrite, rewrite


@dataclass(frozen=True)
class TransformResult:
    checkpoint: str
    operator_id: int
    rewrite: RewriteResult  # batch_id: the batch whose state is the transformed one
    store: StoreRewrite  # the operator's store: rows_read before, keys written after


def transform(spark: Any, checkpoint: str, operator: int, fn: Callable[[Any], Any], *,
              value_schema: Any = None, storage_options: dict[str, Any] | None = None
              ) -> TransformResult:
    """Writes ``fn(rows)`` as operator ``operator``'s state of a new batch of the stopped query
    at ``checkpoint``, its values of ``value_schema`` if given; see the module. The function
    form of ``rockstate.Checkpoint(checkpoint).transform(spark, operator, fn)``."""
    new_value = _schema_json(spark, value_schema)
    change = _Transform(operator, fn, new_value)
    result = rewrite(spark, checkpoint, storage_options=storage_options, change=change,
                     value_schemas=None if new_value is None else
                     {(operator, DEFAULT_STORE): new_value})
    (store,) = [s for s in result.stores if s.operator_id == operator]
    return TransformResult(checkpoint, operator, result, store)


@dataclass(frozen=True)
class _Transform:
    """The row change of a transform (``rewrite.RowChange``)."""

    operator: int
    fn: Callable[[Any], Any]
    value_schema: dict | None  # Spark's type as JSON; None: the value keeps its schema

    @property
    def marker(self) -> str:
        # The operator, not the function: a run resumed with another function rewrites every
        # store again from the same batch, so nothing of the first run's output remains. A new
        # schema is part of it: the resumed run writes the schema the offset entry records.
        if self.value_schema is None:
            return f"transform:operator-{self.operator}"
        digest = hashlib.sha256(json.dumps(self.value_schema, sort_keys=True).encode())
        return f"transform:operator-{self.operator}-value-{digest.hexdigest()[:16]}"

    def check(self, stores: list[OperatorStore], rows: dict[tuple[int, str], Any]) -> None:
        mine = [s for s in stores if s.operator_id == self.operator]
        if not mine:
            ids = sorted({s.operator_id for s in stores})
            raise RockstateError(
                f"rockstate: the query has no stateful operator {self.operator}; its operators "
                f"are {', '.join(f'{i} ({_name(stores, i)})' for i in ids)} (rockstate inspect "
                "lists them). Nothing was written.")
        if len(mine) > 1 or mine[0].column_families:
            raise RockstateError(
                f"rockstate: operator {self.operator} ({mine[0].operator_name}) keeps its state "
                f"in {len(mine)} stores ({', '.join(s.store_name for s in mine)})"
                + (" of column families" if mine[0].column_families else "")
                + " that must agree with each other; transform changes an operator of one "
                "store (aggregations, deduplications, session windows, (flat)MapGroupsWithState "
                "/ applyInPandasWithState). Nothing was written.")
        # The function's result, checked before any store is written.
        _check_unique_keys(self._applied(mine[0], rows[(self.operator, mine[0].store_name)]),
                           mine[0])

    def apply(self, stores: list[OperatorStore], rows: dict[str, Any]) -> dict[str, Any]:
        if stores[0].operator_id != self.operator:
            return rows
        (s,) = stores
        return {s.store_name: self._applied(s, rows[s.store_name])}

    def _applied(self, s: OperatorStore, before: Any) -> Any:
        after = self.fn(before)
        _check_schema(before, after, s, self.value_schema)
        return after.select("key", "value")


def _name(stores: list[OperatorStore], operator: int) -> str:
    return next(s.operator_name for s in stores if s.operator_id == operator)


def _schema_json(spark: Any, value_schema: Any) -> dict | None:
    """A value schema given as a StructType or as DDL, as Spark's JSON."""
    if value_schema is None:
        return None
    if isinstance(value_schema, str):
        try:  # Spark's own DDL parser, as the query's schema strings are read
            text = spark._jvm.org.apache.spark.sql.types.StructType.fromDDL(value_schema).json()
        except Exception as e:  # py4j carries Spark's parse error
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise RockstateError(
                f"rockstate: the value schema {value_schema!r} is not a column list Spark "
                f"reads ({first[:300]}); write it as 'name TYPE, ...'. Nothing was "
                "written.") from None
        return json.loads(text)
    if not hasattr(value_schema, "jsonValue") or getattr(value_schema, "typeName",
                                                         lambda: "")() != "struct":
        raise RockstateError(f"rockstate: value_schema is {type(value_schema).__name__}; give "
                             "a pyspark.sql.types.StructType or its DDL. Nothing was written.")
    return value_schema.jsonValue()


def _check_schema(before: Any, after: Any, s: OperatorStore, value_schema: dict | None) -> None:
    """``after`` has ``key`` of ``before``'s type and ``value`` of ``before``'s or of
    ``value_schema`` (nullability aside: Spark's check on restart does not compare it)."""
    from pyspark.sql.types import StructType

    if not hasattr(after, "schema") or not hasattr(after, "select"):
        raise RockstateError(f"rockstate: the transform of operator {s.operator_id} returned "
                             f"{type(after).__name__}, not a DataFrame. Nothing was written.")
    for column in ("key", "value"):
        if column not in after.columns:
            raise RockstateError(
                f"rockstate: the transform of operator {s.operator_id} returned no {column} "
                f"column (its columns: {after.columns}); return key and value as it was given "
                "them. Nothing was written.")
        given = column == "value" and value_schema is not None
        want = _shape(StructType.fromJson(value_schema) if given
                      else before.schema[column].dataType)
        got = _shape(after.schema[column].dataType)
        if want == got:
            continue
        if given:
            raise RockstateError(
                f"rockstate: the transform of operator {s.operator_id} ({s.operator_name}) "
                f"returned value as {got}, but its value_schema is {want} (cast the new "
                "values). Nothing was written.")
        raise RockstateError(
            f"rockstate: the transform of operator {s.operator_id} ({s.operator_name}) "
            f"returned {column} as {got}, but the state's {column} is {want}; Spark checks "
            "the restarted query's state against the schema its checkpoint records, so the "
            "transform keeps it (cast the new values)"
            + (", or gives the value its new schema with value_schema" if column == "value"
               else "") + ". Nothing was written.")


def _shape(data_type: Any) -> str:
    """A type's names and types, without nullability."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(data_type, StructType):
        return "struct<" + ",".join(f"{f.name}:{_shape(f.dataType)}" for f in data_type.fields) \
            + ">"
    if isinstance(data_type, ArrayType):
        return f"array<{_shape(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"map<{_shape(data_type.keyType)},{_shape(data_type.valueType)}>"
    return data_type.simpleString()


def _check_unique_keys(after: Any, s: OperatorStore) -> None:
    """Two rows of one key would leave whichever the store wrote last: refused."""
    twice = after.groupBy("key").count().where("count > 1").limit(1).collect()
    if twice:
        raise RockstateError(
            f"rockstate: the transform of operator {s.operator_id} returned the key "
            f"{twice[0]['key']} {twice[0]['count']} times; a store holds a key once (merge "
            "the rows in the transform). Nothing was written.")
