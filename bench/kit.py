"""The benches' kit: what every bench in this folder shares. Writing the input and feeding it
batch by batch, the checkpoint's files, a JVM's CPU and memory from /proc, the S3 server for
``--s3`` runs, the floor's jar, one provider's child process, and the record of each batch
(``BatchSample``) with its one summary (``summary``).

The S3 server, the executors' pids and the test kit's jar are the tests' own support code
(tests/support/): the kit puts that folder on this process's path, the one place a bench does.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

# rockstate's custom metrics of a batch's block reads (``rockstate`` + each name).
BLOCK_READS = ("BlockCacheHits", "BlocksRead", "IndexBlocksRead", "FilterBlocksRead",
               "BlockBytesRead")
# A state operator's time in a batch, as Spark's progress names it (`<name>TimeMs`).
STATE_TIMES = ("allUpdates", "allRemovals", "commit")


@dataclass(frozen=True)
class BatchSample:
    """One batch of a bench run as the bench measured it: Spark's progress of the batch and
    what the bench read around it (the JVM's CPU, the checkpoint's new bytes, the S3
    requests served while it ran, the cache pinned at its end)."""

    started: str  # the batch's trigger time (ISO, UTC), to line up with a profile
    duration_ms: int  # Spark's triggerExecution
    input_rows: int
    cpu_s: float  # the driver JVM's CPU over the batch, every thread
    commit_ms: int  # Spark's commitTimeMs of the first state operator
    commit_path_bytes: int  # rockstateCommitBytes (0 on other providers)
    new_state_bytes: int  # bytes new in state/ after the batch (late uploads included)
    phases_ms: dict[str, int] = field(default_factory=dict)  # Spark's durationMs
    state_ms: dict[str, int] = field(default_factory=dict)  # STATE_TIMES over the operators
    block_reads: dict[str, int] = field(default_factory=dict)  # BLOCK_READS
    s3_requests: dict[str, int] = field(default_factory=dict)  # by kind, as S3 bills them
    pinned_bytes: int | None = None  # rockstate's cache pinned at its end (local mode only)

    @staticmethod
    def of(progress: dict, cpu_s: float, new_state_bytes: int, s3: dict[str, int],
           pinned_bytes: int | None) -> BatchSample:
        """The sample of a batch whose progress is ``progress``."""
        ops = progress["stateOperators"]
        custom = ops[0].get("customMetrics", {})
        return BatchSample(
            started=progress["timestamp"],
            duration_ms=progress["durationMs"]["triggerExecution"],
            input_rows=progress["numInputRows"], cpu_s=cpu_s,
            commit_ms=ops[0]["commitTimeMs"],
            commit_path_bytes=custom.get("rockstateCommitBytes", 0),
            new_state_bytes=new_state_bytes, phases_ms=dict(progress["durationMs"]),
            state_ms={k: sum(op.get(f"{k}TimeMs", 0) for op in ops) for k in STATE_TIMES},
            block_reads={k: custom.get(f"rockstate{k}", 0) for k in BLOCK_READS},
            s3_requests=s3, pinned_bytes=pinned_bytes)


def summary(samples: list[BatchSample]) -> dict:
    """A run's figures from its batches: the first loads the whole state, so the steady
    state's medians count from the second; totals and per-batch lists keep every batch."""
    steady = samples[1:]
    kinds = sorted({k for s in samples for k in s.s3_requests})
    return {
        "rows_per_s": sum(s.input_rows for s in samples)
        / (sum(s.duration_ms for s in samples) / 1000.0),
        "commit_p50_ms": statistics.median(s.commit_ms for s in steady),
        "commit_p95_ms": sorted(s.commit_ms for s in steady)[
            max(0, round(0.95 * len(steady)) - 1)],
        "batch_p50_ms": statistics.median(s.duration_ms for s in steady),
        # The JVM's CPU time per batch, every thread: background work competes with tasks.
        "cpu_p50_s": statistics.median(s.cpu_s for s in steady),
        "bytes_per_batch": statistics.mean(s.new_state_bytes for s in steady),
        "commit_path_bytes": statistics.mean(s.commit_path_bytes for s in steady),
        # Requests to the object store while each batch ran (the background uploads that
        # landed in it included; the bench's own listings between batches not): the median
        # batch after the first, and the sum over every batch.
        "s3_requests_per_batch": {k: statistics.median(s.s3_requests.get(k, 0) for s in steady)
                                  for k in kinds},
        "s3_requests": {k: sum(s.s3_requests.get(k, 0) for s in samples) for k in kinds},
        # New bytes in state/ after each batch from the second (background uploads land late).
        "written_mb": [round(s.new_state_bytes / 2**20, 1) for s in steady],
        "batches_ms": [s.duration_ms for s in samples],
        "batch_starts": [s.started for s in samples],
        "block_reads": [s.block_reads for s in samples],
        "pinned_mb": [round(s.pinned_bytes / 2**20, 1) for s in samples
                      if s.pinned_bytes is not None],
        # Where a batch's time goes (Spark's durationMs phases, p50 after the first batch).
        "phases_p50_ms": {k: statistics.median(s.phases_ms.get(k, 0) for s in steady)
                          for k in sorted({k for s in steady for k in s.phases_ms})},
        "state_time_p50_ms": {k: statistics.median(s.state_ms[k] for s in steady)
                              for k in STATE_TIMES},
    }


