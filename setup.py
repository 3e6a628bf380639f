"""Builds the JVM shim jar as part of building the Python package (rockstate/session/build.py)."""

from __future__ import annotations

import configparser
import importlib.util
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _load_build_module():
    spec = importlib.util.spec_from_file_location(
        "rockstate_build", HERE / "python" / "rockstate" / "session" / "build.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["rockstate_build"] = module
    spec.loader.exec_module(module)
    return module


BUILDER = _load_build_module()
# Installed next to pyspark-client (Spark Connect's client, no JVM), rockstate is a Connect
# client: it depends on pyspark-client instead of pyspark, and builds no jar.
CLIENT = BUILDER.target_is_client()


def _install_requires() -> list[str]:
    """setup.cfg's requirements, with pyspark-client for pyspark in a client install."""
    config = configparser.ConfigParser()
    config.read(HERE / "setup.cfg")
    found = [r.strip() for r in config["options"]["install_requires"].splitlines() if r.strip()]
    if not CLIENT:
        return found
    spark = BUILDER.spark_lines.pyspark_requirement()
    kept = [r for r in found if r != spark and not r.startswith("py4j")]  # py4j: classic only
    return [*kept, "pyspark-client" + spark[len("pyspark"):]]


class BuildPyWithJar(build_py):
    """Compiles jvm-shim/ for the installed Spark line with its pyspark's Scala compiler into
    rockstate/jars/ (not for a client install), and ships the sources beside it."""

    def run(self):
        super().run()
        package = Path(self.build_lib) / "rockstate"
        try:
            if not CLIENT:
                BUILDER.build(package / "jars", sources=HERE, quiet=True)
        except BUILDER.BuildError as e:
            raise SystemExit(str(e)) from None
        # The sources of every line travel with the package: installed next to another Spark
        # line than the jar's (a wheel built elsewhere), rockstate builds its jar on first use.
        target = package / BUILDER.PACKAGED_SOURCES / "jvm-shim" / "src"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(HERE / "jvm-shim" / "src", target,
                        ignore=shutil.ignore_patterns("test", "testkit"))


setup(cmdclass={"build_py": BuildPyWithJar}, install_requires=_install_requires())
