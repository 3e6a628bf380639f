"""A rewrite that gives a store a new value schema (a transform that adds, drops or widens a
value column): the schema file Spark checks the restarted query against changes with it.

Spark keeps the schema of every store but transformWithState's in one file of format v2
(``state/<op>/0/[<store>/]_metadata/schema``), written at the query's first batch and checked
at every start: a query whose value schema differs in types is refused
(``STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE``). Names are not compared, and a field the file
records as nullable accepts the query's either way, so the new file records the new schema
with every field nullable.

The order keeps a kill midway harmless. The rows are written first; the offset log entry of
the rewrite batch records each change (``SCHEMAS_KEY``: the schema before and after); the
schema files are replaced after it and before the commit entry. A run killed before the offset
entry leaves the old schema and old rows. A run resumed after it puts the old schema back before
it reads the old rows again (Spark's reader decodes them by the file), then writes the new
one before it commits. Until that commit the checkpoint is a rewrite to finish, not a query to
restart (``rockstate.tools.rewrite``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rockstate.checkpoint.schema_changes import SCHEMAS_KEY, SchemaChange, parse_changes
from rockstate.checkpoint.state_schema import encode_v2_schemas, v2_schema_path, v2_schemas
from rockstate.checkpoint.writable_location import WritableLocation
from rockstate.errors import RockstateError

__all__ = ["SCHEMAS_KEY", "SchemaChange", "conf_value", "nullable", "planned", "put",
           "recorded"]


def planned(ckpt: WritableLocation, values: Mapping[tuple[int, str], dict]
            ) -> list[SchemaChange]:
    """The changes that give each (operator, store) the value schema ``values`` names, read
    against the schema files as they are."""
    changes = []
    for (op, store), after in sorted(values.items()):
        if not ckpt.fs.exists(ckpt.path(v2_schema_path(op, store))):
            raise RockstateError(
                f"rockstate: operator {op} store {store} of {ckpt.url} has no state schema "
                f"file of format v2 ({v2_schema_path(op, store)}), so its value schema cannot "
                "change here; transform it within its schema (nothing was written).")
        key, before = v2_schemas(ckpt.loc, op, store)
        changes.append(SchemaChange(op, store, key, before, nullable(after)))
    return changes


def conf_value(changes: list[SchemaChange]) -> str:
    return json.dumps({f"{c.operator_id}/{c.store_name}":
                       {"key": c.key, "before": c.before, "after": c.after} for c in changes},
                      separators=(",", ":"), sort_keys=True)


def recorded(ckpt: WritableLocation, confs: Mapping[str, str]) -> list[SchemaChange]:
    """The changes a rewrite batch's offset log entry records (none if it records none)."""
    text = confs.get(SCHEMAS_KEY)
    return [] if text is None else parse_changes(text, f"the rewrite batch of {ckpt.url}")


def put(ckpt: WritableLocation, changes: list[SchemaChange], side: str) -> None:
    """Makes each changed store's schema file hold its value schema ``before`` or ``after``
    (a file that holds it already is left alone)."""
    for c in changes:
        data = encode_v2_schemas(c.key, c.before if side == "before" else c.after)
        relative = v2_schema_path(c.operator_id, c.store_name)
        if ckpt.read(relative) != data:
            ckpt.replace(relative, data)


def nullable(schema: Any) -> Any:
    """A Spark type as JSON with every struct field, array element and map value nullable."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if schema.get("type") == "struct":
        out["fields"] = [{**f, "nullable": True, "type": nullable(f.get("type"))}
                         for f in schema.get("fields", [])]
    elif schema.get("type") == "array":
        out.update(containsNull=True, elementType=nullable(schema.get("elementType")))
    elif schema.get("type") == "map":
        out.update(valueContainsNull=True, keyType=nullable(schema.get("keyType")),
                   valueType=nullable(schema.get("valueType")))
    return out
