"""Where the installed package keeps its jar, and the checks that it fits the running pyspark.

The jar is compiled for one Spark line. ``pip install`` compiles it for the line installed
beside rockstate; a wheel built next to another line carries the sources too, and the jar for
the installed line is then compiled once, on first use, into a cache folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import zipfile
from pathlib import Path

from rockstate.errors import RockstateSetupError
from rockstate.session import spark_lines
from rockstate.session.build import (
    BUILD_INFO,
    JAR_NAME,
    PACKAGED_SOURCES,
    BuildError,
    build,
    target_is_client,
)

# The rockstate package (this module is in its session/ folder): the jar and sources are there.
PACKAGE_DIR = Path(__file__).resolve().parents[1]
JARS_DIR = PACKAGE_DIR / "jars"


def installed_pyspark() -> str:
    import pyspark

    version = pyspark.__version__
    if spark_lines.find(version) is None:
        raise RockstateSetupError(spark_lines.unsupported(version))
    return version


def jar_line(jar: Path) -> str | None:
    """The Spark line a rockstate jar was built for (its manifest says), or None."""
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    for row in text.splitlines():
        key, _, value = row.partition(":")
        if key.strip() == "Rockstate-Spark-Line":
            return value.strip()
    return None


def jar_path() -> Path:
    """The shim jar for the installed pyspark's line.

    ``ROCKSTATE_JAR`` points at another build of the same shim instead (for example the one
    ``dev/sbt shim/package`` writes to ``jvm-shim/target/rockstate-shim.jar``).
    """
    version = installed_pyspark()
    _refuse_client_install()
    line = spark_lines.line_of(version)
    override = os.environ.get("ROCKSTATE_JAR")
    if override:
        if not Path(override).is_file():
            raise RockstateSetupError(
                f"rockstate: ROCKSTATE_JAR={override} is not a file; build it "
                "(`dev/sbt shim/package`) or unset ROCKSTATE_JAR."
            )
        built_for = jar_line(Path(override))
        if built_for != line:
            raise RockstateSetupError(
                f"rockstate: ROCKSTATE_JAR={override} was built for Spark {built_for or '?'} "
                f"but pyspark {version} is installed; rebuild it against this pyspark "
                "(`dev/sbt shim/package`) or unset ROCKSTATE_JAR."
            )
        return Path(override).resolve()
    jar = JARS_DIR / JAR_NAME
    info_file = JARS_DIR / BUILD_INFO
    built_for = None
    if jar.is_file() and info_file.is_file():
        built_for = json.loads(info_file.read_text())["pyspark_version"]
        if spark_lines.line_of(built_for) == line:
            return jar
    return _built_on_first_use(version, built_for)


def _refuse_client_install() -> None:
    if target_is_client():  # the running pyspark, found the way the build finds it
        raise RockstateSetupError(
            "rockstate: this environment has Spark Connect's client (pyspark-client), which has "
            "no Spark jars and runs no JVM, so rockstate has no jar here. Connect to a server "
            "that runs rockstate (start one with `rockstate connect-server` where pyspark is "
            "installed; docs/connect.md), or install pyspark for a classic session.")


def cache_dir() -> Path:
    base = os.environ.get("ROCKSTATE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rockstate")
    return Path(base)


def _sources_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(f for f in root.rglob("*") if f.is_file()):
        h.update(p.relative_to(root).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _built_on_first_use(version: str, built_for: str | None) -> Path:
    """The jar for pyspark `version`, compiled from the packaged sources once and cached.
    `built_for`: the pyspark the installed jar is for, None when there is no jar."""
    sources = PACKAGE_DIR / PACKAGED_SOURCES
    if not sources.is_dir() and built_for is None:
        raise RockstateSetupError(
            f"rockstate: the JVM shim jar is missing ({JARS_DIR / JAR_NAME}); build it with "
            "`python -m rockstate.session.build` (needs Java 17+) or reinstall rockstate."
        )
    if not sources.is_dir():
        raise RockstateSetupError(
            f"rockstate: the jar was built for pyspark {built_for} but pyspark {version} is "
            "installed; reinstall rockstate next to this pyspark (`pip install --force-reinstall "
            f"--no-deps rockstate`) or `pip install 'pyspark=={built_for}'`."
        )
    out = cache_dir() / f"jar-{_sources_digest(sources)}" / f"pyspark-{version}"
    jar = out / JAR_NAME
    if jar.is_file() and jar_line(jar) == spark_lines.line_of(version):
        return jar
    was = f"the installed one is for pyspark {built_for}" if built_for else "none is installed"
    print(f"rockstate: compiling the jar for pyspark {version} once ({was}); "
          f"it is kept in {out}", file=sys.stderr)
    try:
        return build(out, sources=sources, quiet=True)
    except BuildError as e:
        raise RockstateSetupError(
            f"{e}\nrockstate: or reinstall rockstate next to pyspark {version} "
            "(`pip install --force-reinstall --no-deps rockstate`)."
        ) from None
