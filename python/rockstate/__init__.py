"""rockstate: a RocksDB state backend for Spark Structured Streaming.

``rockstate.configure(SparkSession.builder)`` switches a session's stateful queries to the
rockstate state store provider; ``rockstate.checkpoints(query)`` shows the checkpoints the
driver's coordinator completes (``rockstate.show_checkpoints(query)`` keeps them fresh in a
notebook); ``rockstate.CheckpointLocation`` and ``rockstate.verify`` read and check a checkpoint
location without Spark (``rockstate.read_state`` / ``rockstate.read_changes``: its state and its
change feed as Arrow), and ``rockstate.report`` draws its history as one HTML page.
``rockstate.savepoint`` / ``rockstate.restore`` copy a query to a self-contained savepoint and
start new checkpoints from it. ``rockstate.rescale`` / ``rockstate.migrate`` rewrite a stopped
query's state for a new partition count or another state store provider.
"""

from __future__ import annotations

from rockstate.checkpoint.location import CheckpointLocation
from rockstate.checkpoint.model import Checkpoint, QueryCheckpoints, StoreAck
from rockstate.checkpoint.offsets import provider_class, recorded_confs
from rockstate.errors import CorruptCheckpointError, RockstateError, RockstateSetupError
from rockstate.live.notebook import LiveCheckpoints, show_checkpoints
from rockstate.live.view import CheckpointWatcher, checkpoints, on_checkpoint_complete
from rockstate.session.configure import PLUGIN_CLASS, PROVIDER_CLASS, configure, spark_defaults
from rockstate.session.jar import jar_path
from rockstate.tools.changes import read_changes
from rockstate.tools.read import export, read_state
from rockstate.tools.report import report
from rockstate.tools.rewrite import RewriteResult, migrate, rescale
from rockstate.tools.savepoint import (
    Savepoint,
    read_savepoint,
    restore,
    savepoint,
    stop_with_savepoint,
)
from rockstate.tools.verify import verify

__version__ = "0.1.0"

__all__ = [
    "PLUGIN_CLASS",
    "PROVIDER_CLASS",
    "Checkpoint",
    "CheckpointLocation",
    "CheckpointWatcher",
    "CorruptCheckpointError",
    "LiveCheckpoints",
    "QueryCheckpoints",
    "RewriteResult",
    "RockstateError",
    "RockstateSetupError",
    "Savepoint",
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
