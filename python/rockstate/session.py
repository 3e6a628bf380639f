"""Switching a Spark session over to rockstate."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    ``blockCacheSizeMB=256``). Call it before ``getOrCreate()``: a running session keeps the
    jars it started with.
    """
    try:
        find_java()
    except BuildError as e:
        raise RockstateSetupError(str(e)) from None
    jar = str(jar_path())
    options: dict[str, str] = getattr(builder, "_options", {})
    builder.config("spark.jars", _append(options.get("spark.jars"), jar))
    builder.config("spark.plugins", _append(options.get("spark.plugins"), PLUGIN_CLASS))
    builder.config(PROVIDER_KEY, PROVIDER_CLASS)
    for name, value in settings.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        builder.config(SETTING_PREFIX + name, text)
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
