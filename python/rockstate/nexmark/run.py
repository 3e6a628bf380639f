"""One Nexmark query on one provider: run as fast as Spark goes (or at a rate), and what it
cost (Nexmark's Cores x Time, batches, state, checkpoint files, recovery after a kill)."""

from __future__ import annotations

import os
import signal
import statistics
import threading
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import fsspec

from rockstate.nexmark.processes import is_local, task_jvms, tree_cpu_seconds
from rockstate.nexmark.source import IndexStream
from rockstate.nexmark.threads import ThreadCpu
from rockstate.nexmark.views import stream_views
from rockstate.session.providers import PROVIDERS
from rockstate.session.spark_conf import PROVIDER_KEY

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyspark.sql import SparkSession

    from rockstate.nexmark.config import NexmarkConfig
    from rockstate.nexmark.queries import Query
    from rockstate.session.providers import ProviderSpec

@dataclass(frozen=True)
class RunFigures:
    """What one query cost on one provider (times in seconds and milliseconds as named)."""

    query: str
    provider: str
    events: int
    time_s: float  # start to the last event's output
    cpu_s: float | None  # CPU of the task JVMs on this machine: Nexmark's Cores x Time
    cores: float | None  # cpu_s / time_s
    events_per_s: float
    batches: int
    batch_p50_ms: float
    batch_p95_ms: float
    state_rows_peak: int
    state_bytes_peak: int
    checkpoint_files: int
    checkpoint_bytes: int
    output_rows: int | None  # None: not kept (the no-op sink)
    recovery_s: float | None = None  # an executor SIGKILL to the next batch's end
    repeat: int = 0  # which of the interleaved runs of this query and provider
    # cpu_s by what the threads do (rockstate.nexmark.threads), None where cpu_s is
    cpu_by_thread_group: dict[str, float] | None = None
    driver_pid: int | None = None  # the driver JVM's process: one a run when isolated

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RunPlan:
    """Where and how a query runs: ``root`` holds its checkpoint and output (a local path or
    a URL); ``batch_events`` events a batch; ``rate`` events a second (a batch each
    ``batch_events / rate`` seconds; None: as fast as Spark goes); ``kill_after`` SIGKILLs
    an executor once that many batches are done (local-cluster and standalone masters);
    ``stop_after`` stops the query after that many batches and restarts it from its
    checkpoint; ``keep_output`` writes the output for comparison (else a no-op sink,
    Nexmark's blackhole)."""

    root: str
    batch_events: int
    partitions: int
    rate: float | None = None
    kill_after: int | None = None
    stop_after: int | None = None
    keep_output: bool = True
    storage_options: dict[str, Any] | None = None

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])


def run_query(spark: SparkSession, query: Query, provider: str, config: NexmarkConfig,
              plan: RunPlan, catalogue: Mapping[str, ProviderSpec] = PROVIDERS,
              repeat: int = 0) -> RunFigures:
    """Runs ``query`` over ``config``'s events on ``provider`` (a name in ``catalogue``)
    and returns its figures; ``repeat`` numbers the runs of the same query and provider
    (each its own checkpoint and output)."""
    provider_class, confs = catalogue[provider]
    spark.conf.set(PROVIDER_KEY, provider_class)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "1000000")
    # Days (q17) are UTC's, in the query and its oracle alike.
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    for key, value in confs.items():
        spark.conf.set(key, value)
    name = run_name(query.name, provider, repeat)
    source = IndexStream(config.events, plan.batch_events, plan.partitions)
    checkpoint = plan.path("checkpoint", name)
    output = plan.path("output", name)

    sampler = _Sampler(spark, plan.kill_after)
    started = time.monotonic()
    sampler.start()
    progress: list[dict] = []
    handle = _start(spark, query, source, config, checkpoint, output, plan)
    try:
        sampler.watch(handle)
        if plan.stop_after is not None:
            _wait_for_batch(handle, plan.stop_after - 1)
            progress += _progress(handle)
            _stop(spark, handle)
            handle = _start(spark, query, source, config, checkpoint, output, plan)
            sampler.watch(handle)
        _wait_for_batch(handle, source.last_batch)
        elapsed = time.monotonic() - started
        progress += _progress(handle)
    finally:
        sampler.stop()
        _stop(spark, handle)
    # The batches with events (the last one has none: it closes the windows).
    data = [p for p in progress if p["batchId"] < source.last_batch]
    durations = sorted(p["durationMs"]["triggerExecution"] for p in data) or [0]
    rows = [sum(op["numRowsTotal"] for op in p["stateOperators"]) for p in progress]
    state_bytes = [sum(op["memoryUsedBytes"] for op in p["stateOperators"]) for p in progress]
    files, size = _folder_size(plan.path("checkpoint", name, "state"), plan.storage_options)
    cpu = sampler.cpu_seconds()
    return RunFigures(
        query=query.name, provider=provider, events=config.events, time_s=round(elapsed, 3),
        cpu_s=round(cpu, 2) if cpu is not None else None,
        cores=round(cpu / elapsed, 2) if cpu is not None else None,
        events_per_s=round(config.events / elapsed, 1), batches=len(data),
        batch_p50_ms=statistics.median(durations),
        batch_p95_ms=durations[min(len(durations) - 1, int(0.95 * len(durations)))],
        state_rows_peak=max(rows, default=0), state_bytes_peak=max(state_bytes, default=0),
        checkpoint_files=files, checkpoint_bytes=size,
        output_rows=(spark.read.parquet(output).count() if plan.keep_output else None),
        recovery_s=sampler.recovery_s(progress), repeat=repeat,
        cpu_by_thread_group=sampler.threads.by_group(cpu) if cpu is not None else None,
        driver_pid=spark.sparkContext._gateway.proc.pid)  # type: ignore[union-attr]


