"""Switching a Spark session over to rockstate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rockstate.build import BuildError, find_java
from rockstate.errors import RockstateSetupError
from rockstate.jar import jar_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PROVIDER_CLASS = "io.rockstate.state.RockstateStateStoreProvider"
PLUGIN_CLASS = "io.rockstate.plugin.RockstatePlugin"
PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
SETTING_PREFIX = "spark.sql.streaming.stateStore.rockstate."


def _append(existing: str | None, item: str) -> str:
    parts = [p for p in (existing or "").split(",") if p]
    return ",".join(parts if item in parts else [*parts, item])


def configure(builder: SparkSession.Builder, **settings: object) -> SparkSession.Builder:
    """Puts rockstate on a session builder and returns the builder.

    Adds the shim jar to ``spark.jars``, sets the state store provider and the plugin, and
    passes ``settings`` as ``spark.sql.streaming.stateStore.rockstate.<name>`` (for example
    ``blockCacheSizeMB=256``). Call it before ``getOrCreate()``. If this Python process
    already started a JVM without rockstate (a session made and stopped earlier), the jar is
    added to it for the next context; if a context without rockstate is still running, it
    raises :class:`RockstateSetupError` at once, since Spark fixes a running context's jars.
    """
    try:
        find_java()
    except BuildError as e:
        raise RockstateSetupError(str(e)) from None
    jar = str(jar_path())
    _prepare_running_jvm(jar)
    options: dict[str, str] = getattr(builder, "_options", {})
    builder.config("spark.jars", _append(options.get("spark.jars"), jar))
    builder.config("spark.plugins", _append(options.get("spark.plugins"), PLUGIN_CLASS))
    builder.config(PROVIDER_KEY, PROVIDER_CLASS)
    for name, value in settings.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        builder.config(SETTING_PREFIX + name, text)
    return builder


def _loads(jvm: Any, loader: Any) -> bool:
    from py4j.protocol import Py4JJavaError

    try:
        jvm.java.lang.Class.forName(PLUGIN_CLASS, False, loader)
        return True
    except Py4JJavaError:
        return False


def _prepare_running_jvm(jar: str) -> None:
    """Makes a JVM this Python process already started (an earlier session, the pyspark
    shell) able to load rockstate, or fails at once saying why.

    A JVM's jars are fixed when it starts, and ``spark.jars`` of a later session does not reach
    the driver's own class path. Spark loads plugins and providers through the creating
    thread's context class loader, so the jar is added as a class loader on the Java thread
    that serves this Python thread (PySpark pins one to each); the new context, its local
    executor and the query threads it starts inherit it.
    """
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return  # no JVM yet: spark.jars puts the jar on its class path at launch
    active = SparkContext._active_spark_context
    if active is not None:
        if PLUGIN_CLASS in active.getConf().get("spark.plugins", ""):
            return  # already a rockstate session; getOrCreate() returns it
        raise RockstateSetupError(
            "rockstate: a SparkContext without rockstate is already running in this Python "
            "process (an earlier session or the pyspark shell made it), and Spark fixes a "
            "context's jars and plugins when it starts. Stop it first (spark.stop()), then "
            "call rockstate.configure(builder).getOrCreate().")
    jvm = gateway.jvm
    thread = jvm.java.lang.Thread.currentThread()
    current = thread.getContextClassLoader()
    if _loads(jvm, current):
        return  # this JVM was started with rockstate's jar
    urls = gateway.new_array(jvm.java.net.URL, 1)
    urls[0] = jvm.java.io.File(jar).toURI().toURL()
    loader = jvm.java.net.URLClassLoader(urls, current)
    thread.setContextClassLoader(loader)
    # Other Python threads (checkpoint watchers) are served by other Java threads.
    gateway._rockstate_loader = loader


def bind_thread(jvm: Any) -> None:
    """Lets the Java thread serving this Python thread see rockstate's classes, when the jar
    was added to an already running JVM (see :func:`_prepare_running_jvm`)."""
    from pyspark import SparkContext

    loader = getattr(SparkContext._gateway, "_rockstate_loader", None)
    if loader is None:
        return
    thread = jvm.java.lang.Thread.currentThread()
    if not _loads(jvm, thread.getContextClassLoader()):
        thread.setContextClassLoader(loader)


def spark_defaults() -> str:
    """The spark-defaults.conf lines that do what :func:`configure` does."""
    return "\n".join(
        [
            f"spark.jars                                      {jar_path()}",
            f"spark.plugins                                   {PLUGIN_CLASS}",
            f"{PROVIDER_KEY}   {PROVIDER_CLASS}",
        ]
    )
