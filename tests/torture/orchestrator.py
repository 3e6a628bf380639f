"""The torture orchestrator: a seeded fault schedule against real queries, and its figures.

One ``run`` feeds the same input to an unfaulted oracle (``HDFSBackedStateStoreProvider``)
and to the provider under test, injecting one scheduled fault per cycle (a cycle is one
micro-batch of every query kind), then quiesces (an idle gap past the orphan grace, two more
batches) and checks everything against the oracle. The schedule depends only on the seed, so
a failing seed replays.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rockstate.session.providers import (
    PROVIDERS,
    ROCKSTATE,
    SPARK_HDFS,
    SPARK_ROCKSDB_CHANGELOG,
)
from torture.outside import FAULTS as OUTSIDE_FAULTS
from torture.outside import Outside
from torture.queries import KINDS, batch_rows

DRIVER = Path(__file__).resolve().parent / "driver.py"
GRACE_MS = 6000
STOP_SECONDS = 14  # past spark.network.timeout (10 s): the executor is given up on

# Exact crash points, as (file operation, path pattern, before/after) per provider.
POINTS = {
    "rockstate": {
        "commit-before-manifest": ("rename", r"/state/.*/versions/\d+-[^/]+\.rsv$", "before"),
        "commit-after-manifest": ("rename", r"/state/.*/versions/\d+-[^/]+\.rsv$", "after"),
        "mid-snapshot-upload": ("create", r"/state/.*/sst/[^/]+\.sst$", "after"),
        "between-cleanup-phases": ("delete", r"/state/.*/versions/\d+-[^/]+\.rsv$", "after"),
        "mid-download": ("open", r"/state/.*/(sst|versions)/", "before"),
    },
    SPARK_ROCKSDB_CHANGELOG: {
        "commit-before-manifest": ("rename", r"/state/.*/\d+\.(changelog|zip)$", "before"),
        "commit-after-manifest": ("rename", r"/state/.*/\d+\.(changelog|zip)$", "after"),
        "mid-snapshot-upload": ("create", r"/state/.*/SSTs/[^/]+\.sst$", "after"),
        "between-cleanup-phases": ("delete", r"/state/.*/\d+\.(changelog|zip)$", "after"),
        "mid-download": ("open", r"/state/.*/SSTs/", "before"),
    },
}
FAULTS = ("kill-at-point", "kill-executor", "kill-driver", "stop-executor", "idle",
          "skew-clock", "fail-after-commit", "sink-fail")


@dataclass
class Figures:
    seed: int
    provider: str
    cycles: int = 0
    faults: Counter = field(default_factory=Counter)
    divergent_rows: int = 0
    missing_files: int = 0
    orphan_ratio: float = 0.0
    longest_chain: int = 0
    slowest_recovery_s: float = 0.0
    # Loads that reopened an instance closed for maxOpenStores (rockstateInstancesReopened,
    # summed over the batches the drivers saw).
    reopened: int = 0
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        kinds = ",".join(f"{k}:{n}" for k, n in sorted(self.faults.items()))
        return (f"torture seed={self.seed} provider={self.provider} cycles={self.cycles} "
                f"faults={sum(self.faults.values())} ({kinds}) "
                f"divergent_rows={self.divergent_rows} missing_files={self.missing_files} "
                f"orphan_ratio={self.orphan_ratio:.3f} longest_chain={self.longest_chain} "
                f"slowest_recovery_s={self.slowest_recovery_s:.1f} reopened={self.reopened} "
                f"problems={len(self.problems)}")


def schedule(seed: int, cycles: int, faults: int, allowed=FAULTS) -> dict[int, str]:
    """Which fault hits which cycle: ``faults`` of them over cycles 1.. (never cycle 0, which
    creates the queries), each kind of ``allowed`` once before any repeats."""
    rng = random.Random(seed)
    slots = list(range(1, cycles))
    rng.shuffle(slots)
    kinds: list[str] = []
    while len(kinds) < faults:
        round_ = list(allowed)
        rng.shuffle(round_)
        kinds += round_
    return dict(zip(sorted(slots[:faults]), kinds, strict=False))


class Driver:
    """The driver process of one run, in its own process group (killed as a whole)."""

    def __init__(self, spec_path: Path, root: Path, log: Path) -> None:
        self.spec_path, self.root, self.log = spec_path, root, log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        (self.root / "status.json").unlink(missing_ok=True)
        with open(self.log, "a") as out:
            self.proc = subprocess.Popen([sys.executable, str(DRIVER), str(self.spec_path)],
                                         stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            # What its local-cluster workers copied into Spark's home: nothing else removes it.
            work = self._status().get("work_folder")
            if work:
                shutil.rmtree(work, ignore_errors=True)

    def _status(self) -> dict:
        """What the driver wrote once its session started (status.json), or nothing yet."""
        try:
            return json.loads((self.root / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def app_id(self) -> str | None:
        return self._status().get("app_id")

    def executors(self) -> list[int]:
        app = self.app_id()
        if app is None:
            return []
        out = subprocess.run(["ps", "-eww", "-o", "pid=,stat=,args="], capture_output=True,
                             text=True, check=True).stdout
        return [int(line.split()[0]) for line in out.splitlines()
                if "CoarseGrainedExecutorBackend" in line and app in line
                and not line.split()[1].startswith("Z")]

    def stop(self, timeout: float = 120) -> None:
        (self.root / "stop").touch()
        if self.proc is not None:
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        (self.root / "stop").unlink(missing_ok=True)


def _spec(root: Path, provider: str, master: str, kinds, plan: Path | None,
          oracle: Path | None = None, outside: dict | None = None,
          settings: dict | None = None) -> Path:
    settings = {"snapshotInterval": 2, "orphanFileGraceMs": GRACE_MS, **(settings or {})} \
        if provider == ROCKSTATE else {}
    confs = {} if provider == ROCKSTATE else PROVIDERS[provider][1]
    spec = {"root": str(root), "provider": provider, "master": master, "kinds": list(kinds),
            "plan": str(plan) if plan else "", "settings": settings, "confs": confs,
            "retain": 1000 if provider == SPARK_HDFS else 4,
            "oracle": str(oracle) if oracle else ""}
    if outside:  # the standalone cluster and the S3 server (torture/outside.py)
        spec.update({k: v for k, v in outside.items() if k not in ("confs", "master")})
        spec["confs"] = {**confs, **outside["confs"]}
        if not oracle:
            spec["master"] = outside["master"]
    path = root / ("verify-spec.json" if oracle else "spec.json")
    path.write_text(json.dumps(spec))
    return path


def _write_batch(root: Path, kinds, seed: int, batch: int) -> None:
    rows = batch_rows(seed, batch)
    # Mid-second: the queries' triggers fall on whole seconds (see driver.start).
    time.sleep((0.5 - time.time() % 1.0) % 1.0)
    for kind in kinds:
        d = root / kind / "input"
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{batch:05d}.json.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        tmp.rename(d / f"{batch:05d}.json")


def _batch_done(checkpoint_dir, kinds, batch: int) -> bool:
    """Spark committed the batch in every query (its output was written before)."""
    return all((checkpoint_dir(kind) / "commits" / str(batch)).exists() for kind in kinds)


def _wait_batch(driver: Driver, root: Path, kinds, batch: int, timeout: float,
                checkpoint_dir=None) -> None:
    checkpoint_dir = checkpoint_dir or (lambda kind: root / kind / "checkpoint")
    deadline = time.time() + timeout
    while not _batch_done(checkpoint_dir, kinds, batch):
        if not driver.alive():
            code = driver.proc.returncode if driver.proc else None
            if code not in (None, -signal.SIGKILL):  # it failed by itself: a finding
                tail = driver.log.read_text()[-3000:] if driver.log.exists() else ""
                raise RuntimeError(f"the driver exited with {code} in batch {batch}:\n{tail}")
            driver.start()  # a killed driver comes back on the same checkpoints
        if time.time() > deadline:
            raise TimeoutError(f"batch {batch} did not finish within {timeout:.0f} s; see "
                               f"{driver.log} and {root / 'events.log'}")
        time.sleep(0.2)


def run_oracle(work: Path, seed: int, cycles: int, kinds=KINDS) -> Path:
    """The unfaulted run every faulted one is compared with."""
    root = work / "oracle"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    driver = Driver(_spec(root, SPARK_HDFS, "local[2]", kinds, None), root,
                    root / "driver.log")
    driver.start()
    try:
        for b in range(cycles):
            _write_batch(root, kinds, seed, b)
            _wait_batch(driver, root, kinds, b, timeout=300)
    finally:
        driver.stop()
    return root


class Injector:
    """Applies one fault to the run; returns when the fault has been dealt."""

    def __init__(self, driver: Driver, root: Path, plan: Path, provider: str, kinds,
                 rng: random.Random, figures: Figures, outside: Outside | None = None) -> None:
        self.driver, self.root, self.plan, self.provider = driver, root, plan, provider
        self.kinds, self.rng, self.figures = kinds, rng, figures
        self.outside = outside
        self.rules: list[dict] = []
        self.skew = 0
        self.seq = 0

    def _write_plan(self) -> None:
        tmp = self.plan.with_suffix(".tmp")
        tmp.write_text(json.dumps({"rules": self.rules, "skewMs": self.skew,
                                   "skewExecutors": "odd"}))
        tmp.rename(self.plan)

    def arm(self, op: str, regex: str, when: str, action: str, process: str = "executor") -> str:
        self.seq += 1
        rule_id = f"r{self.seq}"
        self.rules.append({"op": op, "pathRegex": regex, "when": when, "action": action,
                           "nth": self.rng.randrange(1, 3), "process": process, "id": rule_id})
        self._write_plan()
        return rule_id

    def fired(self, rule_id: str) -> bool:
        return (self.plan.parent / f"fired-{rule_id}").exists()

    def disarm(self) -> None:
        self.rules, self.skew = [], 0
        self._write_plan()

    def before(self, fault: str, batch: int) -> str | None:
        """Faults set up before the batch's input arrives; returns what to confirm after."""
        if self.outside is not None and fault in OUTSIDE_FAULTS:
            return self.outside.before(fault, self.rng)
        if fault == "kill-at-point":
            name = self.rng.choice(sorted(POINTS[self.provider]))
            op, regex, when = POINTS[self.provider][name]
            return f"{name}:{self.arm(op, regex, when, 'halt')}"
        if fault == "fail-after-commit":
            op, regex, when = POINTS[self.provider]["commit-after-manifest"]
            return f"fail-after-commit:{self.arm(op, regex, when, 'fail')}"
        if fault == "skew-clock":
            self.skew = -3600 * 1000
            self._write_plan()
            return "skew-clock"
        if fault == "idle":
            time.sleep(GRACE_MS / 1000 + 2)
            return "idle"
        if fault == "sink-fail":
            kind = self.rng.choice(list(self.kinds))
            (self.root / "faults").mkdir(exist_ok=True)
            (self.root / "faults" / f"sink-fail-{kind}-{batch}").touch()
            return f"sink-fail:{kind}"
        return None

    def during(self, fault: str, note: str | None) -> str | None:
        """Faults dealt while the batch runs."""
        if self.outside is not None and fault in OUTSIDE_FAULTS:
            return self.outside.during(fault, self.rng, note)
        if fault in ("kill-executor", "stop-executor", "kill-driver"):
            time.sleep(self.rng.uniform(0.1, 2.0))
            if fault == "kill-driver":
                self.driver.kill()
                return "kill-driver"
            pids = self.driver.executors()
            if not pids:
                return None
            pid = self.rng.choice(pids)
            if fault == "kill-executor":
                os.kill(pid, signal.SIGKILL)
                return "kill-executor"
            os.kill(pid, signal.SIGSTOP)
            time.sleep(STOP_SECONDS)
            os.kill(pid, signal.SIGCONT)  # a zombie now: its tasks ran elsewhere
            return "stop-executor"
        return note


