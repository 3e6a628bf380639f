"""The Python API's two handles: ``rockstate.Checkpoint(location)``, one per checkpoint location,
and ``rockstate.Savepoint(location)``, one per savepoint (Delta's ``DeltaTable.forPath``).

A handle is a value: the location (a path or fsspec URL) and the ``storage_options`` its file
system opens with (credentials, endpoint), as fsspec takes them. Making one reads nothing; each
method opens the location and does what the free function of the same job does: the free
functions (``rockstate.read_state``, ``rockstate.verify``, ...) are that method's function
form, with their own parameter names kept, and each method calls its function, so there is one
implementation. The handles are the documented API and speak one vocabulary: the handle's own
place is its ``location`` (opened with ``storage_options``); a method that writes somewhere
else takes that place as ``target``, opened with ``target_options``, and returns the handle of
what it made.

The two handles make each other (a checkpoint's savepoint, a savepoint's restored checkpoint),
so they share this module: two modules would import each other.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rockstate.checkpoint import offsets
from rockstate.checkpoint.location import DEFAULT_STORE, CheckpointLocation, open_location
from rockstate.errors import RockstateError
from rockstate.live import view
from rockstate.tools import (
    changes,
    forget,
    read,
    report,
    restore,
    rewrite,
    savepoint,
    savepoint_manifest,
    transform,
    verify,
)

if TYPE_CHECKING:
    from pathlib import Path

    import pyarrow as pa

    from rockstate.checkpoint.model import CheckpointRecord, QueryCheckpoints
    from rockstate.tools.forget import ForgetResult
    from rockstate.tools.rewrite import RewriteResult
    from rockstate.tools.savepoint_manifest import SavepointManifest
    from rockstate.tools.transform import TransformResult
    from rockstate.tools.verify import VerifyReport


def _location_text(location: object, handle: str) -> str:
    """A handle's location as the text fsspec and Spark take: a path (``str`` or
    ``os.PathLike``) or URL; an opened :class:`CheckpointLocation` is refused, naming the fix
    (it keeps no options a rewrite could reopen it with)."""
    if isinstance(location, CheckpointLocation):
        raise TypeError(f"rockstate.{handle} takes a path or URL and its storage_options, not "
                        f"a CheckpointLocation: rockstate.{handle}({location.url!r}, "
                        "storage_options={...}).")
    if not isinstance(location, str | os.PathLike):
        raise TypeError(f"rockstate.{handle} takes a path or fsspec URL, not "
                        f"{type(location).__name__}.")
    return os.fspath(location)  # type: ignore[return-value]


@dataclass(frozen=True)
class Checkpoint:
    """A streaming query's checkpoint location: everything rockstate does with one, without a
    running query. ``location`` is its path or fsspec URL (``pathlib.Path`` too),
    ``storage_options`` its file system's options (equal handles have equal both; ``repr``
    leaves the options out, they hold credentials).

    ``read``, ``read_changes``, ``export``, ``verify``, ``report``, ``checkpoints``,
    ``completed``, ``recorded_confs``, ``provider_class`` and ``savepoint`` read it with fsspec
    and start no JVM; ``rescale``, ``migrate``, ``forget`` and ``transform`` rewrite a stopped
    query's state with a Spark job. A running query's live view is ``rockstate.checkpoints(query)``.
    """

    location: str
    storage_options: dict[str, Any] | None = field(default=None, repr=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "location", _location_text(self.location, "Checkpoint"))

    def read(self, operator: int = 0, version: int | None = None,
             partitions: list[int] | None = None, store: str = DEFAULT_STORE,
             progress: Callable[[str], None] | None = None, state_var: str | None = None,
             workers: int | None = None) -> pa.Table:
        """One operator's store at ``version`` (default: the newest every partition has) as a
        table of ``key``, ``value`` and ``partition_id``, the rows of Spark's ``statestore``
        source; ``state_var``: a transformWithState operator's state variable. Function form:
        ``rockstate.read_state(location, ...)``."""
        return read.read_state(self.location, operator=operator, version=version,
                               partitions=partitions, store=store, progress=progress,
                               state_var=state_var, storage_options=self.storage_options,
                               workers=workers)

    def read_changes(self, operator: int = 0, from_batch: int = 0, to_batch: int | None = None,
                     partitions: list[int] | None = None,
                     store: str = DEFAULT_STORE) -> pa.Table:
        """Every change batches ``from_batch`` to ``to_batch`` (default: the newest every
        partition committed) made to one operator's store: ``batch_id``, ``change_type``,
        ``key``, ``value``, ``partition_id``, the rows of Spark's change feed. Function form:
        ``rockstate.read_changes(location, ...)``."""
        return changes.read_changes(self.location, operator=operator, from_batch=from_batch,
                                    to_batch=to_batch, partitions=partitions, store=store,
                                    storage_options=self.storage_options)

    def export(self, target: str, format: str = "parquet", version: int | None = None,
               progress: Callable[[str], None] | None = None,
               target_options: dict[str, Any] | None = None) -> list[str]:
        """Every operator's state as parquet datasets under ``target`` (a path or fsspec URL,
        opened with ``target_options``); returns the datasets' paths. Function form:
        ``rockstate.export(location, dest, ..., dest_options=...)``."""
        return read.export(self.location, target, format=format, version=version,
                           progress=progress, storage_options=self.storage_options,
                           dest_options=target_options)

    def verify(self, progress: Callable[[str], None] | None = None) -> VerifyReport:
        """Checks every file each version and completed checkpoint needs (a savepoint's location
        is checked as a savepoint: :meth:`Savepoint.verify`). Function form:
        ``rockstate.verify(location)``."""
        return verify.verify(self.location, progress=progress,
                             storage_options=self.storage_options)

    def report(self, target: str | Path,
               progress: Callable[[str], None] | None = None) -> Path:
        """Writes the checkpoint history as one HTML page to the local file ``target`` and
        returns it. Function form: ``rockstate.report(location, path)`` (which also takes a
        running query)."""
        return report.report(self.location, target, progress=progress,
                             storage_options=self.storage_options)

    def checkpoints(self) -> QueryCheckpoints:
        """The completed and aborted checkpoints the location records. Function form:
        ``rockstate.checkpoints(location)`` (which also takes a running query: the driver's
        view, pending checkpoints included)."""
        return view.checkpoints(self.location, storage_options=self.storage_options)

    def completed(self) -> tuple[CheckpointRecord, ...]:
        """The completed checkpoints (``rockstate/checkpoints/<version>/_metadata``), oldest
        first: ``checkpoints().completed``, without reading the aborted ones."""
        return tuple(open_location(self.location, self.storage_options).checkpoints())

    def recorded_confs(self, batch_id: int | None = None) -> dict[str, str]:
        """The session confs Spark recorded in the offset log of ``batch_id`` (default: the
        latest). Function form: ``rockstate.recorded_confs(location, ...)``."""
        return offsets.recorded_confs(self.location, batch_id=batch_id,
                                      storage_options=self.storage_options)

    def provider_class(self) -> str:
        """The state store provider class the query is bound to. Function form:
        ``rockstate.provider_class(location)``."""
        return offsets.provider_class(self.location, storage_options=self.storage_options)

    def savepoint(self, target: str | os.PathLike[str], *,
                  target_options: dict[str, Any] | None = None,
                  progress: Callable[[str], None] | None = None) -> Savepoint:
        """Writes a savepoint of the newest committed batch to ``target`` (new, or an empty
        directory; opened with ``target_options``) and returns its handle, whose
        :meth:`Savepoint.manifest` is the listing as written: keep its ``digest``. Function
        form: ``rockstate.savepoint(location, target, ..., target_options=...)``, which
        returns that manifest."""
        written = savepoint.savepoint(self.location, _location_text(target, "Savepoint"),
                                      progress=progress, storage_options=self.storage_options,
                                      target_options=target_options)
        return Savepoint._as_written(written, target_options)

    def rescale(self, spark: Any, partitions: int) -> RewriteResult:
        """Rewrites the stopped query's state for ``partitions`` shuffle partitions, as a Spark
        job of ``spark``. Function form: ``rockstate.rescale(spark, location, partitions)``."""
        return rewrite.rescale(spark, self.location, partitions=partitions,
                               storage_options=self.storage_options)

    def migrate(self, spark: Any, to: str, partitions: int | None = None) -> RewriteResult:
        """Moves the stopped query's state to the provider ``to`` (``"rockstate"`` or
        ``"spark-rocksdb"``), optionally with a new partition count. Function form:
        ``rockstate.migrate(spark, location, to, ...)``."""
        return rewrite.migrate(spark, self.location, to=to, partitions=partitions,
                               storage_options=self.storage_options)

    def forget(self, spark: Any, keys: Any, *, purge_history: bool = False) -> ForgetResult:
        """Removes every row whose key has the values of a row of ``keys`` (a DataFrame whose
        columns name key columns, e.g. ``user_id``) from every operator of the stopped query,
        as a new committed batch; ``purge_history`` also removes the older versions that still
        hold them (``ForgetResult.history`` says which). docs/state-processor.md says what
        matches in each operator. Function form: ``rockstate.forget(spark, location, keys)``."""
        return forget.forget(spark, self.location, keys, purge_history=purge_history,
                             storage_options=self.storage_options)

    def transform(self, spark: Any, operator: int, fn: Callable[[Any], Any], *,
                  value_schema: Any = None) -> TransformResult:
        """Writes ``fn(rows)`` as operator ``operator``'s state of a new batch of the stopped
        query: ``rows`` is a DataFrame of ``key`` and ``value`` as ``read`` shows them, and
        ``fn`` returns the same columns of the same types, each key once, or values of
        ``value_schema`` (a ``StructType``), which becomes the schema Spark checks the
        restarted query against. Function form:
        ``rockstate.transform(spark, location, operator, fn)``."""
        return transform.transform(spark, self.location, operator, fn,
                                   value_schema=value_schema,
                                   storage_options=self.storage_options)


@dataclass(frozen=True)
class Savepoint:
    """A savepoint's location: a self-contained, checked copy of a query at one committed
    batch, never changed. ``location`` and ``storage_options`` as for :class:`Checkpoint`.
    ``Checkpoint.savepoint`` makes one; ``restore`` starts a new checkpoint location from it.
    """

    location: str
    storage_options: dict[str, Any] | None = field(default=None, repr=False, hash=False)
    # The listing as Checkpoint.savepoint wrote it (its digest the one to keep), else None.
    _written: SavepointManifest | None = field(default=None, init=False, repr=False,
                                               compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "location", _location_text(self.location, "Savepoint"))

    @classmethod
    def _as_written(cls, written: SavepointManifest,
                    storage_options: dict[str, Any] | None) -> Savepoint:
        handle = cls(written.url, storage_options)
        object.__setattr__(handle, "_written", written)
        return handle

    def manifest(self) -> SavepointManifest:
        """What its ``_savepoint.json`` records (batch, source, files, ``digest``): as written,
        for the handle :meth:`Checkpoint.savepoint` returned; else read, and an error if the
        location is no (finished) savepoint. Function form:
        ``rockstate.read_savepoint(location)``."""
        if self._written is not None:
            return self._written
        return savepoint_manifest.read_savepoint(self.location,
                                                 storage_options=self.storage_options)

    def verify(self, expect_digest: str | None = None) -> VerifyReport:
        """Checks every file it lists against its size and hash, every store's version
        against what it needs, and that every store the query needs is there;
        ``expect_digest`` (the ``digest`` of its manifest, kept apart) also checks the listing
        itself. Function form: ``rockstate.verify(location, expect_digest=...)``, which
        checks a checkpoint location too; this handle refuses one."""
        return verify.verify(self._opened(), expect_digest=expect_digest)

    def restore(self, target: str | os.PathLike[str], *,
                target_options: dict[str, Any] | None = None, new_query_id: bool = True,
                expect_digest: str | None = None) -> Checkpoint:
        """Makes ``target`` (new, or an empty directory; opened with ``target_options``) a
        copy of the savepoint, checked first, and returns its handle: start the query with it
        as its checkpointLocation. ``new_query_id`` and ``expect_digest`` as
        ``rockstate.restore``, its function form (``restore(savepoint_url, checkpoint, ...,
        target_options=...)``)."""
        restored = restore.restore(self.location, _location_text(target, "Checkpoint"),
                                   new_query_id=new_query_id,
                                   storage_options=self.storage_options,
                                   target_options=target_options,
                                   expect_digest=expect_digest)
        return Checkpoint(restored, target_options)

    def read(self, operator: int = 0, partitions: list[int] | None = None,
             store: str = DEFAULT_STORE, progress: Callable[[str], None] | None = None,
             state_var: str | None = None, workers: int | None = None) -> pa.Table:
        """One operator's store as the savepoint holds it (its one state version), as
        :meth:`Checkpoint.read` reads a checkpoint's."""
        return read.read_state(self._opened(), operator=operator, partitions=partitions,
                               store=store, progress=progress, state_var=state_var,
                               workers=workers)

    def _opened(self) -> CheckpointLocation:
        """The location, opened; one that holds no ``_savepoint.json`` is refused."""
        loc = open_location(self.location, self.storage_options)
        if not savepoint_manifest.is_savepoint(loc):
            raise RockstateError(
                f"{loc.url} is not a savepoint: it has no {savepoint_manifest.SAVEPOINT_FILE} (a "
                "savepoint still being written has none yet). A checkpoint location is read "
                "with rockstate.Checkpoint(location).")
        return loc
