"""The handles ``rockstate.Checkpoint`` and ``rockstate.Savepoint``: each method gives what the
free function of the same job gives, on the golden fixtures (no Spark), and calls that function
with the handle's location and options (one implementation). ``rescale`` and ``migrate`` run
here up to their refusals, with a stand-in for the session; their Spark jobs are
tests/test_rewrite.py's.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow.parquet as pq
import pytest

import rockstate
from rockstate.checkpoint import model, offsets
from rockstate.checkpoint.location import CheckpointLocation
from rockstate.live import view
from rockstate.tools import (
    changes,
    forget,
    handles,
    read,
    report,
    restore,
    rewrite,
    savepoint,
    savepoint_manifest,
    transform,
    verify,
)
from rockstate.tools.savepoint_manifest import SAVEPOINT_FILE, SavepointManifest
from support.savepoints import digest

FIXTURES = Path(__file__).parent / "fixtures"
STORE_V5 = FIXTURES / "checkpoint-format" / "v5"
TWS = FIXTURES / "transform-with-state" / "spark-4.0" / "checkpoint"
TWS_VARS = ("total", "items", "counts")
SAVEPOINTS = FIXTURES / "savepoint"


@pytest.fixture()
def agg(tmp_path: Path) -> Path:
    """A checkpoint location whose operator 0 partition 0 is the format-5 fixture's store (an
    aggregation: a count per key over 4 batches)."""
    root = tmp_path / "agg"
    shutil.copytree(STORE_V5 / "store", root / "state" / "0" / "0")
    return root


@pytest.fixture()
def tws(tmp_path: Path) -> Path:
    """A copy of the transformWithState fixture: a whole query's checkpoint (Spark's logs, a
    completed rockstate checkpoint, three state variables)."""
    root = tmp_path / "tws"
    shutil.copytree(TWS, root)
    return root


def _counts(table) -> dict[str, int]:
    return {r["key"]["key"]: r["value"]["count"] for r in table.to_pylist()}


# What each method gives: the free function's result, on a fixture.

def test_read_is_read_state(agg: Path, tws: Path):
    ckpt = rockstate.Checkpoint(agg)
    expected: dict[str, int] = {}
    for batch in json.loads((STORE_V5 / "expected.json").read_text())["batches"]:
        for key in batch:
            expected[key] = expected.get(key, 0) + 1
    assert _counts(ckpt.read()) == expected == {"a": 4, "b": 2, "c": 1, "d": 2, "e": 1}
    assert ckpt.read(workers=1) == rockstate.read_state(str(agg), workers=1)
    assert _counts(ckpt.read(version=2)) == _counts(rockstate.read_state(str(agg), version=2)) \
        == {"a": 3, "b": 1, "c": 1}
    for var in TWS_VARS:
        table = rockstate.Checkpoint(tws).read(state_var=var)
        assert table.num_rows > 0
        assert table == rockstate.read_state(str(tws), state_var=var)


def test_read_changes_is_read_changes(agg: Path):
    ckpt = rockstate.Checkpoint(agg)
    assert ckpt.read_changes() == rockstate.read_changes(str(agg))
    some = ckpt.read_changes(from_batch=1, to_batch=2)
    assert some == rockstate.read_changes(str(agg), from_batch=1, to_batch=2)
    assert sorted(set(some.column("batch_id").to_pylist())) == [1, 2]
    assert ckpt.read_changes().num_rows > some.num_rows


def _datasets(dest: Path) -> dict[str, Any]:
    return {str(p.relative_to(dest)): pq.read_table(p)
            for p in sorted(dest.rglob("*.parquet"))}


def test_export_is_export(tws: Path, tmp_path: Path):
    mine = rockstate.Checkpoint(tws).export(str(tmp_path / "mine"))
    theirs = rockstate.export(str(tws), str(tmp_path / "theirs"))
    assert [Path(p).relative_to(tmp_path / "mine") for p in mine] == \
        [Path(p).relative_to(tmp_path / "theirs") for p in theirs]
    assert len(mine) == len(TWS_VARS)
    written = _datasets(tmp_path / "mine")
    assert written and written == _datasets(tmp_path / "theirs")


def test_verify_is_verify(agg: Path, tws: Path):
    for location in (agg, tws):
        report_ = rockstate.Checkpoint(location).verify()
        assert report_.ok and report_.files_checked > 0
        assert report_.to_dict() == rockstate.verify(str(location)).to_dict()
    pack = next((agg / "state/0/0/sst").glob("4-*.pack"))
    pack.write_bytes(pack.read_bytes()[:-7])
    damaged = rockstate.Checkpoint(agg).verify()
    assert not damaged.ok and any(pack.name in p.path for p in damaged.problems)
    assert damaged.to_dict() == rockstate.verify(str(agg)).to_dict()


def _page(path: Path) -> str:
    """A report page without the time it was generated."""
    return re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "generated -",
                  path.read_text(encoding="utf-8"))


def test_report_is_report(tws: Path, tmp_path: Path):
    mine = rockstate.Checkpoint(tws).report(tmp_path / "mine.html")
    theirs = rockstate.report(str(tws), tmp_path / "theirs.html")
    assert mine == tmp_path / "mine.html"
    assert "Checkpoint history" in _page(mine) and "chart-0" in _page(mine)
    assert _page(mine) == _page(theirs)


def test_checkpoints_and_completed_are_the_locations_checkpoints(tws: Path, agg: Path):
    ckpt = rockstate.Checkpoint(tws)
    seen = ckpt.checkpoints()
    assert seen == rockstate.checkpoints(str(tws))
    assert [c.version for c in seen.completed] == [2] and seen.completed[0].stores
    assert ckpt.completed() == seen.completed
    assert all(isinstance(c, rockstate.CheckpointRecord) for c in ckpt.completed())
    assert rockstate.Checkpoint(agg).completed() == () == rockstate.checkpoints(str(agg)).completed


def test_recorded_confs_and_provider_class(tws: Path):
    ckpt = rockstate.Checkpoint(tws)
    assert ckpt.provider_class() == rockstate.provider_class(str(tws)) == rockstate.PROVIDER_CLASS
    assert ckpt.recorded_confs() == rockstate.recorded_confs(str(tws))
    assert ckpt.recorded_confs(0) == rockstate.recorded_confs(str(tws), 0)
    assert ckpt.recorded_confs()["spark.sql.shuffle.partitions"] == "1"


def test_savepoint_is_savepoint(tws: Path, tmp_path: Path):
    before = digest(tws)
    sp = rockstate.Checkpoint(tws).savepoint(tmp_path / "mine")
    theirs = rockstate.savepoint(str(tws), str(tmp_path / "theirs"))
    assert sp == rockstate.Savepoint(tmp_path / "mine")
    written = sp.manifest()
    assert isinstance(written, SavepointManifest)
    assert written.digest == hashlib.sha256(
        (tmp_path / "mine" / SAVEPOINT_FILE).read_bytes()).hexdigest()
    # The same batch and files as the function's (the time taken, and so the digest, differ).
    assert (written.batch_id, written.state_version, written.query_id, written.source,
            written.files) == (theirs.batch_id, theirs.state_version, theirs.query_id,
                               theirs.source, theirs.files)
    assert written.batch_id == 2 and written.files
    # Read back, the handle's manifest is read_savepoint's.
    again = rockstate.Savepoint(tmp_path / "mine").manifest()
    assert again == written == rockstate.read_savepoint(str(tmp_path / "mine"))
    assert again.digest == written.digest
    assert digest(tws) == before


@pytest.mark.parametrize("fixture", sorted(p.name for p in SAVEPOINTS.iterdir()))
def test_savepoint_handle_reads_and_verifies_as_the_functions(fixture: str):
    saved = SAVEPOINTS / fixture
    sp = rockstate.Savepoint(saved)
    assert sp.manifest() == rockstate.read_savepoint(str(saved))
    assert sp.manifest().digest == rockstate.read_savepoint(str(saved)).digest
    own = hashlib.sha256((saved / SAVEPOINT_FILE).read_bytes()).hexdigest()
    checked = sp.verify(expect_digest=own)
    assert checked.ok and checked.files_checked == len(sp.manifest().files)
    assert checked.to_dict() == rockstate.verify(str(saved), expect_digest=own).to_dict()
    other = hashlib.sha256(next(p for p in SAVEPOINTS.glob(f"*/{SAVEPOINT_FILE}")
                                if p.parent != saved).read_bytes()).hexdigest()
    refused = sp.verify(expect_digest=other)
    assert not refused.ok
    assert refused.to_dict() == rockstate.verify(str(saved), expect_digest=other).to_dict()
    for var in TWS_VARS:
        table = sp.read(state_var=var)
        assert table.num_rows > 0
        assert table == rockstate.read_state(str(saved), state_var=var) == \
            rockstate.read_state(str(TWS), state_var=var)


def test_restore_is_restore(tws: Path, tmp_path: Path):
    rockstate.savepoint(str(tws), str(tmp_path / "sp"))
    before = digest(tmp_path / "sp")
    restored = rockstate.Savepoint(tmp_path / "sp").restore(tmp_path / "mine")
    assert restored == rockstate.Checkpoint(tmp_path / "mine")
    theirs = rockstate.restore(str(tmp_path / "sp"), str(tmp_path / "theirs"))

    def files(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}

    assert files(tmp_path / "mine") == files(Path(theirs)) and "metadata" in files(Path(theirs))
    for var in TWS_VARS:
        assert restored.read(state_var=var) == rockstate.read_state(theirs, state_var=var) == \
            rockstate.read_state(str(tws), state_var=var)
    # keep the query id, and a digest that is not the savepoint's: as the function does.
    kept = rockstate.Savepoint(tmp_path / "sp").restore(tmp_path / "kept", new_query_id=False)
    assert (Path(kept.location) / "metadata").read_text() == (tws / "metadata").read_text()
    wrong = "0" * 64
    with pytest.raises(rockstate.CorruptCheckpointError, match="not the expected digest"):
        rockstate.Savepoint(tmp_path / "sp").restore(tmp_path / "no", expect_digest=wrong)
    with pytest.raises(rockstate.CorruptCheckpointError, match="not the expected digest"):
        rockstate.restore(str(tmp_path / "sp"), str(tmp_path / "no"), expect_digest=wrong)
    assert not (tmp_path / "no").exists()
    assert digest(tmp_path / "sp") == before


def test_a_savepoint_handle_refuses_a_checkpoint_location(tws: Path, tmp_path: Path):
    """rockstate.verify checks whatever it is given; the Savepoint handle's methods are a
    savepoint's, so a checkpoint location is refused (naming the Checkpoint handle)."""
    assert rockstate.verify(str(tws)).ok
    sp = rockstate.Savepoint(tws)
    for call in (sp.verify, sp.read, sp.manifest, lambda: sp.restore(tmp_path / "r")):
        with pytest.raises(rockstate.RockstateError, match="not a savepoint"):
            call()
    assert not (tmp_path / "r").exists()


