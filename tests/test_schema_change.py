"""A transform's schema change without Spark: the schema files Spark checks a restarted query
against, written as Spark writes them, and the record of a change in the rewrite batch's
offset log entry, read as untrusted input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rockstate.checkpoint.location import CheckpointLocation
from rockstate.checkpoint.schema_changes import changed_at, schemas_of_batch
from rockstate.checkpoint.state_schema import encode_v2_schemas, v2_schema_path, v2_schemas
from rockstate.checkpoint.writable_location import WritableLocation
from rockstate.errors import CorruptCheckpointError
from rockstate.tools import schema_change

FORMATS = Path(__file__).parent / "fixtures" / "checkpoint-format"


def _checkpoint(tmp_path: Path, schema: Path) -> Path:
    """A checkpoint folder whose operator 0 has ``schema`` as its schema file."""
    (tmp_path / "offsets").mkdir()
    target = tmp_path / v2_schema_path(0)
    target.parent.mkdir(parents=True)
    shutil.copy(schema, target)
    return tmp_path


@pytest.mark.parametrize("version", sorted(p.name for p in FORMATS.iterdir()))
def test_a_schema_file_written_again_is_the_bytes_spark_wrote(tmp_path: Path, version: str):
    spark_wrote = FORMATS / version / "store" / "_metadata" / "schema"
    ckpt = _checkpoint(tmp_path, spark_wrote)
    key, value = v2_schemas(CheckpointLocation(str(ckpt)), 0)
    assert encode_v2_schemas(key, value) == spark_wrote.read_bytes()


def test_names_java_writes_in_modified_utf8_and_long_schemas_read_back(tmp_path: Path):
    # A character outside the BMP is written as two surrogates in modified UTF-8 (a NUL would
    # be too, but JSON escapes it); a schema past one writeUTF (65,535 bytes) is split.
    names = ["nul\x00name", "smile \U0001f600", "é"] + [f"column_{i:05d}" for i in range(1200)]
    value = {"type": "struct", "fields": [
        {"name": n, "type": "long", "nullable": True, "metadata": {}} for n in names]}
    key = {"type": "struct", "fields": [
        {"name": "key", "type": "string", "nullable": True, "metadata": {}}]}
    data = encode_v2_schemas(key, value)
    assert "\U0001f600".encode() not in data and b"\xed\xa0\xbd\xed\xb8\x80" in data
    assert b"nul\\u0000name" in data and len(data) > 65_535
    (tmp_path / v2_schema_path(0)).parent.mkdir(parents=True)
    (tmp_path / v2_schema_path(0)).write_bytes(data)
    assert v2_schemas(CheckpointLocation(str(tmp_path)), 0) == (key, value)


def test_put_replaces_the_file_and_its_stale_checksum_and_leaves_a_same_one(tmp_path: Path):
    spark_wrote = FORMATS / "v5" / "store" / "_metadata" / "schema"
    ckpt = _checkpoint(tmp_path, spark_wrote)
    crc = ckpt / "state" / "0" / "0" / "_metadata" / ".schema.crc"
    crc.write_bytes(b"crc of the old bytes")
    location = WritableLocation(str(ckpt), {})
    key, before = v2_schemas(location.loc, 0)
    after = {"type": "struct", "fields": [
        *before["fields"], {"name": "max", "type": "integer", "nullable": False, "metadata": {}}]}
    (change,) = schema_change.planned(location, {(0, "default"): after})
    assert change.before == before and change.key == key
    assert change.after["fields"][-1]["nullable"] is True  # Spark then accepts either

    schema_change.put(location, [change], "before")
    assert crc.exists(), "a file that holds the schema already is left as it is"
    schema_change.put(location, [change], "after")
    assert not crc.exists()
    assert v2_schemas(location.loc, 0) == (key, change.after)
    assert [p.name for p in (ckpt / "state" / "0" / "0" / "_metadata").iterdir()] == ["schema"]
    schema_change.put(location, [change], "before")
    assert (ckpt / v2_schema_path(0)).read_bytes() == spark_wrote.read_bytes()


def test_the_recorded_change_reads_back_and_a_damaged_record_is_refused(tmp_path: Path):
    ckpt = _checkpoint(tmp_path, FORMATS / "v5" / "store" / "_metadata" / "schema")
    location = WritableLocation(str(ckpt), {})
    (change,) = schema_change.planned(location, {(0, "default"): {"type": "struct",
                                                                  "fields": []}})
    text = schema_change.conf_value([change])
    assert schema_change.recorded(location, {schema_change.SCHEMAS_KEY: text}) == [change]
    assert schema_change.recorded(location, {}) == []
    damaged = ["{", "[]", json.dumps({"x/default": {}}), json.dumps({"0/": {}}),
               json.dumps({"0/default": {"key": {}, "before": {}, "after": "text"}}),
               json.dumps({"0/default": []})]
    for value in damaged:
        with pytest.raises(CorruptCheckpointError, match="offset log entry is damaged"):
            schema_change.recorded(location, {schema_change.SCHEMAS_KEY: value})


def test_a_store_without_a_v2_schema_file_cannot_change_its_schema(tmp_path: Path):
    (tmp_path / "offsets").mkdir()
    location = WritableLocation(str(tmp_path), {})
    with pytest.raises(Exception, match="no state schema file of format v2"):
        schema_change.planned(location, {(0, "default"): {"type": "struct", "fields": []}})


def test_nullable_reaches_nested_fields_elements_and_map_values():
    inner = {"type": "struct", "fields": [
        {"name": "a", "type": "long", "nullable": False, "metadata": {}}]}
    schema = {"type": "struct", "fields": [
        {"name": "s", "type": inner, "nullable": False, "metadata": {}},
        {"name": "l", "type": {"type": "array", "elementType": inner, "containsNull": False},
         "nullable": False, "metadata": {}},
        {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": inner,
                               "valueContainsNull": False}, "nullable": False, "metadata": {}}]}
    out = schema_change.nullable(schema)
    assert [f["nullable"] for f in out["fields"]] == [True, True, True]
    assert out["fields"][0]["type"]["fields"][0]["nullable"] is True
    assert out["fields"][1]["type"]["containsNull"] is True
    assert out["fields"][1]["type"]["elementType"]["fields"][0]["nullable"] is True
    assert out["fields"][2]["type"]["valueContainsNull"] is True
    assert schema["fields"][0]["nullable"] is False  # the input is not changed


def test_a_version_from_before_a_change_has_the_schema_recorded_before_it(tmp_path: Path):
    """Batch 2 is a rewrite batch that gave the store a new value schema: the versions of
    batches 0 and 1 keep the old one (from the record), batches 2 and 3 have the file's."""
    ckpt = _checkpoint(tmp_path, FORMATS / "v5" / "store" / "_metadata" / "schema")
    location = WritableLocation(str(ckpt), {})
    key, old = v2_schemas(location.loc, 0)
    new = {"type": "struct", "fields": [
        *old["fields"], {"name": "max", "type": "integer", "nullable": True, "metadata": {}}]}
    (change,) = schema_change.planned(location, {(0, "default"): new})
    for batch in range(4):
        confs = {"spark.sql.shuffle.partitions": "2"}
        if batch == 2:
            confs[schema_change.SCHEMAS_KEY] = schema_change.conf_value([change])
        (ckpt / "offsets" / str(batch)).write_text(
            "v1\n" + json.dumps({"batchWatermarkMs": 0, "conf": confs}) + '\n{"logOffset":0}')
    schema_change.put(location, [change], "after")
    loc = CheckpointLocation(str(ckpt))
    assert [schemas_of_batch(loc, 0, "default", b) for b in range(4)] == \
        [(key, old), (key, old), (key, change.after), (key, change.after)]
    assert [b for b, _ in changed_at(loc, 0, "default", 0)] == [2]
    assert changed_at(loc, 0, "other-store", 0) == []
