"""Builds the JVM shim jar as part of building the Python package (see rockstate/build.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _load_build_module():
    spec = importlib.util.spec_from_file_location(
        "rockstate_build", HERE / "python" / "rockstate" / "build.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["rockstate_build"] = module
    spec.loader.exec_module(module)
    return module


class BuildPyWithJar(build_py):
    """Compiles jvm-shim/ with the pyspark wheel's Scala compiler into rockstate/jars/."""

    def run(self):
        super().run()
        builder = _load_build_module()
        out = Path(self.build_lib) / "rockstate" / "jars"
        try:
            builder.build(out, sources=HERE / "jvm-shim" / "src" / "main" / "scala", quiet=True)
        except builder.BuildError as e:
            raise SystemExit(str(e)) from None


setup(cmdclass={"build_py": BuildPyWithJar})
