"""The offline tools on a real rockstate checkpoint: inspect and verify, no Spark needed.

The checkpoint is made once by a real query (snapshots every 2 versions, so it holds
snapshots, shared SSTs and changelogs); each damage test works on a copy of it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import fsspec
import pytest
from pyspark.sql import functions as F

import rockstate
from rockstate.checkpoint import operator_metadata
from rockstate.checkpoint.file_kind import FileKind
from rockstate.checkpoint.location import CheckpointLocation
from support.cli import run_cli
from support.streams import run_stream

SCHEMA = "key STRING, value INT, ts TIMESTAMP"


@pytest.fixture(scope="module")
def built(sessions, tmp_path_factory) -> Path:
    spark = sessions.get("local")
    work = tmp_path_factory.mktemp("offline")
    batches = [[{"key": f"k{(b * 5 + i) % 23}", "value": i, "ts": "2026-01-01 00:00:00"}
                for i in range(40)] for b in range(6)]
    run = run_stream(spark, rockstate.PROVIDER_CLASS,
                     lambda s: s.groupBy("key").agg(F.count("*").alias("n")),
                     batches, workdir=work, name="offline", schema=SCHEMA)
    spark.sparkContext._jvm.io.rockstate.plugin.LocalDiagnostics.awaitUploadsIdle(60000)
    # The driver writes checkpoint 6's metadata once the last acknowledgement arrives.
    metadata = run.checkpoint / "rockstate" / "checkpoints" / "6" / "_metadata"
    for _ in range(120):
        if metadata.exists():
            break
        time.sleep(0.5)
    assert metadata.exists(), "checkpoint 6 did not complete"
    return run.checkpoint


@pytest.fixture()
def copy(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "checkpoint"
    shutil.copytree(built, target)
    return target


def _store_file(checkpoint: Path, sub: str, suffix: str) -> Path:
    files = sorted(p for p in (checkpoint / "state" / "0" / "0" / sub).rglob(f"*{suffix}")
                   if not p.name.startswith("."))
    assert files, f"no {suffix} under {sub}"
    return files[0]


def _referenced(checkpoint: Path, kind: str) -> Path:
    """A file of that kind which the latest version of partition 0 really needs."""
    loc = CheckpointLocation(str(checkpoint))
    store = loc.stores()[0]
    m = loc.manifest(store, loc.versions(store)[-1])
    if kind == "changelog":
        return Path(store.path) / m.changelogs[0].path
    assert m.snapshot, "the latest version should build on a snapshot"
    snap = loc.snapshot_manifest(store, m.snapshot.path, "test")
    return Path(store.path) / next(f.path for f in snap.files if f.kind == "sst")


def test_inspect_lists_operators_stores_versions_and_snapshots(built: Path):
    summary = CheckpointLocation(str(built)).summary()
    assert summary["operators"] == [0]
    loc = CheckpointLocation(str(built))
    assert operator_metadata.operator_kinds(loc) == {0: "stateStoreSave"}  # ids transform takes
    assert [(s["operator"], s["partition"], s["store"]) for s in summary["stores"]] == \
        [(0, 0, "default"), (0, 1, "default")]
    for s in summary["stores"]:
        # Six batches; maintenance may already have expired version 1 (5 retained).
        assert s["versions"] in ([1, 2, 3, 4, 5, 6], [2, 3, 4, 5, 6])
        assert s["snapshots"] and all(v % 2 == 0 for v in s["snapshots"])
        assert s["columnFamilies"] == ["default"]
    assert sum(s["numKeys"] for s in summary["stores"]) == 23


def test_verify_passes_a_sound_checkpoint(built: Path):
    report = rockstate.verify(str(built))
    assert report.ok, [str(p) for p in report.problems]
    assert report.stores == 2 and report.versions >= 10
    assert report.files_checked > 12  # changelogs, snapshot SSTs and meta files


def test_verify_finds_a_missing_sst(copy: Path):
    sst = _referenced(copy, "sst")
    sst.unlink()
    problems = rockstate.verify(str(copy)).problems
    assert any(p.path.endswith(sst.name) and p.what == "missing" and p.versions
               for p in problems), problems


def test_verify_finds_a_truncated_sst(copy: Path):
    sst = _referenced(copy, "sst")
    sst.write_bytes(sst.read_bytes()[: sst.stat().st_size // 2])
    problems = rockstate.verify(str(copy)).problems
    assert any(p.path.endswith(sst.name) and "truncated" in p.what for p in problems), problems


def test_verify_finds_a_truncated_version_file(copy: Path):
    loc = CheckpointLocation(str(copy))
    store = next(s for s in loc.stores() if s.partition == 1)
    entry = loc.landed(store, 4)
    version_file = Path(store.path) / entry.path
    version_file.write_bytes(version_file.read_bytes()[:-10])
    problems = rockstate.verify(str(copy)).problems
    assert problems and problems[0].path == entry.path
    assert "trailer" in problems[0].what and problems[0].versions == (4,)


def test_verify_finds_a_missing_changelog(copy: Path):
    changelog = _referenced(copy, "changelog")
    changelog.unlink()
    problems = rockstate.verify(str(copy)).problems
    assert any(p.path.endswith(changelog.name) and p.what == "missing" for p in problems)


def test_verify_checks_a_store_again_when_maintenance_expires_a_version(copy: Path):
    """A stopped query's executors still run maintenance: a version listed at the start of a
    check may expire (its file deleted) before its file is read. That is no missing file."""
    loc = CheckpointLocation(str(copy))
    store = loc.stores()[0]
    entries = loc.version_entries(store)
    needs = {e.path: set(loc.manifest(store, e.version, e).references()) for e in entries}
    # The oldest versions no later lineage needs expire together, as cleanup expires them.
    oldest = next(entries[:k] for k in range(1, len(entries))
                  if not any(needs[e.path] & {o.path for o in entries[:k]} for e in entries[k:]))
    read = loc.read
    expired: list[str] = []

    def read_while_cleanup_runs(s, relative: str, needed_by: str,
                                byte_range: tuple[int, int] | None = None,
                                **kind: FileKind) -> bytes:
        if not expired and s == store and needed_by == "verify":
            for e in reversed(oldest):
                (Path(store.path) / e.path).unlink()
                expired.append(e.path)
        return read(s, relative, needed_by, byte_range, **kind)

    loc.read = read_while_cleanup_runs
    report = rockstate.verify(loc)
    assert expired, "the check never read a file of the store"
    assert report.ok, [str(p) for p in report.problems]
    assert report.versions == sum(len(loc.versions(s)) for s in loc.stores())


def test_memory_filesystem_copy_reads_the_same(built: Path):
    fs = fsspec.filesystem("memory")
    fs.put(str(built), "/offline-copy", recursive=True)
    on_disk = CheckpointLocation(str(built)).summary()
    in_memory = CheckpointLocation("memory://offline-copy").summary()
    assert in_memory["stores"] == on_disk["stores"]
    assert in_memory["checkpoints"] == on_disk["checkpoints"]
    assert rockstate.checkpoints("memory://offline-copy").completed == \
        rockstate.checkpoints(str(built)).completed
    assert rockstate.verify("memory://offline-copy").ok


def test_completed_checkpoints_read_offline(built: Path):
    view = rockstate.checkpoints(str(built))
    assert [c.version for c in view.completed] == [2, 4, 6]
    for c in view.completed:
        assert c.status == "completed" and c.batch_id == c.version - 1
        assert {(s.operator, s.store, s.partition) for s in c.stores} == \
            {(0, "default", 0), (0, "default", 1)}
        assert all((built / s.store_dir / s.snapshot_manifest).exists() for s in c.stores)
    assert view.latest.num_keys == 23
    assert rockstate.verify(str(built)).checkpoints == 3


def test_verify_finds_a_corrupt_checkpoint_metadata(copy: Path):
    metadata = copy / "rockstate" / "checkpoints" / "4" / "_metadata"
    metadata.write_text(metadata.read_text()[:50])
    (metadata.parent / "._metadata.crc").unlink(missing_ok=True)
    problems = rockstate.verify(str(copy)).problems
    assert [p.path for p in problems] == ["rockstate/checkpoints/4/_metadata"]
    assert "not valid JSON" in problems[0].what


def test_verify_finds_a_snapshot_a_checkpoint_needs_missing(copy: Path):
    named = rockstate.checkpoints(str(copy)).completed[-1].stores[0]
    (copy / named.store_dir / named.snapshot_manifest).unlink()
    problems = rockstate.verify(str(copy)).problems
    mine = [p for p in problems if p.store == "checkpoint 6"]
    assert len(mine) == 1 and mine[0].what.startswith("missing") and mine[0].versions == (6,)


def test_cli_verify_and_inspect_run_without_spark(built: Path, copy: Path):
    def cli(*args: str) -> subprocess.CompletedProcess:
        # A fresh interpreter: the tools must not need a JVM or a SparkSession.
        return run_cli(*args, offline=True)

    ok = cli("verify", str(built), "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["ok"] is True
    table = cli("inspect", str(built))
    assert table.returncode == 0 and "..6 (" in table.stdout, table.stdout + table.stderr
    assert "operators 0 (stateStoreSave)" in table.stdout
    _referenced(copy, "sst").unlink()
    bad = cli("verify", str(copy))
    assert bad.returncode == 1 and "PROBLEM" in bad.stdout and "missing" in bad.stdout
