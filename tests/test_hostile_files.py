"""Hostile files, second pass (docs/guarantees.md, "Trust model"): what a checkpoint's folders
and files may be besides what their names say.

Each case alters a copy of a golden fixture as an attacker would, then runs the CLI on it, each
command in a process of its own, as a user would: every command must answer within
``SECONDS`` with one line naming the file (exit 2) or a verify report naming it (exit 1),
never exit 0 or the CLI's "this is a rockstate bug" (exit 3), never hold more than
``MAX_RSS`` (the process's peak resident memory, from ``wait4``), and a savepoint of it must
leave no target behind. The families: a symbolic link at any component, files that are not
regular files or are huge, decompression bombs, values that steer work (decimal precision, JSON
nesting and numbers, odd folder names, long and impossible paths, wrong JSON types) and paths
in the coordinator's own files.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from rockstate.checkpoint import spark_rocksdb
from rockstate.checkpoint.location import CheckpointLocation
from rockstate.errors import CorruptCheckpointError

FIXTURES = Path(__file__).parent / "fixtures"
CHECKPOINT = FIXTURES / "transform-with-state" / "spark-4.0" / "checkpoint"
STORE = "state/0/0"
SECONDS = 20
MAX_RSS = 512 << 20


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str
    seconds: float
    peak_rss: int


# The CLI as a user runs it, then its peak resident memory as the kernel counts it for this
# program (VmHWM: the memory map exec made; rusage's maxrss would count the test process it
# was forked from).
_MEASURED = ("import os, sys, rockstate.cli as c\n"
             "try:\n    code = c.main(sys.argv[1:])\n"
             "finally:\n"
             "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
             "    open(os.environ['ROCKSTATE_TEST_PEAK'], 'w').write(hwm[0].split()[1])\n"
             "sys.exit(code)")


def run(*args: str) -> Run:
    """``rockstate ARGS`` in a process of its own, bounded by ``SECONDS``, with its peak
    resident memory."""
    started = time.monotonic()
    peak = Path(os.environ.get("TMPDIR", "/tmp")) / f"rockstate-peak-{os.getpid()}-{started}"
    env = {**os.environ, "ROCKSTATE_DEBUG": "", "ROCKSTATE_TEST_PEAK": str(peak)}
    try:
        proc = subprocess.run([sys.executable, "-c", _MEASURED, *args], capture_output=True,
                              env=env, timeout=SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"rockstate {' '.join(args)} still ran after {SECONDS} s") from None
    try:
        peak_rss = int(peak.read_text()) * 1024
    finally:
        peak.unlink(missing_ok=True)
    return Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode(),
               time.monotonic() - started, peak_rss)


def refused(*args: str, naming: str) -> Run:
    """Runs a command on hostile input: a refusal naming ``naming``, bounded in time and
    memory, never success and never the CLI's bug path."""
    r = run(*args)
    said = r.out + r.err
    assert r.code in (1, 2), f"exit {r.code}: {said[-2000:]}"
    assert "Traceback" not in said and "rockstate bug" not in said, said[-2000:]
    assert naming in said, f"{naming!r} not named: {said[-2000:]}"
    assert r.peak_rss < MAX_RSS, f"peak memory {r.peak_rss >> 20} MiB"
    if r.code == 2:
        errors = [line for line in r.err.splitlines() if line.startswith("rockstate ")]
        assert len(errors) == 1, r.err
    return r


def checkpoint_copy(tmp_path: Path) -> Path:
    ckpt = tmp_path / "in" / "checkpoint"
    shutil.copytree(CHECKPOINT, ckpt)
    return ckpt


def linked(ckpt: Path, relative: str) -> Path:
    """Replaces the folder ``relative`` by a symbolic link to a copy of it outside the
    checkpoint (what a restore from an archive that kept links, or an attacker, leaves)."""
    folder = ckpt / relative
    elsewhere = ckpt.parent.parent / "elsewhere" / relative.replace("/", "_")
    shutil.copytree(folder, elsewhere)
    shutil.rmtree(folder)
    folder.symlink_to(elsewhere, target_is_directory=True)
    return folder


def savepoint_refused(ckpt: Path, tmp_path: Path, naming: str) -> None:
    target = tmp_path / "sp"
    refused("savepoint", str(ckpt), str(target), naming=naming)
    assert not target.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".sp")], "staging left"


