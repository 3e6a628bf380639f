"""The JVMs that run a Nexmark query's tasks on this machine, and the CPU time they and their
descendants (Python workers: q18 and q19 rank in pandas) use: what Nexmark's Cores x Time
counts, its workers' process trees, from /proc."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def task_jvms(spark: SparkSession) -> list[int]:
    """The process ids of the JVMs that run tasks and are on this machine: the driver's in
    local mode, else the application's executors (none when they run elsewhere)."""
    if is_local(spark.sparkContext.master):
        return [spark.sparkContext._gateway.proc.pid]  # type: ignore[union-attr]
    return executor_jvms(spark.sparkContext.applicationId)


def is_local(master: str) -> bool:
    """Whether ``master`` runs the tasks in the driver's JVM (``local``, ``local[N]``)."""
    return master == "local" or master.startswith("local[")


def executor_jvms(app_id: str) -> list[int]:
    """This machine's executor JVMs of application ``app_id``."""
    pids = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in args and \
                app_id.encode() in args:
            pids.append(int(entry))
    return pids


def tree_cpu_seconds(roots: list[int]) -> dict[int, float]:
    """CPU seconds each live process in the trees under ``roots`` has used, by process id
    (its own: a reaped child's is the child's, counted while it lived)."""
    stats = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields:
                stats[int(entry)] = fields
    children: dict[int, list[int]] = {}
    for pid, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(pid)
    used: dict[int, float] = {}
    todo = [p for p in roots if p in stats]
    while todo:
        pid = todo.pop()
        f = stats[pid]
        used[pid] = cpu_seconds(f)
        todo += children.get(pid, [])
    return used


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command (state first), or None."""
    read = read_stat(f"/proc/{pid}/stat")
    return read[1] if read else None


def read_stat(path: str) -> tuple[str, list[str]] | None:
    """A /proc ``stat`` file (a process's or a thread's): its name, and its fields after the
    name (state first); None once it is gone. The name may hold spaces and parentheses."""
    try:
        with open(path) as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 1:].split()


def cpu_seconds(fields: list[str]) -> float:
    """User plus system CPU seconds from a ``stat`` file's fields (``read_stat``)."""
    return (int(fields[11]) + int(fields[12])) / _TICKS
