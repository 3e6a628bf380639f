"""A Spark Connect server that serves rockstate: ``rockstate connect-server``.

It runs Spark's own server (``SparkConnectServer``, what the pyspark wheel's
``sbin/start-connect-server.sh`` starts) through the wheel's ``spark-submit``, with rockstate's
jar, its plugin (the checkpoint coordinator) and the provider as the default for every session.
rockstate's SQL functions, through which Connect clients see the coordinator, come with the jar.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from rockstate.session.spark_conf import PLUGIN_CLASS, PROVIDER_CLASS, PROVIDER_KEY, append_item

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002
PORT_KEY = "spark.connect.grpc.binding.port"


@dataclass(frozen=True)
class ConnectServer:
    """How to start the server: where its driver runs, its port and any other Spark conf."""

    master: str = "local[*]"
    port: int = DEFAULT_PORT
    conf: dict[str, str] = field(default_factory=dict)

    def spark_conf(self, jar: str) -> dict[str, str]:
        """The server's conf: the caller's, with rockstate's jar, plugin and provider."""
        conf = dict(self.conf)
        conf["spark.jars"] = append_item(conf.get("spark.jars"), jar)
        conf["spark.plugins"] = append_item(conf.get("spark.plugins"), PLUGIN_CLASS)
        conf.setdefault(PROVIDER_KEY, PROVIDER_CLASS)
        conf[PORT_KEY] = str(self.port)
        return conf

    def command(self, spark_home: Path, jar: str) -> list[str]:
        """The foreground command: ``spark-submit`` of Spark's Connect server class."""
        cmd = [str(spark_home / "bin" / "spark-submit"), "--class", SERVER_CLASS,
               "--name", "Spark Connect server (rockstate)", "--master", self.master]
        for key, value in self.spark_conf(jar).items():
            cmd += ["--conf", f"{key}={value}"]
        return cmd

    def daemon_command(self, spark_home: Path, jar: str) -> list[str]:
        """The same server as a daemon, with the wheel's ``start-connect-server.sh``."""
        cmd = [str(spark_home / "sbin" / "start-connect-server.sh"), "--master", self.master]
        for key, value in self.spark_conf(jar).items():
            cmd += ["--conf", f"{key}={value}"]
        return cmd


def spark_home() -> Path:
    """The pyspark wheel's folder, which is a Spark distribution (bin/, sbin/, jars/)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def shell_line(cmd: list[str]) -> str:
    return " ".join(shlex.quote(part) for part in cmd)