def run_name(query: str, provider: str, repeat: int = 0) -> str:
    """The folder name of a run's checkpoint and output."""
    return f"{query}-{provider}" + (f"-{repeat}" if repeat else "")


def _start(spark: SparkSession, query: Query, source: IndexStream, config: NexmarkConfig,
           checkpoint: str, output: str, plan: RunPlan):
    frame = query.build(stream_views(spark, source, config))
    writer = frame.writeStream.outputMode(query.mode).option("checkpointLocation", checkpoint) \
        .queryName(f"nexmark_{query.name}")
    if plan.rate is not None:
        writer = writer.trigger(processingTime=f"{plan.batch_events / plan.rate:.3f} seconds")
    # The file sink (exactly once, in the JVM: no Python call a batch that a stop could cut).
    if plan.keep_output:
        writer = writer.format("parquet").option("path", output)
    else:
        writer = writer.format("noop")
    return writer.start()


def _stop(spark: SparkSession, query) -> None:
    """Stops ``query``, whose source never runs dry: the stop cuts a batch short (one past the
    last), and Spark logs the cut jobs as errors while they wind down. They are the stop's,
    not the run's: logging is off until they are gone (then ERROR, the level the runner
    sets)."""
    context = spark.sparkContext
    context.setLogLevel("OFF")
    try:
        query.stop()
        deadline = time.monotonic() + 10
        while context.statusTracker().getActiveJobsIds() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the cut tasks' last words
    finally:
        context.setLogLevel("ERROR")


def _wait_for_batch(query, batch: int) -> None:
    """Until batch ``batch`` is done (the source never runs dry: it is the runner that stops
    the query)."""
    while True:
        last = query.lastProgress
        if last is not None and last["batchId"] >= batch:
            return
        if not query.isActive:
            raise RuntimeError(f"{query.name} stopped before batch {batch}: "
                               f"{query.exception()}")
        time.sleep(0.05)


def _progress(query) -> list[dict]:
    return [p if isinstance(p, dict) else p.jsonValue() for p in query.recentProgress]


def _folder_size(url: str, storage_options: dict[str, Any] | None) -> tuple[int, int]:
    fs, root = fsspec.core.url_to_fs(url, **(storage_options or {}))
    if not fs.exists(root):
        return 0, 0
    sizes = [info["size"] for info in fs.find(root, detail=True).values()
             if info.get("type") == "file"]
    return len(sizes), sum(sizes)


class _Sampler:
    """Samples the CPU of the task JVMs' process trees every half second (a process gone
    keeps what it used when last seen), and SIGKILLs an executor once ``kill_after`` batches
    are done."""

    def __init__(self, spark: SparkSession, kill_after: int | None) -> None:
        self.spark = spark
        self.kill_after = kill_after
        self.local = is_local(spark.sparkContext.master)
        self.first: dict[int, float] = {}
        self.threads = ThreadCpu()
        self.last: dict[int, float] = {}
        self.killed_at: float | None = None  # wall clock, seconds
        self.query = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        # What the processes had used before the run is not the run's; one started during the
        # run (an executor replacing a killed one, a Python worker) counts from nothing.
        self.first = tree_cpu_seconds(task_jvms(self.spark))
        self._sample()
        self.thread.start()

    def watch(self, query) -> None:
        self.query = query

    def stop(self) -> None:
        self.done.set()
        self.thread.join()
        self._sample()

    def _loop(self) -> None:
        while not self.done.wait(0.5):
            self._sample()
            if self.kill_after is not None and self.killed_at is None and self.query:
                last = self.query.lastProgress
                if last is not None and last["batchId"] >= self.kill_after:
                    self._kill()

    def _sample(self) -> None:
        jvms = task_jvms(self.spark)
        for pid, used in tree_cpu_seconds(jvms).items():
            self.last[pid] = max(used, self.last.get(pid, 0.0))
        self.threads.sample(jvms)

    def _kill(self) -> None:
        if self.local:
            raise RuntimeError("a kill needs executors of their own: run with a "
                               "local-cluster[...] or spark:// master")
        pids = task_jvms(self.spark)
        if pids:
            self.killed_at = time.time()
            os.kill(pids[0], signal.SIGKILL)

    def cpu_seconds(self) -> float | None:
        if not self.last:
            return None
        return sum(self.last[p] - self.first.get(p, 0.0) for p in self.last)

    def recovery_s(self, progress: list[dict]) -> float | None:
        """From the kill to the end of the first batch that ended after it."""
        if self.killed_at is None:
            return None
        ends = sorted(_epoch_s(p["timestamp"]) + p["durationMs"]["triggerExecution"] / 1000
                      for p in progress)
        after = [e for e in ends if e > self.killed_at]
        return round(after[0] - self.killed_at, 3) if after else None


def _epoch_s(timestamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