class _Spark:
    """A stand-in for a session: what a rewrite asks before its job (the running queries)."""

    def __init__(self, running_on: Path | None = None) -> None:
        queries = [] if running_on is None else [SimpleNamespace(
            name="q", id="id",
            _jsq=SimpleNamespace(streamingQuery=lambda: SimpleNamespace(
                resolvedCheckpointRoot=lambda: f"file:{running_on}")))]
        self.streams = SimpleNamespace(active=queries)


def _refusal(call: Callable[[], Any]) -> str:
    with pytest.raises(rockstate.RockstateError) as e:
        call()
    return str(e.value)


def test_rescale_and_migrate_refuse_as_the_functions(tws: Path):
    """Up to the Spark job, with a stand-in session: the handle gives the function's refusals
    (the fixture runs on 1 partition on rockstate), and nothing is written."""
    ckpt, spark, before = rockstate.Checkpoint(tws), _Spark(), digest(tws)
    same = _refusal(lambda: ckpt.rescale(spark, 1))
    assert "already has 1 partitions" in same and "nothing to do" in same
    assert same == _refusal(lambda: rockstate.rescale(spark, str(tws), 1))
    same = _refusal(lambda: ckpt.migrate(spark, "rockstate"))
    assert "nothing to do" in same
    assert same == _refusal(lambda: rockstate.migrate(spark, str(tws), "rockstate"))
    unknown = _refusal(lambda: ckpt.migrate(spark, "hdfs"))
    assert "cannot migrate to 'hdfs'" in unknown
    assert unknown == _refusal(lambda: rockstate.migrate(spark, str(tws), "hdfs"))
    busy = _Spark(running_on=tws)
    running = _refusal(lambda: ckpt.rescale(busy, 2))
    assert "is running on" in running
    assert running == _refusal(lambda: rockstate.rescale(busy, str(tws), 2))
    assert digest(tws) == before


