"""Where a run's CPU goes: the CPU seconds of the task JVMs' threads, grouped by what they do
(tasks, rockstate's background work, RocksDB's flushes and compactions, Spark's maintenance,
the JIT, the GC), from /proc/<pid>/task. A thread is known by its name as the kernel keeps it
(``comm``: the first 15 characters), the same on every provider: RocksDB names its background
threads ``rocksdb:low``/``rocksdb:high`` under Spark's provider too."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from rockstate.nexmark.processes import cpu_seconds, read_stat

# (group, name prefixes), the first match wins: the specific rockstate pools come before the
# rest of rockstate's threads.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tasks", ("Executor task",)),
    ("rockstate snapshots, uploads, downloads", (
        "rockstate-snaps", "rockstate-local", "rockstate-downl", "rockstate-idle")),
    ("rockstate coordinator and plugin", ("rockstate-",)),
    ("Spark state store maintenance", ("state-store-mai",)),
    ("RocksDB flushes and compactions", ("rocksdb:",)),
    ("stream execution", ("stream executio",)),
    ("JIT", ("C1 CompilerThre", "C2 CompilerThre")),
    ("GC", ("GC Thread", "G1 ", "VM Thread")),
)
OTHER = "other threads"
# The run's CPU the thread samples do not hold: threads that ended between two samples (what
# they used after the last one), and the JVMs' child processes (Python workers).
UNSAMPLED = "ended threads and child processes"
ORDER = (*(g for g, _ in GROUPS), OTHER, UNSAMPLED)


def group_of(name: str) -> str:
    """The group of a thread named ``name`` (its ``comm``)."""
    for group, prefixes in GROUPS:
        if name.startswith(prefixes):
            return group
    return OTHER


@dataclass
class ThreadCpu:
    """CPU seconds of the threads of some processes between the first sample and the last:
    each thread's latest figure less what it had at the first sample (a thread started later
    counts from nothing)."""

    first: dict[tuple[int, int], float] = field(default_factory=dict)
    last: dict[tuple[int, int], tuple[str, float]] = field(default_factory=dict)
    started: bool = False

    def sample(self, pids: list[int]) -> None:
        for pid in pids:
            for tid, name, seconds in _threads(pid):
                if not self.started:
                    self.first[(pid, tid)] = seconds
                self.last[(pid, tid)] = (name, seconds)
        self.started = True

    def by_group(self, total_s: float | None = None) -> dict[str, float]:
        """Seconds per group, in ``ORDER``, groups without any left out; with ``total_s`` (the
        processes' whole CPU over the same time), what the samples miss is ``UNSAMPLED``."""
        out: dict[str, float] = {}
        for key, (name, seconds) in self.last.items():
            group = group_of(name)
            out[group] = out.get(group, 0.0) + seconds - self.first.get(key, 0.0)
        if total_s is not None:
            out[UNSAMPLED] = max(0.0, total_s - sum(out.values()))
        return {g: round(out[g], 2) for g in ORDER if out.get(g)}


def _threads(pid: int) -> list[tuple[int, str, float]]:
    """(thread id, name, CPU seconds) of each live thread of ``pid``; none once it is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out = []
    for tid in tids:
        read = read_stat(f"/proc/{pid}/task/{tid}/stat")
        if read:  # else the thread ended
            out.append((int(tid), read[0], cpu_seconds(read[1])))
    return out
