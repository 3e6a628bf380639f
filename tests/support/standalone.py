"""A Spark standalone cluster of daemons on this machine, started with the installed pyspark's
own launcher: a master (``spark-class org.apache.spark.deploy.master.Master``) and workers
(``...deploy.worker.Worker``), each a process of its own with its own work and local
directories, whose executors are its child JVMs. Applications are submitted with
``spark-submit --deploy-mode client``, as users do.

Killing a worker daemon with SIGKILL takes its executors with it (each executor watches its
worker and exits when the connection drops), as on a real cluster.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from support.history_server import free_port
from support.polling import wait_for


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class Worker:
    index: int
    work_dir: Path
    local_dir: Path
    port: int
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:  # how its executors name it (--worker-url)
        return f"spark://Worker@127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class StandaloneCluster:
    work: Path
    workers: list[Worker] = field(default_factory=list)
    master: subprocess.Popen | None = None
    master_port: int = 0
    web_port: int = 0

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def _env(self, **extra: str) -> dict[str, str]:
        return dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1",
                    PYSPARK_PYTHON=sys.executable, **extra)

    def _daemon(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = (self.work / f"{name}.log").open("ab")
        try:
            # spark-class execs the JVM: the process is the daemon itself.
            return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=env,
                                    stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        finally:
            log.close()

    def start(self, workers: int = 2, worker_memory: str = "1g",
              local_dirs: list[Path] | None = None) -> StandaloneCluster:
        self.work.mkdir(parents=True, exist_ok=True)
        self.master_port, self.web_port = free_port(), free_port()
        self.master = self._daemon("master", [
            "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(self.master_port), "--webui-port", str(self.web_port)], self._env())
        wait_for(lambda: self.state() is not None, "the master to answer", seconds=90)
        for i in range(workers):
            local = local_dirs[i] if local_dirs else self.work / f"worker-{i}-local"
            self.workers.append(Worker(i, self.work / f"worker-{i}", local, 0))
            self.start_worker(i, worker_memory)
        return self

    def start_worker(self, i: int, memory: str = "1g") -> None:
        """Starts worker ``i`` (again, after a kill: a new daemon on the same directories)."""
        w = self.workers[i]
        w.work_dir.mkdir(parents=True, exist_ok=True)
        w.local_dir.mkdir(parents=True, exist_ok=True)
        w.port = free_port()
        before = len(self.alive_workers())
        w.proc = self._daemon(f"worker-{i}", [
            "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
            "--port", str(w.port), "--webui-port", str(free_port()), "--cores", "1",
            "--memory", memory, "--work-dir", str(w.work_dir), self.master_url],
            self._env(SPARK_LOCAL_DIRS=str(w.local_dir)))
        wait_for(lambda: len(self.alive_workers()) > before or not w.alive(),
                 f"worker {i} to register with the master", seconds=90)
        assert w.alive(), (self.work / f"worker-{i}.log").read_text()[-3000:]

    def state(self) -> dict | None:
        """The master's view (its web UI's /json)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/json", timeout=5) as r:
                return json.load(r)
        except OSError:
            return None

    def alive_workers(self) -> list[dict]:
        return [w for w in (self.state() or {}).get("workers", []) if w.get("state") == "ALIVE"]

    def executor_pids(self, worker: Worker | None = None) -> list[int]:
        """Executor JVMs running now, of one worker or of all."""
        out = subprocess.run(["ps", "-eww", "-o", "pid=,stat=,args="], capture_output=True,
                             text=True, check=True).stdout
        urls = [w.url for w in ([worker] if worker is not None else self.workers)]
        return [int(line.split()[0]) for line in out.splitlines()
                if "CoarseGrainedExecutorBackend" in line and not line.split()[1].startswith("Z")
                and any(f"--worker-url {u} " in line + " " for u in urls)]

    def kill_worker(self, i: int) -> list[int]:
        """SIGKILLs worker ``i``'s daemon (only it) and waits until its executors are gone;
        returns their pids."""
        w = self.workers[i]
        executors = self.executor_pids(w)
        assert w.proc is not None
        os.kill(w.proc.pid, signal.SIGKILL)
        w.proc.wait()
        wait_for(lambda: not any(_running(p) for p in executors),
                 f"worker {i}'s executors to exit after it died", seconds=90)
        return executors

    def submit(self, app: Path, args: list[str], confs: dict[str, str], log: Path,
               ) -> subprocess.Popen:
        """``spark-submit --master <this cluster> --deploy-mode client app args``."""
        command = [str(spark_home() / "bin" / "spark-submit"), "--master", self.master_url,
                   "--deploy-mode", "client"]
        for k, v in confs.items():
            command += ["--conf", f"{k}={v}"]
        out = log.open("ab")
        try:
            return subprocess.Popen([*command, str(app), *args], env=self._env(),
                                    stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        finally:
            out.close()

    def stop(self) -> None:
        procs = [w.proc for w in self.workers if w.proc is not None] + [self.master]
        for p in procs:
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)  # the daemon and its executors
                p.wait()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False
