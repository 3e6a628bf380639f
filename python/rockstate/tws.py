"""The state variables of a ``transformWithState`` / ``transformWithStateInPandas`` operator.

Spark keeps each state variable in a column family of the operator's store. It records:

- their names and kinds (``ValueState``, ``ListState``, ``MapState``) in the operator
  metadata, ``state/<op>/_metadata/v2/<batch>``;
- their schemas in ``state/<op>/_stateSchema/<store>/<batch>_<uuid>`` (schema format v3).

In Spark's RocksDB provider, a family's keys start with its id as a 2-byte little-endian
number, as ``columnFamilyMapping`` in each version's metadata maps it.

Encodings, after the family id (each row is one version byte and an UnsafeRow):

- Value state: the key is the grouping key row; the value is one row.
- List state: the same key; the value is the list's rows, each preceded by its length as a
  little-endian int32, with a ``,`` between appended runs.
- Map state: the key is the prefix length as a little-endian int32, the grouping key row
  (the prefix), then the user key row; the value is one row.
"""

from __future__ import annotations

import json
import posixpath
import struct

import pyarrow as pa

from rockstate.errors import CorruptCheckpointError, RockstateError
from rockstate.location import CheckpointLocation
from rockstate.state_schema import FamilySchema
from rockstate.unsaferow import decode_rows

ROW = 1  # the version byte before every row


def operator_metadata(loc: CheckpointLocation, operator: int) -> dict:
    """Spark's operator metadata (v2, newest batch), with its properties parsed."""
    top = loc._path("state", str(operator), "_metadata", "v2")
    files = sorted((p for p in (loc.fs.ls(top, detail=False) if loc.fs.isdir(top) else [])
                    if posixpath.basename(p).isdigit()), key=lambda p: int(posixpath.basename(p)))
    if not files:
        raise RockstateError(f"operator {operator} has no v2 operator metadata ({top}); it "
                             "is not a transformWithState operator.")
    text = loc.fs.cat_file(files[-1]).decode("utf-8")
    try:
        doc = json.loads(text.split("\n", 1)[1])
        doc["properties"] = json.loads(doc.get("operatorPropertiesJson") or "{}")
    except (IndexError, ValueError) as e:
        raise CorruptCheckpointError(f"operator metadata {files[-1]} is damaged ({e}).") \
            from None
    return doc


def state_variables(loc: CheckpointLocation, operator: int) -> dict[str, str]:
    """State variable name -> kind (ValueState, ListState, MapState)."""
    props = operator_metadata(loc, operator)["properties"]
    return {v["stateName"]: v["stateVariableType"] for v in props.get("stateVariables", [])}


def _sub_schema(schema: dict, fields: slice) -> dict:
    return {"type": "struct", "fields": schema["fields"][fields]}


def decode_variable(kind: str, family: FamilySchema, keys: list[bytes], values: list[bytes],
                    partitions: list[int]) -> pa.Table:
    """One state variable's rows, with the columns Spark's ``statestore`` source gives it."""
    if kind == "ValueState":
        return pa.table({"key": decode_rows(keys, family.key, ROW),
                         "value": decode_rows(values, family.value, ROW),
                         "partition_id": pa.array(partitions, type=pa.int32())})
    if kind == "ListState":
        element_keys, elements, element_partitions = [], [], []
        for k, v, p in zip(keys, values, partitions, strict=True):
            at = 0
            while at < len(v):
                (n,) = struct.unpack_from("<i", v, at)
                elements.append(v[at + 4:at + 4 + n])
                element_keys.append(k)
                element_partitions.append(p)
                at += 4 + n
                if at < len(v) and v[at] == ord(","):
                    at += 1
        return pa.table({"key": decode_rows(element_keys, family.key, ROW),
                         "list_element": decode_rows(elements, family.value, ROW),
                         "partition_id": pa.array(element_partitions, type=pa.int32())})
    if kind == "MapState":
        prefix_cols = int(family.key_encoder.get("numColsPrefixKey", 1))
        prefixes, rests = [], []
        for k in keys:
            (n,) = struct.unpack_from("<i", k, 0)
            prefixes.append(k[4:4 + n])
            rests.append(k[4 + n:])
        grouping = decode_rows(prefixes, _sub_schema(family.key, slice(0, prefix_cols)), ROW)
        user = decode_rows(rests, _sub_schema(family.key, slice(prefix_cols, None)), ROW)
        return pa.table({"key": grouping.field(0), "user_map_key": user.field(0),
                         "user_map_value": decode_rows(values, family.value, ROW),
                         "partition_id": pa.array(partitions, type=pa.int32())})
    raise RockstateError(f"state variables of kind {kind} are not supported yet")
