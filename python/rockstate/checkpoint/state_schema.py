"""The state schemas Spark records in a checkpoint, read without Spark.

- Format v2 (stateful operators other than transformWithState):
  ``state/<op>/0/[<store>/]_metadata/schema``. A ``writeUTF`` version, then the key and value
  schemas as JSON, each written as a count of ``writeUTF`` chunks.
- Format v3 (transformWithState): ``state/<op>/_stateSchema/<store>/<batch>_<uuid>``. A
  ``writeUTF`` version and a count of column families, then for each family:
  - its name;
  - the key and value schemas, each after a 2-byte schema id;
  - the key encoder spec;
  - the user key schema, or an empty object if there is none.
"""

from __future__ import annotations

import json
import posixpath
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.json_text import load_json
from rockstate.checkpoint.location import DEFAULT_STORE, CheckpointLocation
from rockstate.checkpoint.paths import is_number
from rockstate.encoding.unsaferow import UnsupportedTypeError, decimal_precision, is_decimal
from rockstate.errors import CorruptCheckpointError, RockstateError


@dataclass(frozen=True)
class FamilySchema:
    name: str
    key: dict  # Spark StructType JSON
    value: dict
    key_encoder: dict  # {"keyStateEncoderType": ..., "numColsPrefixKey": ...}
    user_key: dict | None
    # Every value schema the family had, by schema id (Avro rows name the one they were
    # written with; transformWithState's schema evolution adds ids, keys never change).
    value_schemas: Mapping[int, dict] = field(default_factory=dict)


def _utf(data: bytes, at: int) -> tuple[str, int]:
    """A Java ``writeUTF`` string (2-byte big-endian length, then the bytes in modified UTF-8:
    NUL as ``C0 80``, a character outside the BMP as two encoded surrogates)."""
    (n,) = struct.unpack_from(">H", data, at)
    raw = data[at + 2:at + 2 + n]
    if len(raw) != n:
        raise ValueError(f"a writeUTF string of {n} bytes has {len(raw)}")
    text = raw.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
    # Surrogate pairs joined into the characters they encode (a lone one is refused).
    return text.encode("utf-16-be", "surrogatepass").decode("utf-16-be"), at + 2 + n


def _chunked(data: bytes, at: int) -> tuple[str, int]:
    """A long string Spark writes as an int count of ``writeUTF`` chunks."""
    (chunks,) = struct.unpack_from(">i", data, at)
    at += 4
    parts = []
    for _ in range(chunks):
        part, at = _utf(data, at)
        parts.append(part)
    return "".join(parts), at


def v2_schema_path(operator: int, store: str = DEFAULT_STORE) -> str:
    """Where Spark keeps a store's schema file of format v2, relative to the checkpoint."""
    return "/".join(["state", str(operator), "0"] + ([] if store == DEFAULT_STORE else [store])
                    + ["_metadata", "schema"])


def v2_schemas(loc: CheckpointLocation, operator: int,
                 store: str = DEFAULT_STORE) -> tuple[dict, dict]:
    """(key schema, value schema) Spark recorded for an operator's store, as JSON objects.

    Spark writes them to ``state/<op>/0/[<store>/]_metadata/schema`` (schema format v2: a
    Java ``writeUTF`` version, then key and value schema JSON, each as a count of
    ``writeUTF`` chunks).
    """
    path = loc.path(v2_schema_path(operator, store))
    if not loc.fs.exists(path):
        v3 = loc.path("state", str(operator), "_stateSchema")
        hint = (" Spark wrote a v3 schema (_stateSchema/), which this reader does not read yet."
                if loc.fs.exists(v3) else "")
        raise RockstateError(f"no state schema for operator {operator} store {store} at "
                             f"{path}.{hint}")
    data = loc.read_path(path, f"operator {operator}'s state schema", FileKind.SPARK_METADATA)
    try:
        version, at = _utf(data, 0)
        if version != "v2":
            raise RockstateError(f"state schema {path} has format {version!r}; this reader "
                                 "reads v2")
        schemas = []
        for _ in range(2):
            text, at = _chunked(data, at)
            schemas.append(checked_types(load_json(text, path, "state schema"), path))
    except (struct.error, ValueError, UnicodeDecodeError) as e:
        raise CorruptCheckpointError(f"state schema {path} is damaged ({e}).") from None
    return schemas[0], schemas[1]


def encode_v2_schemas(key: dict, value: dict) -> bytes:
    """A schema file of format v2 holding ``key`` and ``value`` (Spark types as JSON), as
    Spark's reader reads it: ``v2``, then each schema's compact JSON as a count of chunks."""
    out = bytearray(_java_utf("v2"))
    for schema in (key, value):
        text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
        # At most 3 bytes a character: every chunk fits writeUTF's 65,535.
        chunks = [text[i:i + _CHUNK] for i in range(0, len(text), _CHUNK)] or [""]
        out += struct.pack(">i", len(chunks))
        for chunk in chunks:
            out += _java_utf(chunk)
    return bytes(out)


_CHUNK = 16_384


