"""Property-based fuzzing of every checkpoint parser the offline tools run (hypothesis).

Each parser is fed inputs built around the real thing (the golden fixtures' files, mutated, and
well-formed structures with hostile lengths and names) and must either succeed or refuse with
one of rockstate's errors (``RockstateError``; the row decoder's ``ValueError``, which
``read_state`` turns into one): no other exception, no hang past ``BOUND_SECONDS``, no path
accepted that leaves its folder. CI runs ``ROCKSTATE_FUZZ_EXAMPLES`` (default 150) inputs per
parser; a long run sets it higher:

    ROCKSTATE_FUZZ_EXAMPLES=20000 python -m pytest tests/test_fuzz_parsers.py
"""

from __future__ import annotations

import json
import os
import posixpath
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rockstate.checkpoint import spark_rocksdb, tws
from rockstate.checkpoint.format import (
    changelog_records,
    changes_of,
    parse_snapshot_manifest,
    parse_version_file,
    parse_version_manifest,
    unpack_meta,
)
from rockstate.checkpoint.model import parse_checkpoint_metadata
from rockstate.checkpoint.offsets import entry_confs, entry_lines
from rockstate.checkpoint.paths import local_within, relative_path
from rockstate.checkpoint.state_schema import FamilySchema, parse_family_schemas
from rockstate.encoding.unsaferow import decode_rows
from rockstate.errors import RockstateError
from rockstate.tools.savepoint_manifest import read_savepoint
from support.time_bound import within_seconds

EXAMPLES = int(os.environ.get("ROCKSTATE_FUZZ_EXAMPLES", "150"))
BOUND_SECONDS = 20
FIXTURES = Path(__file__).parent / "fixtures"
STORE = FIXTURES / "transform-with-state" / "spark-4.0" / "checkpoint" / "state" / "0" / "0"
VERSION_FILES = sorted((STORE / "versions").iterdir())
SNAPSHOT = next((STORE / "snapshots").iterdir())
SAVEPOINT = FIXTURES / "savepoint" / "format-1" / "_savepoint.json"
CHECKPOINT = FIXTURES / "transform-with-state" / "spark-4.0" / "checkpoint"
SCHEMA_FILE = next((CHECKPOINT / "state/0/_stateSchema/default").iterdir())
OPERATOR_METADATA = CHECKPOINT / "state/0/_metadata/v2/0"
ESCAPE = "/tmp/rockstate-fuzz-escape"  # an absolute path the fuzzer offers: must stay absent