def write_input(src: Path, keys: int, changed: int, batches: int) -> list[Path]:
    """One Parquet file a batch: the first holds every key, each later one ``changed`` keys.

    Keys are built by Arrow in chunks and written a row group at a time, so 64M keys need
    no more than a chunk's memory here."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    chunk = 1 << 20
    schema = pa.schema([("key", pa.string()), ("value", pa.int32())])
    files = []
    for b in range(batches):
        if b == 0:
            spans = [(lo, min(keys, lo + chunk)) for lo in range(0, keys, chunk)]
        else:
            start = (b * changed * 7) % keys
            spans = [(lo, min(changed, lo + chunk)) for lo in range(0, changed, chunk)]
        path = src.parent / "staged" / f"batch-{b:04d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(path, schema) as writer:
            for lo, hi in spans:
                ids = pa.array(range(lo, hi), pa.int64())
                if b > 0:
                    ids = pc.remainder(pc.add(ids, start), keys)
                text = pc.utf8_lpad(pc.cast(ids, pa.string()), 8, "0")
                key = pc.binary_join_element_wise("key-", text, "")
                value = pa.array([b] * (hi - lo), pa.int32())
                writer.write_table(pa.table([key, value], schema=schema))
        files.append(path)
    return files


def feed(staged: Path, src: Path) -> int:
    """Puts one batch's file into the running query's source folder whole, and returns its
    rows. A copy in place is listed while it grows: Spark then splits the file by the length
    it listed, reads only the row groups that start within it, and the batch silently holds
    part of the input (a 64M-key load of one run held 40.9M keys). The file source
    skips names starting with a dot, so the copy is made under one and renamed in."""
    import pyarrow.parquet as pq

    hidden = src / f".{staged.name}.tmp"
    shutil.copy(staged, hidden)
    hidden.rename(src / staged.name)
    return pq.ParquetFile(staged).metadata.num_rows


def read_whole(progress: dict, expected: int, batch: int) -> None:
    """Stops the bench unless the batch's progress counts every row its file holds."""
    if progress["numInputRows"] != expected:
        raise SystemExit(f"batch {batch} read {progress['numInputRows']:,} rows of the "
                         f"{expected:,} in its file; its figures would not be comparable.")


