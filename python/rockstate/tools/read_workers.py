"""Reading a state's partitions in worker processes.

rocksdict holds the GIL while it iterates a snapshot, so threads do not read two partitions at
once; forked processes do. This process and each worker read and decode a contiguous share of
the partitions, each worker handing back an Arrow table; the shares are joined in partition
order, the order a serial read gives. What a worker runs is a module-level function and the
partitions' numbers, so nothing but names and the location crosses to it.

Only a local checkpoint is read this way, and only where ``fork`` exists: a forked child
cannot use the parent's connection to an object store, and ``spawn``/``forkserver`` would run
the user's ``__main__`` module again in every worker.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import pyarrow as pa

from rockstate.errors import RockstateError


def worker_count(local: bool, partitions: int, workers: int | None) -> int:
    """How many processes read ``partitions`` partitions: ``workers`` (default: the CPUs this
    process may use), at most one per partition; 1 (this process) for a checkpoint that is not
    on a ``local`` disk, or where the platform cannot fork."""
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be 1 or more, not {workers}")
    if not local or not sys.platform.startswith("linux") \
            or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    wanted = workers if workers is not None else len(os.sched_getaffinity(0))
    return max(1, min(wanted, partitions))


def _share_to_file(read_share: Callable[[list[int]], pa.Table], partitions: list[int],
                   path: str) -> str:
    """In a worker: its share's table, written to ``path`` as an Arrow file for the parent to
    map (a pickled table through the pool's pipe costs two copies and a fifth of a read)."""
    table = read_share(partitions)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return path


def read_in_workers(read_share: Callable[[list[int]], pa.Table],
                    partitions: Sequence[tuple[int, str]], workers: int,
                    progress: Callable[[str], None] | None = None) -> pa.Table:
    """``read_share`` (picklable: a module-level function, or a partial of one) run on
    ``workers`` contiguous shares of ``partitions`` (number, label): the first in this process,
    the others in forked processes meanwhile; the tables joined in partition order, each
    partition's label going to ``progress`` as its share lands.

    This process reads a share itself because a forked worker starts with a cold heap: every
    page its read touches is a fault, and with the handover it costs a worker about a third
    more than the same share read here."""
    size, extra = divmod(len(partitions), workers)
    shares, start = [], 0
    for i in range(workers):
        end = start + size + (1 if i < extra else 0)
        shares.append(partitions[start:end])
        start = end
    # pyarrow's converter imports pandas on its first use (a third of a second): taken here
    # once, before the fork, instead of in every worker of every read.
    pa.array([], type=pa.large_binary())
    with tempfile.TemporaryDirectory(prefix="rockstate-read-") as handover, \
            ProcessPoolExecutor(workers - 1,
                                mp_context=multiprocessing.get_context("fork")) as pool:
        # The workers must never finalize the caller's objects: a py4j proxy collected in a
        # child would talk to the caller's JVM over the caller's own connection. Objects made
        # before the fork are frozen out of the collector while the pool forks (it forks
        # every worker at the first submit), as the gc module advises before a fork.
        gc.freeze()
        try:
            futures = [pool.submit(_share_to_file, read_share, [number for number, _ in share],
                                   os.path.join(handover, f"{i}.arrow"))
                       for i, share in enumerate(shares[1:], start=1)]
        finally:
            gc.unfreeze()
        tables = [read_share([number for number, _ in shares[0]])]
        _report(shares[0], progress)
        for share, future in zip(shares[1:], futures, strict=True):
            try:
                path = future.result()
            except BrokenProcessPool as e:
                raise RockstateError(
                    f"a worker process reading the state died ({e}), killed or out of memory; "
                    "read in this process with workers=1, or with fewer workers") from None
            # Mapped, not copied: the table's buffers keep the mapping once the file is gone.
            tables.append(pa.ipc.open_file(pa.memory_map(path)).read_all())
            os.unlink(path)
            _report(share, progress)
    # A share past 2 GiB of strings decodes to large_string: the others are promoted to it.
    return pa.concat_tables(tables, promote_options="permissive")


def _report(share: Sequence[tuple[int, str]], progress: Callable[[str], None] | None) -> None:
    """Each partition label of a share that has landed, to ``progress``."""
    if progress:
        for _, label in share:
            progress(label)
