"""rockstate.encoding.avro_row: Spark's Avro state rows, byte by byte (the layout of Spark's
AvroStateEncoder; test_read_state compares whole checkpoints with Spark's own reader)."""

from __future__ import annotations

import decimal
import struct

import pytest

from rockstate.encoding import avro_row
from rockstate.errors import CorruptCheckpointError

LONG = {"type": "struct", "fields": [{"name": "n", "type": "long", "nullable": True}]}


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _row(datum: bytes, schema_id: int | None = 0) -> bytes:
    return b"\x00" + (b"" if schema_id is None else struct.pack("<h", schema_id)) + datum


def test_a_long_value_as_spark_writes_it():
    # ValueState[Long] holding 5: version 0, schema id 0, union branch 1, zigzag(5).
    assert avro_row.decode_rows([bytes.fromhex("0000000" "20a")], LONG).to_pylist() == \
        [{"n": 5}]
    assert avro_row.decode_rows([_row(b"\x00")], LONG).to_pylist() == [{"n": None}]
    big = -(1 << 62) - 3
    assert avro_row.decode_rows([_row(b"\x02" + _zigzag(big))], LONG).to_pylist() == \
        [{"n": big}]


def test_every_type_decodes():
    schema = {"type": "struct", "fields": [
        {"name": "ok", "type": "boolean"}, {"name": "i", "type": "integer"},
        {"name": "f", "type": "float"}, {"name": "d", "type": "double"},
        {"name": "s", "type": "string"}, {"name": "b", "type": "binary"},
        {"name": "dec", "type": "decimal(12,3)"}, {"name": "dt", "type": "date"},
        {"name": "ts", "type": "timestamp"}, {"name": "none", "type": "null"},
        {"name": "arr", "type": {"type": "array", "elementType": "integer",
                                 "containsNull": False}},
        {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": "long",
                               "valueContainsNull": True}},
        {"name": "st", "type": {"type": "struct", "fields": [
            {"name": "a", "type": "integer"}]}},
        {"name": "sts", "type": {"type": "array", "containsNull": True, "elementType": {
            "type": "struct", "fields": [{"name": "a", "type": "integer"}]}}},
    ]}
    # decimal(12,3) takes 6 bytes (2^47 >= 10^12); -1234.567 is unscaled -1234567
    datum = b"".join([
        b"\x02\x01", b"\x02" + _zigzag(-7), b"\x02" + struct.pack("<f", 1.5),
        b"\x02" + struct.pack("<d", -2.25), b"\x02" + _zigzag(3) + "é!".encode(),
        b"\x02" + _zigzag(2) + b"\x00\xff", b"\x02" + (-1234567).to_bytes(6, "big", signed=True),
        b"\x02" + _zigzag(20000), b"\x02" + _zigzag(1_700_000_000_000_000),
        b"",  # a null field takes no bytes
        b"\x02" + _zigzag(2) + _zigzag(4) + _zigzag(-1) + b"\x00",
        b"\x02" + _zigzag(1) + _zigzag(1) + b"k" + _zigzag(9) + b"\x00",
        b"\x02" + b"\x02" + _zigzag(11),
        # an array of structs: its elements are ["null", record]
        b"\x02" + _zigzag(2) + b"\x00" + b"\x02\x02" + _zigzag(4) + b"\x00",
    ])
    (row,) = avro_row.decode_rows([_row(datum)], schema).to_pylist()
    assert row["ok"] is True and row["i"] == -7 and row["f"] == 1.5 and row["d"] == -2.25
    assert row["s"] == "é!" and row["b"] == b"\x00\xff"
    assert row["dec"] == decimal.Decimal("-1234.567")
    assert row["dt"].isoformat() == "2024-10-04"
    assert row["ts"].timestamp() == 1_700_000_000
    assert row["none"] is None and row["arr"] == [4, -1] and row["m"] == [("k", 9)]
    assert row["st"] == {"a": 11} and row["sts"] == [None, {"a": 4}]


def test_a_row_is_read_with_its_own_schema_and_resolved_by_name():
    old = {"type": "struct", "fields": [{"name": "a", "type": "integer"},
                                        {"name": "b", "type": "string"}]}
    new = {"type": "struct", "fields": [{"name": "b", "type": "string"},
                                        {"name": "a", "type": "long"},
                                        {"name": "c", "type": "string"}]}
    rows = [_row(b"\x02" + _zigzag(1) + b"\x02" + _zigzag(1) + b"x", 0),
            _row(b"\x02" + _zigzag(1) + b"y" + b"\x02" + _zigzag(2) + b"\x00", 1)]
    got = avro_row.decode_rows(rows, new, writers={0: old, 1: new}).to_pylist()
    assert got == [{"b": "x", "a": 1, "c": None}, {"b": "y", "a": 2, "c": None}]
    with pytest.raises(CorruptCheckpointError, match="schema id 7 is in no state schema"):
        avro_row.decode_rows([_row(b"\x00", 7)], new, writers={0: old, 1: new})


def test_a_key_prefix_has_no_schema_id():
    assert avro_row.decode_rows([_row(b"\x02" + _zigzag(3), None)], LONG,
                                schema_id=False).to_pylist() == [{"n": 3}]


@pytest.mark.parametrize(("row", "why"), [
    (b"", "run past"),
    (b"\x01\x00\x00\x02\x0a", "encoding version is 1"),
    (_row(b"\x04\x0a"), "union branch 2"),
    (_row(b"\x02"), "runs past"),
    (_row(b"\x02\x0a\x00"), "1 bytes follow"),
    (_row(b"\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), "longer than 10 bytes"),
])
def test_damage_is_an_error_naming_it(row: bytes, why: str):
    with pytest.raises(CorruptCheckpointError, match=why):
        avro_row.decode_rows([row], LONG)


def test_a_block_count_past_the_row_is_damage():
    arr = {"type": "struct", "fields": [{"name": "a", "type": {
        "type": "array", "elementType": "integer", "containsNull": False}}]}
    with pytest.raises(CorruptCheckpointError, match="cannot fit"):
        avro_row.decode_rows([_row(b"\x02" + _zigzag(1 << 40))], arr)
