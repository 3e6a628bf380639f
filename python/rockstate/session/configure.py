"""Switching a Spark session over to rockstate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rockstate.session.connect_client import configure_remote, remote_of
from rockstate.session.jar import jar_path
from rockstate.session.running_jvm import jar_for_this_driver, launch_setting
from rockstate.session.spark_conf import (
    PLUGIN_CLASS,
    PROVIDER_CLASS,
    PROVIDER_KEY,
    append_item,
    session_confs,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["PLUGIN_CLASS", "PROVIDER_CLASS", "configure", "spark_defaults"]


def configure(builder: SparkSession.Builder, **settings: object) -> SparkSession.Builder:
    """Puts rockstate on a session builder and returns the builder.

    Adds the shim jar to ``spark.jars``, sets the state store provider and the plugin, and
    passes ``settings`` as ``spark.sql.streaming.stateStore.rockstate.<name>`` (for example
    ``rocksdbMemoryMB=256``). Call it before ``getOrCreate()``. If this Python process
    already started a JVM without rockstate (a session made and stopped earlier), the jar is
    added to it for the next context; if a context without rockstate is still running, it
    raises :class:`RockstateSetupError` at once, since Spark fixes a running context's jars.

    On a Spark Connect builder (``builder.remote(...)``) it sets only what a Connect session
    may set (the provider and the settings), connects, and checks with one query that the
    server runs rockstate; ``getOrCreate()`` then returns that session. See docs/connect.md.
    """
    url = remote_of(builder)
    if url is not None:
        return configure_remote(builder, url, settings)
    jar = jar_for_this_driver()
    options: dict[str, str] = getattr(builder, "_options", {})
    # Added to what the builder or, under spark-submit, its command line (--jars, --conf) set.
    for key, item in (("spark.jars", jar), ("spark.plugins", PLUGIN_CLASS)):
        builder.config(key, append_item(options.get(key) or launch_setting(key), item))
    for key, value in session_confs(settings).items():
        builder.config(key, value)
    return builder


def spark_defaults() -> str:
    """The spark-defaults.conf lines that do what :func:`configure` does."""
    return "\n".join(
        [
            f"spark.jars                                      {jar_path()}",
            f"spark.plugins                                   {PLUGIN_CLASS}",
            f"{PROVIDER_KEY}   {PROVIDER_CLASS}",
        ]
    )
