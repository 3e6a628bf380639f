"""rockstate taken from a Maven repository, as a cluster takes it: ``spark-submit --packages``
and ``spark.jars.packages`` from PySpark, with only rockstate's two settings and no jar of its
own on the path. ``dev/maven-repo DIR`` publishes the repository; dev/run-tests does it after
the JVM tests and runs this module with ``ROCKSTATE_MAVEN_REPO=DIR`` (alone, it publishes into
a temporary folder first)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rockstate
from rockstate.session import spark_lines

REPO = Path(__file__).resolve().parents[1]
SETTINGS = {"spark.sql.streaming.stateStore.providerClass": rockstate.PROVIDER_CLASS,
            "spark.plugins": rockstate.PLUGIN_CLASS}

# A stateful query that runs to the end of its input (counts per key), then says what it saw:
# the counts, and the state files its store wrote.
APP = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    from pyspark.sql import SparkSession, functions as F

    source, checkpoint, out = sys.argv[1:4]
    confs = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    for k, v in confs.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    counts = {}
    def sink(df, batch_id):
        counts.update({r["key"]: r["n"] for r in df.collect()})
    (spark.readStream.schema("key STRING").json(source).groupBy("key")
        .agg(F.count("*").alias("n")).writeStream.outputMode("update").foreachBatch(sink)
        .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
        .awaitTermination())
    state = sorted(p.name for p in Path(checkpoint, "state", "0").rglob("*") if p.is_file())
    Path(out).write_text(json.dumps({"counts": counts, "state": state,
        "provider": spark.conf.get("spark.sql.streaming.stateStore.providerClass")}))
    spark.stop()
''')


@pytest.fixture(scope="module")
def maven_repo(tmp_path_factory) -> Path:
    given = os.environ.get("ROCKSTATE_MAVEN_REPO")
    if given:
        return Path(given)
    repo = tmp_path_factory.mktemp("maven-repo")
    subprocess.run(["bash", str(REPO / "dev" / "maven-repo"), str(repo)], check=True,
                   cwd=REPO, timeout=1200)
    return repo


def _coordinate() -> str:
    import pyspark

    line = spark_lines.find(pyspark.__version__)
    assert line is not None
    return f"io.rockstate:rockstate-spark-{line.line}_2.13:{rockstate.__version__}"


def test_the_repository_holds_the_jar_its_sources_and_a_pom_with_spark_provided(maven_repo):
    group, artifact, version = _coordinate().split(":")
    folder = maven_repo / group.replace(".", "/") / artifact / version
    names = {p.name for p in folder.iterdir()}
    base = f"{artifact}-{version}"
    assert {f"{base}.jar", f"{base}-sources.jar", f"{base}.pom"} <= names, names
    pom = (folder / f"{base}.pom").read_text()
    assert "<artifactId>spark-sql_2.13</artifactId>" in pom and "<scope>provided</scope>" in pom
    # Spark brings the Scala library; a second copy from --packages would shadow it.
    assert "scala-library" not in pom and "scalatest" not in pom, pom


def _input(tmp_path: Path) -> Path:
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.json").write_text("".join(f'{{"key": "k{i % 3}"}}\n' for i in range(10)))
    return source


def _check(result: dict, ivy: Path) -> None:
    assert result["counts"] == {"k0": 4, "k1": 3, "k2": 3}, result
    assert result["provider"] == rockstate.PROVIDER_CLASS
    # rockstate's own layout (version files), not Spark's (N.delta, N.changelog, N.zip).
    assert any(n.endswith(".rsv") for n in result["state"]), result["state"]
    assert not any(n.endswith((".delta", ".changelog", ".zip")) for n in result["state"])
    # The jar came through Ivy from the repository.
    assert list(ivy.rglob("io.rockstate_rockstate-spark-*.jar")), sorted(ivy.rglob("*.jar"))


def test_spark_submit_packages_runs_a_query_on_rockstate(maven_repo, spark_home: Path,
                                                         tmp_path: Path):
    app, out, ivy = tmp_path / "app.py", tmp_path / "out.json", tmp_path / "ivy"
    app.write_text(APP)
    submit = spark_home / "bin" / "spark-submit"
    confs = [arg for k, v in SETTINGS.items() for arg in ("--conf", f"{k}={v}")]
    subprocess.run([str(submit), "--packages", _coordinate(),
                    "--repositories", maven_repo.as_uri(), "--conf", f"spark.jars.ivy={ivy}",
                    *confs, str(app), str(_input(tmp_path)), str(tmp_path / "checkpoint"),
                    str(out)],
                   check=True, timeout=600, env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    _check(json.loads(out.read_text()), ivy)


def test_spark_jars_packages_from_pyspark_runs_a_query_on_rockstate(maven_repo, spark_home: Path,
                                                                   tmp_path: Path):
    app, out, ivy = tmp_path / "app.py", tmp_path / "out.json", tmp_path / "ivy"
    app.write_text(APP)
    confs = {**SETTINGS, "spark.jars.packages": _coordinate(),
             "spark.jars.repositories": maven_repo.as_uri(), "spark.jars.ivy": str(ivy)}
    subprocess.run([sys.executable, str(app), str(_input(tmp_path)),
                    str(tmp_path / "checkpoint"), str(out), json.dumps(confs)],
                   check=True, timeout=600, env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    _check(json.loads(out.read_text()), ivy)


def test_rockstate_version_names_the_version_the_line_and_the_maven_coordinates():
    out = subprocess.run([sys.executable, "-m", "rockstate", "--version"], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert out.startswith(f"rockstate {rockstate.__version__}; pyspark "), out
    assert out.endswith(f"Maven {_coordinate()}") and "\n" not in out, out
