"""A JVM this Python process already runs (an earlier session, the pyspark shell), made able to
load rockstate's classes."""

from __future__ import annotations

import os
from typing import Any

from rockstate.errors import RockstateSetupError
from rockstate.session.build import BuildError, find_java
from rockstate.session.jar import jar_path
from rockstate.session.spark_conf import PLUGIN_CLASS


def jar_for_this_driver() -> str:
    """rockstate's jar for a driver this Python process runs (a classic session, or the Connect
    server pyspark starts for ``remote("local")``): Java is checked, and a JVM this process
    already runs is made able to load the jar (:func:`prepare_running_jvm`)."""
    try:
        find_java()
    except BuildError as e:
        raise RockstateSetupError(str(e)) from None
    jar = str(jar_path())
    prepare_running_jvm(jar)
    return jar


def _loads(jvm: Any, loader: Any) -> bool:
    from py4j.protocol import Py4JJavaError

    try:
        jvm.java.lang.Class.forName(PLUGIN_CLASS, False, loader)
        return True
    except Py4JJavaError:
        return False


def prepare_running_jvm(jar: str) -> None:
    """Makes a JVM this Python process already started (an earlier session, the pyspark
    shell) able to load rockstate, or fails at once saying why.

    A JVM's jars are fixed when it starts, and ``spark.jars`` of a later session does not reach
    the driver's own class path. Spark loads plugins and providers through the creating
    thread's context class loader, so the jar is added as a class loader on the Java thread
    that serves this Python thread (PySpark pins one to each); the new context, its local
    executor and the query threads it starts inherit it.
    """
    from pyspark import SparkContext

    if SparkContext._gateway is None and os.environ.get("PYSPARK_GATEWAY_PORT"):
        # Under spark-submit the JVM runs before this script does, its class path fixed by
        # --jars: join it now, and add the jar below.
        SparkContext._ensure_initialized()
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


def launch_setting(key: str) -> str | None:
    """A Spark setting the running JVM was launched with (spark-submit's --jars, --conf),
    None without a JVM."""
    from pyspark import SparkContext

    if SparkContext._gateway is None:
        return None
    return SparkContext._gateway.jvm.java.lang.System.getProperty(key)


def bind_thread(jvm: Any) -> None:
    """Lets the Java thread serving this Python thread see rockstate's classes, when the jar
    was added to an already running JVM (see :func:`prepare_running_jvm`)."""
    from pyspark import SparkContext

    loader = getattr(SparkContext._gateway, "_rockstate_loader", None)
    if loader is None:
        return
    thread = jvm.java.lang.Thread.currentThread()
    if not _loads(jvm, thread.getContextClassLoader()):
        thread.setContextClassLoader(loader)
