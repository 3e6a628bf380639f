"""Slow storage for the kill tests, from the test kit's fault-injecting file system.

The sessions register ``rsfault://`` (``io.rockstate.testing.FaultInjectingFileSystem``, the
local disk with faults) and name one plan file; a checkpoint under ``on_faults(path)`` goes
through it, and ``slow_uploads`` / ``slow_cleanup`` write the plan's rules for the duration of
a ``with`` block, in every executor. rockstate itself has no setting for tests.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

PLAN = Path(tempfile.gettempdir()) / f"rockstate-fault-plan-{os.getpid()}.json"
SCHEME = "rsfault://"

# What a snapshot uploads (FaultRule.UploadedFiles), and the threads that upload in the
# background (a snapshot the task takes on the commit path is not slowed).
_UPLOADED = "/(sst|snapshots|meta)/"
_UPLOAD_THREADS = "rockstate-snapshot-upload"


def session_confs() -> dict[str, str]:
    """The Spark confs that register the scheme and the plan in the driver and executors."""
    return {"spark.hadoop.fs.rsfault.impl": "io.rockstate.testing.FaultInjectingFileSystem",
            "spark.hadoop.fs.rsfault.plan": str(PLAN)}


def on_faults(path: Path | str) -> str:
    """``path`` (a local directory) as a location the plan's rules apply to."""
    return SCHEME + str(Path(path).resolve())


def local(location: Path | str) -> Path:
    """The local directory behind a location (``on_faults``' or a plain path)."""
    text = str(location)
    return Path(text[len(SCHEME):] if text.startswith(SCHEME) else text)


@contextmanager
def _plan(rules: list[dict]) -> Iterator[None]:
    PLAN.write_text(json.dumps({"rules": rules}))
    try:
        yield
    finally:
        PLAN.write_text(json.dumps({"rules": []}))


def slow_uploads(ms: int) -> AbstractContextManager[None]:
    """Every background snapshot upload's files (and its manifest) take ``ms`` longer."""
    return _plan([{"op": "create", "pathRegex": _UPLOADED, "when": "before",
                   "action": f"pause:{ms}", "every": True, "process": "any",
                   "thread": _UPLOAD_THREADS}])


def slow_cleanup(ms: int) -> AbstractContextManager[None]:
    """Cleanup pauses ``ms`` after each version file it expires."""
    return _plan([{"op": "delete", "pathRegex": "/versions/", "when": "after",
                   "action": f"pause:{ms}", "every": True, "process": "any"}])
