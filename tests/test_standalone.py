"""rockstate on a Spark standalone cluster of daemons (a master and two workers started with
Spark's own launcher), the application submitted with ``spark-submit --deploy-mode client``.

A worker daemon is SIGKILLed in the middle of the query: its executor dies with it, the lost
tasks run on the other worker's executor, which loads their state from the checkpoint, and
every batch's result equals the one computed here. Then the checkpoint goes on a real S3 API
server (s3proxy) behind a fault proxy, and the server is restarted in the middle of a batch.
Each checkpoint verifies afterwards.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import rockstate
from rockstate import CheckpointLocation
from support import standalone_app
from support.cli import run_cli
from support.polling import wait_for
from support.s3_fault_proxy import FaultPlan, FaultProxy, Rule
from support.s3proxy import S3ProxyServer
from support.standalone import StandaloneCluster

APP = Path(standalone_app.__file__)
# s3a's retries, as a user on a throttling store sets them: a server down for 2 s is waited
# out (10 retries 500 ms apart), not turned into a failed task.
RETRIES = {"retry.limit": "10", "retry.interval": "500ms", "retry.throttle.limit": "10",
           "retry.throttle.interval": "500ms", "attempts.maximum": "3"}


@pytest.fixture(scope="module")
def cluster(spark_home, tmp_path_factory):
    c = StandaloneCluster(tmp_path_factory.mktemp("standalone"))
    try:
        yield c.start(workers=2)
    finally:
        c.stop()


def _run(cluster: StandaloneCluster, root: Path, spec: dict, during_pause=None,
         submit: dict[str, str] | None = None) -> dict:
    """Submits the app with ``spec`` (and ``submit``: spark-submit's own --conf) and waits for
    it; ``during_pause()`` runs while the app waits before batch ``spec['pause_before']``.
    Returns the app's result.json."""
    root.mkdir(parents=True, exist_ok=True)
    spec_path = root / "spec.json"
    spec_path.write_text(json.dumps({"root": str(root), **spec}))
    log = root / "app.log"
    proc = cluster.submit(APP, [str(spec_path)], {
        "spark.executor.memory": "512m", "spark.cores.max": "2", **(submit or {})}, log)
    try:
        if during_pause is not None:
            wait_for(lambda: (root / "paused").exists() or proc.poll() is not None,
                     "the app to reach its pause", seconds=300)
            assert proc.poll() is None, log.read_text()[-4000:]
            during_pause()
            (root / "resume").touch()
        code = proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, log.read_text()[-4000:]
    return json.loads((root / "result.json").read_text())


def _outputs(root: Path, batches: int) -> dict[int, list]:
    return {b: json.loads((root / "out" / f"{b}.json").read_text()) for b in range(batches)}


def test_a_worker_killed_mid_query_loses_nothing(cluster: StandaloneCluster, tmp_path: Path):
    batches, pause = 8, 4
    killed: list[int] = []

    def kill_worker_0() -> None:
        # Both workers run an executor of the app (one core each, two cores asked for).
        wait_for(lambda: all(cluster.executor_pids(w) for w in cluster.workers),
                 "an executor on each worker")
        killed.extend(cluster.kill_worker(0))

    result = _run(cluster, tmp_path / "run", {
        "checkpoint": str(tmp_path / "run" / "checkpoint"), "batches": batches,
        "pause_before": pause, "settings": {"snapshotInterval": 2}}, kill_worker_0)
    try:
        assert killed, "worker 0 had no executor to lose"
        assert _outputs(tmp_path / "run", batches) == standalone_app.expected(batches)
        after = [p for p in result["progress"] if p["batchId"] >= pause]
        downloaded = sum(p["stateOperators"][0]["customMetrics"]["rockstateBytesDownloaded"]
                         for p in after)
        assert downloaded > 0, "the lost partitions should have been loaded from the checkpoint"
        verified = run_cli("verify", str(tmp_path / "run" / "checkpoint"))
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        cluster.start_worker(0)  # the next test has two workers again


def test_a_query_on_a_real_s3_server_through_faults_and_a_restart_loses_nothing(
        cluster: StandaloneCluster, tmp_path: Path):
    """The checkpoint on s3proxy (a real S3 API server, objects on disk), reached through a
    fault proxy that answers some state requests with 503 SlowDown or 500, resets some
    connections in the middle of a response and delays others; the server itself is killed
    and restarted while a batch runs. Every batch's result is right, and the checkpoint
    verifies, read straight from the server."""
    batches, pause = 8, 4
    server = S3ProxyServer(tmp_path / "s3").start()
    proxy = FaultProxy(server.port, FaultPlan(seed=5)).start()
    try:
        state = r"/state/"
        # Resets on rockstate's own files: one in the middle of Spark's own reads (its state
        # schema file, on the driver) fails any query in S3A (docs/object-stores.md).
        stores = r"/state/\d+/\d+/(sst|versions|snapshots)/"
        for rule in (Rule("503", method="PUT", path=state, times=3, share=0.3),
                     Rule("500", method="GET", path=state, times=2, share=0.3),
                     Rule("reset", method="GET", path=stores, times=2, share=0.5),
                     Rule("latency", path=state, times=3, share=0.2, latency_s=1.5)):
            proxy.plan.add(rule)
        access = server.access(via=proxy)
        # hadoop-aws on the command line, as a user submits it (the driver's class path is
        # fixed before the app runs); the app's session adds rockstate's jar to it.
        s3 = access.spark_conf()
        submit = {"spark.jars": s3.pop("spark.jars")}
        confs = {**s3, "spark.task.maxFailures": "8",
                 **{f"spark.hadoop.fs.s3a.bucket.{server.bucket}.{k}": v
                    for k, v in RETRIES.items()}}
        restarted = threading.Event()

        def restart_the_server_mid_batch() -> None:
            def later() -> None:
                time.sleep(0.5)  # the resumed batch is running
                server.restart(down_s=2.0)
                restarted.set()
            threading.Thread(target=later, daemon=True).start()

        checkpoint = access.url("query/checkpoint")
        result = _run(cluster, tmp_path / "run", {
            "checkpoint": checkpoint, "batches": batches, "pause_before": pause,
            "settings": {"snapshotInterval": 2}, "confs": confs}, restart_the_server_mid_batch,
            submit)
        assert restarted.wait(60)
        assert result["progress"], result
        assert _outputs(tmp_path / "run", batches) == standalone_app.expected(batches)
        dealt = proxy.plan.dealt
        print(f"faults dealt {dict(dealt)}, requests {dict(proxy.plan.requests)}")
        assert dealt["503"] >= 1 and dealt["500"] + dealt["reset"] >= 1, dealt
        direct = server.access()
        loc = CheckpointLocation(direct.url("query/checkpoint", scheme="s3"),
                                 **direct.storage_options())
        report = rockstate.verify(loc)
        assert report.ok, report.problems
    finally:
        proxy.stop()
        server.stop()
