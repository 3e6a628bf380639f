"""rockstate: a RocksDB state backend for Spark Structured Streaming.

``rockstate.configure(SparkSession.builder)`` switches a session's stateful queries to the
rockstate state store provider. ``rockstate.Checkpoint(location, storage_options=None)`` is the
handle of a checkpoint location (a path or fsspec URL): ``read`` / ``read_changes`` its state
and change feed as Arrow, ``export``, ``verify``, ``report`` (its history as one HTML page),
``checkpoints`` / ``completed``, ``provider_class``, all without Spark; ``savepoint`` copies it
to a self-contained savepoint, and ``rescale`` / ``migrate`` rewrite a stopped query's state for
a new partition count or another state store provider. ``rockstate.Savepoint(location)`` is the
handle of a savepoint: ``manifest``, ``verify``, ``read``, ``restore`` (a new checkpoint
location). The free functions (``read_state``, ``read_changes``, ``export``, ``verify``,
``report``, ``checkpoints``, ``savepoint``, ``read_savepoint``, ``restore``, ``rescale``,
``migrate``, ``recorded_confs``, ``provider_class``) are the same calls in function form.

A running query: ``rockstate.checkpoints(query)`` shows the checkpoints the driver's coordinator
completes (``rockstate.show_checkpoints(query)`` keeps them fresh in a notebook,
``rockstate.on_checkpoint_complete`` calls back), ``rockstate.stop_with_savepoint(query, ...)``
stops it into a savepoint. ``rockstate.CheckpointLocation`` lists a location's operators,
stores, versions and files.
"""

from __future__ import annotations

from rockstate.checkpoint.location import CheckpointLocation
from rockstate.checkpoint.model import CheckpointRecord, QueryCheckpoints, StoreAck
from rockstate.checkpoint.offsets import provider_class, recorded_confs
from rockstate.errors import CorruptCheckpointError, RockstateError, RockstateSetupError
from rockstate.live.notebook import LiveCheckpoints, show_checkpoints
from rockstate.live.view import CheckpointWatcher, checkpoints, on_checkpoint_complete
from rockstate.session.configure import PLUGIN_CLASS, PROVIDER_CLASS, configure, spark_defaults
from rockstate.session.jar import jar_path
from rockstate.session.version import VERSION
from rockstate.tools.changes import read_changes
from rockstate.tools.handles import Checkpoint, Savepoint
from rockstate.tools.read import export, read_state
from rockstate.tools.report import report
from rockstate.tools.rewrite import RewriteResult, migrate, rescale
from rockstate.tools.savepoint import (
    SavepointManifest,
    read_savepoint,
    restore,
    savepoint,
    stop_with_savepoint,
)
from rockstate.tools.verify import verify

__version__ = VERSION

__all__ = [
    "PLUGIN_CLASS",
    "PROVIDER_CLASS",
    "Checkpoint",
    "CheckpointLocation",
    "CheckpointRecord",
    "CheckpointWatcher",
    "CorruptCheckpointError",
    "LiveCheckpoints",
    "QueryCheckpoints",
    "RewriteResult",
    "RockstateError",
    "RockstateSetupError",
    "Savepoint",
    "SavepointManifest",
    "StoreAck",
    "checkpoints",
    "configure",
    "export",
    "jar_path",
    "migrate",
    "on_checkpoint_complete",
    "provider_class",
    "read_changes",
    "read_savepoint",
    "read_state",
    "recorded_confs",
    "report",
    "rescale",
    "restore",
    "savepoint",
    "show_checkpoints",
    "spark_defaults",
    "stop_with_savepoint",
    "verify",
]
