"""The state variables of a ``transformWithState`` / ``transformWithStateInPandas`` operator.

Spark keeps each state variable in a column family of the operator's store. It records:

- their names and kinds (``ValueState``, ``ListState``, ``MapState``) in the operator
  metadata, ``state/<op>/_metadata/v2/<batch>``;
- their schemas in ``state/<op>/_stateSchema/<store>/<batch>_<uuid>`` (schema format v3).

In Spark's RocksDB provider, a family's keys start with its id as a 2-byte little-endian
number, as ``columnFamilyMapping`` in each version's metadata maps it.

Encodings, after the family id (each row is one version byte and an UnsafeRow; with the Avro
encoding, a version byte, a 2-byte schema id and an Avro datum, ``avro_row``, except the
grouping key prefix of a map key, which has no schema id):

- Value state: the key is the grouping key row; the value is one row.
- List state: the same key; the value is the list's rows, each preceded by its length as a
  little-endian int32, with a ``,`` between appended runs.
- Map state: the key is the prefix length as a little-endian int32, the grouping key row
  (the prefix), then the user key row; the value is one row.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from rockstate.checkpoint.location import CheckpointLocation
from rockstate.checkpoint.operator_metadata import OperatorMetadata, read_operator_metadata
from rockstate.checkpoint.state_schema import FamilySchema, family_schemas
from rockstate.encoding import avro_row
from rockstate.encoding.packed_entries import Rows, as_bytes
from rockstate.encoding.unsaferow import decode_rows
from rockstate.errors import CorruptCheckpointError, RockstateError

ROW = 1  # the version byte before every row


def operator_metadata(loc: CheckpointLocation, operator: int) -> OperatorMetadata:
    """Spark's operator metadata of a transformWithState operator (v2, newest batch)."""
    meta = read_operator_metadata(loc, operator)
    if meta is None or meta.format_line != "v2":
        raise RockstateError(
            f"operator {operator} has no v2 operator metadata "
            f"({loc.path('state', str(operator), '_metadata', 'v2')}); it is not a "
            "transformWithState operator.")
    return meta


def state_variables(loc: CheckpointLocation, operator: int) -> dict[str, str]:
    """State variable name -> kind (ValueState, ListState, MapState)."""
    return operator_metadata(loc, operator).state_variables


def _sub_schema(schema: dict, fields: slice) -> dict:
    return {"type": "struct", "fields": schema["fields"][fields]}


