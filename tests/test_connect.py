"""rockstate for Spark Connect: a real Connect server started with ``rockstate connect-server``,
used from a venv that has Spark Connect's client only (``pyspark-client``: no jars, no py4j, so
no JVM), where rockstate installs as a client (no jar build). The client runs an aggregation,
sees its checkpoints live over Connect, and reads, verifies and exports the state offline.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support import connect_client
from support.listening import listening_addresses
from support.polling import wait_for


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def client_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with pyspark-client and rockstate installed from this checkout: the one
    dev/run-tests made while the suites before this one ran, or one made now."""
    where = connect_client.prepared_dir()
    if where is None:
        return connect_client.make_client_venv(tmp_path_factory.mktemp("connect-client"))
    return wait_for(lambda: connect_client.prepared_python(where),
                    f"the Connect client's venv in {where}", seconds=900)


class Server:
    """A Spark Connect server process on a free port; ``stop()`` ends it."""

    def __init__(self, command: Callable[[int], list[str]], log: Path) -> None:
        self.port = _free_port()
        self.url = f"sc://localhost:{self.port}"
        self.log = log
        with log.open("w") as out:
            self.process = subprocess.Popen(command(self.port), stdout=out, cwd=log.parent,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self) -> Server:
        """The server, once it accepts connections (it fails the test if it died)."""
        wait_for(lambda: _listening(self.port) or self.process.poll() is not None,
                 f"the Connect server on port {self.port}", seconds=180)
        assert self.process.poll() is None, self.log.read_text()[-3000:]
        return self

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@pytest.fixture(scope="module")
def servers(spark_home: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    """rockstate's server (``rockstate connect-server``), and a plain Spark Connect server
    (Spark's class, no rockstate), started together."""
    logs = tmp_path_factory.mktemp("connect-servers")
    conf = ["--conf", "spark.sql.shuffle.partitions=4", "--conf", "spark.ui.enabled=false"]
    ours = Server(lambda port: [sys.executable, "-m", "rockstate", "connect-server",
                                "--master", "local[2]", "--port", str(port), *conf],
                  logs / "rockstate.log")
    submit = spark_home / "bin" / "spark-submit"
    plain = Server(lambda port: [str(submit), "--class",
                                 "org.apache.spark.sql.connect.service.SparkConnectServer",
                                 "--master", "local[2]", *conf, "--conf",
                                 f"spark.connect.grpc.binding.port={port}"],
                   logs / "plain.log")
    try:
        yield ours, plain  # each test waits for the server it uses (Server.wait)
    finally:
        ours.stop()
        plain.stop()


# The client's whole session: configure, an aggregation over files in 4 batches, the live view
# and the callback while it runs, then the offline tools on its checkpoint.
CLIENT_SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("always")
    url, workdir = sys.argv[1], sys.argv[2]
    out = {}
    import rockstate
    from pyspark.sql import SparkSession
    try:
        rockstate.jar_path()
    except rockstate.RockstateSetupError as e:
        out["jar_error"] = str(e)
    with warnings.catch_warnings(record=True) as caught:
        spark = rockstate.configure(SparkSession.builder.remote(url),
                                    snapshotInterval=2).getOrCreate()
    out["warnings"] = [str(w.message) for w in caught]
    completions = []
    watcher = rockstate.on_checkpoint_complete(spark, completions.append, poll_seconds=0.2)
    source, ckpt = workdir + "/in", workdir + "/ckpt"
    import os
    os.makedirs(source)
    query = (spark.readStream.schema("k STRING, v LONG").json(source)
             .groupBy("k").sum("v").writeStream.outputMode("complete").format("memory")
             .queryName("sums").option("checkpointLocation", ckpt).start())
    for batch in range(4):
        with open(f"{source}/{batch}.json", "w") as f:
            for i in range(20):
                f.write(json.dumps({"k": f"key{i % 7}", "v": batch * 100 + i}) + "\\n")
        query.processAllAvailable()
    import time
    deadline = time.monotonic() + 60  # version 4's snapshot uploads after its commit
    while True:
        live = rockstate.checkpoints(query)
        if 4 in [c.version for c in live.completed] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    out["live_completed"] = [c.version for c in live.completed]
    out["live_location"] = live.location
    out["sums"] = {r[0]: r[1] for r in spark.table("sums").collect()}
    deadline = time.monotonic() + 60
    while not completions and time.monotonic() < deadline:
        time.sleep(0.2)
    out["callback_versions"] = [c.version for c in completions]
    watcher.stop()
    query.stop()
    out["provider"] = rockstate.provider_class(ckpt)
    state = rockstate.read_state(ckpt).to_pylist()
    out["state"] = {row["key"]["k"]: list(row["value"].values())[0] for row in state}
    out["verified"] = rockstate.verify(ckpt).ok
    import subprocess
    out["cli_verify"] = subprocess.run([sys.executable, "-m", "rockstate", "verify", ckpt],
                                       capture_output=True).returncode
    out["offline_completed"] = [c.version for c in rockstate.checkpoints(ckpt).completed]
    spark.stop()
    out["modules"] = sorted(m for m in sys.modules if m.split(".")[0] in ("py4j",))
    print("RESULT " + json.dumps(out))
""")


def _client_result(client_python: Path, url: str, workdir: Path) -> dict:
    script = workdir / "client.py"
    script.write_text(CLIENT_SCRIPT)
    done = subprocess.run([str(client_python), str(script), url, str(workdir)], cwd=workdir,
                          capture_output=True, text=True, timeout=600, check=False)
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-5000:]
    return json.loads(lines[-1][len("RESULT "):])


def test_a_connect_client_runs_on_rockstate_and_sees_its_checkpoints(
        servers: tuple[Server, Server], client_python: Path, tmp_path: Path) -> None:
    # The servers start first and boot while the client's venv is made.
    ours = servers[0].wait()
    out = _client_result(client_python, ours.url, tmp_path)
    assert not [w for w in out["warnings"] if "CANNOT_MODIFY" in w], out["warnings"]
    assert "pyspark-client" in out["jar_error"], out["jar_error"]
    assert out["modules"] == [], "the client imported py4j"
    expected: dict[str, int] = {}
    for batch in range(4):
        for i in range(20):
            expected[f"key{i % 7}"] = expected.get(f"key{i % 7}", 0) + batch * 100 + i
    assert out["sums"] == expected
    assert out["provider"] == "io.rockstate.state.RockstateStateStoreProvider"
    # snapshotInterval=2 reached the server's provider: versions 2 and 4 complete.
    assert out["live_completed"] == [2, 4], out
    assert out["live_location"].rstrip("/").endswith("ckpt")
    assert out["callback_versions"] and set(out["callback_versions"]) <= {2, 4}, out
    assert out["offline_completed"] == [2, 4]
    assert out["state"] == expected
    assert out["verified"] and out["cli_verify"] == 0


def test_the_client_install_has_no_jar_and_needs_no_pyspark(client_python: Path) -> None:
    show = subprocess.run([str(client_python), "-m", "pip", "show", "rockstate"],
                          capture_output=True, text=True, check=True).stdout
    requires = next(x for x in show.splitlines() if x.startswith("Requires:"))
    names = {r.strip() for r in requires.partition(":")[2].split(",")}
    assert "pyspark-client" in names and "pyspark" not in names and "py4j" not in names, requires
    found = subprocess.run(
        [str(client_python), "-c", "import rockstate, pyspark, pathlib; "
         "p = pathlib.Path(rockstate.__file__).parent; "
         "print(any(p.glob('jars/*.jar')), (pathlib.Path(pyspark.__file__).parent / 'jars')"
         ".exists())"], capture_output=True, text=True, check=True).stdout.split()
    assert found == ["False", "False"]


def test_configure_against_a_server_without_rockstate_says_what_to_do(
        servers: tuple[Server, Server], client_python: Path, tmp_path: Path) -> None:
    plain = servers[1].wait()
    # A file, not `python -c`: pyspark-client 4.2 takes a `-c` process for its shell and looks
    # for a Spark installation it does not have.
    script = tmp_path / "configure.py"
    script.write_text("import rockstate\nfrom pyspark.sql import SparkSession\n"
                      f"rockstate.configure(SparkSession.builder.remote('{plain.url}'))\n")
    done = subprocess.run([str(client_python), str(script)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "does not have rockstate's jar" in last and "rockstate connect-server" in last, last


def test_remote_local_starts_a_server_with_rockstate_in_this_process(spark_home: Path,
                                                                    tmp_path: Path) -> None:
    """``remote("local[2]")``: pyspark starts the server inside the Python process; it gets
    the jar and plugin, and the session only what it may set (no CANNOT_MODIFY_CONFIG)."""
    script = textwrap.dedent(f"""
        import json, warnings
        warnings.simplefilter("always")
        import rockstate
        from pyspark.sql import SparkSession
        with warnings.catch_warnings(record=True) as caught:
            spark = rockstate.configure(SparkSession.builder.remote("local[2]")
                                        .config("spark.sql.shuffle.partitions", "2"),
                                        snapshotInterval=1).getOrCreate()
        df = spark.readStream.format("rate").option("rowsPerSecond", 5).load()
        q = (df.selectExpr("value % 3 AS k").groupBy("k").count().writeStream
             .outputMode("update").format("noop")
             .option("checkpointLocation", {str(tmp_path / "ckpt")!r}).start())
        completed = ()
        while not completed:
            q.awaitTermination(0.5)
            completed = rockstate.checkpoints(q).completed
        print("RESULT " + json.dumps({{
            "warnings": [str(w.message) for w in caught],
            "completed": len(completed)}}))
        q.stop()
        spark.stop()
    """)
    (tmp_path / "local.py").write_text(script)  # a file: pyspark's Connect mistakes -c
    done = subprocess.run([sys.executable, str(tmp_path / "local.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, check=False)
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-5000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert not [w for w in out["warnings"] if "CANNOT_MODIFY" in w], out["warnings"]
    assert out["completed"] >= 1


# A client's one query, given the server's URL: what it answers, or the error, on one line.
PROBE = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    try:
        spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
        print("ANSWER", spark.range(3).count())
    except Exception as e:
        print("REFUSED", type(e).__name__, " ".join(str(e).split())[:600])
""")