def state_files(checkpoint: Path | str) -> dict[str, int]:
    """Files under the checkpoint's state/ directory (local, or an s3a:// URL) and sizes."""
    if str(checkpoint).startswith("s3a://"):
        fs = s3_filesystem()
        root = s3_key(str(checkpoint)) + "/state"
        fs.invalidate_cache()
        return {p: int(i["size"]) for p, i in fs.find(root, detail=True).items()} \
            if fs.exists(root) else {}
    root = Path(checkpoint) / "state"
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and not p.name.endswith(".crc"):
            out[str(p)] = p.stat().st_size
    return out


def interval_seconds(text: str) -> float:
    """Spark's duration string as the bench passes it (``200ms``, ``2s``, ``1min``), in seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m)?\s*", text)
    if not m:
        raise SystemExit(f"--maintenance-interval {text!r}: give a duration such as 200ms or 2s")
    return float(m.group(1)) * {"ms": 0.001, "s": 1.0, "min": 60.0, "m": 60.0}[m.group(2) or "ms"]


def settle(checkpoint: Path | str, maintenance_s: float, limit_s: float = 60.0) -> float:
    """Waits until the files in ``state/`` stop changing for three maintenance intervals (at
    least 1.5 s), at most ``limit_s``; returns the seconds waited. Both providers write some
    files after the last batch (snapshots, their cleanup), and "after maintenance" means after
    that work, for both alike."""
    began = time.monotonic()
    quiet = max(3 * maintenance_s, 1.5)
    last, since = state_files(checkpoint), time.monotonic()
    while time.monotonic() - began < limit_s:
        time.sleep(min(0.5, quiet / 3))
        now = state_files(checkpoint)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return time.monotonic() - began


def file_kind(path: str) -> str:
    """A state file's kind, by the suffix of its name (``sst``, ``zip``, ``changelog``,
    rockstate's ``rsv`` version files and ``json`` manifests); ``other`` for a name without
    one (Spark's operator metadata and schema files)."""
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1] if "." in name else "other"


def peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def stat_fields(stat: Path) -> list[str]:
    """The fields of a /proc ``stat`` file after the command (which may hold spaces and
    parentheses): state first, then ppid, pgrp, session, ..."""
    return stat.read_text().rsplit(")", 1)[1].split()


def _stat_cpu_seconds(stat: Path) -> float:
    """User plus system CPU time from a /proc ``stat`` file (a process's or one thread's)."""
    fields = stat_fields(stat)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """CPU time of a process, every thread (native ones too) included."""
    return _stat_cpu_seconds(Path(f"/proc/{pid}/stat"))


