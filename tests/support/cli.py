"""The ``rockstate`` command as a user runs it: a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys

# Runs the CLI and fails if it imported PySpark's session: the offline tools need no JVM.
_OFFLINE = ("import sys, rockstate.cli as c; r = c.main(sys.argv[1:]); "
            "assert 'pyspark.sql.session' not in sys.modules, 'the CLI imported pyspark'; "
            "sys.exit(r)")


def run_cli(*args: str, timeout: float = 300, offline: bool = False,
            stderr: int = subprocess.PIPE) -> subprocess.CompletedProcess:
    """Runs ``rockstate ARGS`` with this interpreter (tracebacks off, as a user has them) and
    returns it finished, its output as text. ``offline``: also check that it started no
    Spark session. ``stderr``: where its standard error goes (a terminal, to see its
    progress bars)."""
    env = {**os.environ, "ROCKSTATE_DEBUG": ""}
    command = ["-c", _OFFLINE] if offline else ["-m", "rockstate"]
    return subprocess.run([sys.executable, *command, *args], stdout=subprocess.PIPE,
                          stderr=stderr, text=True, env=env, timeout=timeout, check=False)
