"""`rockstate nexmark`'s fairness, without Spark: the order the runs go in (the providers
alternate over the repeats), a provider's runs summed up as medians with their spread, and the
CPU of a JVM's threads grouped by what they do."""

from __future__ import annotations

import ctypes
import os
import threading

from rockstate.nexmark import benchmark, threads
from rockstate.nexmark.benchmark import BenchmarkResult, QueryOutcome, median_run
from rockstate.nexmark.config import NexmarkConfig
from rockstate.nexmark.run import RunFigures


def _run(provider: str, repeat: int, cpu: float, time_s: float = 10.0,
         groups: dict[str, float] | None = None) -> RunFigures:
    return RunFigures(query="q5", provider=provider, events=1000, time_s=time_s, cpu_s=cpu,
                      cores=round(cpu / time_s, 2), events_per_s=1000 / time_s, batches=20,
                      batch_p50_ms=100.0 * cpu, batch_p95_ms=150.0, state_rows_peak=10,
                      state_bytes_peak=1000, checkpoint_files=5, checkpoint_bytes=500,
                      output_rows=None, repeat=repeat, cpu_by_thread_group=groups,
                      driver_pid=1000 + repeat)


def test_the_providers_alternate_over_the_repeats_and_from_query_to_query():
    order: list[tuple[str, str, int]] = []

    def run_one(query: str, provider: str, repeat: int) -> RunFigures:
        order.append((query, provider, repeat))
        return _run(provider, repeat, 1.0)

    runs = benchmark._interleaved(["q5", "q11"], ["a", "b"], 3, run_one, None, None)
    assert [(p, r) for q, p, r in order if q == "q5"] == [
        ("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2)]
    assert [(p, r) for q, p, r in order if q == "q11"] == [
        ("b", 0), ("a", 0), ("a", 1), ("b", 1), ("b", 2), ("a", 2)]
    # Kept by provider, then repeat, whatever order they ran in.
    assert [(r.provider, r.repeat) for r in runs["q11"]] == [
        ("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2)]


def test_a_providers_runs_sum_up_as_medians_with_their_spread():
    a = [_run("a", 0, 30.0, 20.0, {"tasks": 20.0, "JIT": 4.0}),
         _run("a", 1, 36.0, 22.0, {"tasks": 24.0, "JIT": 6.0, "GC": 1.0}),
         _run("a", 2, 33.0, 21.0, {"tasks": 22.0, "JIT": 5.0})]
    b = [_run("b", r, 40.0 + r) for r in range(3)]
    outcome = QueryOutcome("q5", a + b, None, None)
    m = outcome.median("a")
    assert (m.cpu_s, m.time_s, m.batch_p50_ms) == (33.0, 21.0, 3300.0)
    assert m.driver_pid is None  # a median ran in no one process
    assert m.cpu_by_thread_group == {"tasks": 22.0, "JIT": 5.0, "GC": 0.0}
    assert outcome.spread("a", "cpu_s") == (30.0, 36.0)
    assert outcome.median("b").cpu_by_thread_group is None
    assert median_run(a[:1]) is a[0]
    result = BenchmarkResult(NexmarkConfig(events=1000), "local[2]", [outcome], 3, True)
    text = benchmark.table(result)
    # Each provider's row: its medians, its runs' Cores x Time, its ratio to the first.
    assert "| 30.00, 36.00, 33.00 | 1.00 |" in text
    assert "| 40.00, 41.00, 42.00 | 1.24 |" in text
    data = result.as_dict()["queries"][0]
    assert data["spread"]["b"]["cpu_s"] == (40.0, 42.0)
    assert [m["cpu_s"] for m in data["medians"]] == [33.0, 41.0]
    assert "| q5 | a | 22.00 | 5.00 | 0.00 |" in benchmark.thread_table(result)


def test_threads_are_grouped_by_their_names():
    assert threads.group_of("Executor task l") == "tasks"
    assert threads.group_of("rockstate-snaps") == "rockstate snapshots, uploads, downloads"
    assert threads.group_of("rockstate-check") == "rockstate coordinator and plugin"
    assert threads.group_of("state-store-mai") == "Spark state store maintenance"
    assert threads.group_of("rocksdb:low") == "RocksDB flushes and compactions"
    assert threads.group_of("C2 CompilerThre") == "JIT"
    assert threads.group_of("G1 Conc#0") == "GC"
    assert threads.group_of("dispatcher-even") == threads.OTHER


def test_a_threads_cpu_counts_from_the_first_sample_and_the_rest_is_unsampled():
    cpu = threads.ThreadCpu()
    pid = os.getpid()
    cpu.sample([pid])
    done = threading.Event()

    def burn() -> None:  # a thread that starts after the first sample counts from nothing
        # The kernel's name of the thread, as a JVM names its task threads.
        ctypes.CDLL(None).prctl(15, b"Executor task l", 0, 0, 0)  # PR_SET_NAME
        x = 0
        while not done.is_set():
            x += 1

    worker = threading.Thread(target=burn, name="Executor task l")
    worker.start()
    try:
        threading.Event().wait(0.5)
        cpu.sample([pid])
    finally:
        done.set()
        worker.join()
    groups = cpu.by_group(total_s=sum(s for _, s in cpu.last.values()) + 1.0)
    assert groups["tasks"] > 0.1
    assert groups[threads.UNSAMPLED] >= 1.0
    assert list(groups) == [g for g in threads.ORDER if g in groups]