fuzz = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def refuses_or_reads(parse: Callable[[], object], *allowed: type[BaseException]) -> None:
    """Runs ``parse``: success, or one of rockstate's errors; anything else fails the test."""
    with within_seconds(BOUND_SECONDS):
        try:
            parse()
        except (RockstateError, *allowed):
            pass


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """``original`` with a few bytes flipped, inserted, removed, or cut short."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "int32"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete" and data:
            del data[at:at + draw(st.integers(1, 16))]
        elif kind == "truncate":
            del data[at:]
        elif kind == "int32" and len(data) >= at + 4:
            data[at:at + 4] = struct.pack(">i", draw(st.sampled_from(
                [-1, -2, -(1 << 31), (1 << 31) - 1, 1 << 20, 0, 7])))
    return bytes(data)


def zstd(data: bytes) -> bytes:
    return pa.Codec("zstd").compress(data, asbytes=True)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 40), 1 << 40) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=6)


# JSON no writer of a checkpoint produces: numbers past a double, non-numbers, digits past
# what int() takes, nesting past any writer's (each once inside a document).
PATHOLOGIES = ["1e400", "-1e400", "NaN", "Infinity", "9" * 5000, "[" * 3000 + "]" * 3000,
               '{"a":' * 200 + "1" + "}" * 200, "1e308", "-0", "true", "null", '""']


@st.composite
def mutated_json(draw: st.DrawFn, original: dict) -> bytes:
    """``original`` with fields replaced by arbitrary JSON, removed, paths made hostile, or
    values replaced by JSON pathologies."""
    doc = json.loads(json.dumps(original))
    pathologies: list[str] = []
    hostile_paths = st.sampled_from(["../x", ESCAPE + "/x", "a/../../b", "", "s3a://b/k",
                                     "x\\..\\y", "a//b", "."])

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key in list(node):
                choice = draw(st.integers(0, 9))
                if choice == 0:
                    del node[key]
                elif choice == 1:
                    node[key] = draw(json_values)
                elif choice == 2 and key in ("path", "localName"):
                    node[key] = draw(hostile_paths)
                elif choice == 3:
                    pathologies.append(draw(st.sampled_from(PATHOLOGIES)))
                    node[key] = f"@pathology{len(pathologies) - 1}@"
                else:
                    walk(node[key])
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(doc)
    text = json.dumps(doc)
    for i, raw in enumerate(pathologies):
        text = text.replace(f'"@pathology{i}@"', raw)
    return text.encode()


# Version files and manifests.

@fuzz
@given(st.sampled_from(VERSION_FILES).flatmap(lambda p: mutated(p.read_bytes())))
def test_version_files(data: bytes):
    def parse() -> None:
        m = parse_version_file(data, "versions/1-a.rsv", "fuzzed")
        for _ in changelog_records(changes_of(data, "versions/1-a.rsv", "fuzzed"), "fuzzed"):
            pass
        for ref in m.references():
            relative_path(ref, "checked again")

    refuses_or_reads(parse)


def _header(path: Path) -> dict:
    data = path.read_bytes()
    (n,) = struct.unpack_from(">i", data, 5)
    return json.loads(data[9:9 + n])


@fuzz
@given(st.sampled_from(VERSION_FILES).flatmap(lambda p: mutated_json(_header(p))))
def test_version_manifests(data: bytes):
    def parse() -> None:
        m = parse_version_manifest(data, "fuzzed")
        for ref in m.references():
            relative_path(ref, "checked again")

    refuses_or_reads(parse)


@fuzz
@given(mutated_json(json.loads(SNAPSHOT.read_bytes())))
def test_snapshot_manifests(data: bytes):
    def parse() -> None:
        s = parse_snapshot_manifest(data, "fuzzed")
        for f in s.files:
            relative_path(f.path, "checked again")
            assert "/" not in f.local_name
        s.meta_files("fuzzed")

    refuses_or_reads(parse)


@fuzz
@given(mutated_json(json.loads(SNAPSHOT.read_bytes())))
def test_staging_a_snapshot_writes_only_inside_its_folder(data: bytes):
    from rockstate.checkpoint.location import CheckpointLocation
    from rockstate.checkpoint.rockstate_store_reader import stage_snapshot

    loc = CheckpointLocation(str(CHECKPOINT))
    (store,) = loc.stores()
    with tempfile.TemporaryDirectory(prefix="rockstate-fuzz-") as parent:
        into = Path(parent) / "stage"
        into.mkdir()
        refuses_or_reads(lambda: stage_snapshot(
            loc, store, parse_snapshot_manifest(data, "fuzzed"), "snapshots/x.json", into, 3))
        outside = [p for p in Path(parent).rglob("*") if into != p and into not in p.parents]
        assert not outside, outside
        assert not Path(ESCAPE).exists()


# Meta packs and changelogs: well-formed containers with hostile contents.

names = st.sampled_from([b"CURRENT", b"MANIFEST-000005", b"../x", b"/abs", b".", b"..",
                         b"a/b", b"", b"\xff\xfe", b"OPTIONS-7"])
lengths = st.integers(-(1 << 31), (1 << 31) - 1) | st.integers(-3, 64)


@st.composite
def meta_pack_bodies(draw: st.DrawFn) -> bytes:
    body = struct.pack(">i", draw(st.integers(-2, 6) | st.integers(-(1 << 31), (1 << 31) - 1)))
    for _ in range(draw(st.integers(0, 4))):
        name = draw(names)
        content = draw(st.binary(max_size=32))
        body += struct.pack(">i", draw(st.sampled_from([len(name), len(name)]) | lengths)) + name
        body += struct.pack(">q", draw(st.sampled_from([len(content)]) | lengths)) + content
    return body


@fuzz
@given(meta_pack_bodies(), st.booleans())
def test_meta_packs(body: bytes, compress: bool):
    data = b"RSMP\x01" + (zstd(body) if compress else body)
    refuses_or_reads(lambda: [relative_path(n, "x") for n, _ in unpack_meta(data, "fuzzed")])


@st.composite
def changelog_bodies(draw: st.DrawFn) -> bytes:
    body = b""
    count = 0
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from([1, 2, 3, 4]) | st.integers(0, 255))
        key = draw(st.binary(max_size=12))
        body += bytes([op]) + struct.pack(">i", draw(st.sampled_from([len(key)]) | lengths)) + key
        if op != 3:
            value = draw(st.binary(max_size=12))
            body += struct.pack(">i", draw(st.sampled_from([len(value)]) | lengths)) + value
        count += 1
    if draw(st.booleans()):
        body += b"\x00" + struct.pack(">q", draw(st.sampled_from([count]) | lengths))
    return body


@fuzz
@given(changelog_bodies(), st.sampled_from([0, 1]), st.binary(max_size=4))
def test_changelogs(body: bytes, codec: int, tail: bytes):
    data = b"RSCL\x01" + bytes([codec]) + (zstd(body) if codec else body) + tail
    refuses_or_reads(lambda: list(changelog_records(data, "fuzzed")))


@st.composite
def spark_changelogs(draw: st.DrawFn) -> bytes:
    typed = draw(st.booleans())
    body = (struct.pack(">H", 2) + b"v2") if typed else b""
    for _ in range(draw(st.integers(0, 5))):
        if typed:
            body += bytes([draw(st.sampled_from([0x01, 0x10, 0x11]) | st.integers(0, 255))])
        key = draw(st.binary(max_size=8))
        value = draw(st.binary(max_size=8))
        body += struct.pack(">i", draw(st.sampled_from([len(key)]) | lengths)) + key
        body += struct.pack(">i", draw(st.sampled_from([len(value), -1]) | lengths)) + value
    if draw(st.booleans()):
        body += b"\x00" if typed else struct.pack(">i", -1)
    codec = draw(st.sampled_from(["zstd", "lz4", "raw"]))
    if codec == "zstd":
        return zstd(body)
    if codec == "lz4":  # lz4-java's block stream: one raw-stored block, then the end block
        block = b"LZ4Block" + bytes([0x10]) + struct.pack("<ii", len(body), draw(
            st.sampled_from([len(body)]) | lengths)) + struct.pack("<i", 0) + body
        return block + b"LZ4Block" + bytes([0x10]) + struct.pack("<iii", 0, 0, 0)
    return body


@fuzz
@given(spark_changelogs())
def test_spark_changelogs(data: bytes):
    refuses_or_reads(lambda: spark_rocksdb.apply_changelog({}, data, "fuzzed"))


# Savepoint listings, Spark's logs and metadata, schema files.

@fuzz
@given(mutated_json(json.loads(SAVEPOINT.read_bytes())) | st.binary(max_size=64))
def test_savepoint_listings(data: bytes):
    import fsspec

    fs = fsspec.filesystem("memory")
    root = "/fuzz-savepoint"
    fs.pipe_file(f"{root}/_savepoint.json", data)
    try:
        refuses_or_reads(lambda: [relative_path(f.path, "x")
                                  for f in read_savepoint(f"memory://{root}").files])
    finally:
        fs.rm(root, recursive=True)


@fuzz
@given(mutated(OPERATOR_METADATA.read_bytes()))
def test_operator_metadata(data: bytes):
    import fsspec

    from rockstate.checkpoint.location import CheckpointLocation

    fs = fsspec.filesystem("memory")
    root = "/fuzz-operator"
    fs.pipe_file(f"{root}/state/0/_metadata/v2/0", data)
    try:
        refuses_or_reads(lambda: tws.state_variables(CheckpointLocation(f"memory://{root}"), 0))
    finally:
        fs.rm(root, recursive=True)


@fuzz
@given(mutated((CHECKPOINT / "offsets" / "2").read_bytes()))
def test_offset_log_entries(data: bytes):
    refuses_or_reads(lambda: entry_confs(entry_lines(data, "fuzzed")))


@fuzz
@given(mutated(SCHEMA_FILE.read_bytes()))
def test_state_schema_files(data: bytes):
    refuses_or_reads(lambda: parse_family_schemas(data, "fuzzed"))


@fuzz
@given(mutated(json.dumps({
    "formatVersion": 1, "version": 4, "batchId": 3, "completedAtMs": 1, "stores": []}).encode())
    | st.binary(max_size=48))
def test_completed_checkpoint_metadata(data: bytes):
    refuses_or_reads(lambda: parse_checkpoint_metadata(data, "fuzzed"))


# Row values: UnsafeRows and list state values.

ROW_SCHEMA = {"type": "struct", "fields": [
    {"name": "k", "type": "string", "nullable": True, "metadata": {}},
    {"name": "n", "type": "long", "nullable": True, "metadata": {}},
    {"name": "xs", "type": {"type": "array", "elementType": "integer", "containsNull": True},
     "nullable": True, "metadata": {}},
    {"name": "s", "type": {"type": "struct", "fields": [
        {"name": "b", "type": "binary", "nullable": True, "metadata": {}}]},
     "nullable": True, "metadata": {}}]}


@fuzz
@given(st.lists(st.binary(min_size=0, max_size=96), min_size=1, max_size=4))
def test_unsafe_rows(rows: list[bytes]):
    refuses_or_reads(lambda: decode_rows(rows, ROW_SCHEMA, 1), ValueError)


SPANS_SCHEMA = {"type": "struct", "fields": [
    {"name": "s", "type": "string", "nullable": True, "metadata": {}},
    {"name": "b", "type": "binary", "nullable": True, "metadata": {}}]}


def _span_row(s: str | None, b: bytes | None) -> bytes:
    """An UnsafeRow of (string, binary) after a one-byte prefix, as Spark writes it."""
    bits, slots, tail = 0, [], b""
    for i, value in enumerate((None if s is None else s.encode(), b)):
        if value is None:
            bits |= 1 << i
            slots.append(0)
        else:
            slots.append((8 + 16 + len(tail)) << 32 | len(value))
            tail += value + b"\0" * (-len(value) % 8)
    return b"\1" + struct.pack("<qqq", bits, *slots) + tail


@fuzz
@given(st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=12)),
                          st.one_of(st.none(), st.binary(max_size=80))), min_size=1,
                max_size=40), st.integers(0, 3))
def test_strings_and_binaries_decode_to_what_was_written(values: list[tuple], cut: int):
    """Short spans (gathered a word at a time) and long ones, from bytes and from an Arrow
    array; the array a slice of a longer one, as a reader's may be."""
    rows = [_span_row(s, b) for s, b in values]
    expected = [{"s": s, "b": b} for s, b in values]
    assert decode_rows(rows, SPANS_SCHEMA, 1).to_pylist() == expected
    arrow = pa.array([b"\1" * 40] * cut + rows + [b"\1" * 40] * cut, type=pa.large_binary())
    assert decode_rows(arrow.slice(cut, len(rows)), SPANS_SCHEMA, 1).to_pylist() == expected


