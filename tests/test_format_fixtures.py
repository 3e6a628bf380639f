"""The golden fixtures of every checkpoint format rockstate wrote, read from Python.

``tests/fixtures/checkpoint-format/v<N>`` holds one store written by the rockstate of format N
(``tests/fixtures/generate.py``) and the raw keys and values of each of its versions. The JVM
suite ``CheckpointFormatFixturesSuite`` loads the same files, so the two readers cannot drift
from the format, nor from each other. No Spark here.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from rockstate.checkpoint.format import FORMAT_VERSION
from rockstate.checkpoint.location import CheckpointLocation, StoreRef
from rockstate.checkpoint.rockstate_store_reader import RockstateStoreReader
from rockstate.encoding.row_checksum import seal
from rockstate.encoding.unsaferow import decode_rows
from rockstate.errors import CorruptCheckpointError, RockstateError
from rockstate.tools.verify import verify
from support.sst_packs import join_into_one_pack

FIXTURES = Path(__file__).parent / "fixtures" / "checkpoint-format"
FORMATS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
KEY = {"type": "struct", "fields": [{"name": "key", "type": "string", "nullable": True,
                                     "metadata": {}}]}
COUNT = {"type": "struct", "fields": [{"name": "count", "type": "long", "nullable": False,
                                       "metadata": {}}]}


def store_entries(loc: CheckpointLocation, store: StoreRef, version: int) -> dict[bytes, bytes]:
    return RockstateStoreReader(loc, store).entries(version)


def checkpoint_of(fmt: str, tmp_path: Path) -> CheckpointLocation:
    """The fixture's store as partition 0 of operator 0 of a checkpoint location (a copy)."""
    shutil.copytree(FIXTURES / fmt / "store", tmp_path / "ckpt" / "state" / "0" / "0")
    return CheckpointLocation(str(tmp_path / "ckpt"))


def test_a_fixture_for_every_format_version() -> None:
    assert [f"v{n}" for n in range(1, FORMAT_VERSION + 1)] == FORMATS


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_version_reads_to_its_recorded_bytes_and_counts(fmt: str, tmp_path: Path) -> None:
    expected = json.loads((FIXTURES / fmt / "expected.json").read_text())
    loc = checkpoint_of(fmt, tmp_path)
    (store,) = loc.stores(0)
    assert loc.versions(store) == sorted(int(v) for v in expected["versions"])
    seen: Counter[str] = Counter()
    for version, batch in enumerate(expected["batches"], start=1):
        seen.update(batch)
        entries = store_entries(loc, store, version)
        # From format 4 on the fixture has row checksums: its values were read checked and
        # opened, and sealing them again gives the bytes the JVM wrote.
        stored = ({k: seal(k, v) for k, v in entries.items()}
                  if loc.manifest(store, version).row_checksums else entries)
        assert loc.manifest(store, version).row_checksums == (int(fmt[1:]) >= 4)
        assert sorted([k.hex(), v.hex()] for k, v in stored.items()) == \
            expected["versions"][str(version)]
        # An oracle independent of any reader: the counts the input implies. Keys and values
        # are UnsafeRows behind the key encoder's one-byte header.
        keys = decode_rows(list(entries), KEY, skip=1).to_pylist()
        counts = decode_rows(list(entries.values()), COUNT, skip=1).to_pylist()
        assert {k["key"]: c["count"] for k, c in zip(keys, counts, strict=True)} == dict(seen)
        assert loc.manifest(store, version).num_keys == len(seen)


@pytest.mark.parametrize("fmt", FORMATS)
def test_verify_passes_every_fixture(fmt: str, tmp_path: Path) -> None:
    report = verify(checkpoint_of(fmt, tmp_path).url)
    assert report.ok, [str(p) for p in report.problems]
    assert report.versions == 4


