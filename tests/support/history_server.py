"""Spark's History Server as a daemon, started with the installed pyspark's own launcher
(``spark-class org.apache.spark.deploy.history.HistoryServer``) over an event log folder, with
rockstate's jar on its class path as a user would put it there (SPARK_DAEMON_CLASSPATH)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.polling import wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _applications(url: str) -> list[dict]:
    try:
        with urllib.request.urlopen(f"{url}/api/v1/applications", timeout=5) as r:
            return json.load(r)
    except OSError:
        return []


@contextmanager
def history_server(log_dir: Path, work: Path, jar: Path, heap: str | None = None,
                   options: dict[str, str] | None = None) -> Iterator[str]:
    """Runs a History Server over ``log_dir`` until the block ends; yields its URL. ``heap``:
    its JVM's heap (SPARK_DAEMON_MEMORY, Spark's default 1g); ``options``: more of its
    settings."""
    import pyspark

    home = Path(pyspark.__file__).parent
    port = free_port()
    settings = {"spark.history.fs.logDirectory": log_dir.as_uri(),
                "spark.history.ui.port": str(port), "spark.history.fs.update.interval": "1s",
                **(options or {})}
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_DAEMON_CLASSPATH=str(jar),
               SPARK_HISTORY_OPTS=" ".join(f"-D{k}={v}" for k, v in settings.items()))
    if heap:
        env["SPARK_DAEMON_MEMORY"] = heap
    log = (work / "history-server.log").open("wb")
    proc = subprocess.Popen([str(home / "bin" / "spark-class"),
                             "org.apache.spark.deploy.history.HistoryServer"],
                            env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: proc.poll() is not None or _applications(url),
                 "the History Server to list an application", seconds=120)
        assert proc.poll() is None, (work / "history-server.log").read_text()[-3000:]
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def applications(url: str) -> list[dict]:
    return _applications(url)