def run(work: Path, seed: int, cycles: int, faults: int, provider: str = "rockstate",
        kinds=KINDS, oracle: Path | None = None, allowed=FAULTS,
        batch_timeout: float = 300, outside: Outside | None = None,
        settings: dict | None = None) -> Figures:
    """One seeded torture run; returns its figures (``Figures.line`` prints them). With
    ``outside``, on its standalone cluster with the checkpoints on its S3 server; ``settings``:
    rockstate settings over the run's own (``maxOpenStores``: 1 closes and reopens instances
    between batches)."""
    figures = Figures(seed=seed, provider=provider)
    total = cycles + 2  # two quiescing batches at the end
    oracle = oracle or run_oracle(work, seed, total, kinds)
    root = work / provider
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    plan = root / "plan" / "plan.json"
    plan.parent.mkdir()
    out_spec = outside.spec(provider) if outside else None
    driver = Driver(_spec(root, provider, "local-cluster[2,1,1024]", kinds, plan,
                          outside=out_spec, settings=settings), root, root / "driver.log")
    checkpoint_dir = (lambda kind: outside.checkpoint_dir(provider, kind)) if outside else None
    rng = random.Random(seed * 7919)
    injector = Injector(driver, root, plan, provider, kinds, rng, figures, outside)
    injector.disarm()
    plan_of = schedule(seed, cycles, faults, allowed)
    armed: list[str] = []
    driver.start()
    try:
        for b in range(total):
            fault = plan_of.get(b) if b < cycles else None
            if b == cycles:  # quiesce: no faults, an idle gap past the grace, then batches
                injector.disarm()
                time.sleep(GRACE_MS / 1000 + 2)
            note = injector.before(fault, b) if fault else None
            _write_batch(root, kinds, seed, b)
            started = time.time()
            if fault:
                note = injector.during(fault, note)
            _wait_batch(driver, root, kinds, b, batch_timeout, checkpoint_dir)
            if outside is not None:
                outside.after()
            if note and fault in ("kill-executor", "stop-executor", "kill-driver", "sink-fail",
                                  *OUTSIDE_FAULTS):
                figures.faults[note.split(":")[0]] += 1
                figures.slowest_recovery_s = max(figures.slowest_recovery_s,
                                                 time.time() - started)
            if note and ":" in note and fault in ("kill-at-point", "fail-after-commit"):
                armed.append(note)
            for a in list(armed):  # exact points count once they fired
                name, rule_id = a.split(":")
                if injector.fired(rule_id):
                    figures.faults[name] += 1
                    figures.slowest_recovery_s = max(figures.slowest_recovery_s,
                                                     time.time() - started)
                    armed.remove(a)
            if fault == "skew-clock":
                figures.faults["skew-clock"] += 1
            if fault == "idle":
                figures.faults["idle"] += 1
            figures.cycles = min(b + 1, cycles)
        time.sleep(3)  # a few maintenance rounds after the last batch
    finally:
        driver.stop()
    figures.reopened = sum(json.loads(f.read_text())["reopened"]
                           for f in root.glob("reopened-*.json"))
    _compare(root, oracle, kinds, total, figures)
    _verify(work, root, oracle, provider, kinds, figures, out_spec)
    return figures