def _probe(client_python: Path, url: str, workdir: Path) -> str:
    script = workdir / "probe.py"
    script.write_text(PROBE)
    done = subprocess.run([str(client_python), str(script), url], cwd=workdir,
                          capture_output=True, text=True, timeout=300, check=False)
    lines = [x for x in done.stdout.splitlines() if x.startswith(("ANSWER", "REFUSED"))]
    assert lines, done.stdout[-3000:] + done.stderr[-3000:]
    return lines[-1]


def test_the_server_listens_on_loopback_unless_told_and_then_requires_a_token(
        servers: tuple[Server, Server], client_python: Path, tmp_path: Path) -> None:
    """A Connect server runs what its clients send: by default only this machine reaches it
    (read from the kernel's table of listening sockets), and one that listens on every address
    refuses a client without the token it generated and printed."""
    ours = servers[0].wait()
    assert listening_addresses(ours.port), "no listening socket for the server's port"
    assert all(a.is_loopback for a in listening_addresses(ours.port)), \
        listening_addresses(ours.port)
    banner = ours.log.read_text()
    assert f"on 127.0.0.1:{ours.port}, this machine only" in banner, banner[-2000:]

    exposed = Server(lambda port: [sys.executable, "-m", "rockstate", "connect-server",
                                   "--master", "local[1]", "--port", str(port), "--host",
                                   "0.0.0.0", "--conf", "spark.ui.enabled=false"],
                     tmp_path / "exposed.log")
    try:
        exposed.wait()
        exposed_on = listening_addresses(exposed.port)
        assert exposed_on and all(a.is_unspecified for a in exposed_on), exposed_on
        printed = exposed.log.read_text()
        token = printed.split(";token=", 1)[1].split()[0] if ";token=" in printed else ""
        assert len(token) >= 32, printed[-2000:]
        assert token not in " ".join(_command_lines(exposed.process.pid)), \
            "the token is on the server's command line"
        refused = _probe(client_python, exposed.url, tmp_path)
        assert refused.startswith("REFUSED") and "UNAUTHENTICATED" in refused.upper(), refused
        wrong = _probe(client_python, f"{exposed.url}/;token=not-{token}", tmp_path)
        assert wrong.startswith("REFUSED"), wrong
        assert _probe(client_python, f"{exposed.url}/;token={token}", tmp_path) == "ANSWER 3"
    finally:
        exposed.stop()


def _command_lines(pid: int) -> list[str]:
    """The command lines of ``pid`` and every process below it (what ``ps`` shows anyone)."""
    lines, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            lines.append(Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode())
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        todo += [int(c) for c in children]
    return lines
