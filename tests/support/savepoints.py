"""What the savepoint suites share: file digests of a location, and the relocation of a running
query to a savepoint and back (``run_stream``'s ``relocate``)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import fsspec

import rockstate


def digest(url: str | Path) -> dict[str, str]:
    """Every file under ``url`` (checksum sidecars too) -> its SHA-256."""
    fs, root = fsspec.core.url_to_fs(str(url))
    return {p[len(root):]: hashlib.sha256(fs.cat_file(p)).hexdigest()
            for p in sorted(fs.find(root))}


def settled(url: str | Path, quiet_s: float = 2.0, limit_s: float = 60.0) -> dict[str, str]:
    """``digest(url)`` once it stops changing: after a query stops, its last snapshot uploads
    may still land and the coordinator complete their checkpoint."""
    deadline = time.monotonic() + limit_s
    last = digest(url)
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = digest(url)
        if now == last:
            return now
        last = now
    raise AssertionError(f"{url} kept changing for {limit_s} s after its query stopped")


class Relocation:
    """``relocate`` for run_stream: a savepoint of the query taken ``how`` ("stopped": with
    stop_with_savepoint; "running": while the query runs, then stopped), restored to a new
    location; it remembers what must not change afterwards."""

    def __init__(self, workdir: Path, target: str, how: str) -> None:
        self.workdir, self.target, self.how = workdir, target, how
        self.frozen: dict[str, dict[str, str]] = {}
        self.saved: rockstate.SavepointManifest | None = None

    def __call__(self, query, checkpoint: Path | str) -> str:
        if self.how == "stopped":
            self.saved = rockstate.stop_with_savepoint(query, self.target)
        else:
            self.saved = rockstate.savepoint(query, self.target)
            query.stop()
        self.frozen = {"original": settled(checkpoint), "savepoint": digest(self.target)}
        self.original = checkpoint
        return rockstate.restore(self.target, str(self.workdir / "restored"))

    def assert_untouched(self) -> None:
        assert self.saved is not None, "the query was never relocated"
        assert digest(self.target) == self.frozen["savepoint"], "the savepoint changed"
        assert digest(self.original) == self.frozen["original"], "the original changed"