def decode_variable(kind: str, family: FamilySchema, keys: Rows, values: Rows,
                    partitions: Sequence[int], delimited: bool = True,
                    avro: bool = False) -> pa.Table:
    """One state variable's rows, with the columns Spark's ``statestore`` source gives it,
    from rows of the UnsafeRow encoding or, with ``avro``, of the Avro one. A list's
    elements are joined by ``,`` (rockstate; Spark's merge operator version 1), or not
    ``delimited`` (Spark's version 2, 4.2+: a write's elements adjacent, writes joined by
    ``,``), where a ``,`` is a delimiter only if the next element's length cannot start with
    it (an element of 44 bytes, say, has a length whose first byte is ``,``)."""

    def key_rows(rows: Rows, schema: dict, schema_id: bool = True) -> pa.StructArray:
        if avro:
            return avro_row.decode_rows(rows, schema, schema_id=schema_id)
        return decode_rows(rows, schema, ROW)

    def value_rows(rows: Rows) -> pa.StructArray:
        if avro:
            return avro_row.decode_rows(rows, family.value, writers=family.value_schemas)
        return decode_rows(rows, family.value, ROW)

    if kind == "ValueState":
        return pa.table({"key": key_rows(keys, family.key),
                         "value": value_rows(values),
                         "partition_id": pa.array(partitions, type=pa.int32())})
    keys, values = as_bytes(keys), as_bytes(values)  # lists and maps are split key by key
    if kind == "ListState":
        element_keys, elements, element_partitions = [], [], []
        for k, v, p in zip(keys, values, partitions, strict=True):
            fits = None if delimited or b"," not in v else _fitting(v)
            at = 0
            while at < len(v):
                (n,) = struct.unpack_from("<i", v, at) if at + 4 <= len(v) else (-1,)
                if n < 0 or at + 4 + n > len(v):
                    raise CorruptCheckpointError(
                        f"a list element's length {n} at byte {at} of a {len(v)}-byte list "
                        f"value (partition {p}) is out of range; the state is damaged.")
                elements.append(v[at + 4:at + 4 + n])
                element_keys.append(k)
                element_partitions.append(p)
                at += 4 + n
                if delimited and at < len(v):
                    if v[at] != ord(","):
                        raise CorruptCheckpointError(
                            f"no ',' after a list element at byte {at} of a {len(v)}-byte "
                            f"list value (partition {p}); the state is damaged.")
                    at += 1
                elif fits is not None and at < len(v) and v[at] == ord(",") and not fits[at]:
                    at += 1  # a merge's delimiter, not the next element's length
        return pa.table({"key": key_rows(element_keys, family.key),
                         "list_element": value_rows(elements),
                         "partition_id": pa.array(element_partitions, type=pa.int32())})
    if kind == "MapState":
        prefix_cols = int(family.key_encoder.get("numColsPrefixKey", 1))
        prefixes, rests = [], []
        for k in keys:
            (n,) = struct.unpack_from("<i", k, 0) if len(k) >= 4 else (-1,)
            if n < 0 or 4 + n > len(k):
                raise CorruptCheckpointError(f"a map key's prefix length {n} is out of range "
                                             f"for its {len(k)} bytes; the state is damaged.")
            prefixes.append(k[4:4 + n])
            rests.append(k[4 + n:])
        grouping = key_rows(prefixes, _sub_schema(family.key, slice(0, prefix_cols)),
                            schema_id=False)
        user = key_rows(rests, _sub_schema(family.key, slice(prefix_cols, None)))
        return pa.table({"key": grouping.field(0), "user_map_key": user.field(0),
                         "user_map_value": value_rows(values),
                         "partition_id": pa.array(partitions, type=pa.int32())})
    raise RockstateError(f"state variables of kind {kind} are not supported yet")


def _fitting(v: bytes) -> bytearray:
    """For each position of ``v``, whether length-prefixed elements from there fill ``v``
    exactly, a ``,`` after an element taken as a delimiter or as the next element's start,
    whichever fits (Spark's merge operator version 2: a write's elements are adjacent,
    RocksDB's merges join writes with ``,``). One pass from the end."""
    fits = bytearray(len(v) + 1)
    fits[len(v)] = 1
    for at in range(len(v) - 4, -1, -1):
        (n,) = struct.unpack_from("<i", v, at)
        nxt = at + 4 + n
        if n < 0 or nxt > len(v):
            continue
        fits[at] = fits[nxt] or (nxt < len(v) and v[nxt] == ord(",") and fits[nxt + 1])
    return fits


# The value schema Spark gives the default family of a transformWithState store (it holds no
# rows: every state variable, timer and TTL index has a family of its own).
DUMMY_VALUE_SCHEMA = {"type": "struct", "fields": [
    {"name": "__dummy__", "type": "null", "nullable": True, "metadata": {}}]}


def _shape(schema: Any) -> Any:
    """A schema without nullability and metadata: what two families must agree on."""
    if isinstance(schema, dict):
        return {k: _shape(v) for k, v in schema.items() if k not in ("nullable", "metadata")}
    if isinstance(schema, list):
        return [_shape(v) for v in schema]
    return schema


def _at(schema: dict, path: list[int]) -> dict:
    for i in path:
        schema = schema["fields"][i]["type"]
    return schema


