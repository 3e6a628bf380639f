"""Kills a rewrite midway, for real: ``rewrite_child.py`` runs it in a process of its own,
which is SIGKILLed (Python and its JVM) once it reaches the pause point."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def kill_rewrite_at(checkpoint: Path, what: str, pause: str, workdir: Path) -> None:
    """Runs the rewrite ``what`` (a partition count, or ``gain-max``) of ``checkpoint`` and
    SIGKILLs it at ``pause`` (see ``rewrite_child.py``)."""
    marker, log = workdir / f"paused-{pause}", workdir / f"child-{pause}.log"
    with open(log, "w") as err:
        child = subprocess.Popen(
            [sys.executable, str(Path(__file__).parent / "rewrite_child.py"), str(checkpoint),
             what, pause, str(marker)], start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 300
    while not marker.exists():
        assert child.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "the rewrite never reached its pause point"
        time.sleep(0.2)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(60)
    assert child.returncode == -signal.SIGKILL
