"""How Python asks the driver's checkpoint coordinator for its checkpoints.

A classic session's Python process runs the driver: it asks the driver plugin through py4j. A
Spark Connect client cannot reach the driver's JVM: it asks through rockstate's SQL functions
(``rockstate_checkpoints``, ``rockstate_completed_since``), which the server folds into constants
while it optimises the query, so they are answered on the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rockstate.errors import RockstateSetupError
from rockstate.session.running_jvm import bind_thread

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class CoordinatorChannel(Protocol):
    def checkpoints_json(self, run_id: str) -> str:
        """The coordinator's view of a query run as JSON ("null" if it knows nothing of it)."""

    def completed_since_json(self, after: int) -> str:
        """Completions after sequence number ``after``: JSON ``[[seq, run_id, version], ...]``."""

    def bind_thread(self) -> None:
        """Makes the channel usable from the calling thread (a watcher's own thread)."""


def is_connect(obj: object) -> bool:
    """Whether ``obj`` (a session or a streaming query) is Spark Connect's."""
    return type(obj).__module__.startswith("pyspark.sql.connect.")


@dataclass(frozen=True)
class DriverPluginChannel:
    """The driver plugin, through py4j, in the process that runs the driver."""

    plugin: Any
    jvm: Any

    def checkpoints_json(self, run_id: str) -> str:
        return str(self.plugin.checkpointsJson(run_id))

    def completed_since_json(self, after: int) -> str:
        return str(self.plugin.completedSinceJson(after))

    def bind_thread(self) -> None:
        bind_thread(self.jvm)  # this thread's Java peer must see rockstate's classes too


@dataclass(frozen=True)
class SqlFunctionChannel:
    """rockstate's SQL functions, over a Spark Connect session."""

    spark: Any

    def _ask(self, function: str, argument: object) -> str:
        row = self.spark.sql(f"SELECT {function}(:argument)", args={"argument": argument}).head()
        return str(row[0])

    def checkpoints_json(self, run_id: str) -> str:
        return self._ask("rockstate_checkpoints", run_id)

    def completed_since_json(self, after: int) -> str:
        return self._ask("rockstate_completed_since", after)

    def bind_thread(self) -> None:
        pass  # a Connect session serves any thread


def channel(spark: SparkSession | None = None) -> CoordinatorChannel:
    """The channel to the coordinator of ``spark``'s driver (default: the running session)."""
    if spark is None:
        spark = active_connect_session()
    if spark is not None and is_connect(spark):
        return SqlFunctionChannel(spark)
    from pyspark import SparkContext

    sc = spark.sparkContext if spark is not None else SparkContext._active_spark_context
    if sc is None:
        raise RockstateSetupError("no SparkContext is running in this Python process; give "
                                  "checkpoints() the checkpoint location instead.")
    jvm = sc._jvm  # type: ignore[attr-defined]
    bind_thread(jvm)
    plugin = jvm.io.rockstate.plugin.RockstateDriverPlugin
    if not plugin.coordinatorRunning():
        raise RockstateSetupError(
            "the rockstate checkpoint coordinator is not running in this driver; create the "
            "session with rockstate.configure(builder) (it adds spark.plugins="
            "io.rockstate.plugin.RockstatePlugin).")
    return DriverPluginChannel(plugin, jvm)


def active_connect_session() -> SparkSession | None:
    """The active Spark Connect session of this thread, if the client is installed and has one."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # a classic install without Spark Connect's client dependencies
        return None
    return ConnectSession.getActiveSession()