def test_verify_checks_every_snapshot_row_of_a_store_with_row_checksums(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row damaged before its SST was written passes the file's CRC32: ``verify`` opens
    each snapshot and checks every row's checksum. The damage is made where RocksDB hands the
    rows over (one value's last byte flipped)."""
    from contextlib import contextmanager

    from rockstate.checkpoint import staged_snapshot

    loc = checkpoint_of("v4", tmp_path)
    real = staged_snapshot.read_only_items

    @contextmanager
    def damaged(directory: str, where: str):
        with real(directory, where) as items:
            def flipped():
                for i, (k, v) in enumerate(items):
                    yield (k, v[:-1] + bytes([v[-1] ^ 1])) if i == 1 else (k, v)
            yield flipped()

    monkeypatch.setattr(staged_snapshot, "read_only_items", damaged)
    report = verify(loc.url)
    assert not report.ok
    assert {p.path.split("/")[0] for p in report.problems} == {"snapshots"}
    assert all("fails its checksum" in p.what for p in report.problems), report.problems


def test_a_damaged_version_file_is_detected(tmp_path: Path) -> None:
    loc = checkpoint_of(f"v{FORMAT_VERSION}", tmp_path)
    (store,) = loc.stores(0)
    entry = loc.landed(store, 3)
    path = Path(store.path) / entry.path
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptCheckpointError, match="CRC32"):
        loc.manifest(store, 3)
    report = verify(loc.url)
    assert not report.ok and any(p.path == entry.path for p in report.problems)
    path.write_bytes(bytes(data[:-5]))  # cut short
    with pytest.raises(CorruptCheckpointError, match="trailer"):
        loc.manifest(store, 3)


def test_the_attempt_written_last_is_the_version(tmp_path: Path) -> None:
    """Two attempts of one version: every reader takes the one the storage wrote last."""
    loc = checkpoint_of(f"v{FORMAT_VERSION}", tmp_path)
    (store,) = loc.stores(0)
    first = loc.landed(store, 4)
    older = Path(store.path) / first.path
    other = older.with_name("4-ffffffff-0000-0000-0000-000000000000.rsv")
    shutil.copy(older, other)
    import os

    os.utime(older, (1_000_000, 1_000_000))  # the original attempt is now the older one
    assert loc.landed(store, 4).path == f"versions/{other.name}"
    # The copy is not a valid attempt of its own name (its header names version 4 still), but
    # the lineage it ends with names the file it was read from.
    m = loc.manifest(store, 4)
    assert m.changelogs[-1].path == f"versions/{other.name}"


TWS_FIXTURES = Path(__file__).parent / "fixtures" / "transform-with-state"


def _as_lists(value):
    """Arrow values with structs as lists, as the fixture recorded Spark's rows."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [_as_lists(v) for v in value]
    return value


@pytest.mark.parametrize("fixture", sorted(p.name for p in TWS_FIXTURES.iterdir()))
def test_transform_with_state_fixture_reads_as_spark_read_it(fixture: str,
                                                             tmp_path: Path) -> None:
    """A rockstate store with column families (transformWithStateInPandas on Spark 4.0: value,
    list and map state, in the UnsafeRow and, `-avro`, the Avro encoding) reads, one state
    variable at a time, to the rows Spark's `statestore` source read from it when it was
    written."""
    from rockstate.tools.read import export, read_state

    expected = json.loads((TWS_FIXTURES / fixture / "expected.json").read_text())
    ckpt = str(TWS_FIXTURES / fixture / "checkpoint")
    for var, want in expected["variables"].items():
        table = read_state(ckpt, state_var=var)
        columns = [table.column(c).to_pylist() for c in (*want["columns"], "partition_id")]
        rows = sorted(_as_lists(r) for r in zip(*columns, strict=True))
        assert want["rows"] and rows == want["rows"], var
    assert verify(CheckpointLocation(ckpt)).ok
    with pytest.raises(RockstateError, match="state_var"):
        read_state(ckpt)
    written = export(ckpt, str(tmp_path / "export"))
    assert sorted(p.rsplit("=", 1)[-1] for p in written) == sorted(expected["variables"])
    import pyarrow.dataset as ds

    for path in written:  # each variable's dataset holds what read_state reads of it
        var = path.rsplit("=", 1)[-1]
        back = ds.dataset(path, partitioning="hive").to_table()
        assert back.num_rows == read_state(ckpt, state_var=var).num_rows > 0, var


def _one_pack(loc: CheckpointLocation) -> tuple[Path, int]:
    """The v5 fixture's two packs (one SST each) joined into one pack of two members; returns
    the pack and its second member's offset."""
    (store,) = loc.stores(0)
    pack, starts = join_into_one_pack(Path(store.path))
    assert len(starts) == 2
    return pack, max(starts.values())


def test_a_pack_of_several_members_reads_and_verifies_by_range(tmp_path: Path) -> None:
    """Each member is read by its range of the pack: every version reads to its recorded
    bytes, and damage to one member is named, with only the versions that need it."""
    expected = json.loads((FIXTURES / "v5" / "expected.json").read_text())
    loc = checkpoint_of("v5", tmp_path)
    (store,) = loc.stores(0)
    pack, offset = _one_pack(loc)
    for version in range(1, 5):
        stored = {k: seal(k, v) for k, v in store_entries(loc, store, version).items()}
        assert sorted([k.hex(), v.hex()] for k, v in stored.items()) == \
            expected["versions"][str(version)]
    report = verify(loc.url)
    assert report.ok, [str(p) for p in report.problems]
    intact = pack.read_bytes()

    def damaged(at: int) -> list[tuple[str, tuple[int, ...], str]]:
        data = bytearray(intact)
        data[at] ^= 0x40
        pack.write_bytes(bytes(data))
        return [(p.path, p.versions, p.what) for p in verify(loc.url).problems]

    # The second member is only the newest snapshot's (no version names it yet).
    ((path, versions, what),) = damaged(offset + 7)
    assert (path, versions) == (f"sst/{pack.name}", ())
    assert what.startswith(f"the SST at offset {offset}: CRC32"), what
    # The first is shared by both snapshots: the versions restored from it are named.
    ((path, versions, what),) = damaged(7)
    assert path == f"sst/{pack.name}" and versions and what.startswith("the SST at offset 0:")
    with pytest.raises(CorruptCheckpointError, match="offset 0"):
        store_entries(loc, store, versions[0])
    pack.write_bytes(intact[:offset + 3])  # cut inside the second member
    problems = verify(loc.url).problems
    assert [p.what for p in problems] == [f"the SST at offset {offset}: size 3, the manifest "
                                          f"says {len(intact) - offset} (truncated or replaced)"]


def test_a_manifest_placing_a_member_outside_its_pack_is_corrupt(tmp_path: Path) -> None:
    loc = checkpoint_of("v5", tmp_path)
    (store,) = loc.stores(0)
    _, offset = _one_pack(loc)
    (path,) = [p for p in (Path(store.path) / "snapshots").glob("4-*.json")]
    original = json.loads(path.read_bytes())
    edits = {"outside its pack": lambda d: d["files"][1]["inPack"].update(offset=offset + 1),
             "several sizes": lambda d: d["files"][1]["inPack"].update(packSize=10**6),
             "only format 5": lambda d: d.update(formatVersion=4),
             "both as a file and as a pack": lambda d: d["files"][0].pop("inPack")}
    for why, edit in edits.items():
        doc = json.loads(json.dumps(original))
        edit(doc)
        path.write_text(json.dumps(doc))
        with pytest.raises(CorruptCheckpointError, match=why):
            loc.snapshot_manifest(store, f"snapshots/{path.name}", "the test")