def _compare(root: Path, oracle: Path, kinds, total: int, figures: Figures) -> None:
    for kind in kinds:
        for b in range(total):
            mine = set(json.loads((root / kind / "out" / f"{b}.json").read_text()))
            theirs = set(json.loads((oracle / kind / "out" / f"{b}.json").read_text()))
            if mine != theirs:
                figures.divergent_rows += len(mine ^ theirs)
                figures.problems.append(f"{kind} batch {b}: {len(mine ^ theirs)} rows differ")


def _verify(work: Path, root: Path, oracle: Path, provider: str, kinds,
            figures: Figures, outside: dict | None = None) -> None:
    spec = _spec(root, provider, "local[2]", kinds, None, oracle=oracle, outside=outside)
    done = subprocess.run([sys.executable, str(DRIVER), str(spec), "--verify"],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        figures.problems.append(f"verify failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        return
    report = json.loads((root / "verify.json").read_text())
    orphan = live = 0
    for kind, e in report.items():
        figures.divergent_rows += sum(d["rows"] for d in e["divergent_state"])
        figures.problems += [f"{kind}: state of {d}" for d in e["divergent_state"]]
        figures.problems += [f"{kind}: {x}" for x in e["errors"]]
        if provider == "rockstate":
            figures.missing_files += len(e["missing"])
            figures.problems += [f"{kind}: missing {m}" for m in e["missing"]]
            figures.problems += [f"{kind}: verify: {p}" for p in e["verify_problems"]]
            figures.problems += [f"{kind}: {w}" for w in e["checkpoints"]["wrong"]]
            figures.longest_chain = max(figures.longest_chain, e["longest_chain"])
            orphan += e["orphan_bytes"]
            live += e["live_bytes"]
    figures.orphan_ratio = orphan / live if live else 0.0
