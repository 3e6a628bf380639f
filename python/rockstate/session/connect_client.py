"""rockstate on a Spark Connect session builder.

A Connect client may set only runtime SQL confs on its session: the state store provider and
rockstate's settings. The jar and the plugin belong to the server (``rockstate connect-server``
starts one). For ``remote("local[...]")`` pyspark starts that server inside this process; it is
handed the jar and the plugin the way pyspark's own shell hands it ``--conf`` lines
(``PYSPARK_REMOTE_INIT_CONF``), so nothing the session cannot set reaches the session.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from rockstate.errors import RockstateSetupError
from rockstate.session.spark_conf import PLUGIN_CLASS, append_item, session_confs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# What pyspark reads when it starts a local Connect server (pyspark.sql.connect.session).
INIT_CONF_COUNT = "PYSPARK_REMOTE_INIT_CONF_LEN"
INIT_CONF = "PYSPARK_REMOTE_INIT_CONF_{}"
# A function of rockstate's server side: if the server cannot resolve it, it has no rockstate.
CHECK_QUERY = "SELECT rockstate_completed_since(-1)"


def remote_of(builder: Any) -> str | None:
    """The Spark Connect address ``builder`` connects to, or None for a classic builder."""
    options: dict[str, Any] = getattr(builder, "_options", {})
    if "spark.remote" in options:
        return str(options["spark.remote"])
    if str(options.get("spark.api.mode", "")).lower() == "connect":
        return str(options.get("spark.master", "local[*]"))
    if type(builder).__module__.startswith("pyspark.sql.connect."):
        return os.environ.get("SPARK_REMOTE") or "sc:// (the builder's channel)"
    if os.environ.get("SPARK_REMOTE") and "spark.master" not in options:
        return os.environ["SPARK_REMOTE"]
    return None


def configure_remote(builder: Any, url: str, settings: dict[str, object]) -> Any:
    """Sets the session confs, connects, checks the server and returns ``builder``."""
    for key, value in session_confs(settings).items():
        builder.config(key, value)
    if url.startswith("local"):
        _hand_local_server_rockstate()
    spark = builder.getOrCreate()
    check_server(spark, url)
    return builder


def check_server(spark: SparkSession, url: str) -> None:
    """One query that fails, saying what to do, unless the server runs rockstate."""
    try:
        spark.sql(CHECK_QUERY).head()
    except Exception as e:
        text = str(e).strip()
        if "rockstate_completed_since" in text and "UNRESOLVED_ROUTINE" in text:
            raise RockstateSetupError(
                f"rockstate: the Spark Connect server at {url} does not have rockstate's jar; "
                "start the server with `rockstate connect-server` (docs/connect.md).") from None
        first = text.splitlines()[0] if text else type(e).__name__
        raise RockstateSetupError(
            f"rockstate: the Spark Connect server at {url} does not run rockstate: {first}"
        ) from None


def _hand_local_server_rockstate() -> None:
    """Puts the jar and the plugin in the conf of the Connect server pyspark starts in this
    process. Its ``spark.plugins`` is pyspark's own (the Connect plugin), so rockstate's plugin
    goes in Spark's ``spark.plugins.defaultList``, which Spark loads beside it."""
    from rockstate.session.running_jvm import jar_for_this_driver

    jar = jar_for_this_driver()
    count = int(os.environ.get(INIT_CONF_COUNT, "0"))
    # pyspark keeps only the last of these (it reassigns in its loop), so merge into one.
    conf: dict[str, str] = json.loads(os.environ[INIT_CONF.format(count - 1)]) if count else {}
    conf["spark.jars"] = append_item(conf.get("spark.jars"), jar)
    conf["spark.plugins.defaultList"] = append_item(conf.get("spark.plugins.defaultList"),
                                                    PLUGIN_CLASS)
    for i in range(count):
        del os.environ[INIT_CONF.format(i)]
    os.environ[INIT_CONF.format(0)] = json.dumps(conf)
    os.environ[INIT_CONF_COUNT] = "1"
