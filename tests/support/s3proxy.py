"""s3proxy, a real S3 API server (gaul/s3proxy, Apache-2.0) over a folder of this machine, for
the tests that need what moto cannot give: a server in a process of its own that keeps its
objects on disk, so that it can be killed and restarted in the middle of a query.

Version 4.0.0, its ``jar-with-dependencies`` from Maven Central (downloaded once, checked
against Maven Central's ``.sha1``), with the ``filesystem-nio2`` backend: 3.1.0's persistent
backends break s3a's directory handling (a ``mkdirs`` comes back as a 0-byte file, or empty
folders vanish), and its in-memory one loses everything on a restart; 4.0.0's passes s3a and
makes ``If-None-Match`` atomic. A restart keeps the port, so s3a's settings stay valid.

``access(via=proxy)`` gives the s3a and fsspec settings through a ``FaultProxy`` in front.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from support.s3 import ACCESS_KEY, REGION, SECRET_KEY, S3Access, maven_file

VERSION = "4.0.0"
JAR = f"org/gaul/s3proxy/{VERSION}/s3proxy-{VERSION}-jar-with-dependencies.jar"
_PORT_LINE = re.compile(rb"ServerConnector@\S+\{HTTP/1\.1[^}]*\}\{127\.0\.0\.1:(\d+)\}")
_PROPERTIES = """\
s3proxy.endpoint=http://127.0.0.1:{port}
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity={identity}
s3proxy.credential={credential}
s3proxy.ignore-unknown-headers=true
jclouds.provider=filesystem-nio2
jclouds.filesystem.basedir={basedir}
"""


@dataclass
class Endpoint(S3Access):
    """One bucket at an endpoint: the server's own, or a fault proxy's in front of it."""

    bucket: str
    url_base: str
    _jars: list[Path] | None = None

    @property
    def endpoint(self) -> str:
        return self.url_base


class S3ProxyServer:
    def __init__(self, basedir: Path, bucket: str | None = None) -> None:
        self.basedir = Path(basedir).resolve()  # a relative basedir lists nothing
        self.bucket = bucket or f"rockstate-{uuid.uuid4().hex[:12]}"
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.log_path = self.basedir.parent / f"{self.basedir.name}-s3proxy.log"
        self._properties = self.basedir.parent / f"{self.basedir.name}-s3proxy.properties"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def access(self, via=None) -> Endpoint:
        """The settings that reach the bucket, directly or through ``via`` (a FaultProxy)."""
        port = via.port if via is not None else self.port
        return Endpoint(self.bucket, f"http://127.0.0.1:{port}")

    def objects_dir(self) -> Path:
        """Where the bucket's objects are, one file each, under their keys."""
        return self.basedir / self.bucket

    def start(self, timeout: float = 120) -> S3ProxyServer:
        self.basedir.mkdir(parents=True, exist_ok=True)
        self._properties.write_text(_PROPERTIES.format(
            port=self.port, identity=ACCESS_KEY, credential=SECRET_KEY, basedir=self.basedir))
        jar = maven_file(JAR)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            ["java", "-XX:TieredStopAtLevel=1", "-Xmx512m", "-cp", str(jar),
             "org.gaul.s3proxy.Main", "--properties", str(self._properties)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        self.port = self._bound_port(log, timeout)
        if not self.objects_dir().exists():
            self._create_bucket()
        return self

    def _bound_port(self, log, timeout: float) -> int:
        """Reads the server's output until Jetty names the port it bound; then keeps copying
        the output to the log on a thread (a full pipe would stall the server)."""
        assert self.proc is not None and self.proc.stdout is not None
        out = self.proc.stdout
        deadline = time.monotonic() + timeout
        port = 0
        while not port:
            if not select.select([out], [], [], max(0.0, deadline - time.monotonic()))[0]:
                self.stop()
                raise RuntimeError(f"s3proxy did not start in {timeout:.0f} s: {self.log_path}")
            line = out.readline()
            if not line:
                self.proc.wait()
                raise RuntimeError(f"s3proxy exited ({self.proc.returncode}): {self.log_path}")
            log.write(line)
            log.flush()
            m = _PORT_LINE.search(line)
            if m:
                port = int(m.group(1))

        def drain() -> None:
            with log:
                for rest in iter(out.readline, b""):
                    log.write(rest)
                    log.flush()

        threading.Thread(target=drain, daemon=True, name="s3proxy-log").start()
        return port

    def _create_bucket(self) -> None:
        import boto3
        from botocore.config import Config

        client = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                              aws_secret_access_key=SECRET_KEY, region_name=REGION,
                              config=Config(s3={"addressing_style": "path"}))
        client.create_bucket(Bucket=self.bucket)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def restart(self, down_s: float = 0.0) -> None:
        """Kills the server (SIGKILL: requests in flight are cut off) and starts it again on
        the same port and folder after ``down_s`` seconds."""
        self.stop(signal.SIGKILL)
        time.sleep(down_s)
        self.start()