def test_strings_decode_across_the_gather_chunks():
    """More rows than one gather chunk (65,536), of varying lengths, some null."""
    values = [(None if i % 97 == 0 else "v" * (i % 13), bytes([i % 251]) * (i % 5))
              for i in range(140_000)]
    decoded = decode_rows([_span_row(s, b) for s, b in values], SPANS_SCHEMA, 1).to_pylist()
    assert decoded == [{"s": s, "b": b} for s, b in values]


@fuzz
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=3), st.binary(max_size=64))
def test_list_state_values(keys: list[bytes], value: bytes):
    family = FamilySchema("items", ROW_SCHEMA, ROW_SCHEMA, {}, None)
    refuses_or_reads(lambda: tws.decode_variable("ListState", family, keys,
                                                 [value] * len(keys), [0] * len(keys)),
                     ValueError)


# The path rule itself: what it accepts stays inside, on paper and on disk.

@fuzz
@given(st.text(alphabet=st.sampled_from(list("ab./\\:~ \x00\n")), max_size=16))
def test_accepted_paths_stay_inside(path: str):
    try:
        relative_path(path, "fuzzed")
    except RockstateError:
        return
    root = "/checkpoint/root"
    joined = posixpath.normpath(posixpath.join(root, path))
    assert joined.startswith(root + "/"), path
    base = Path(tempfile.gettempdir())
    assert Path(os.path.realpath(local_within(base, path, "fuzzed"))).is_relative_to(
        os.path.realpath(base))


