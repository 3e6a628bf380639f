"""The Spark configuration that puts a session on rockstate: class names and keys."""

from __future__ import annotations

PROVIDER_CLASS = "io.rockstate.state.RockstateStateStoreProvider"
PLUGIN_CLASS = "io.rockstate.plugin.RockstatePlugin"
PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"
SETTING_PREFIX = "spark.sql.streaming.stateStore.rockstate."


def append_item(existing: str | None, item: str) -> str:
    """A comma-separated conf value (``spark.jars``, ``spark.plugins``) with ``item`` in it once."""
    parts = [p for p in (existing or "").split(",") if p]
    return ",".join(parts if item in parts else [*parts, item])


def session_confs(settings: dict[str, object]) -> dict[str, str]:
    """The runtime SQL confs of a rockstate session: the provider, and each setting as
    ``spark.sql.streaming.stateStore.rockstate.<name>`` (booleans as Spark writes them)."""
    confs = {PROVIDER_KEY: PROVIDER_CLASS}
    for name, value in settings.items():
        confs[SETTING_PREFIX + name] = str(value).lower() if isinstance(value, bool) else str(value)
    return confs
