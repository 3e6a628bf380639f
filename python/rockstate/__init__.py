"""rockstate: a RocksDB state backend for Spark Structured Streaming.

``rockstate.configure(SparkSession.builder)`` switches a session's stateful queries to the
rockstate state store provider; ``rockstate.CheckpointLocation`` and ``rockstate.verify`` read
and check a checkpoint without Spark.
"""

from __future__ import annotations

from rockstate.errors import CorruptCheckpointError, RockstateError, RockstateSetupError
from rockstate.jar import jar_path
from rockstate.location import CheckpointLocation
from rockstate.offsets import provider_class, recorded_confs
from rockstate.session import PLUGIN_CLASS, PROVIDER_CLASS, configure, spark_defaults
from rockstate.verify import verify

__version__ = "0.1.0"

__all__ = [
    "PLUGIN_CLASS",
    "PROVIDER_CLASS",
    "CheckpointLocation",
    "CorruptCheckpointError",
    "RockstateError",
    "RockstateSetupError",
    "configure",
    "jar_path",
    "provider_class",
    "recorded_confs",
    "spark_defaults",
    "verify",
]
