"""setuptools' build backend, plus one decision: which pyspark the build needs.

rockstate's jar is compiled against the pyspark of the environment being installed into (see
python/rockstate/session/build.py). Only when that environment has no pyspark yet does the
build environment need one of its own, for its Scala compiler and jars: the newest supported
line's, which is also what pip will then install beside rockstate. An environment with Spark
Connect's client (pyspark-client, no jars) gets a client install: no jar, no pyspark (setup.py).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 (the backend's hooks, as setuptools has them)


def _build_module():
    # By path: the package is not installed while it is being built (setup.py does the same).
    path = Path(__file__).resolve().parents[2] / "python" / "rockstate" / "session" / "build.py"
    spec = importlib.util.spec_from_file_location("rockstate_build", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["rockstate_build"] = module
    spec.loader.exec_module(module)
    return module


def _pyspark() -> list[str]:
    build = _build_module()
    if build.target_pyspark() is not None or build.target_is_client():
        return []  # the target's own pyspark, or a Connect client's install (no jar to build)
    return [f"pyspark=={build.spark_lines.LINES[-1].tested}"]


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings) + _pyspark()


def get_requires_for_build_editable(config_settings=None):
    return _setuptools.get_requires_for_build_editable(config_settings) + _pyspark()