# 1. A symbolic link at any component, not only the last.

@pytest.mark.parametrize("folder", [f"{STORE}/sst", f"{STORE}/versions", f"{STORE}/snapshots",
                                    "state/0/_stateSchema", "state/0/_metadata", "sources",
                                    "commits"])
def test_a_linked_folder_is_refused_by_every_reader(tmp_path: Path, folder: str):
    ckpt = checkpoint_copy(tmp_path)
    link = linked(ckpt, folder)
    savepoint_refused(ckpt, tmp_path, naming="symbolic link")
    if folder.startswith(STORE) or folder in ("commits", "state/0/_stateSchema"):
        refused("read", str(ckpt), "--state-var", "total", naming=str(link))
    if folder.startswith(STORE):
        refused("verify", str(ckpt), naming="symbolic link")


def test_a_linked_file_to_a_device_is_refused(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    (ckpt / "commits" / "2").unlink()
    (ckpt / "commits" / "2").symlink_to("/dev/zero")
    refused("read", str(ckpt), "--state-var", "total", naming="commits/2")
    savepoint_refused(ckpt, tmp_path, naming="commits/2")


# 2. Files that are not regular files, and files too large for their kind.

def test_a_fifo_blocks_no_reader(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    (ckpt / "commits" / "2").unlink()
    os.mkfifo(ckpt / "commits" / "2")
    (version,) = sorted((ckpt / STORE / "versions").iterdir())[-1:]
    version.unlink()
    os.mkfifo(version)
    refused("verify", str(ckpt), naming="FIFO")
    refused("read", str(ckpt), "--state-var", "total", naming="FIFO")
    refused("inspect", str(ckpt), naming="FIFO")
    savepoint_refused(ckpt, tmp_path, naming="FIFO")


def test_a_huge_sparse_file_is_refused_before_it_is_read(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    with open(ckpt / "commits" / "2", "r+b") as f:
        f.truncate(8 << 30)  # sparse: no disk, 8 GiB to a reader
    refused("read", str(ckpt), "--state-var", "total", naming="more than such a file may")
    savepoint_refused(ckpt, tmp_path, naming="more than such a file may")
    (ckpt / "commits" / "2").unlink()
    shutil.copy(CHECKPOINT / "commits" / "2", ckpt / "commits" / "2")
    snapshot = next((ckpt / STORE / "snapshots").iterdir())
    with open(snapshot, "r+b") as f:
        f.truncate(300 << 20)  # past a manifest's 256 MiB
    refused("verify", str(ckpt), naming="more than such a file may")


# 3. Decompression bombs: refused while streaming, with no more than a chunk held.

def _version_file_with_changelog(original: bytes, changelog: bytes) -> bytes:
    """A version file with ``changelog`` in place of its own, its CRC32 trailer recomputed."""
    (n,) = struct.unpack_from(">i", original, 5)
    head = original[:9 + n]
    body = head + changelog
    return body + struct.pack(">I", zlib.crc32(body)) + b"RSVE"


def _records_bomb(total: int) -> bytes:
    """A zstd changelog body of well-formed puts of one key, ``total`` bytes decompressed.
    One record in each MiB holds random bytes, so the file is about 1 KiB a MiB: small, yet
    large enough that the ratio alone (4096 x its size) would let all of it through."""
    import random

    zeros = b"\x01" + struct.pack(">i", 1) + b"k" + struct.pack(">i", 1000) + b"\x00" * 1000
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        for i in range(total // (1024 * len(zeros))):
            noise = random.Random(i).randbytes(1000)
            out.write(zeros[:-1000] + noise + zeros * 1023)
    return b"RSCL\x01\x01" + sink.getvalue().to_pybytes()


def test_a_changelog_bomb_is_refused_in_bounded_memory(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    newest = sorted((ckpt / STORE / "versions").iterdir())[-1]
    bomb = _records_bomb(1_300 << 20)
    assert len(bomb) < 4 << 20  # the file is small; what it expands to is not
    newest.write_bytes(_version_file_with_changelog(newest.read_bytes(), bomb))
    refused("verify", str(ckpt), naming="expands past")
    refused("read", str(ckpt), "--state-var", "total", naming="expands past")


def _spark_store(tmp_path: Path, zip_bytes: bytes) -> tuple[CheckpointLocation, str]:
    store = tmp_path / "spark" / "state" / "0" / "0"
    store.mkdir(parents=True)
    (store / "1.zip").write_bytes(zip_bytes)
    loc = CheckpointLocation(str(tmp_path / "spark"))
    return loc, loc.path("state", "0", "0", "1.zip")


def test_a_zip_member_in_a_method_spark_never_writes_is_refused(tmp_path: Path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_BZIP2) as z:
        z.writestr("metadata", "v1\n" + json.dumps({"sstFiles": []}) + " " * (64 << 20))
    assert len(buffer.getvalue()) < 4096
    loc, path = _spark_store(tmp_path, buffer.getvalue())
    with pytest.raises(CorruptCheckpointError, match="zip method 12"):
        spark_rocksdb.snapshot_metadata(loc, path)


def test_a_zip_member_declaring_more_than_its_bound_is_refused_before_inflating(
        tmp_path: Path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("metadata", b"\x00" * (300 << 20))
    loc, path = _spark_store(tmp_path, buffer.getvalue())
    with pytest.raises(CorruptCheckpointError, match="declares 314572800 bytes"):
        spark_rocksdb.snapshot_metadata(loc, path)


# 4. Values that steer work.

def _edit_json(path: Path, change: Callable[[dict], object]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_a_decimal_past_sparks_precision_is_refused(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    schema = next((ckpt / "state/0/_stateSchema/default").iterdir())
    strings = _schema_strings(schema.read_bytes())
    assert any('"type":"long"' in s for s in strings), "the fixture's schema holds no long"
    # Every long column becomes a decimal wider than any Spark writes.
    schema.write_bytes(_schema_file([s.replace('"type":"long"', '"type":"decimal(200000000,0)"')
                                     for s in strings]))
    refused("read", str(ckpt), "--state-var", "total", naming="decimal(200000000,0)")


def _schema_strings(data: bytes) -> list[str]:
    """The strings of Spark's v3 schema file, in order: its version, then per column family
    its name and its key, value, encoder and user key schemas (the ids and counts between
    them are kept by ``_schema_file``, which writes ids 0)."""
    def utf(at: int) -> tuple[str, int]:
        (n,) = struct.unpack_from(">H", data, at)
        return data[at + 2:at + 2 + n].decode(), at + 2 + n

    def chunked(at: int) -> tuple[str, int]:
        (count,) = struct.unpack_from(">i", data, at)
        at, parts = at + 4, []
        for _ in range(count):
            part, at = utf(at)
            parts.append(part)
        return "".join(parts), at

    version, at = utf(0)
    (families,) = struct.unpack_from(">i", data, at)
    out, at = [version], at + 4
    for _ in range(families):
        name, at = utf(at)
        key, at = chunked(at + 2)
        value, at = chunked(at + 2)
        encoder, at = chunked(at)
        user_key, at = chunked(at)
        out += [name, key, value, encoder, user_key]
    return out


def _schema_file(strings: list[str]) -> bytes:
    def utf(s: str) -> bytes:
        return struct.pack(">H", len(s.encode())) + s.encode()

    def chunked(s: str) -> bytes:
        return struct.pack(">i", 1) + utf(s)

    out = utf(strings[0]) + struct.pack(">i", (len(strings) - 1) // 5)
    for i in range(1, len(strings), 5):
        name, key, value, encoder, user_key = strings[i:i + 5]
        out += utf(name) + b"\x00\x00" + chunked(key) + b"\x00\x00" + chunked(value) + \
            chunked(encoder) + chunked(user_key)
    return out


def test_json_nested_past_any_writer_is_refused(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    snapshot = next((ckpt / STORE / "snapshots").iterdir())
    snapshot.write_text('{"formatVersion": 5, "stats": ' + "[" * 100_000 + "]" * 100_000 + "}")
    refused("verify", str(ckpt), naming="nested too deeply")
    refused("read", str(ckpt), "--state-var", "total", naming="nested too deeply")


@pytest.mark.parametrize("number", ["1e400", "Infinity", "NaN"])
def test_numbers_no_writer_writes_are_refused(tmp_path: Path, number: str):
    ckpt = checkpoint_copy(tmp_path)
    snapshot = next((ckpt / STORE / "snapshots").iterdir())
    text = json.dumps(json.loads(snapshot.read_text()))
    snapshot.write_text(text.replace('"numKeys": ', f'"numKeys": {number}, "was": ', 1))
    refused("read", str(ckpt), "--state-var", "total", naming=snapshot.name)


def test_folder_names_that_are_digits_only_to_unicode_are_not_numbers(tmp_path: Path):
    ckpt = checkpoint_copy(tmp_path)
    shutil.copytree(ckpt / STORE, ckpt / "state" / "0" / "\u00b2")
    (ckpt / "state" / "\u0663").mkdir()
    (ckpt / "rockstate" / "checkpoints" / "\u00b9").mkdir()
    for command in (["inspect", str(ckpt)], ["verify", str(ckpt)],
                    ["read", str(ckpt), "--state-var", "total"]):
        r = run(*command)
        assert r.code == 0, r.out + r.err


@pytest.mark.parametrize("name,why", [("a" * 300 + ".sst", "File name too long"),
                                      ("FILE/x.sst", "not a folder")])
def test_an_impossible_path_in_a_manifest_is_refused_naming_it(tmp_path: Path, name: str,
                                                               why: str):
    ckpt = checkpoint_copy(tmp_path)
    snapshot = next((ckpt / STORE / "snapshots").iterdir())
    sst = next((ckpt / STORE / "sst").iterdir()).name

    def change(doc: dict) -> None:
        for f in doc["files"]:
            if f["kind"] == "sst":
                f["path"] = "sst/" + name.replace("FILE", sst)
    _edit_json(snapshot, change)
    refused("read", str(ckpt), "--state-var", "total", naming=why)


@pytest.mark.parametrize("line", ["[1, 2]", '"text"', '{"stateUniqueIds": {"0": "x"}}'])
def test_a_commit_log_line_of_the_wrong_type_is_refused(tmp_path: Path, line: str):
    ckpt = checkpoint_copy(tmp_path)
    (ckpt / "commits" / "2").write_text(f"v1\n{line}\n")
    refused("read", str(ckpt), "--state-var", "total", naming="commits/2")


# 5. Paths in the coordinator's own files.

@pytest.mark.parametrize("field,value", [("storeDir", "/etc"), ("storeDir", "../../.."),
                                         ("snapshotManifest", "/etc/passwd")])
def test_the_coordinators_paths_are_contained(tmp_path: Path, field: str, value: str):
    ckpt = checkpoint_copy(tmp_path)
    meta = ckpt / "rockstate" / "checkpoints" / "2" / "_metadata"
    _edit_json(meta, lambda doc: doc["stores"][0].__setitem__(field, value))
    refused("verify", str(ckpt), naming="must stay inside its folder")
    refused("inspect", str(ckpt), naming="must stay inside its folder")


# The families together, drawn at random: any file or folder of the fixture made hostile in
# any of the ways above, then read by every offline command. CI draws a few; a long run sets
# ROCKSTATE_HOSTILE_EXAMPLES (docs/guarantees.md, "Trust model").

HOSTILE_EXAMPLES = int(os.environ.get("ROCKSTATE_HOSTILE_EXAMPLES", "6"))
ATTACKS = ("link-folder", "link-file", "fifo", "sparse", "flip", "truncate", "json")
COMMANDS = (("inspect",), ("verify",), ("read", "--state-var", "total"))


def _attack(ckpt: Path, target: Path, attack: str, seed: int) -> None:
    """Makes ``target`` (a file or folder of ``ckpt``) hostile by ``attack``. A link leads to
    FIFOs outside the checkpoint: a reader that follows it blocks there, and ``run``'s time
    bound turns that into a failure, so every run that ends read nothing outside the root."""
    if attack == "link-folder":
        target = target if target.is_dir() else target.parent
        link = linked(ckpt, str(target.relative_to(ckpt)))
        for f in [p for p in link.resolve().rglob("*") if p.is_file()]:
            f.unlink()
            os.mkfifo(f)
    elif attack == "link-file":
        trap = ckpt.parent.parent / "trap"
        if not trap.exists():
            os.mkfifo(trap)
        target.unlink()
        target.symlink_to(trap)
    elif attack == "fifo":
        target.unlink()
        os.mkfifo(target)
    elif attack == "sparse":
        with open(target, "r+b") as f:
            f.truncate((5 << 30) + seed)
    elif attack in ("flip", "truncate"):
        data = bytearray(target.read_bytes())
        if data and attack == "flip":
            data[seed % len(data)] ^= 1 + seed % 255
        target.write_bytes(bytes(data[:seed % (len(data) + 1)] if attack == "truncate" else data))
    else:
        text = target.read_bytes().decode("utf-8", "replace")
        at = text.find(":") + 1
        raw = ("[" * 100_000, "1e400", "NaN", '"x"', "[]")[seed % 5]
        target.write_text(text[:at] + raw + text[at:] if at else raw)


def test_any_file_of_a_checkpoint_made_hostile_is_refused_or_read(tmp_path: Path):
    import random

    files = sorted(p.relative_to(CHECKPOINT) for p in CHECKPOINT.rglob("*") if p.is_file())
    rng = random.Random(int(os.environ.get("ROCKSTATE_HOSTILE_SEED", "69")))
    counts = {"runs": 0, "refused": 0, "read": 0, "peak MiB": 0.0}
    for i in range(HOSTILE_EXAMPLES):
        ckpt = tmp_path / f"case{i}" / "in" / "checkpoint"
        shutil.copytree(CHECKPOINT, ckpt)
        relative, attack = rng.choice(files), rng.choice(ATTACKS)
        _attack(ckpt, ckpt / relative, attack, rng.randrange(1 << 20))
        for command in COMMANDS:
            r = run(command[0], str(ckpt), *command[1:])  # fails past SECONDS
            said = r.out + r.err
            case = f"{attack} of {relative}, rockstate {command[0]}: exit {r.code}"
            assert r.code in (0, 1, 2), f"{case}: {said[-1500:]}"
            assert "Traceback" not in said and "rockstate bug" not in said, f"{case}: {said}"
            assert r.peak_rss < MAX_RSS, f"{case}: peak memory {r.peak_rss >> 20} MiB"
            if r.code == 2:
                errors = [line for line in r.err.splitlines() if line.startswith("rockstate ")]
                assert len(errors) == 1, f"{case}: {r.err}"
            counts["runs"] += 1
            counts["refused" if r.code else "read"] += 1
            counts["peak MiB"] = max(counts["peak MiB"], r.peak_rss / (1 << 20))
    print(f"hostile checkpoints: {HOSTILE_EXAMPLES} cases, {counts}")


def _peak_of(snippet: str) -> tuple[int, str]:
    """(peak resident bytes, what it printed) of ``snippet`` run in a Python of its own."""
    peak = Path(os.environ.get("TMPDIR", "/tmp")) / f"rockstate-peak-{os.getpid()}-snippet"
    code = (snippet + "\nhwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]"
            f"\nopen({str(peak)!r}, 'w').write(hwm[0].split()[1])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=SECONDS * 3, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    try:
        return int(peak.read_text()) * 1024, done.stdout
    finally:
        peak.unlink(missing_ok=True)


def test_a_spark_changelog_bomb_is_refused_in_bounded_memory(tmp_path: Path):
    # Spark's changelog format 1: puts of one key (4-byte lengths), zstd-compressed, one
    # record in each MiB random, expanding to 1.3 GiB; then its end marker.
    import random

    put = struct.pack(">i", 1) + b"k" + struct.pack(">i", 1000) + b"\x00" * 1000
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        for i in range(1300):
            out.write(put[:-1000] + random.Random(i).randbytes(1000) + put * 1039)
        out.write(struct.pack(">i", -1))
    path = tmp_path / "1.changelog"
    path.write_bytes(sink.getvalue().to_pybytes())
    peak, said = _peak_of(
        "from rockstate.checkpoint import spark_rocksdb\n"
        "from rockstate.errors import CorruptCheckpointError\n"
        f"data = open({str(path)!r}, 'rb').read()\n"
        "try:\n    spark_rocksdb.apply_changelog({}, data, 'the bomb')\n"
        "except CorruptCheckpointError as e:\n    print(e)\n")
    assert "expands past 1073741824 bytes" in said, said
    assert peak < MAX_RSS, f"peak memory {peak >> 20} MiB"
