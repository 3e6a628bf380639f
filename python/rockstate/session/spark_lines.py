"""The Spark lines rockstate supports: the one table to extend for a new Spark line.

Spark's state store provider API changes in every minor line, so rockstate's jar is compiled
per line: the shared sources in ``jvm-shim/src/main/scala``, the line's adapter folder
``jvm-shim/src/spark-<line>/scala``, and every ``jvm-shim/src/spark-<from>+/scala`` folder with
``from`` at or below the line (code several lines share, written once). Adding a line means
adding its folder and a row here.

This module imports only the standard library: ``setup.py`` loads it (through
``rockstate.session.build``) before rockstate or pyspark can be imported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class SparkLine:
    """One minor line of Spark (``4.0``) and what rockstate does on it."""

    line: str
    # The pyspark release CI tests this line with.
    tested: str
    # Whether Spark lets a provider other than its own RocksDBStateStoreProvider serve
    # transformWithState (Spark 4.2+ checks the exact class name, SPARK-54117).
    transform_with_state: bool

    def adapter_folders(self, present: Iterable[str]) -> list[str]:
        """The adapter folders (names under ``jvm-shim/src``) this line compiles, of those
        ``present``: its own, then each shared ``spark-<from>+`` folder it is at or past."""
        shared = sorted(
            (name for name in present
             if name.startswith("spark-") and name.endswith("+")
             and _numbers(name[len("spark-"):-1]) <= _numbers(self.line)),
            key=lambda name: _numbers(name[len("spark-"):-1]))
        return [f"spark-{self.line}", *shared]


def _numbers(line: str) -> tuple[int, ...]:
    return tuple(int(p) for p in line.split("."))


LINES: tuple[SparkLine, ...] = (
    SparkLine("4.0", tested="4.0.5", transform_with_state=True),
    SparkLine("4.1", tested="4.1.4", transform_with_state=True),
    SparkLine("4.2", tested="4.2.1", transform_with_state=False),
    SparkLine("4.3", tested="4.3.0", transform_with_state=False),
)


def line_of(version: str) -> str:
    """``4.0.5`` -> ``4.0``."""
    parts = version.split(".")
    return ".".join(parts[:2])


def find(version: str) -> SparkLine | None:
    """The supported line a pyspark version belongs to, or None."""
    want = line_of(version)
    return next((s for s in LINES if s.line == want), None)


def pyspark_requirement() -> str:
    """The pyspark range the table covers, as ``setup.cfg`` must pin it: from the first line's
    first release to before the minor line after the last (``pyspark>=4.0,<4.4``)."""
    first, last = _numbers(LINES[0].line), _numbers(LINES[-1].line)
    return (f"pyspark>={first[0]}.{first[1]},<{last[0]}.{last[1] + 1}")


def unsupported(version: str) -> str:
    """The error for a pyspark no line of this table covers."""
    return (f"rockstate: pyspark {version} is installed; rockstate supports Spark {supported()}. "
            "Install one of them, e.g. `pip install 'pyspark==4.3.*'`.")


def supported() -> str:
    """For messages: ``4.0, 4.1, 4.2 and 4.3``."""
    names = [s.line for s in LINES]
    return ", ".join(names[:-1]) + " and " + names[-1]