def test_storage_options_open_the_handles_file_system(agg: Path):
    """``storage_options`` reach fsspec as they do through the functions: fsspec's ``dir://``
    file system is rooted where its ``path`` option says, so without them nothing is read."""
    options = {"path": str(agg), "target_protocol": "file"}
    ckpt = rockstate.Checkpoint("dir://", storage_options=options)
    assert ckpt.read(workers=1) == rockstate.read_state("dir://", storage_options=options) == \
        rockstate.read_state(str(agg), workers=1)
    assert ckpt.verify().ok
    with pytest.raises(Exception):  # noqa: B017 - fsspec's error for a dir:// with no root
        rockstate.Checkpoint("dir://").read(workers=1)


# One implementation: each method calls its function, with the handle's location and options.

LOCATION, SAVED = "memory://handles/ckpt", str(SAVEPOINTS / "format-2")
OPTIONS, OTHER = {"for": "the handle's location"}, {"for": "the method's location"}


def _progress(_: str) -> None:
    pass


def _record(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, returns: Any
            ) -> list[dict[str, Any]]:
    """Replaces ``module.name``; each call is recorded as the arguments it binds to the real
    function's parameters (defaults filled in, an opened location as its URL)."""
    real = getattr(module, name)
    calls: list[dict[str, Any]] = []

    def fake(*args: Any, **kwargs: Any) -> Any:
        bound = inspect.signature(real).bind(*args, **kwargs)
        bound.apply_defaults()
        calls.append({k: v.url if isinstance(v, CheckpointLocation) else v
                      for k, v in bound.arguments.items()})
        return returns

    monkeypatch.setattr(module, name, fake)
    return calls


