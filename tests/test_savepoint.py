"""Savepoints: a query runs part of its input, a savepoint is taken and restored to a new
checkpoint location, the restored query runs the rest, and the output and state equal an oracle
(Spark's HDFS provider) that ran the whole input in one place. The original checkpoint and
the savepoint stay byte for byte as they were. Then the errors: what is refused, and what a
damaged savepoint reports.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path

import fsspec
import pytest
from pyspark.sql import functions as F

import rockstate
from rockstate.tools.savepoint_check import check_savepoint
from rockstate.tools.savepoint_manifest import SAVEPOINT_FILE, SAVEPOINT_FORMAT
from support.queries import BATCHES, SCHEMA, join, sided, total_by_key
from support.savepoints import Relocation, digest
from support.sst_packs import join_into_one_pack
from support.streams import assert_same_as_oracle

FIXTURE = Path(__file__).parent / "fixtures" / "transform-with-state" / "spark-4.0" / "checkpoint"


CASES: dict[str, tuple[Callable, list, str, int, tuple]] = {
    # name: (build, batches, output mode, sources, state options)
    "aggregation": (total_by_key, BATCHES, "update", 1, ({},)),
    "dedup": (lambda s: s.dropDuplicates(["key"]), BATCHES, "append", 1, ({},)),
    "session-window": (lambda s: s.withWatermark("ts", "5 minutes").groupBy(
        F.session_window("ts", "3 minutes"), "key").agg(F.sum("value").alias("total")),
        BATCHES, "append", 1, ({},)),
    "join": (join("left_outer"), sided(BATCHES), "append", 2,
             ({"joinSide": "left"}, {"joinSide": "right"})),
}


# Every kind from a stopped query; from a running one (its stores may still be uploading) the
# kind with one store and the one with four a partition.
@pytest.mark.parametrize("case,how", [(case, "stopped") for case in sorted(CASES)] +
                         [("aggregation", "running"), ("join", "running")])
def test_restored_savepoint_continues_like_the_oracle(cluster_spark, workdir: Path, case: str,
                                                      how: str):
    build, batches, mode, sources, state_options = CASES[case]
    relocation = Relocation(workdir, str(workdir / "savepoint"), how)
    _, mine = assert_same_as_oracle(
        cluster_spark, build, batches, workdir=workdir, name=f"sp-{case}-{how}", schema=SCHEMA,
        output_mode=mode, sources=sources, state_options=state_options, restart_at=3,
        relocate=relocation)
    # Three batches ran before it (and maybe no-data batches a watermark moved).
    assert relocation.saved is not None and relocation.saved.batch_id >= 2
    assert str(mine.checkpoint) == str(workdir / "restored")
    relocation.assert_untouched()
    assert rockstate.verify(relocation.target).ok


def test_a_savepoint_in_memory_restores_and_continues(spark, workdir: Path):
    """The savepoint lives on another file system (fsspec's memory://) than the checkpoint."""
    target = f"memory://rockstate-savepoints/{workdir.name}"
    relocation = Relocation(workdir, target, "stopped")
    try:
        assert_same_as_oracle(
            spark, CASES["aggregation"][0], BATCHES, workdir=workdir, name="sp-memory",
            schema=SCHEMA, restart_at=3, relocate=relocation)
        relocation.assert_untouched()
    finally:
        fs, root = fsspec.core.url_to_fs(target)
        fs.rm(root, recursive=True)


def _fixture_copy(tmp_path: Path) -> Path:
    ckpt = tmp_path / "checkpoint"
    shutil.copytree(FIXTURE, ckpt)
    return ckpt


def test_a_savepoint_holds_only_what_its_batch_needs(tmp_path: Path):
    ckpt = _fixture_copy(tmp_path)
    sp = rockstate.savepoint(str(ckpt), str(tmp_path / "sp"))
    assert (sp.batch_id, sp.state_version) == (2, 3)
    paths = {f.path for f in sp.files}
    assert {"metadata", "offsets/2", "commits/2", "sources/0/2"} <= paths
    assert not any(p.startswith("rockstate/") for p in paths)
    # Version 3 is snapshot 2 plus its own version file: no older version file is needed.
    assert sorted(p.split("/")[3] for p in paths if p.startswith("state/0/0/")) == \
        ["snapshots", "sst", "versions"]
    report = rockstate.verify(str(tmp_path / "sp"))
    assert report.ok and report.files_checked == len(sp.files)
    # The restored location reads as the original's newest version.
    restored = rockstate.restore(str(tmp_path / "sp"), str(tmp_path / "restored"))
    for var in ("total", "items", "counts"):
        assert rockstate.read_state(restored, state_var=var).to_pylist() == \
            rockstate.read_state(str(ckpt), state_var=var).to_pylist()
    assert (tmp_path / "restored" / "metadata").read_text() != (ckpt / "metadata").read_text()
    # transformWithState's operator metadata names its schema files by absolute path: they
    # point into the restored location, where the files are.
    meta = json.loads((tmp_path / "restored" / "state/0/_metadata/v2/0").read_text()
                      .split("\n", 1)[1])
    (schema,) = meta["stateStoreInfo"][0]["stateSchemaFilePaths"]
    assert schema.startswith(f"file:{tmp_path / 'restored'}/state/0/_stateSchema/default/")
    assert Path(schema[len("file:"):]).is_file()


def test_what_savepoint_and_restore_refuse_changes_nothing(tmp_path: Path):
    ckpt = _fixture_copy(tmp_path)
    before = digest(ckpt)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("keep me")
    with pytest.raises(rockstate.RockstateError, match="already exists"):
        rockstate.savepoint(str(ckpt), str(tmp_path / "taken"))
    assert (tmp_path / "taken" / "x").read_text() == "keep me"
    with pytest.raises(rockstate.RockstateError, match="not a savepoint"):
        rockstate.restore(str(ckpt), str(tmp_path / "new"))
    assert not (tmp_path / "new").exists()
    rockstate.savepoint(str(ckpt), str(tmp_path / "sp"))
    with pytest.raises(rockstate.RockstateError, match="already exists"):
        rockstate.restore(str(tmp_path / "sp"), str(tmp_path / "taken"))
    empty = tmp_path / "fresh"
    (empty / "commits").mkdir(parents=True)
    (empty / "metadata").write_text('{"id":"x"}\n')
    with pytest.raises(rockstate.RockstateError, match="no committed batch"):
        rockstate.savepoint(str(empty), str(tmp_path / "sp2"))
    assert digest(ckpt) == before


def test_a_damaged_savepoint_is_reported_and_not_restored(tmp_path: Path):
    ckpt = _fixture_copy(tmp_path)
    sp = rockstate.savepoint(str(ckpt), str(tmp_path / "sp"))
    sst = next(f.path for f in sp.files if f.path.endswith(".sst"))
    path = tmp_path / "sp" / sst
    path.write_bytes(path.read_bytes()[:-5])
    problems = check_savepoint(str(tmp_path / "sp"))
    assert len(problems) == 1 and sst in problems[0]
    report = rockstate.verify(str(tmp_path / "sp"))
    assert not report.ok and report.problems[0].path == sst
    with pytest.raises(rockstate.CorruptCheckpointError, match="damaged"):
        rockstate.restore(str(tmp_path / "sp"), str(tmp_path / "restored"))
    assert not (tmp_path / "restored").exists()
    # A savepoint whose listing was never written (interrupted) is not one.
    (tmp_path / "sp" / SAVEPOINT_FILE).unlink()
    with pytest.raises(rockstate.RockstateError, match="not a savepoint"):
        rockstate.read_savepoint(str(tmp_path / "sp"))


def test_a_savepoint_checks_each_packed_sst_by_its_range(tmp_path: Path):
    """Format 5 keeps small SSTs in packs: a savepoint copies a pack whole and checks every
    member against its own CRC32, at the source and in the copy."""
    ckpt = _fixture_copy(tmp_path)
    (store,) = {p.parent.parent for p in ckpt.glob("state/*/*/**/snapshots/*.json")}
    # Its SST after 1000 bytes of a member no snapshot names any more.
    pack, starts = join_into_one_pack(store, lead=1000)
    (offset,) = starts.values()
    assert offset == 1000
    sp = rockstate.savepoint(str(ckpt), str(tmp_path / "sp"))
    rel = str(pack.relative_to(ckpt))
    assert rel in {f.path for f in sp.files} and check_savepoint(str(tmp_path / "sp")) == []
    for name in ("total", "items", "counts"):
        assert rockstate.read_state(str(tmp_path / "sp"), state_var=name).to_pylist() == \
            rockstate.read_state(str(FIXTURE), state_var=name).to_pylist()
    # The copy damaged inside the member, the savepoint's own listing made to match.
    copy = tmp_path / "sp" / rel
    data = bytearray(copy.read_bytes())
    data[offset + 3] ^= 0x10
    copy.write_bytes(bytes(data))
    listing = json.loads((tmp_path / "sp" / SAVEPOINT_FILE).read_text())
    for f in listing["files"]:
        if f["path"] == rel:
            f["sha256"] = hashlib.sha256(data).hexdigest()
    (tmp_path / "sp" / SAVEPOINT_FILE).write_text(json.dumps(listing))
    (problem,) = check_savepoint(str(tmp_path / "sp"))
    assert rel in problem and f"the SST at offset {offset} has CRC32" in problem
    # The source damaged the same way: nothing is saved.
    pack.write_bytes(bytes(data))
    with pytest.raises(rockstate.CorruptCheckpointError, match=f"the SST at offset {offset}"):
        rockstate.savepoint(str(ckpt), str(tmp_path / "sp2"))
    assert not (tmp_path / "sp2").exists()


def test_cli_takes_verifies_and_restores_a_savepoint(tmp_path: Path, capsys):
    from rockstate.cli import main

    ckpt = _fixture_copy(tmp_path)
    assert main(["savepoint", str(ckpt), str(tmp_path / "sp")]) == 0
    assert "savepoint of batch 2" in capsys.readouterr().out
    assert main(["verify", str(tmp_path / "sp")]) == 0
    assert main(["inspect", str(tmp_path / "sp")]) == 0
    assert "savepoint of batch 2 (state version 3)" in capsys.readouterr().out
    assert main(["restore", str(tmp_path / "sp"), str(tmp_path / "r"), "--keep-query-id"]) == 0
    assert (tmp_path / "r" / "metadata").read_text() == (ckpt / "metadata").read_text()
    assert main(["restore", str(tmp_path / "sp"), str(tmp_path / "r")]) == 2


def test_a_savepoint_has_the_digest_of_its_listing(tmp_path: Path, capsys):
    """The digest is the SHA-256 of ``_savepoint.json`` as written (``sha256sum`` gives it
    too), read back the same, printed by the CLI, and each file is listed by its SHA-256."""
    from rockstate.cli import main

    ckpt = _fixture_copy(tmp_path)
    sp = rockstate.savepoint(str(ckpt), str(tmp_path / "sp"))
    listing = (tmp_path / "sp" / SAVEPOINT_FILE).read_bytes()
    assert sp.digest == hashlib.sha256(listing).hexdigest()
    assert rockstate.read_savepoint(str(tmp_path / "sp")).digest == sp.digest
    doc = json.loads(listing)
    assert doc["savepointFormat"] == SAVEPOINT_FORMAT == 2
    for f in doc["files"]:
        data = (tmp_path / "sp" / f["path"]).read_bytes()
        assert set(f) == {"path", "size", "sha256"}
        assert f["sha256"] == hashlib.sha256(data).hexdigest()
    assert check_savepoint(str(tmp_path / "sp"), expect_digest=sp.digest.upper()) == []
    assert main(["savepoint", str(ckpt), str(tmp_path / "sp2")]) == 0
    printed = capsys.readouterr().out.splitlines()[-1].split()
    assert printed[0] == "digest" and printed[1] == hashlib.sha256(
        (tmp_path / "sp2" / SAVEPOINT_FILE).read_bytes()).hexdigest()
    assert main(["verify", str(tmp_path / "sp2"), "--expect-digest", printed[1]]) == 0
    other = FIXTURE_DIGESTS["format-2"]  # another savepoint's
    assert main(["verify", str(tmp_path / "sp2"), "--expect-digest", other]) == 1
    assert main(["restore", str(tmp_path / "sp2"), str(tmp_path / "r"),
                 "--expect-digest", other]) == 2
    assert not (tmp_path / "r").exists()
    assert main(["restore", str(tmp_path / "sp2"), str(tmp_path / "r"),
                 "--expect-digest", printed[1]]) == 0


SAVEPOINT_FIXTURES = Path(__file__).parent / "fixtures" / "savepoint"
# Each fixture's digest, as tests/fixtures/generate_savepoint.py printed it (format 1, from
# before digests were printed: `sha256sum _savepoint.json`).
FIXTURE_DIGESTS = {
    "format-1": "e214ffd0d15555fd8a9a743079d172770459bd43995fe6c45d38c8a2bef0e4c7",
    "format-2": "640cb825f1a2c39a2beab0038fa3440a1f3185f9837fb3993c765232e1ebbabc",
}


def test_a_fixture_for_every_savepoint_format():
    assert sorted(p.name for p in SAVEPOINT_FIXTURES.iterdir()) == \
        [f"format-{n}" for n in range(1, SAVEPOINT_FORMAT + 1)] == sorted(FIXTURE_DIGESTS)


@pytest.mark.parametrize("fixture", sorted(p.name for p in SAVEPOINT_FIXTURES.iterdir()))
def test_every_savepoint_format_checks_and_restores(fixture: str, tmp_path: Path):
    """A savepoint written by an earlier rockstate (tests/fixtures/generate_savepoint.py)
    checks clean, and restores to a location that reads as the checkpoint it was taken of."""
    saved = SAVEPOINT_FIXTURES / fixture
    assert check_savepoint(str(saved), expect_digest=FIXTURE_DIGESTS[fixture]) == []
    assert rockstate.read_savepoint(str(saved)).batch_id == 2
    assert rockstate.verify(str(saved), expect_digest=FIXTURE_DIGESTS[fixture]).ok
    restored = rockstate.restore(str(saved), str(tmp_path / "restored"),
                                 expect_digest=FIXTURE_DIGESTS[fixture])
    for var in ("total", "items", "counts"):
        assert rockstate.read_state(restored, state_var=var).to_pylist() == \
            rockstate.read_state(str(FIXTURE), state_var=var).to_pylist()


def test_a_format_1_savepoint_is_still_checked_by_its_crc32s(tmp_path: Path):
    """Format 1 listed CRC32s: it is read and checked by them (a changed file is found), and
    a digest of its listing catches what CRC32 cannot: the file changed and its CRC32 in the
    listing recomputed."""
    saved = tmp_path / "format-1"
    shutil.copytree(SAVEPOINT_FIXTURES / "format-1", saved)
    files = rockstate.read_savepoint(str(saved)).files
    assert all(f.crc32 is not None and f.sha256 is None for f in files)
    source = saved / "sources/0/2"
    source.write_bytes(source.read_bytes().replace(b"2", b"7"))
    (problem,) = check_savepoint(str(saved))
    assert problem.startswith("sources/0/2: CRC32 ")
    listing = json.loads((saved / SAVEPOINT_FILE).read_text())
    for f in listing["files"]:
        if f["path"] == "sources/0/2":
            f["crc32"] = zlib.crc32(source.read_bytes())
    (saved / SAVEPOINT_FILE).write_text(json.dumps(listing, indent=1) + "\n")
    assert check_savepoint(str(saved)) == []  # what a CRC32 listing cannot tell
    (problem,) = check_savepoint(str(saved), expect_digest=FIXTURE_DIGESTS["format-1"])
    assert problem.startswith(f"{SAVEPOINT_FILE}: its SHA-256 is ")
