"""rockstate: a RocksDB state backend for Spark Structured Streaming.

``rockstate.configure(SparkSession.builder)`` switches a session's stateful queries to the
rockstate state store provider. ``rockstate.Checkpoint(location, storage_options=None)`` is the
handle of a checkpoint location (a path or fsspec URL): ``read`` / ``read_changes`` its state
and change feed as Arrow, ``export``, ``verify``, ``report`` (its history as one HTML page),
``checkpoints`` / ``completed``, ``provider_class``, all without Spark; ``savepoint`` copies it
to a self-contained savepoint, ``rescale`` / ``migrate`` rewrite a stopped query's state for a
new partition count or another state store provider, ``forget`` removes keys from it and
``transform`` rewrites an operator's rows. ``rockstate.Savepoint(location)`` is the handle of a
savepoint: ``manifest``, ``verify``, ``read``, ``restore`` (a new checkpoint location). The
handles are the documented API: a handle's own place is its ``location`` (opened with
``storage_options``), where a method writes is its ``target`` (opened with ``target_options``).
The free functions that do a handle's job (``read_state``, ``read_changes``, ``export``,
``verify``, ``read_savepoint``, ``restore``, ``rescale``, ``migrate``, ``forget``,
``transform``, ``recorded_confs``, ``provider_class``) stay as aliases, outside ``__all__``;
``checkpoints``, ``report`` and ``savepoint`` also take a running query.

A running query: ``rockstate.checkpoints(query)`` shows the checkpoints the driver's coordinator
completes (``rockstate.show_checkpoints(query)`` keeps them fresh in a notebook,
``rockstate.on_checkpoint_complete`` calls back), ``rockstate.stop_with_savepoint(query, ...)``
stops it into a savepoint. ``rockstate.CheckpointLocation`` lists a location's operators,
stores, versions and files.
"""

from __future__ import annotations

from rockstate.checkpoint.location import CheckpointLocation
from rockstate.checkpoint.model import CheckpointRecord, QueryCheckpoints, StoreAck
from rockstate.checkpoint.offsets import provider_class as provider_class
from rockstate.checkpoint.offsets import recorded_confs as recorded_confs
from rockstate.errors import CorruptCheckpointError, RockstateError, RockstateSetupError
from rockstate.live.notebook import LiveCheckpoints, show_checkpoints
from rockstate.live.view import CheckpointWatcher, checkpoints, on_checkpoint_complete
from rockstate.session.configure import PLUGIN_CLASS, PROVIDER_CLASS, configure, spark_defaults
from rockstate.session.jar import jar_path
from rockstate.session.version import VERSION
from rockstate.tools.changes import read_changes as read_changes
from rockstate.tools.forget import ForgetResult
from rockstate.tools.forget import forget as forget
from rockstate.tools.handles import Checkpoint, Savepoint
from rockstate.tools.read import export as export
from rockstate.tools.read import read_state as read_state
from rockstate.tools.report import report
from rockstate.tools.restore import restore as restore
from rockstate.tools.rewrite import RewriteResult
from rockstate.tools.rewrite import migrate as migrate
from rockstate.tools.rewrite import rescale as rescale
from rockstate.tools.savepoint import savepoint, stop_with_savepoint
from rockstate.tools.savepoint_manifest import SavepointManifest
from rockstate.tools.savepoint_manifest import read_savepoint as read_savepoint
from rockstate.tools.transform import TransformResult
from rockstate.tools.transform import transform as transform
from rockstate.tools.verify import verify as verify

__version__ = VERSION

# The documented API. The function forms of the handles' methods (imported `as` themselves
# above: read_state, export, verify, ...) stay importable for the code that calls them.
__all__ = [
    "PLUGIN_CLASS",
    "PROVIDER_CLASS",
    "Checkpoint",
    "CheckpointLocation",
    "CheckpointRecord",
    "CheckpointWatcher",
    "CorruptCheckpointError",
    "ForgetResult",
    "LiveCheckpoints",
    "QueryCheckpoints",
    "RewriteResult",
    "RockstateError",
    "RockstateSetupError",
    "Savepoint",
    "SavepointManifest",
    "StoreAck",
    "TransformResult",
    "checkpoints",
    "configure",
    "jar_path",
    "on_checkpoint_complete",
    "report",
    "savepoint",
    "show_checkpoints",
    "spark_defaults",
    "stop_with_savepoint",
]
