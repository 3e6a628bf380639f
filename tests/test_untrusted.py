"""Checkpoints and savepoints as data from elsewhere (docs/guarantees.md, "Trust model").

Each test takes a copy of a golden fixture, alters it as an attacker or a damaged backup would,
and runs the offline tools on it (no Spark): every path read from a file stays inside the folder
it belongs to, every length is bounded, a savepoint is checked against the stores' own
manifests, restore and savepoint publish in one exclusive step, and the CLI answers bad input
with one line and a non-zero exit. The hostile decoder inputs and the path rule are shared with
the JVM suite (``UntrustedInputSuite``) through ``tests/fixtures/untrusted``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

import rockstate
from rockstate.checkpoint import spark_rocksdb
from rockstate.checkpoint.format import (
    changelog_records,
    changes_of,
    parse_version_file,
    unpack_meta,
    version_header_length,
)
from rockstate.checkpoint.location import DEFAULT_STORE, CheckpointLocation, StoreRef
from rockstate.checkpoint.paths import relative_path
from rockstate.checkpoint.spark_rocksdb_reader import SparkRocksDBReader
from rockstate.cli import main as cli_main
from rockstate.encoding import decompress
from rockstate.errors import CorruptCheckpointError, RockstateError
from rockstate.session.providers import SPARK_HDFS_CLASS
from rockstate.tools.savepoint_check import check_savepoint
from rockstate.tools.savepoint_manifest import SAVEPOINT_FILE
from rockstate.tools.staged_target import StagedTarget
from support.cli import run_cli
from support.time_bound import within_seconds

FIXTURES = Path(__file__).parent / "fixtures"
UNTRUSTED = FIXTURES / "untrusted"
RULES = json.loads((UNTRUSTED / "rules.json").read_text())
CASES = json.loads((UNTRUSTED / "cases.json").read_text())["cases"]
CHECKPOINT = FIXTURES / "transform-with-state" / "spark-4.0" / "checkpoint"
STORE = "state/0/0"
DECODE_SECONDS = 30  # far above what any case takes; a hang fails instead of stalling CI


def decode(kind: str, data: bytes, where: str) -> None:
    """Feeds ``data`` to the Python decoder of ``kind`` (as cases.json names kinds)."""
    if kind == "metaPack":
        unpack_meta(data, where)
    elif kind == "changelog":
        for _ in changelog_records(data, where):
            pass
    elif kind == "versionFile":
        path = "versions/1-a.rsv"
        parse_version_file(data, path, where)
        for _ in changelog_records(changes_of(data, path, where), where):
            pass
    elif kind == "sparkChangelog":
        spark_rocksdb.apply_changelog({}, data, where)
    else:
        raise AssertionError(f"cases.json names a kind this suite does not know: {kind}")


def checkpoint_copy(tmp_path: Path) -> Path:
    ckpt = tmp_path / "in" / "checkpoint"
    shutil.copytree(CHECKPOINT, ckpt)
    return ckpt


def snapshot_manifest(ckpt: Path) -> Path:
    (path,) = (ckpt / STORE / "snapshots").iterdir()
    return path


def edit_json(path: Path, change: Callable[[dict], None]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def relist(savepoint: Path, relative: str) -> None:
    """Rewrites a savepoint's listing of ``relative`` to match the file as it now is (what an
    attacker who alters a file does, so the listing checks only itself): its SHA-256 (format
    2) or CRC32 (format 1)."""
    data = (savepoint / relative).read_bytes()

    def change(doc: dict) -> None:
        for f in doc["files"]:
            if f["path"] == relative:
                f["size"] = len(data)
                if "sha256" in f:
                    f["sha256"] = hashlib.sha256(data).hexdigest()
                else:
                    f["crc32"] = zlib.crc32(data)

    edit_json(savepoint / SAVEPOINT_FILE, change)


def everything_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


# The rules both sides share.

def test_the_path_rule_is_the_shared_one():
    for path in RULES["paths"]["accepted"]:
        assert relative_path(path, "test") == path
    for path in RULES["paths"]["refused"]:
        with pytest.raises(CorruptCheckpointError, match="untrusted source"):
            relative_path(path, "test")


def test_the_decompression_bound_is_the_shared_one():
    assert RULES["maxDecompressionRatio"] == decompress.MAX_RATIO
    assert RULES["minDecompressionLimitBytes"] == decompress.MIN_LIMIT_BYTES
    assert RULES["maxDecompressedBytes"] == decompress.MAX_BYTES


# In a child whose address space is capped at 3 GB: 1 MB of zstd that does not compress may
# expand to 4 GB by the bound, and must be read without asking for all of that (a 64M-key
# load's 12 MB changelog, bound 50 GB, failed with MemoryError); 40 MB of zeros come back
# whole across the reader's chunks.
_BOUNDED_CHILD = """
import os, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
import pyarrow as pa
from rockstate.encoding import decompress
for raw in (os.urandom(1 << 20), bytes(40 << 20)):
    data = pa.Codec("zstd").compress(raw, asbytes=True)
    assert decompress.limit_for(len(data)) >= 64 << 20
    assert decompress.zstd(data, "a test changelog") == raw, len(raw)