def cpu_by_thread(pid: int) -> dict[str, float]:
    """CPU seconds of a process's live threads, grouped by name with digits dropped."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            comm = (task / "comm").read_text().strip()
            seconds = _stat_cpu_seconds(task / "stat")
        except OSError:  # the thread ended
            continue
        group = "".join(c for c in comm if not c.isdigit()).strip(" -#_")
        out[group] = out.get(group, 0.0) + seconds
    return out


def open_files(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def executor_jvms(spark) -> list[int]:
    """The executor JVMs of a local-cluster application (none for local[N])."""
    from support.executors import executor_pids

    return executor_pids(spark.sparkContext.applicationId)


def kill_an_executor(spark) -> float:
    """SIGKILLs one executor JVM of a local-cluster application (its worker starts another);
    returns when, on the monotonic clock."""
    pids = executor_jvms(spark)
    if not pids:
        raise SystemExit("--kill-before needs executor JVMs: --master local-cluster[...]")
    os.kill(pids[0], signal.SIGKILL)
    return time.monotonic()


def s3_requests() -> dict[str, int]:
    """The requests the S3 server has served so far, by kind as S3 bills them (PUT, POST, GET,
    HEAD, LIST, DELETE: tests/support/s3.py counts them as it serves them, from every JVM)."""
    endpoint = os.environ.get("ROCKSTATE_BENCH_S3_ENDPOINT")
    if not endpoint:
        return {}
    import urllib.request

    from support.s3 import REQUESTS_PATH

    with urllib.request.urlopen(endpoint + REQUESTS_PATH, timeout=30) as response:
        return json.loads(response.read())


def start_s3_server():
    """Starts the S3 API server (moto, in a child process) and tells this process's children
    where it is, through the environment: the Spark settings for ``s3a://`` (with its jars),
    the root of the bench's checkpoints, the fsspec options and the request counter's
    endpoint. The caller stops it."""
    from support.s3 import S3Server

    server = S3Server(process=True).start()
    os.environ["ROCKSTATE_BENCH_SPARK_CONF"] = json.dumps(server.spark_conf())
    os.environ["ROCKSTATE_BENCH_S3_ROOT"] = server.url("bench")
    os.environ["ROCKSTATE_BENCH_S3_OPTIONS"] = json.dumps(server.storage_options())
    os.environ["ROCKSTATE_BENCH_S3_ENDPOINT"] = server.endpoint
    return server


def with_s3_conf(builder):
    """``builder`` with the Spark settings ``start_s3_server`` handed down (none without it)."""
    for k, v in json.loads(os.environ.get("ROCKSTATE_BENCH_SPARK_CONF", "{}")).items():
        builder = builder.config(k, v)
    return builder


def s3_storage_options() -> dict:
    """The fsspec options of the server ``start_s3_server`` started."""
    return json.loads(os.environ["ROCKSTATE_BENCH_S3_OPTIONS"])


def s3_filesystem():
    """The server ``start_s3_server`` started, as an fsspec file system."""
    import fsspec

    return fsspec.filesystem("s3", **s3_storage_options())


def s3_key(url: str) -> str:
    """An ``s3a://bucket/key`` URL as fsspec's ``bucket/key``."""
    return url.removeprefix("s3a://")


def requests_between(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    """The S3 requests served from ``before`` to ``after`` (two ``s3_requests()``), by kind."""
    return {k: v - before.get(k, 0) for k, v in after.items()}


def floor_jar() -> str:
    """The test kit's jar, which holds the floor provider (compiled for the installed Spark
    line on first use, then cached: tests/support/testkit_jar.py). The parent builds it once
    and hands its path to the children."""
    path = os.environ.get("ROCKSTATE_BENCH_TESTKIT_JAR")
    if not path:
        from support.testkit_jar import testkit_jar

        path = str(testkit_jar())
        os.environ["ROCKSTATE_BENCH_TESTKIT_JAR"] = path
    return path


def median_run(rs: list[dict]) -> dict:
    """One provider's runs as one: the median of every number (the last run's lists)."""
    out = dict(rs[-1])
    for k, v in rs[-1].items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = statistics.median(r[k] for r in rs)
        elif isinstance(v, dict) and all(isinstance(x, (int, float)) for x in v.values()):
            out[k] = {kk: statistics.median(r[k].get(kk, 0) for r in rs) for kk in v}
    if len(rs) > 1:
        out["rows_per_s_runs"] = [round(r["rows_per_s"]) for r in rs]
    return out


def _session_alive(sid: int) -> bool:
    """Whether a process of session `sid` is still running (Linux's /proc)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = stat_fields(Path(f"/proc/{entry}/stat"))
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                return True
    return False


def run_child(cmd: list[str]) -> tuple[str, str]:
    """Runs one provider's child and returns its output. The child runs in a session of its
    own, writing to files rather than pipes: a JVM it leaves behind (once seen at 16M keys,
    alive and idle after its Python exited) is killed with the session, after a grace, instead
    of holding the pipes open and the whole bench with them."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=os.environ,
                                 start_new_session=True)
        child.wait()
        # The JVM exits on its own once its Python has (its shutdown hooks run: a Flight
        # Recorder dump, for one); one still there after the grace is killed.
        deadline = time.monotonic() + 30
        while _session_alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):  # nothing left in the session
            os.killpg(child.pid, signal.SIGKILL)
        out.seek(0)
        err.seek(0)
        return out.read(), err.read()