def _java_utf(text: str) -> bytes:
    """Java's ``writeUTF``: modified UTF-8 (NUL as two bytes, characters outside the BMP as
    two 3-byte surrogates) after a 2-byte big-endian length."""
    utf16 = text.encode("utf-16-be", "surrogatepass")
    units = struct.unpack(f">{len(utf16) // 2}H", utf16)
    out = bytearray()
    for c in units:
        if 0 < c < 0x80:
            out.append(c)
        elif c < 0x800:
            out += bytes([0xC0 | c >> 6, 0x80 | c & 0x3F])
        else:
            out += bytes([0xE0 | c >> 12, 0x80 | c >> 6 & 0x3F, 0x80 | c & 0x3F])
    if len(out) > 0xFFFF:
        raise ValueError(f"a writeUTF string of {len(out)} bytes")
    return struct.pack(">H", len(out)) + bytes(out)


def schema_files(loc: CheckpointLocation, operator: int, store: str = "default",
                 batch: int | None = None) -> list[str]:
    """The paths of a transformWithState store's schema files (format v3), oldest first: every
    one written at or before ``batch``. None is an error (Spark writes one at the first batch)."""
    top = loc.path("state", str(operator), "_stateSchema", store)
    # Spark names each schema file <batch>_<uuid>; anything else there is not one of them.
    numbered = {p: int(posixpath.basename(p).split("_")[0])
                for p in (loc.fs.ls(top, detail=False) if loc.fs.isdir(top) else [])
                if is_number(posixpath.basename(p).split("_")[0])}
    files = sorted((p for p, n in numbered.items() if batch is None or n <= batch),
                   key=lambda p: numbered[p])
    if not files:
        raise RockstateError(f"no state schema under {top}"
                             + ("" if batch is None else f" written by batch {batch} or before"))
    return files


def family_schemas(loc: CheckpointLocation, operator: int, store: str = "default",
                   batch: int | None = None, value_history: bool = False
                   ) -> dict[str, FamilySchema]:
    """Every column family's schemas, from the newest schema file (format v3), or the newest
    one written at or before ``batch``; with ``value_history``, every earlier value schema by
    its id too (read from the earlier files: what Avro-encoded rows need)."""
    files = schema_files(loc, operator, store, batch)
    # Each file holds the schemas as of its batch; older ids stay readable from older files
    # (a later file's schema of an id wins: a retried batch rewrites its file).
    history: dict[str, dict[int, dict]] = {}
    newest: dict[str, FamilySchema] = {}
    for path in files if value_history else files[-1:]:
        try:
            data = loc.read_path(path, f"operator {operator}'s state schema",
                                 FileKind.SPARK_METADATA)
        except FileNotFoundError as e:
            raise CorruptCheckpointError(f"state schema {path} cannot be read ({e}).") from None
        newest = parse_family_schemas(data, path)
        for name, f in newest.items():
            history.setdefault(name, {}).update(f.value_schemas)
    return {name: replace(f, value_schemas=history[name]) for name, f in newest.items()}


def checked_types(schema: Any, where: str) -> Any:
    """``schema`` (a Spark type as JSON) once every type in it has parameters Spark writes:
    a decimal's precision and scale size the decoder's work, so they are checked first."""
    pending = [schema]
    while pending:
        t = pending.pop()
        if isinstance(t, str) and is_decimal(t):
            try:
                decimal_precision(t)
            except UnsupportedTypeError as e:
                raise CorruptCheckpointError(f"state schema {where} is damaged ({e}).") \
                    from None
        elif isinstance(t, dict):
            pending += [f.get("type") for f in t.get("fields") or [] if isinstance(f, dict)]
            pending += [t.get(k) for k in ("elementType", "keyType", "valueType", "sqlType")]
    return schema


def parse_family_schemas(data: bytes, where: str) -> dict[str, FamilySchema]:
    """A schema file of format v3 (``_stateSchema/<store>/<batch>_<uuid>``): every column
    family's key, value and encoder schemas."""
    out = {}
    try:
        version, at = _utf(data, 0)
        if version != "v3":
            raise RockstateError(f"state schema {where} has format {version!r}; expected v3")
        (count,) = struct.unpack_from(">i", data, at)
        at += 4
        for _ in range(count):
            name, at = _utf(data, at)
            at += 2  # key schema id: key schemas never evolve
            key, at = _chunked(data, at)
            (value_id,) = struct.unpack_from(">h", data, at)
            at += 2
            value, at = _chunked(data, at)
            encoder, at = _chunked(data, at)
            user_key, at = _chunked(data, at)
            user = load_json(user_key, where, "state schema") \
                if user_key.strip() not in ("", "{}", "{    }") else None
            schemas = [checked_types(load_json(text, where, "state schema"), where)
                       for text in (key, value, encoder)]
            if not all(isinstance(x, dict) for x in [*schemas, user or {}]):
                raise ValueError(f"the schemas of {name!r} are not JSON objects")
            out[name] = FamilySchema(name, *schemas[:2], schemas[2], user,
                                     {value_id: schemas[1]})
    except (struct.error, ValueError, UnicodeDecodeError) as e:
        raise CorruptCheckpointError(f"state schema {where} is damaged ({e}).") from None
    return out
