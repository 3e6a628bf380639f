"""The installed package, its jar, and the errors a user meets when a piece is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import rockstate
from rockstate import build, jar

REPO = Path(__file__).resolve().parent.parent


def test_installed_package_carries_a_jar_built_for_this_pyspark():
    import pyspark

    path = rockstate.jar_path()
    info = json.loads((path.parent / build.BUILD_INFO).read_text())
    assert info["pyspark_version"] == pyspark.__version__
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
    assert "io/rockstate/state/RockstateStateStoreProvider.class" in names
    assert "io/rockstate/plugin/RockstatePlugin.class" in names


def test_build_compiles_the_shim_with_the_wheels_scala_compiler(tmp_path: Path):
    out = build.build(tmp_path, sources=REPO / "jvm-shim" / "src" / "main" / "scala", quiet=True)
    with zipfile.ZipFile(out) as z:
        names = z.namelist()
    assert "io/rockstate/state/RockstateStateStoreProvider.class" in names
    assert json.loads((tmp_path / build.BUILD_INFO).read_text())["scala"] == "2.13"


def test_missing_java_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(build.BuildError, match="Java was not found"):
        build.find_java()
    # configure() turns it into a setup error before pyspark fails obscurely
    from pyspark.sql import SparkSession

    with pytest.raises(rockstate.RockstateSetupError, match="Install Java 17"):
        rockstate.configure(SparkSession.builder)


def test_wrong_pyspark_version_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    fake = tmp_path / "site" / "pyspark"
    (fake / "jars").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "version.py").write_text('__version__ = "3.5.1"\n')
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "pyspark", raising=False)
    with pytest.raises(build.BuildError, match=r"pyspark 3\.5\.1 is installed.*pip install"):
        build.find_pyspark()


def test_jar_built_for_another_pyspark_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path):
    (tmp_path / build.JAR_NAME).write_bytes(b"PK")
    (tmp_path / build.BUILD_INFO).write_text(json.dumps({"pyspark_version": "4.2.0"}))
    monkeypatch.setattr(jar, "JARS_DIR", tmp_path)
    with pytest.raises(rockstate.RockstateSetupError, match=r"built for pyspark 4\.2\.0"):
        jar.jar_path()


def test_missing_jar_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr(jar, "JARS_DIR", tmp_path)
    with pytest.raises(rockstate.RockstateSetupError, match=r"python -m rockstate\.build"):
        jar.jar_path()


def test_cli_reports_setup_errors_in_one_line(tmp_path: Path):
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "none"),
           "PATH": os.path.dirname(sys.executable)}
    out = subprocess.run([sys.executable, "-m", "rockstate", "build", "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert "Java was not found" in out.stderr


def test_configure_sets_provider_plugin_and_jar():
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.config("spark.plugins", "com.example.Other")
    rockstate.configure(builder, blockCacheSizeMB=64, trackTotalNumberOfRows=False)
    opts = builder._options
    assert opts["spark.sql.streaming.stateStore.providerClass"] == rockstate.PROVIDER_CLASS
    assert opts["spark.plugins"] == f"com.example.Other,{rockstate.PLUGIN_CLASS}"
    assert opts["spark.jars"].endswith("rockstate-shim.jar")
    assert opts["spark.sql.streaming.stateStore.rockstate.blockCacheSizeMB"] == "64"
    assert opts["spark.sql.streaming.stateStore.rockstate.trackTotalNumberOfRows"] == "false"


def test_spark_defaults_snippet_in_conf_matches_configure():
    snippet = (REPO / "conf" / "spark-defaults.conf").read_text()
    for line in rockstate.spark_defaults().splitlines():
        key, value = line.split(None, 1)
        if key == "spark.jars":
            continue  # an installation path; the snippet explains how to get it
        assert f"{key} {value}" in " ".join(snippet.split()), key


def test_rockstate_jar_override_must_exist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("ROCKSTATE_JAR", str(tmp_path / "missing.jar"))
    with pytest.raises(rockstate.RockstateSetupError, match="ROCKSTATE_JAR"):
        jar.jar_path()
    (tmp_path / "built.jar").write_bytes(b"PK")
    monkeypatch.setenv("ROCKSTATE_JAR", str(tmp_path / "built.jar"))
    assert jar.jar_path() == (tmp_path / "built.jar").resolve()