def test_the_crc_of_a_fixture_is_what_its_listing_says():
    """The seeds are sound: unmutated, every fixture parses (so mutations start from truth)."""
    listing = json.loads(SAVEPOINT.read_bytes())
    for f in listing["files"]:
        data = (SAVEPOINT.parent / f["path"]).read_bytes()
        assert (len(data), zlib.crc32(data)) == (f["size"], f["crc32"])
    for path in VERSION_FILES:
        parse_version_file(path.read_bytes(), "versions/1-a.rsv", str(path))
    parse_snapshot_manifest(SNAPSHOT.read_bytes(), str(SNAPSHOT)).meta_files("seed")
    parse_family_schemas(SCHEMA_FILE.read_bytes(), str(SCHEMA_FILE))


# Values that steer work, and Spark's snapshot zips.

@fuzz
@given(st.integers(-50, 10**9), st.integers(-10**6, 10**6))
def test_decimal_parameters_in_a_schema(precision: int, scale: int):
    from rockstate.checkpoint.state_schema import checked_types

    schema = {"type": "struct", "fields": [
        {"name": "d", "type": f"decimal({precision},{scale})", "nullable": True}]}
    refuses_or_reads(lambda: checked_types(schema, "fuzzed"))


@fuzz
@given(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                        zipfile.ZIP_LZMA]),
       st.sampled_from([b"", b"v1\n{}", b"v1\n[1]", b"{" * 5000, b"\x00" * (1 << 20)]),
       st.integers(0, 3))
def test_spark_snapshot_zips(method: int, metadata: bytes, cut: int):
    import io

    import fsspec

    from rockstate.checkpoint.location import CheckpointLocation

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as z:
        z.writestr("metadata", metadata)
    data = buffer.getvalue()
    data = data[:len(data) - cut * 7]
    fs = fsspec.filesystem("memory")
    root = "/fuzz-zip"
    fs.pipe_file(f"{root}/state/0/0/1.zip", data)
    try:
        refuses_or_reads(lambda: spark_rocksdb.snapshot_metadata(
            CheckpointLocation(f"memory://{root}"), f"{root}/state/0/0/1.zip"))
    finally:
        fs.rm(root, recursive=True)