def _is_struct(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "struct"


def _start(family: FamilySchema) -> list[int]:
    """Where a family's key encoding puts the grouping key, or the struct that holds it: the
    whole key (no prefix), the first field (a 1-column prefix: map state, a timer's key
    index), the first field that is not an ordering field (range scans: a timer's time index,
    TTL indexes; a map's TTL index keeps the map's whole key there)."""
    encoder = family.key_encoder
    kind = encoder.get("keyStateEncoderType")
    if kind == "NoPrefixKeyStateEncoderSpec":
        return []
    if kind == "PrefixKeyScanStateEncoderSpec" and int(encoder.get("numColsPrefixKey", 0)) == 1:
        return [0]
    if kind == "RangeKeyScanStateEncoderSpec":
        ordinals = set(encoder.get("orderingOrdinals", []))
        rest = [i for i in range(len(family.key["fields"])) if i not in ordinals]
        if rest:
            return rest[:1]
    raise RockstateError(f"column family {family.name} has key encoding {encoder}, which "
                         "rockstate cannot place by grouping key (nothing was written).")


def grouping_key_path(family: FamilySchema, grouping: dict) -> list[int]:
    """The field ordinals from a family's key to its grouping key (``[]``: the key is the
    grouping key), descending through first fields of composite keys until the schema is the
    operator's ``grouping`` key schema."""
    path = _start(family)
    while _is_struct(_at(family.key, path)) and _shape(_at(family.key, path)) != _shape(grouping):
        inner = _at(family.key, path)
        if not inner["fields"] or not _is_struct(inner["fields"][0]["type"]):
            break
        path = [*path, 0]
    if _shape(_at(family.key, path)) != _shape(grouping):
        raise RockstateError(
            f"column family {family.name} keeps no grouping key {json.dumps(_shape(grouping))} "
            f"where its key encoding puts it (its key is {json.dumps(_shape(family.key))}); "
            "rockstate cannot place its keys (nothing was written).")
    return path


def family_layouts(loc: CheckpointLocation, operator: int, batch: int, families: set[str],
                   *, declared: bool = False, lists: set[str] | None = None
                   ) -> tuple[dict, list[dict]]:
    """The grouping key schema of a transformWithState operator and, for each of
    ``families`` (the column families its stores hold), what a rewrite needs to place the
    family's rows: its name, key and value schemas, key encoder (as the state schema file of
    ``batch`` records them), the path to the grouping key in its keys, whether it is one of
    ``lists`` (several values per key) and whether the stores hold it (``inSource``).
    ``declared`` adds every other family the schema declares, with ``inSource`` false: read
    in case a store holds it, created only where it has rows (Spark declares families it
    never creates, and which families a store of Spark's provider holds is known only from
    its last snapshot)."""
    schemas = family_schemas(loc, operator, batch=batch)
    lists = lists or set()
    unknown = sorted(f for f in families if f not in schemas and f != "default")
    if unknown:
        raise RockstateError(
            f"operator {operator} keeps state in column families {unknown}, which its state "
            "schema does not describe; rockstate cannot place their keys (nothing was written).")
    named = [schemas[f] for f in sorted((set(schemas) if declared else families) - {"default"})]
    # The grouping key: the whole key of a family without a prefix, else a prefix family's
    # first field (a map state, a timer's key index: every variable and timer has one).
    direct = [f for f in named if f.key_encoder.get("keyStateEncoderType") in
              ("NoPrefixKeyStateEncoderSpec", "PrefixKeyScanStateEncoderSpec")]
    if not direct:
        raise RockstateError(f"operator {operator} has no state variable or timer whose "
                             "keys name its grouping key (nothing was written).")
    grouping = _at(direct[0].key, _start(direct[0]))
    layouts = [{"name": "default", "keySchema": grouping, "valueSchema": DUMMY_VALUE_SCHEMA,
                "keyEncoder": {"keyStateEncoderType": "NoPrefixKeyStateEncoderSpec"},
                "groupingPath": []}] if "default" in families else []
    layouts += [{"name": f.name, "keySchema": f.key, "valueSchema": f.value,
                 "keyEncoder": f.key_encoder, "groupingPath": grouping_key_path(f, grouping),
                 "multipleValues": f.name in lists, "inSource": f.name in families}
                for f in named]
    return grouping, layouts