SPARK = object()
KEYS = object()  # a DataFrame of keys
WRITTEN = SavepointManifest(url="memory://handles/sp", batch_id=1, state_version=2,
                            query_id="q", source=LOCATION, created_at="now", files=())
CK = rockstate.Checkpoint(LOCATION, OPTIONS)
SP = rockstate.Savepoint(SAVED, OPTIONS)
SP_PLAIN = rockstate.Savepoint(SAVED)  # a real savepoint: its methods open it first

DELEGATION: list[tuple[str, Callable[[], Any], Any, str, Any, dict[str, Any]]] = [
    ("read", lambda: CK.read(1, 5, [0], "s", _progress, "v", 2), read, "read_state", "t",
     {"location": LOCATION, "operator": 1, "version": 5, "partitions": [0], "store": "s",
      "progress": _progress, "state_var": "v", "storage_options": OPTIONS, "workers": 2}),
    ("read_changes", lambda: CK.read_changes(1, 2, 3, [0], "s"), changes, "read_changes", "t",
     {"location": LOCATION, "operator": 1, "from_batch": 2, "to_batch": 3, "partitions": [0],
      "store": "s", "storage_options": OPTIONS}),
    ("export", lambda: CK.export("memory://out", version=4, progress=_progress,
                                 target_options=OTHER), read, "export", ["d"],
     {"location": LOCATION, "dest": "memory://out", "format": "parquet", "version": 4,
      "progress": _progress, "storage_options": OPTIONS, "dest_options": OTHER}),
    ("verify", lambda: CK.verify(_progress), verify, "verify", "r",
     {"location": LOCATION, "progress": _progress, "storage_options": OPTIONS,
      "expect_digest": None}),
    ("report", lambda: CK.report("page.html", _progress), report, "report", "p",
     {"source": LOCATION, "path": "page.html", "progress": _progress,
      "storage_options": OPTIONS}),
    ("checkpoints", lambda: CK.checkpoints(), view, "checkpoints", "c",
     {"source": LOCATION, "storage_options": OPTIONS, "spark": None}),
    ("recorded_confs", lambda: CK.recorded_confs(3), offsets, "recorded_confs", {},
     {"checkpoint_location": LOCATION, "batch_id": 3, "storage_options": OPTIONS}),
    ("provider_class", lambda: CK.provider_class(), offsets, "provider_class", "x",
     {"checkpoint_location": LOCATION, "storage_options": OPTIONS}),
    ("savepoint", lambda: CK.savepoint("memory://handles/sp", target_options=OTHER,
                                       progress=_progress), savepoint, "savepoint", WRITTEN,
     {"source": LOCATION, "target": "memory://handles/sp", "progress": _progress,
      "storage_options": OPTIONS, "target_options": OTHER}),
    ("rescale", lambda: CK.rescale(SPARK, 4), rewrite, "rescale", "r",
     {"spark": SPARK, "checkpoint": LOCATION, "partitions": 4,
      "kwargs": {"storage_options": OPTIONS}}),
    ("migrate", lambda: CK.migrate(SPARK, "rockstate", 4), rewrite, "migrate", "r",
     {"spark": SPARK, "checkpoint": LOCATION, "to": "rockstate", "partitions": 4,
      "kwargs": {"storage_options": OPTIONS}}),
    ("forget", lambda: CK.forget(SPARK, KEYS, purge_history=True), forget, "forget", "r",
     {"spark": SPARK, "checkpoint": LOCATION, "keys": KEYS, "purge_history": True,
      "storage_options": OPTIONS}),
    ("transform", lambda: CK.transform(SPARK, 2, _progress, value_schema="n INT"), transform,
     "transform", "r",
     {"spark": SPARK, "checkpoint": LOCATION, "operator": 2, "fn": _progress,
      "value_schema": "n INT", "storage_options": OPTIONS}),
    ("Savepoint.manifest", lambda: SP.manifest(), savepoint_manifest, "read_savepoint", WRITTEN,
     {"location": SAVED, "storage_options": OPTIONS}),
    ("Savepoint.restore", lambda: SP.restore("memory://handles/new", target_options=OTHER,
                                             new_query_id=False, expect_digest="ab"),
     restore, "restore", "memory://handles/new",
     {"savepoint_url": SAVED, "checkpoint": "memory://handles/new", "new_query_id": False,
      "storage_options": OPTIONS, "target_options": OTHER, "expect_digest": "ab"}),
    ("Savepoint.verify", lambda: SP_PLAIN.verify("ab"), verify, "verify", "r",
     {"location": SAVED, "progress": None, "storage_options": None, "expect_digest": "ab"}),
    ("Savepoint.read", lambda: SP_PLAIN.read(1, [0], "s", _progress, "v", 2), read,
     "read_state", "t",
     {"location": SAVED, "operator": 1, "version": None, "partitions": [0], "store": "s",
      "progress": _progress, "state_var": "v", "storage_options": None, "workers": 2}),
]