print("ok")
"""


def test_a_large_file_decompresses_without_reserving_its_whole_bound():
    done = subprocess.run([sys.executable, "-c", _BOUNDED_CHILD], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.stdout.strip() == "ok", done.stderr[-3000:]


def test_every_case_has_its_file():
    assert sorted(c["file"] for c in CASES) == sorted(p.name for p in UNTRUSTED.glob("*.bin"))


@pytest.mark.parametrize("case", [c for c in CASES if "python" in c["readers"]],
                         ids=lambda c: c["file"])
def test_every_hostile_input_is_refused(case: dict):
    data = (UNTRUSTED / case["file"]).read_bytes()
    with within_seconds(DECODE_SECONDS), pytest.raises(CorruptCheckpointError):
        decode(case["kind"], data, case["file"])


# Paths from manifests, savepoint listings, zips and operator metadata.

def test_restore_writes_nothing_outside_its_target(tmp_path: Path):
    rockstate.savepoint(str(CHECKPOINT), str(tmp_path / "sp"))
    (tmp_path / ".bashrc").write_text("echo pwned\n")  # beside the savepoint: ../.bashrc
    for bad in ("../.bashrc", str(tmp_path / ".bashrc")):
        def add(doc: dict, bad: str = bad) -> None:
            doc["files"].append({"path": bad, "size": 11, "crc32": zlib.crc32(b"echo pwned\n")})

        sp = tmp_path / f"sp-{len(bad)}"
        shutil.copytree(tmp_path / "sp", sp)
        edit_json(sp / SAVEPOINT_FILE, add)
        out = tmp_path / "out" / "deeper"
        before = everything_under(tmp_path)
        with pytest.raises(CorruptCheckpointError, match="untrusted source"):
            rockstate.restore(str(sp), str(out / "restored"))
        with pytest.raises(CorruptCheckpointError, match="untrusted source"):
            rockstate.verify(str(sp))
        assert everything_under(tmp_path) - before <= {tmp_path / "out", out}
        assert not (out / "restored").exists()


def test_read_stages_no_file_outside_its_temp_dir(tmp_path: Path):
    victim = tmp_path / "pwned"
    for local_name in (str(victim), "../../pwned", "sub/../../pwned"):
        ckpt = tmp_path / f"c{len(local_name)}"
        shutil.copytree(CHECKPOINT, ckpt)
        edit_json(snapshot_manifest(ckpt),
                  lambda doc, n=local_name: doc["files"][0].update(localName=n))
        with pytest.raises(CorruptCheckpointError, match="localName"):
            rockstate.read_state(str(ckpt), state_var="total")
        assert not victim.exists()


def spark_partition(tmp_path: Path, local_name: str) -> Path:
    """A partition of Spark's RocksDB provider whose snapshot 1.zip lists one SST under
    ``local_name``."""
    part = tmp_path / "spark" / "state" / "0" / "0"
    (part / "SSTs").mkdir(parents=True)
    (part / "SSTs" / "000001-x.sst").write_bytes(b"not really an sst")
    metadata = {"sstFiles": [{"localFileName": local_name, "dfsSstFileName": "000001-x.sst",
                              "sizeBytes": 17}], "numKeys": 1}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("metadata", "v1\n" + json.dumps(metadata))
        z.writestr("CURRENT", "MANIFEST-000001\n")
    (part / "1.zip").write_bytes(buf.getvalue())
    return part


def spark_reader(loc: CheckpointLocation, part: Path) -> SparkRocksDBReader:
    """The reader of ``part``, partition 0 of operator 0 of Spark's RocksDB provider."""
    return SparkRocksDBReader(loc, StoreRef(0, 0, DEFAULT_STORE, str(part)))


