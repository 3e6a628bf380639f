"""Shared Spark sessions for the suites.

One JVM per Python process means one SparkContext at a time, so the sessions are handed out
by a small manager: every `local[2]` test shares one session, every `local-cluster` test
shares another, and the cluster tests are ordered last so each session starts once.

Both sessions can reach an S3 API server (moto, in this process) through `s3a://`: a JVM's
jars are fixed when it starts, so the server and the `hadoop-aws` jars (downloaded once from
Maven Central, cached) are set up before the first session, and the `s3` fixture hands the
server to the tests that put their checkpoints there.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import faults
from support.testkit_jar import testkit_jar

# Python workers run this interpreter: a `python3` off PATH may carry another pyspark line.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# local-cluster workers write executor logs under SPARK_HOME/work unless told otherwise.
os.environ.setdefault("SPARK_WORKER_DIR", tempfile.mkdtemp(prefix="rockstate-workers-"))
# The local-cluster session reports Spark's metrics (rockstate's among them) to CSV files here.
METRICS_DIR = os.environ.setdefault("ROCKSTATE_TEST_METRICS_DIR",
                                    tempfile.mkdtemp(prefix="rockstate-metrics-"))


class Sessions:
    def __init__(self) -> None:
        self.kind: str | None = None
        self.session = None
        self._s3 = None
        # Where the "ui" session's event log goes (the History Server tests read it).
        self.event_log_dir = Path(tempfile.mkdtemp(prefix="rockstate-eventlog-"))

    @property
    def s3(self):
        """The S3 API server every session of this run can reach (started on first use)."""
        if self._s3 is None:
            from support.s3 import S3Server

            self._s3 = S3Server().start()
        return self._s3

    def get(self, kind: str):
        if self.kind == kind and self.session is not None:
            return self.session
        self.stop()
        from pyspark.sql import SparkSession

        import rockstate

        master = "local-cluster[2,1,1024]" if kind == "cluster" else "local[2]"
        builder = (
            SparkSession.builder.master(master)
            .appName(f"rockstate-tests-{kind}")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.streaming.minBatchesToRetain", "5")
            .config("spark.driver.memory", "1g")
            .config("spark.executor.memory", "512m")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        )
        # Snapshots every 2 versions, so every query's few batches cross snapshot, rebase and
        # changelog replay. Maintenance every second, so cleanup runs while queries do.
        builder = builder.config("spark.sql.streaming.stateStore.maintenanceInterval", "1s")
        if kind == "ui":  # Spark's web UI on a free port, and the event log for its history
            builder = (builder.config("spark.ui.enabled", "true").config("spark.ui.port", "0")
                       .config("spark.eventLog.enabled", "true")
                       .config("spark.eventLog.dir", self.event_log_dir.as_uri()))
        if kind == "cluster":  # Spark's own CSV sink, as a user would configure it
            sink = "spark.metrics.conf.*.sink.csv."
            builder = (builder.config(sink + "class", "org.apache.spark.metrics.sink.CsvSink")
                       .config(sink + "period", "2").config(sink + "unit", "seconds")
                       .config(sink + "directory", METRICS_DIR))
        builder = builder.config("spark.jars", str(testkit_jar()))
        for key, value in faults.session_confs().items():  # rsfault://, for the kill tests
            builder = builder.config(key, value)
        builder = self.s3.configure(builder)  # both add to spark.jars
        self.session = rockstate.configure(
            builder, rocksdbMemoryMB=32, snapshotInterval=2).getOrCreate()
        self.session.sparkContext.setLogLevel("ERROR")
        self.kind = kind
        return self.session

    def stop(self) -> None:
        if self.session is not None:
            from rockstate.session import local_cluster

            local_cluster.stop(self.session)  # and what local-cluster's workers left
            self.session = None
            self.kind = None


@pytest.fixture(scope="session")
def sessions() -> Iterator[Sessions]:
    s = Sessions()
    yield s
    s.stop()
    if s._s3 is not None:
        s._s3.stop()


@pytest.fixture()
def s3(sessions: Sessions):
    """The S3 API server the sessions reach as `s3a://<bucket>/`."""
    return sessions.s3


@pytest.fixture()
def spark(sessions: Sessions):
    """A `local[2]` session with rockstate configured (the provider conf reset per test)."""
    session = sessions.get("local")
    import rockstate

    session.conf.set("spark.sql.streaming.stateStore.providerClass", rockstate.PROVIDER_CLASS)
    return session


@pytest.fixture()
def cluster_spark(sessions: Sessions):
    """A `local-cluster[2,1,1024]` session: two real executor JVMs."""
    session = sessions.get("cluster")
    import rockstate

    session.conf.set("spark.sql.streaming.stateStore.providerClass", rockstate.PROVIDER_CLASS)
    return session


@pytest.fixture()
def ui_spark(sessions: Sessions):
    """A `local[2]` session with Spark's web UI on and an event log (`sessions.event_log_dir`)."""
    session = sessions.get("ui")
    import rockstate

    session.conf.set("spark.sql.streaming.stateStore.providerClass", rockstate.PROVIDER_CLASS)
    return session


@pytest.fixture(scope="session")
def spark_home() -> Path:
    """The pyspark distribution whose launchers a test runs itself (``spark-submit``, a History
    Server, a Connect server, a standalone cluster) or whose session a child process starts:
    taking it is what makes a test a Spark test (``pytest_collection_modifyitems``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@pytest.fixture()
def workdir(tmp_path: Path) -> Path:
    return tmp_path


# A test whose fixtures include one of these runs Spark (or makes a venv for a Connect client
# of it): it is marked `spark` and runs in dev/run-tests' Spark tier; every other test runs in
# the fast tier. Derived, never applied by hand, so a test cannot sit in the wrong tier.
SPARK_FIXTURES = frozenset({"sessions", "spark_home", "client_python"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)

    # Spark-free tests first, then local[2], then local-cluster: each session starts once. The
    # Spark Connect suite (its own servers, no shared session) goes between the last two, so
    # the client venv dev/run-tests makes meanwhile is ready when it starts.
    def rank(item: pytest.Item) -> float:
        fixtures = getattr(item, "fixturenames", ())
        if "cluster_spark" in fixtures:
            return 2
        if item.path.name == "test_connect.py":
            return 1.5
        if item.path.name == "test_ui.py" and "spark" not in fixtures:
            return 1.2  # the web UI session, after the other local[2] tests
        if "spark" in fixtures:
            return 1
        return 0

    items.sort(key=rank)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Under xdist each worker takes a whole file at a time, in this order (dev/run-tests
        # passes --no-loadscope-reorder): the longest files start first, so the two workers
        # end together instead of one running a long file alone at the end. Scheduling only.
        items.sort(key=lambda item: -LONGEST_FILES.get(item.path.name, 0))


# Seconds each of the longest Spark test files took in CI on two cores (pytest --durations),
# rounded: the order they start in under xdist.
LONGEST_FILES = {
    "test_rewrite.py": 500, "test_standalone.py": 250,
    "test_read_state.py": 240, "test_s3.py": 220, "test_savepoint.py": 200,
    "test_state_processor.py": 600, "test_checkpoints.py": 180, "test_process_exit.py": 150,
    "test_nexmark.py": 130,
    "test_connect.py": 125,
}