@pytest.mark.parametrize("method,call,module,name,returns,expected", DELEGATION,
                         ids=[d[0] for d in DELEGATION])
def test_each_method_calls_its_function(monkeypatch: pytest.MonkeyPatch, method: str,
                                        call: Callable[[], Any], module: Any, name: str,
                                        returns: Any, expected: dict[str, Any]):
    calls = _record(monkeypatch, module, name, returns)
    result = call()
    assert calls == [expected]
    if method == "savepoint":  # the handle of what was written, its manifest as written
        assert result == rockstate.Savepoint("memory://handles/sp", OTHER)
        assert result.manifest() is WRITTEN
    elif method == "Savepoint.restore":
        assert result == rockstate.Checkpoint("memory://handles/new", OTHER)
    else:
        assert result is returns


def test_every_handle_method_is_covered():
    """A method added to a handle joins DELEGATION (or the fixture tests above, as
    ``completed`` does: it reads the location's completed checkpoints itself)."""
    covered = {d[0] for d in DELEGATION} | {"completed"}
    public = {name for name, _ in inspect.getmembers(rockstate.Checkpoint, inspect.isfunction)
              if not name.startswith("_")} | \
             {f"Savepoint.{name}" for name, _ in inspect.getmembers(rockstate.Savepoint,
                                                                    inspect.isfunction)
              if not name.startswith("_")}
    assert public == covered