def test_spark_snapshot_local_file_names_are_contained(tmp_path: Path):
    victim = tmp_path / "pwned.sst"
    for name in (str(victim), "../../../pwned.sst"):
        part = spark_partition(tmp_path / str(len(name)), name)
        loc = CheckpointLocation(str(part.parents[2]))
        with pytest.raises(CorruptCheckpointError, match="untrusted source"):
            spark_reader(loc, part).entries(1)
        assert not victim.exists()


def test_a_spark_snapshot_zip_member_cannot_climb_out(tmp_path: Path):
    part = spark_partition(tmp_path, "000001.sst")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("metadata", "v1\n{}")
        z.writestr("../../../../zip-pwned", "x")
    (part / "1.zip").write_bytes(buf.getvalue())
    with pytest.raises(CorruptCheckpointError, match="untrusted source"):
        spark_reader(CheckpointLocation(str(part.parents[2])), part).entries(1)
    assert not list(tmp_path.parent.glob("**/zip-pwned"))


def test_export_refuses_a_state_variable_name_that_climbs_out(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    meta = ckpt / "state/0/_metadata/v2/0"
    head, body = meta.read_text().split("\n", 1)
    doc = json.loads(body)
    props = json.loads(doc["operatorPropertiesJson"])
    props["stateVariables"][0]["stateName"] = "x/../../../../escaped"
    doc["operatorPropertiesJson"] = json.dumps(props)
    meta.write_text(head + "\n" + json.dumps(doc))
    dest = tmp_path / "out" / "a" / "b" / "export"
    (tmp_path / "escaped").mkdir()
    (tmp_path / "escaped" / "keep.txt").write_text("keep me")
    before = everything_under(tmp_path)
    with pytest.raises(CorruptCheckpointError, match="state variables"):
        rockstate.export(str(ckpt), str(dest))
    assert (tmp_path / "escaped" / "keep.txt").read_text() == "keep me"
    assert not [p for p in everything_under(tmp_path) - before if dest not in p.parents]


def test_savepoint_copies_no_path_a_manifest_points_out_with(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    secret = tmp_path / "db-password.txt"
    secret.write_text("hunter2")
    edit_json(snapshot_manifest(ckpt), lambda doc: doc["files"].append({
        "localName": "000099.sst", "path": "../../../../db-password.txt", "size": 7,
        "crc32": zlib.crc32(b"hunter2"), "kind": "sst"}))
    with pytest.raises(CorruptCheckpointError, match="untrusted source"):
        rockstate.savepoint(str(ckpt), str(tmp_path / "sp"))
    assert not (tmp_path / "sp").exists()
    assert not list(tmp_path.glob(".sp.rockstate-*"))  # the staging folder is gone too


def test_a_symlink_in_a_checkpoint_is_not_followed(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    secret = tmp_path / "secret"
    secret.write_text("hunter2")
    (ckpt / "sources" / "0" / "0").unlink()
    (ckpt / "sources" / "0" / "0").symlink_to(secret)
    with pytest.raises(CorruptCheckpointError, match="symbolic link"):
        rockstate.savepoint(str(ckpt), str(tmp_path / "sp"))
    assert not (tmp_path / "sp").exists()


# A savepoint is checked against the stores' own manifests.

def flip_sst_byte(store: Path) -> str:
    (sst,) = (store / "sst").iterdir()
    data = bytearray(sst.read_bytes())
    data[len(data) // 2] ^= 0x01
    sst.write_bytes(bytes(data))
    return sst.name


def test_a_damaged_source_fails_the_savepoint(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    name = flip_sst_byte(ckpt / STORE)
    with pytest.raises(CorruptCheckpointError, match=name):
        rockstate.savepoint(str(ckpt), str(tmp_path / "sp"))
    assert not (tmp_path / "sp").exists()


def test_a_listing_rewritten_to_match_damage_is_caught(tmp_path: Path):
    rockstate.savepoint(str(CHECKPOINT), str(tmp_path / "sp"))
    name = flip_sst_byte(tmp_path / "sp" / STORE)
    relist(tmp_path / "sp", f"{STORE}/sst/{name}")
    problems = check_savepoint(str(tmp_path / "sp"))
    assert len(problems) == 1 and name in problems[0] and "manifest records" in problems[0]
    assert not rockstate.verify(str(tmp_path / "sp")).ok
    with pytest.raises(CorruptCheckpointError, match=name):
        rockstate.restore(str(tmp_path / "sp"), str(tmp_path / "restored"))
    assert not (tmp_path / "restored").exists()


def test_a_snapshot_without_its_meta_pack_is_damage(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    edit_json(snapshot_manifest(ckpt), lambda doc: doc.update(metaPack=None))
    report = rockstate.verify(str(ckpt))
    assert not report.ok and any("meta pack" in p.what for p in report.problems)
    with pytest.raises(CorruptCheckpointError, match="meta pack"):
        rockstate.read_state(str(ckpt), state_var="total")


def test_a_snapshot_whose_file_list_lacks_an_sst_is_damage(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    edit_json(snapshot_manifest(ckpt), lambda doc: doc.update(files=[]))
    report = rockstate.verify(str(ckpt))
    assert not report.ok
    assert any("000008.sst" in p.what and "RocksDB cannot open" in p.what
               for p in report.problems), report.problems
    with pytest.raises(CorruptCheckpointError, match="RocksDB cannot open"):
        rockstate.read_state(str(ckpt), state_var="total")


def test_a_missing_partition_folder_is_damage(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    # The query ran on two partitions; the second one's folder is gone.
    for entry in (ckpt / "offsets").iterdir():
        head, meta, *rest = entry.read_text().split("\n")
        doc = json.loads(meta)
        doc["conf"]["spark.sql.shuffle.partitions"] = "2"
        entry.write_text("\n".join([head, json.dumps(doc), *rest]))
    with pytest.raises(CorruptCheckpointError, match=r"partitions \[1\] is missing"):
        rockstate.read_state(str(ckpt), state_var="total")


# Restore: relocation, and one exclusive publish.

def test_restore_relocates_schema_paths_of_a_checkpoint_under_a_state_folder(tmp_path: Path):
    rockstate.savepoint(str(CHECKPOINT), str(tmp_path / "sp"))
    meta = "state/0/_metadata/v2/0"
    head, body = (tmp_path / "sp" / meta).read_text().split("\n", 1)
    doc = json.loads(body)
    (recorded,) = doc["stateStoreInfo"][0]["stateSchemaFilePaths"]
    tail = recorded[recorded.index("/state/0/_stateSchema/"):]
    doc["stateStoreInfo"][0]["stateSchemaFilePaths"] = [f"file:/var/lib/state/orders{tail}"]
    (tmp_path / "sp" / meta).write_text(head + "\n" + json.dumps(doc))
    relist(tmp_path / "sp", meta)
    restored = tmp_path / "restored"
    rockstate.restore(str(tmp_path / "sp"), str(restored))
    (schema,) = json.loads((restored / meta).read_text().split("\n", 1)[1])[
        "stateStoreInfo"][0]["stateSchemaFilePaths"]
    assert schema == f"file:{restored}{tail}"
    assert Path(schema[len("file:"):]).is_file()


def test_two_restores_into_one_target_never_merge(tmp_path: Path, monkeypatch):
    rockstate.savepoint(str(CHECKPOINT), str(tmp_path / "sp"))
    shutil.copytree(tmp_path / "sp", tmp_path / "sp2")
    both_staged = threading.Barrier(2, timeout=60)
    write = StagedTarget.write
    waited: set[int] = set()

    def write_after_both_started(self: StagedTarget, relative: str, data: bytes) -> None:
        if threading.get_ident() not in waited:
            waited.add(threading.get_ident())
            both_staged.wait()  # both passed the "target is new" check and are copying
        write(self, relative, data)

    monkeypatch.setattr(StagedTarget, "write", write_after_both_started)
    target = tmp_path / "restored"
    outcomes: list[object] = []

    def run(source: str) -> None:
        try:
            outcomes.append(rockstate.restore(source, str(target)))
        except RockstateError as e:
            outcomes.append(e)

    threads = [threading.Thread(target=run, args=(str(tmp_path / s),)) for s in ("sp", "sp2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [o for o in outcomes if isinstance(o, RockstateError)]
    assert len(outcomes) == 2 and len(errors) == 1, outcomes
    assert "written by another restore" in str(errors[0])
    monkeypatch.undo()
    assert {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()} == \
        {f.path for f in rockstate.read_savepoint(str(tmp_path / "sp")).files}
    assert not list(tmp_path.glob(".restored.rockstate-*"))
    assert rockstate.read_state(str(target), state_var="total").num_rows > 0


CHILD = """
import sys, time
from rockstate.tools.staged_target import StagedTarget
write = StagedTarget.write
def slow(self, relative, data):
    write(self, relative, data)
    print("wrote", relative, flush=True)
    time.sleep(60)
StagedTarget.write = slow
import rockstate
rockstate.restore(sys.argv[1], sys.argv[2])
"""


def test_a_killed_restore_leaves_no_target_and_is_retried_cleanly(tmp_path: Path):
    rockstate.savepoint(str(CHECKPOINT), str(tmp_path / "sp"))
    target = tmp_path / "restored"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "sp"), str(target)],
                             stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert child.stdout is not None and child.stdout.readline().startswith("wrote")
    finally:
        child.kill()  # SIGKILL: no cleanup runs
        child.wait()
    assert not target.exists()
    assert len(list(tmp_path.glob(".restored.rockstate-*.staging"))) == 1
    rockstate.restore(str(tmp_path / "sp"), str(target))
    assert rockstate.read_state(str(target), state_var="total").num_rows > 0
    assert not list(tmp_path.glob(".restored.rockstate-*"))  # the dead one's staging is gone


def test_an_interrupted_restore_into_an_object_store_resumes(tmp_path: Path, monkeypatch):
    import fsspec

    rockstate.savepoint(str(CHECKPOINT), str(tmp_path / "sp"))
    target = "memory://untrusted-test/restored"
    write = StagedTarget.write
    calls = {"n": 0}

    def fail_midway(self: StagedTarget, relative: str, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == 4:
            raise ConnectionError("the network went away")
        write(self, relative, data)

    monkeypatch.setattr(StagedTarget, "write", fail_midway)
    with pytest.raises(ConnectionError):
        rockstate.restore(str(tmp_path / "sp"), target)
    monkeypatch.undo()
    fs = fsspec.filesystem("memory")
    assert fs.exists("/untrusted-test/restored/_rockstate_claim.json")
    assert not fs.exists("/untrusted-test/restored/metadata")  # Spark would read it as new
    shutil.copytree(tmp_path / "sp", tmp_path / "other")
    with pytest.raises(RockstateError, match="claim"):  # another savepoint may not merge in
        rockstate.restore(str(tmp_path / "other"), target)
    rockstate.restore(str(tmp_path / "sp"), target)  # the same one resumes
    assert not fs.exists("/untrusted-test/restored/_rockstate_claim.json")
    assert rockstate.read_state(target, state_var="total").num_rows > 0
    fs.rm("/untrusted-test", recursive=True)


def test_a_copy_claimed_meanwhile_on_s3_writes_nothing(tmp_path: Path, s3, monkeypatch):
    """Two copies into one bucket target, the second claiming it between the first's check
    and its claim: the claim is a PUT with If-None-Match, so the first stops, its claim not
    written over the other's, and nothing of it in the target."""
    import fsspec

    rockstate.savepoint(str(CHECKPOINT), str(tmp_path / "sp"))
    target = s3.url("claimed/restored", scheme="s3")
    fs = fsspec.filesystem("s3", **s3.storage_options())
    theirs = {"source": "another savepoint", "id": "theirs"}
    refuse = StagedTarget._refuse_existing

    def other_copy_claims_now(self: StagedTarget) -> None:
        refuse(self)  # the target is empty: this copy goes on...
        fs.pipe_file(f"{s3.bucket}/claimed/restored/_rockstate_claim.json",
                     json.dumps(theirs).encode())  # ...and another claims it at that moment

    monkeypatch.setattr(StagedTarget, "_refuse_existing", other_copy_claims_now)
    with pytest.raises(RockstateError, match=r"claimed .* while this one started"):
        rockstate.restore(str(tmp_path / "sp"), target, target_options=s3.storage_options())
    monkeypatch.undo()
    assert fs.ls(f"{s3.bucket}/claimed/restored") == [
        f"{s3.bucket}/claimed/restored/_rockstate_claim.json"]
    assert json.loads(fs.cat(f"{s3.bucket}/claimed/restored/_rockstate_claim.json")) == theirs


# The CLI: one line and a non-zero exit on bad input.

def cli(*args: str) -> tuple[int, str, str]:
    done = run_cli(*args, timeout=120)
    return done.returncode, done.stdout, done.stderr


def error_lines(err: str) -> list[str]:
    """What the CLI said on stderr, without its progress lines."""
    return [line for line in err.splitlines() if line.startswith("rockstate ")]


def assert_one_line_error(code: int, err: str, *expected: str) -> None:
    assert code != 0
    assert "Traceback" not in err and len(error_lines(err)) == 1, err
    for text in expected:
        assert text in error_lines(err)[0], err


def test_the_cli_says_one_line_about_a_location_with_nothing_to_show(tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for command in (["inspect", str(empty)], ["export", str(empty), str(tmp_path / "x")],
                    ["report", str(empty), "-o", str(tmp_path / "r.html")],
                    ["read", str(empty)], ["verify", str(empty)]):
        code, _, err = cli(*command)
        assert_one_line_error(code, err, "no stateful operator")
    assert not (tmp_path / "x").exists() and not (tmp_path / "r.html").exists()
    code, _, err = cli("inspect", str(tmp_path / "nowhere"))
    assert_one_line_error(code, err, "not a directory")


def test_the_cli_takes_storage_options_and_refuses_malformed_ones(tmp_path: Path):
    import fsspec

    # A memory:// location lives in one process: the CLI runs in this one.
    fs = fsspec.filesystem("memory")
    fs.put(str(CHECKPOINT), "/cli-options/ckpt", recursive=True)
    try:
        url = "memory:///cli-options/ckpt"
        assert cli_main(["verify", url, "--storage-option", "skip_instance_cache=true"]) == 0
        assert cli_main(["inspect", url, "--storage-option", "no-equals-sign"]) == 2
        dest = "memory:///cli-options/export"
        assert cli_main(["export", url, dest, "--target-option", "auto_mkdir=true"]) == 0
        assert fs.find("/cli-options/export")
    finally:
        fs.rm("/cli-options", recursive=True)


def test_the_cli_names_another_providers_checkpoint(tmp_path: Path):
    ckpt = tmp_path / "hdfs"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "state" / "0" / "0").mkdir(parents=True)
    (ckpt / "state" / "0" / "0" / "1.delta").write_bytes(b"\x00" * 8)
    provider = SPARK_HDFS_CLASS
    (ckpt / "offsets" / "0").write_text(
        "v1\n" + json.dumps({"conf": {"spark.sql.streaming.stateStore.providerClass": provider}})
        + "\n")
    for command in ("inspect", "report"):
        code, _, err = cli(command, str(ckpt))
        assert_one_line_error(code, err, "HDFSBackedStateStoreProvider")


def test_the_cli_answers_damaged_files_in_one_line(tmp_path: Path):
    rockstate.savepoint(str(CHECKPOINT), str(tmp_path / "sp"))
    (tmp_path / "sp" / SAVEPOINT_FILE).write_text('{"files": [')
    code, _, err = cli("restore", str(tmp_path / "sp"), str(tmp_path / "r"))
    assert_one_line_error(code, err, SAVEPOINT_FILE, "damaged")
    (tmp_path / "sp" / SAVEPOINT_FILE).write_text('["not", "an", "object"]')
    code, _, err = cli("inspect", str(tmp_path / "sp"))
    assert_one_line_error(code, err, SAVEPOINT_FILE, "damaged")

    ckpt = checkpoint_copy(tmp_path)
    (ckpt / "commits" / "2").write_text("v1\nnot json\n")
    (ckpt / "state/0/_stateSchema/default/stray.txt").write_text("left by hand")
    version_dir = ckpt / STORE / "versions" / "9-0000.rsv"
    version_dir.mkdir()
    for command in (["inspect", str(ckpt)], ["read", str(ckpt), "--state-var", "total"],
                    ["savepoint", str(ckpt), str(tmp_path / "sp2")]):
        code, _out, err = cli(*command)
        assert "Traceback" not in err and "unexpected" not in err, (command, err)
        if code != 0:
            assert_one_line_error(code, err)


# A savepoint that lost state, or whose files were changed with their checksums recomputed.

def drop_from_savepoint(savepoint: Path, folder: str) -> None:
    """Deletes ``folder`` from a savepoint and its files from the listing: what is left still
    checks against its own listing."""
    shutil.rmtree(savepoint / folder)
    edit_json(savepoint / SAVEPOINT_FILE, lambda doc: doc.update(files=[
        f for f in doc["files"] if not f["path"].startswith(folder + "/")]))


def assert_lost_state_is_refused(savepoint: Path, folders: list[str], *expected: str) -> None:
    """check_savepoint and verify name each folder as missing state, and restore publishes
    nothing."""
    problems = check_savepoint(str(savepoint))
    assert [p.split(": ", 1)[0] for p in problems] == folders, problems
    assert all(": missing: " in p and all(t in p for t in expected) for p in problems), problems
    report = rockstate.verify(str(savepoint))
    assert not report.ok and [p.path for p in report.problems] == folders
    target = savepoint.parent / "restored"
    with pytest.raises(CorruptCheckpointError, match="lost state"):
        rockstate.restore(str(savepoint), str(target))
    assert not target.exists() and not list(savepoint.parent.glob(".restored.rockstate-*"))


def test_a_savepoint_that_lost_a_partitions_state_is_damage(tmp_path: Path):
    rockstate.savepoint(str(CHECKPOINT), str(tmp_path / "sp"))
    drop_from_savepoint(tmp_path / "sp", STORE)
    # The offset log of batch 2 records 1 partition, the operator metadata the store.
    assert_lost_state_is_refused(tmp_path / "sp", [STORE], "operator 0 partition 0 store default",
                                 "offsets/2", "state/0/_metadata/v2/0")
    code, out, err = cli("verify", str(tmp_path / "sp"))
    assert code == 1 and f"PROBLEM savepoint of batch 2: {STORE}: missing" in out, (out, err)


JOIN_STORES = ("left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues",
               "right-keyWithIndexToValue")


def join_checkpoint(root: Path, provider: str) -> Path:
    """A stream-stream join's checkpoint after batch 1 on Spark's own ``provider``: 2
    partitions with four stores each, ``state/0/<partition>/<store>/`` holding versions 1 and
    2 (their contents are never parsed by a savepoint)."""
    ckpt = root / f"join-{provider}"
    (ckpt / "offsets").mkdir(parents=True)
    (ckpt / "commits").mkdir()
    (ckpt / "metadata").write_text('{"id":"0b6b7c2e-4a39-4d4c-9a8f-2d2f8e0c6a11"}\n')
    for batch in (0, 1):
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": 0,
                "conf": {"spark.sql.shuffle.partitions": "2"}}
        (ckpt / "offsets" / str(batch)).write_text(f"v1\n{json.dumps(meta)}\n{batch}")
        (ckpt / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    (ckpt / "state/0/_metadata").mkdir(parents=True)
    (ckpt / "state/0/_metadata/metadata").write_text("v1\n" + json.dumps({
        "operatorInfo": {"operatorId": 0, "operatorName": "symmetricHashJoin"},
        "stateStoreInfo": [{"storeName": n, "numColsPrefixKey": 0, "numPartitions": 2}
                           for n in JOIN_STORES]}))
    suffixes = (".delta",) if provider == "hdfs" else (".zip", ".changelog")
    for part in (0, 1):
        for name in JOIN_STORES:
            store = ckpt / "state/0" / str(part) / name
            store.mkdir(parents=True)
            for version in (1, 2):
                for suffix in suffixes:
                    (store / f"{version}{suffix}").write_bytes(f"{name} {version}".encode())
    return ckpt


@pytest.mark.parametrize("provider", ["hdfs", "rocksdb"])
def test_a_savepoint_that_lost_one_store_of_a_join_is_damage(tmp_path: Path, provider: str):
    ckpt = join_checkpoint(tmp_path / "in", provider)
    rockstate.savepoint(str(ckpt), str(tmp_path / "sp"))
    assert check_savepoint(str(tmp_path / "sp")) == []
    shutil.copytree(tmp_path / "sp", tmp_path / "whole" / "sp")
    lost = "state/0/1/right-keyWithIndexToValue"
    drop_from_savepoint(tmp_path / "sp", lost)
    assert_lost_state_is_refused(
        tmp_path / "sp", [lost], "store right-keyWithIndexToValue has no state version 2",
        "ran on 2 partitions (offsets/1)", "state/0/_metadata/metadata names store")
    # A whole partition: each of its four stores.
    drop_from_savepoint(tmp_path / "whole" / "sp", "state/0/1")
    assert_lost_state_is_refused(tmp_path / "whole" / "sp",
                                 [f"state/0/1/{name}" for name in JOIN_STORES])


def test_a_savepoint_of_a_stateless_query_stays_valid(tmp_path: Path):
    ckpt = join_checkpoint(tmp_path / "in", "hdfs")
    shutil.rmtree(ckpt / "state")
    sp = rockstate.savepoint(str(ckpt), str(tmp_path / "sp"))
    assert check_savepoint(str(tmp_path / "sp"), expect_digest=sp.digest) == []
    assert rockstate.verify(str(tmp_path / "sp"), expect_digest=sp.digest).ok
    rockstate.restore(str(tmp_path / "sp"), str(tmp_path / "restored"), expect_digest=sp.digest)
    assert (tmp_path / "restored" / "offsets" / "1").is_file()


def change_a_total(version_file: Path, old: int, new: int) -> None:
    """Changes the value one ValueState (a long) is set to in a version file's changelog and
    recomputes the file's CRC32 trailer: a whole, valid file with other state, as an attacker
    writes it."""
    data = version_file.read_bytes()
    start = version_header_length(data, str(version_file))
    changelog = data[start:-8]
    assert changelog[:6] == b"RSCL\x01\x01"  # format 1, zstd
    body = decompress.zstd(changelog[6:], str(version_file))
    # A value: its encoding version byte, then an UnsafeRow (null bits, the long).
    before, after = (bytes(9) + struct.pack("<q", n) for n in (old, new))
    assert body.count(before) == 1
    head = data[:start] + b"RSCL\x01\x00" + body.replace(before, after)  # stored plain
    version_file.write_bytes(head + struct.pack(">I", zlib.crc32(head)) + b"RSVE")


def test_a_version_file_changed_with_its_crc32_is_caught_by_sha256_or_the_digest(
        tmp_path: Path):
    sp = rockstate.savepoint(str(CHECKPOINT), str(tmp_path / "sp"))
    (version,) = (tmp_path / "sp" / STORE / "versions").iterdir()
    rel = str(version.relative_to(tmp_path / "sp"))
    change_a_total(version, 15, 99)
    # What passed format 1: its size and CRC32 recomputed in the listing. Its SHA-256 there
    # is still the file's as it was saved.
    data = version.read_bytes()
    edit_json(tmp_path / "sp" / SAVEPOINT_FILE, lambda doc: [
        f.update(size=len(data), crc32=zlib.crc32(data)) for f in doc["files"]
        if f["path"] == rel])
    problems = check_savepoint(str(tmp_path / "sp"))
    assert len(problems) == 1 and problems[0].startswith(f"{rel}: ") and \
        "SHA-256" in problems[0], problems
    with pytest.raises(CorruptCheckpointError, match="SHA-256"):
        rockstate.restore(str(tmp_path / "sp"), str(tmp_path / "restored"))
    assert not (tmp_path / "restored").exists()
    # The listing rewritten end to end (the file's size and SHA-256): it checks against
    # itself, and nothing in the savepoint records the value. That is the documented limit,
    # and what the digest taken with the savepoint is for.
    relist(tmp_path / "sp", rel)
    assert check_savepoint(str(tmp_path / "sp")) == []
    totals = {r["key"]["key"]: r["value"]["n"]
              for r in rockstate.read_state(str(tmp_path / "sp"), state_var="total").to_pylist()}
    assert totals["d"] == 99
    (problem,) = check_savepoint(str(tmp_path / "sp"), expect_digest=sp.digest)
    assert problem.startswith(f"{SAVEPOINT_FILE}: its SHA-256 is ") and sp.digest in problem
    report = rockstate.verify(str(tmp_path / "sp"), expect_digest=sp.digest)
    assert not report.ok and [p.path for p in report.problems] == [SAVEPOINT_FILE]
    with pytest.raises(CorruptCheckpointError, match="expected digest"):
        rockstate.restore(str(tmp_path / "sp"), str(tmp_path / "restored"),
                          expect_digest=sp.digest)
    assert not (tmp_path / "restored").exists()
    code, out, err = cli("verify", str(tmp_path / "sp"), "--expect-digest", sp.digest)
    assert code == 1 and f"PROBLEM savepoint: {SAVEPOINT_FILE}: its SHA-256 is " in out, \
        (out, err)
    code, _, err = cli("restore", str(tmp_path / "sp"), str(tmp_path / "restored"),
                       "--expect-digest", sp.digest)
    assert_one_line_error(code, err, SAVEPOINT_FILE, "expected digest")
    assert not (tmp_path / "restored").exists()


def test_the_cli_refuses_a_digest_that_is_no_sha256_in_one_line(tmp_path: Path):
    rockstate.savepoint(str(CHECKPOINT), str(tmp_path / "sp"))
    for command in (["verify", str(tmp_path / "sp")],
                    ["restore", str(tmp_path / "sp"), str(tmp_path / "restored")]):
        code, _, err = cli(*command, "--expect-digest", "wrong")
        assert_one_line_error(code, err, "'wrong' is not a SHA-256")
    assert not (tmp_path / "restored").exists()
    # A checkpoint location has no listing to compare a digest with.
    code, _, err = cli("verify", str(CHECKPOINT), "--expect-digest", "0" * 64)
    assert_one_line_error(code, err, "not a savepoint")
