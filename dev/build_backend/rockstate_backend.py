"""setuptools' build backend, plus one decision: which pyspark the build needs.

rockstate's jar is compiled against the pyspark of the environment being installed into (see
python/rockstate/build.py). Only when that environment has no pyspark yet does the build
environment need one of its own, for its Scala compiler and jars: the newest supported line,
which is also what pip will then install beside rockstate.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 (the backend's hooks, as setuptools has them)

NEWEST = "pyspark==4.3.0"


def _target_has_pyspark() -> bool:
    return any(
        (Path(sysconfig.get_paths()[key]) / "pyspark" / "jars").is_dir()
        for key in ("purelib", "platlib")
    )


def _pyspark() -> list[str]:
    return [] if _target_has_pyspark() else [NEWEST]


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings) + _pyspark()


def get_requires_for_build_editable(config_settings=None):
    return _setuptools.get_requires_for_build_editable(config_settings) + _pyspark()