# The API's names.

def test_one_meaning_per_name():
    """rockstate.Checkpoint and rockstate.Savepoint are the handles; what a checkpoint and a
    savepoint record are CheckpointRecord and SavepointManifest, under no other name."""
    assert rockstate.Checkpoint is handles.Checkpoint
    assert rockstate.Savepoint is handles.Savepoint
    assert rockstate.CheckpointRecord is model.CheckpointRecord
    assert rockstate.SavepointManifest is savepoint_manifest.SavepointManifest
    assert not hasattr(model, "Checkpoint") and not hasattr(savepoint_manifest, "Savepoint")
    assert isinstance(rockstate.checkpoints(str(TWS)).completed[0], rockstate.CheckpointRecord)
    assert isinstance(rockstate.read_savepoint(str(SAVEPOINTS / "format-2")),
                      rockstate.SavepointManifest)
    assert {"Checkpoint", "Savepoint", "CheckpointRecord", "SavepointManifest"} <= \
        set(rockstate.__all__)


# What the functions call a place, each its own way; the handles say ``location`` for their own
# and ``target`` (with ``target_options``) for where a method writes.
OLD_LOCATION_NAMES = {"source", "checkpoint", "checkpoint_location", "savepoint_url", "url",
                      "dest", "dest_options", "path"}
WRITES_ELSEWHERE = {"export", "savepoint", "restore"}


@pytest.mark.parametrize("handle", [rockstate.Checkpoint, rockstate.Savepoint])
def test_the_handles_speak_one_vocabulary(handle: type):
    fields = list(inspect.signature(handle).parameters)
    assert fields == ["location", "storage_options"]
    for name, method in inspect.getmembers(handle, inspect.isfunction):
        if name.startswith("_"):
            continue
        params = set(inspect.signature(method).parameters)
        assert not params & OLD_LOCATION_NAMES, (name, params & OLD_LOCATION_NAMES)
        assert "storage_options" not in params, name  # the handle's own, given once
        if name in WRITES_ELSEWHERE:
            assert {"target", "target_options"} <= params, (name, params)


def test_the_free_functions_are_aliases_outside_the_documented_api():
    """The handles are the API; the functions that only do a handle's job stay importable
    (rockstate.read_state, ...) but are not in ``__all__``."""
    aliases = {"read_state", "read_changes", "export", "verify", "read_savepoint", "restore",
               "rescale", "migrate", "forget", "transform", "recorded_confs",
               "provider_class"}
    assert not aliases & set(rockstate.__all__)
    assert all(callable(getattr(rockstate, name)) for name in aliases)


def test_a_handle_is_a_value(agg: Path):
    """Made from a path or URL (a Path too), equal to another of the same location and
    options, hashable, and its repr leaves out the options (credentials)."""
    secret = {"secret": "do-not-print"}
    ckpt = rockstate.Checkpoint(agg, storage_options=secret)
    assert ckpt.location == str(agg) and isinstance(ckpt.location, str)
    assert ckpt == rockstate.Checkpoint(str(agg), secret) != rockstate.Checkpoint(str(agg))
    assert len({ckpt, rockstate.Checkpoint(str(agg), secret)}) == 1
    assert "do-not-print" not in repr(ckpt) and str(agg) in repr(ckpt)
    with pytest.raises(TypeError, match=re.escape(f"rockstate.Checkpoint({str(agg)!r}")):
        rockstate.Checkpoint(CheckpointLocation(str(agg)))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not int"):
        rockstate.Savepoint(3)  # type: ignore[arg-type]
