"""A Spark Connect server that serves rockstate: ``rockstate connect-server``.

It runs Spark's own server (``SparkConnectServer``, what the pyspark wheel's
``sbin/start-connect-server.sh`` starts) through the wheel's ``spark-submit``, with rockstate's
jar, its plugin (the checkpoint coordinator) and the provider as the default for every session.
rockstate's SQL functions, through which Connect clients see the coordinator, come with the jar.

A Connect server runs whatever SQL and code its clients send, so it is safe by default: it
listens on the loopback address only, and one that listens on any other address requires a
token (Spark's ``spark.connect.authenticate.token``), generated if none is given. The token
reaches the server through the environment (``SPARK_CONNECT_AUTHENTICATE_TOKEN``, which Spark
reads when the conf is unset), never its command line, which other users of the machine see.
"""

from __future__ import annotations

import ipaddress
import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from rockstate.errors import RockstateSetupError
from rockstate.session.spark_conf import PLUGIN_CLASS, PROVIDER_CLASS, PROVIDER_KEY, append_item

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002
DEFAULT_HOST = "127.0.0.1"
PORT_KEY = "spark.connect.grpc.binding.port"
HOST_KEY = "spark.connect.grpc.binding.address"
TOKEN_KEY = "spark.connect.authenticate.token"
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine's loopback address (only its own processes reach it).
    A name other than ``localhost`` may resolve anywhere: it counts as exposed."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ConnectServer:
    """How to start the server: where its driver runs, the address and port it listens on, the
    token clients must present (None: none) and any other Spark conf."""

    master: str = "local[*]"
    port: int = DEFAULT_PORT
    conf: dict[str, str] = field(default_factory=dict)
    host: str = DEFAULT_HOST
    token: str | None = None

    @staticmethod
    def of(master: str, port: int, conf: dict[str, str], host: str | None,
           env: dict[str, str]) -> ConnectServer:
        """The server the command line asks for. Its token: a ``--conf`` of Spark's key, else
        the environment's, else one generated when the server listens beyond loopback."""
        conf = dict(conf)
        if HOST_KEY in conf and host is not None and conf[HOST_KEY] != host:
            raise RockstateSetupError(
                f"--host {host} and --conf {HOST_KEY}={conf[HOST_KEY]} disagree; give one")
        address = host or conf.pop(HOST_KEY, None) or DEFAULT_HOST
        conf.pop(HOST_KEY, None)
        token = conf.pop(TOKEN_KEY, None) or env.get(TOKEN_ENV) or None
        if token is None and not is_loopback(address):
            token = secrets.token_urlsafe(32)
        return ConnectServer(master, port, conf, address, token)

    @property
    def exposed(self) -> bool:
        return not is_loopback(self.host)

    def spark_conf(self, jar: str) -> dict[str, str]:
        """The server's conf: the caller's, with rockstate's jar, plugin and provider, and the
        address and port it listens on (the token goes in the environment: ``environment``)."""
        conf = dict(self.conf)
        conf["spark.jars"] = append_item(conf.get("spark.jars"), jar)
        conf["spark.plugins"] = append_item(conf.get("spark.plugins"), PLUGIN_CLASS)
        conf.setdefault(PROVIDER_KEY, PROVIDER_CLASS)
        conf[HOST_KEY] = self.host
        conf[PORT_KEY] = str(self.port)
        return conf

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """``base`` with the token the server requires, if any."""
        env = dict(base)
        env.pop(TOKEN_ENV, None)
        if self.token is not None:
            env[TOKEN_ENV] = self.token
        return env

    def client_url(self) -> str:
        """What a client gives ``SparkSession.builder.remote``, the token included. Over the
        network pyspark sends a token only over TLS (``use_ssl=true``): the server has none of
        its own, so clients reach it through a TLS proxy (docs/connect.md)."""
        if not self.exposed:
            host = "localhost" if self.host in ("localhost", "127.0.0.1") else self.host
            return f"sc://{host}:{self.port}" + (f"/;token={self.token}" if self.token else "")
        host = "HOST" if self.host in ("0.0.0.0", "::", "[::]") else self.host
        return f"sc://{host}:{self.port}/;use_ssl=true;token={self.token}"

    def banner(self) -> str:
        """What the server command says before it starts: where it listens and how to connect."""
        where = {"0.0.0.0": "every IPv4 address of this machine",
                 "::": "every address of this machine"}.get(self.host.strip("[]"))
        if not self.exposed:
            reach = (f"rockstate: Spark Connect server on {self.host}:{self.port}, this machine "
                     f"only (--host ADDRESS to serve others); connect with {self.client_url()}")
            return reach + ("" if self.token else "; no token: any local user can connect")
        return (f"rockstate: Spark Connect server on {self.host}:{self.port} "
                f"({where or 'reachable from other machines'}); clients must present its token "
                f"and should reach it through a TLS proxy: {self.client_url()} (docs/connect.md)")

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
