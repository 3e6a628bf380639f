"""The torture run's outside world (``bench/torture.py --outside``): a standalone cluster of
daemons instead of ``local-cluster``, the checkpoints on s3proxy behind the fault proxy instead
of the local disk, and the faults only they can deal:

- ``kill-worker``: a worker daemon SIGKILLed mid-batch (its executor dies with it); it is
  started again once the batch is done;
- ``s3-503``, ``s3-500``, ``s3-reset``, ``s3-latency``: the proxy answers some of the batch's
  requests for state files with 503 SlowDown or 500, cuts some responses off midway (only on
  rockstate's own files: one in Spark's own reads fails any query, docs/object-stores.md), or
  holds them back;
- ``s3-restart``: the S3 server SIGKILLed mid-batch and started again 2 s later;
- ``full-local-dir``: worker 1's local dir (a small tmpfs of its own) filled up for a few
  seconds of the batch.

Faults that need the local fault-injecting file system (exact crash points, a skewed clock)
do not apply here.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from support.s3_fault_proxy import FaultPlan, FaultProxy, Rule
from support.s3proxy import S3ProxyServer
from support.standalone import StandaloneCluster

FAULTS = ("kill-worker", "s3-503", "s3-500", "s3-reset", "s3-latency", "s3-restart",
          "full-local-dir")
LOCAL_ONLY = ("kill-at-point", "fail-after-commit", "skew-clock")
FULL_DIR_MB = 256
RETRIES = {"retry.limit": "10", "retry.interval": "500ms", "retry.throttle.limit": "10",
           "retry.throttle.interval": "500ms", "attempts.maximum": "3"}
STATE = r"/state/"
STORES = r"/state/\d+/\d+/(sst|versions|snapshots)/"


@dataclass
class Outside:
    work: Path
    cluster: StandaloneCluster
    server: S3ProxyServer
    proxy: FaultProxy
    full_dir: Path | None  # worker 1's local dir on a tmpfs, None where mounting is refused
    filler: Path | None = None
    pending: list[str] = field(default_factory=list)  # what to undo after the batch

    @classmethod
    def start(cls, work: Path, seed: int) -> Outside:
        work.mkdir(parents=True, exist_ok=True)
        full_dir = _small_tmpfs(work / "worker-1-local")
        local_dirs = [work / "worker-0-local", full_dir or work / "worker-1-local"]
        cluster = StandaloneCluster(work / "cluster").start(workers=2, local_dirs=local_dirs)
        server = S3ProxyServer(work / "s3").start()
        proxy = FaultProxy(server.port, FaultPlan(seed=seed)).start()
        return cls(work, cluster, server, proxy, full_dir)

    def stop(self) -> None:
        self.proxy.stop()
        self.server.stop()
        self.cluster.stop()
        if self.full_dir is not None:
            subprocess.run(["umount", "-l", str(self.full_dir)], check=False)

    def spec(self, provider: str) -> dict:
        """What the torture driver needs: the master, where checkpoints go, and the s3a
        settings (through the fault proxy) with hadoop-aws's jars."""
        access = self.server.access(via=self.proxy)
        confs = access.spark_conf()
        jars = confs.pop("spark.jars").split(",")
        prefix = f"spark.hadoop.fs.s3a.bucket.{self.server.bucket}."
        confs.update({prefix + k: v for k, v in RETRIES.items()})
        return {"master": self.cluster.master_url, "checkpoint_base": access.url(provider),
                "confs": confs, "jars": jars,
                "storage_options": self.server.access().storage_options(),
                "verify_base": self.server.access().url(provider),
                "mirror": str(self.server.objects_dir() / provider)}

    def checkpoint_dir(self, provider: str, kind: str) -> Path:
        """Where the server keeps a query's checkpoint objects, one file each."""
        return self.server.objects_dir() / provider / kind / "checkpoint"

    def before(self, fault: str, rng: random.Random) -> str | None:
        rules = {"s3-503": Rule("503", method="PUT", path=STATE, times=3, share=0.5),
                 "s3-500": Rule("500", method="GET", path=STATE, times=3, share=0.5),
                 "s3-reset": Rule("reset", method="GET", path=STORES, times=2, share=0.5),
                 "s3-latency": Rule("latency", path=STATE, times=4, share=0.5,
                                    latency_s=rng.uniform(1.0, 4.0))}
        if fault in rules:
            self.proxy.plan.add(rules[fault])
            self.pending.append("disarm")
            return fault
        if fault == "full-local-dir":
            if self.full_dir is None:
                return None  # no tmpfs here: the fault cannot be dealt
            self.filler = self.full_dir / "filler"
            with contextlib.suppress(OSError), open(self.filler, "wb") as f:
                while True:  # until the disk is full
                    f.write(b"\0" * (1 << 20))
            self.pending.append("free")
            return fault
        return None

    def during(self, fault: str, rng: random.Random, note: str | None) -> str | None:
        if fault == "kill-worker":
            time.sleep(rng.uniform(0.1, 2.0))
            alive = [w for w in self.cluster.workers if w.alive()
                     and self.cluster.executor_pids(w)]
            if not alive:
                return None
            worker = rng.choice(alive)
            self.cluster.kill_worker(worker.index)
            self.pending.append(f"restart-worker:{worker.index}")
            return fault
        if fault == "full-local-dir" and note is not None:
            # Full for a few seconds of the batch, then room again: a disk that fills up and
            # is cleaned, not one that stays full (no batch could finish).
            def free_later() -> None:
                time.sleep(rng.uniform(2.0, 6.0))
                if self.filler is not None:
                    self.filler.unlink(missing_ok=True)
            threading.Thread(target=free_later, daemon=True).start()
            return note
        if fault == "s3-restart":
            def later() -> None:
                time.sleep(rng.uniform(0.1, 1.5))
                self.server.restart(down_s=2.0)
            t = threading.Thread(target=later, daemon=True)
            t.start()
            self.pending.append("join")
            self._restart = t
            return fault
        return note

    def after(self) -> None:
        """Undoes what the batch's fault left: rules, the filler, a dead worker."""
        for what in self.pending:
            if what == "disarm":
                self.proxy.plan.clear()
            elif what == "free" and self.filler is not None:
                self.filler.unlink(missing_ok=True)
            elif what.startswith("restart-worker:"):
                self.cluster.start_worker(int(what.split(":")[1]))
            elif what == "join":
                self._restart.join(60)
        self.pending.clear()

    def dealt(self) -> dict[str, int]:
        return dict(self.proxy.plan.dealt)


def _small_tmpfs(path: Path) -> Path | None:
    """A tmpfs of FULL_DIR_MB at ``path``, or None where this machine refuses the mount."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return None
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FULL_DIR_MB}m", "tmpfs",
                           str(path)], capture_output=True, check=False)
    return path if done.returncode == 0 else None
