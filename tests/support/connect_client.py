"""The Spark Connect client's venv: ``pyspark-client`` and rockstate from this checkout, so no
jar, no py4j and no JVM.

The Connect suite's fixture makes it, or takes one made ahead of it: dev/run-tests runs
``python3 tests/support/connect_client.py DIR`` while the suites before it run (it is mostly
download and copying), which makes ``DIR/venv`` and then writes ``DIR/ready``, or
``DIR/failed`` with what went wrong (pip's output is in ``DIR/log``, where dev/run-tests sends
it); given ``DIR`` in ``ROCKSTATE_CONNECT_CLIENT_DIR``, the fixture waits for one of the two.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The client of the main line's server: pyspark-client 4.3.0 is not on PyPI, and a Connect
# client talks to servers of its own and later lines.
CLIENT_RELEASES = {"4.0": "4.0.4", "4.1": "4.1.3", "4.2": "4.2.0", "4.3": "4.2.0"}
# Where dev/run-tests says it is making the venv.
PREPARED_DIR = "ROCKSTATE_CONNECT_CLIENT_DIR"
READY, FAILED = "ready", "failed"


def make_client_venv(where: Path) -> Path:
    """A venv in ``where/venv`` with pyspark-client (for this environment's Spark line) and
    rockstate installed as a client; returns its Python."""
    import pyspark

    from rockstate.session import spark_lines

    line = spark_lines.line_of(pyspark.__version__)
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
           "--disable-pip-version-check"]
    # pandas 3 makes pyspark warn at import; rockstate itself does not need pandas.
    subprocess.run([*pip, f"pyspark-client=={CLIENT_RELEASES[line]}", "pandas>=2.2,<3"],
                   check=True)
    # From a copy: pip builds a local project in place, and dev/run-tests may be building this
    # checkout for Spark 4.0's venv meanwhile.
    with tempfile.TemporaryDirectory(dir=where) as copy:
        source = Path(copy) / "rockstate"
        shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
            ".git", "build", "target", "jars", "*.egg-info", "__pycache__", ".tools",
            "node_modules"))
        subprocess.run([*pip, str(source)], check=True)
    return venv / "bin" / "python"


def prepared_dir() -> Path | None:
    """The folder dev/run-tests makes the venv in, if it does."""
    where = os.environ.get(PREPARED_DIR)
    return Path(where) if where else None


def prepared_python(where: Path) -> Path | None:
    """The prepared venv's Python once it is ready; None while it is being made. Raises
    with what went wrong if making it failed."""
    if (where / FAILED).exists():
        log = where / "log"
        raise RuntimeError("making the Connect client's venv failed: "
                           + (where / FAILED).read_text()
                           + (log.read_text()[-5000:] if log.exists() else ""))
    return where / "venv" / "bin" / "python" if (where / READY).exists() else None


def main(where: Path) -> int:
    where.mkdir(parents=True, exist_ok=True)
    try:
        make_client_venv(where)
    except (subprocess.CalledProcessError, OSError, ImportError, KeyError) as e:
        (where / FAILED).write_text(f"{type(e).__name__}: {e}\n")
        return 1
    (where / READY).write_text("")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
