"""An S3 API server for tests, and the jars that let Spark use it through `s3a://`.

`s3_jars()` downloads from Maven Central the `hadoop-aws` matching the Hadoop inside the installed
pyspark (`hadoop-client-api-<version>.jar`) and what it needs at run time, resolved from the
`.pom` files: not the AWS SDK v2 `bundle` hadoop-aws declares (one 686 MB jar) but the SDK
modules `s3`, `s3-transfer-manager` and `apache-client` with their dependencies, 35 jars and
12 MB in all. Whatever pyspark already ships (httpclient, commons-*, netty, slf4j, jackson) is
taken from pyspark. The jars and poms are cached under `~/.cache/rockstate-test/jars/`, checked
against Maven Central's `.sha1`, written atomically, and reused without network on later runs.

`S3Server` runs moto's S3 API (`moto[server]`) on a free loopback port, in a thread of this
process or (`process=True`) in a child process, creates a bucket, and gives the Spark and Hadoop
settings that point `s3a://<bucket>/` at it and the fsspec options (`s3fs`) that read the same
bucket as `s3://<bucket>/`. The s3a settings are per bucket, so one JVM can reach several
servers; a session's jars are fixed when its JVM starts, so the first session of the process
must have `spark_conf()`'s `spark.jars`, and later servers are added to it with `register()`.

Usage::

    import fsspec
    import rockstate
    from pyspark.sql import SparkSession
    from support.s3 import S3Server

    with S3Server() as s3:
        builder = s3.configure(SparkSession.builder.master("local[1]"))
        spark = rockstate.configure(builder).getOrCreate()     # spark.jars: both
        spark.range(3).write.parquet(s3.url("x"))              # s3a://<bucket>/x
        fs = fsspec.filesystem("s3", **s3.storage_options())
        fs.ls(f"{s3.bucket}/x")
        # a streaming query: .writeStream.option("checkpointLocation", s3.url("ckpt"))
        rockstate.verify(rockstate.CheckpointLocation(s3.url("ckpt", scheme="s3"),
                                                      **s3.storage_options()))
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import logging
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

MAVEN = "https://repo1.maven.org/maven2/"
DEFAULT_CACHE = Path.home() / ".cache" / "rockstate-test" / "jars"

# What replaces hadoop-aws's `software.amazon.awssdk:bundle`, at the bundle's version: the S3
# client, the transfer manager (S3AFileSystem links to it when it loads, and uses it with the
# async client for `copyFromLocalFile` and multipart copies; the async client's Netty HTTP
# client comes in as the services' runtime dependency and runs on pyspark's Netty), and the
# Apache HTTP client of the sync client. Left out: STS (assumed roles, delegation tokens), KMS
# and client-side encryption, S3 Access Grants, and the bundle's shaded httpclient (hadoop-aws
# binds its TLS socket factory by reflection and skips it when absent).
SDK_MODULES = ("s3", "s3-transfer-manager", "apache-client")
# hadoop-aws's own dependencies left out: TLS through OpenSSL (moto is plain http).
SKIPPED = frozenset({("org.wildfly.openssl", "wildfly-openssl")})

_log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Jars


def spark_jars_dir() -> Path:
    """The `jars` directory of the installed pyspark."""
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def hadoop_version(jars_dir: Path | None = None) -> str:
    """The Hadoop version pyspark bundles, from its `hadoop-client-api-<version>.jar`."""
    jars_dir = jars_dir or spark_jars_dir()
    for jar in sorted(jars_dir.glob("hadoop-client-api-*.jar")):
        m = re.fullmatch(r"hadoop-client-api-(\d[\w.\-]*)\.jar", jar.name)
        if m:
            return m.group(1)
    raise FileNotFoundError(f"no hadoop-client-api-*.jar in {jars_dir}")


def s3_jars(cache_dir: Path | None = None, *, bundle: bool = False) -> list[Path]:
    """The jars that add `s3a://` to pyspark's Hadoop, downloaded once into `cache_dir`.

    With `bundle=True`, the AWS SDK is the single `software.amazon.awssdk:bundle` jar that
    hadoop-aws declares (about 650 MB) instead of the individual modules.
    """
    cache = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE
    cache.mkdir(parents=True, exist_ok=True)
    jars_dir = spark_jars_dir()
    version = hadoop_version(jars_dir)
    manifest = cache / f"hadoop-aws-{version}{'-bundle' if bundle else ''}.jars"
    if manifest.exists():  # resolved before: no network at all if every jar is still there
        jars = [cache / name for name in manifest.read_text().split()]
        if jars and all(j.is_file() and j.stat().st_size > 0 for j in jars):
            return jars
    resolver = _Resolver(cache / "poms", provided=_provided_artifacts(jars_dir))
    root = _Coord("org.apache.hadoop", "hadoop-aws", version)
    artifacts = resolver.resolve(root, sdk_modules=None if bundle else SDK_MODULES)
    # One request after another: this machine's resolver drops concurrent DNS queries, and
    # each drop stalls a download for 5 s (urllib resolves the host for every request).
    jars = [_download_jar(a, cache) for a in artifacts]
    _atomic_write(manifest, "".join(j.name + "\n" for j in jars).encode())
    return jars


@dataclass(frozen=True)
class _Coord:
    group: str
    artifact: str
    version: str

    @property
    def key(self) -> tuple[str, str]:
        return self.group, self.artifact

    def path(self, ext: str) -> str:
        g = self.group.replace(".", "/")
        return f"{g}/{self.artifact}/{self.version}/{self.artifact}-{self.version}.{ext}"

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


@dataclass
class _Dep:
    group: str
    artifact: str
    version: str | None
    scope: str | None
    optional: bool
    type: str
    classifier: str | None
    exclusions: frozenset[tuple[str, str]]


@dataclass
class _Pom:
    coord: _Coord
    properties: dict[str, str] = field(default_factory=dict)
    dependencies: list[_Dep] = field(default_factory=list)
    managed: dict[tuple[str, str], _Dep] = field(default_factory=dict)


def _provided_artifacts(jars_dir: Path) -> set[str]:
    """Artifact ids of the jars pyspark ships (`name-1.2.3.jar` gives `name`)."""
    names = set()
    for jar in jars_dir.glob("*.jar"):
        m = re.match(r"(.+?)-\d[^-]*(?:-.*)?\.jar$", jar.name)
        if m:
            names.add(m.group(1))
    return names


class _Resolver:
    """Just enough of Maven's resolution for hadoop-aws and the AWS SDK: parent poms and their
    properties, dependency management with imported BOMs, compile and runtime scopes, optional
    dependencies, exclusions, nearest wins."""

    def __init__(self, pom_cache: Path, provided: set[str]) -> None:
        self.pom_cache = pom_cache
        self.provided = provided
        self._effective: dict[_Coord, _Pom] = {}

    def resolve(self, root: _Coord, sdk_modules: tuple[str, ...] | None) -> list[_Coord]:
        order: list[_Coord] = []
        seen: set[tuple[str, str]] = set()
        queue: deque[tuple[_Coord, frozenset[tuple[str, str]]]] = deque([(root, frozenset())])
        while queue:
            coord, excluded = queue.popleft()
            if coord.key in seen:
                continue
            seen.add(coord.key)
            order.append(coord)
            pom = self.effective(coord)
            for dep in pom.dependencies:
                managed = pom.managed.get((dep.group, dep.artifact))
                scope = dep.scope or (managed.scope if managed else None) or "compile"
                if scope not in ("compile", "runtime") or dep.optional:
                    continue
                if dep.type != "jar" or dep.classifier:
                    continue
                key = (dep.group, dep.artifact)
                if key in seen or key in SKIPPED or _excluded(key, excluded):
                    continue
                if dep.artifact in self.provided or dep.artifact.startswith("hadoop-"):
                    continue
                version = dep.version or (managed.version if managed else None)
                if not version:
                    raise RuntimeError(f"{coord}: no version for {dep.group}:{dep.artifact}")
                version = _interpolate(version, pom.properties)
                if key == ("software.amazon.awssdk", "bundle") and sdk_modules is not None:
                    # The modules instead, with their own dependencies (hadoop-project
                    # excludes all of the bundle's, which it shades in).
                    version = _sdk_release_with(dep.group, sdk_modules, version)
                    queue.extend((_Coord(dep.group, m, version), excluded) for m in sdk_modules)
                    continue
                exclusions = dep.exclusions | (managed.exclusions if managed else frozenset())
                queue.append((_Coord(dep.group, dep.artifact, version), excluded | exclusions))
        return order

    def effective(self, coord: _Coord) -> _Pom:
        """The pom with its parents' properties, dependencies and dependency management."""
        if coord in self._effective:
            return self._effective[coord]
        root = ET.fromstring(self._pom_bytes(coord))
        ns = {"m": root.tag[1:].split("}")[0]} if root.tag.startswith("{") else {}

        def find(elem: ET.Element, path: str) -> ET.Element | None:
            return elem.find("/".join(f"m:{p}" if ns else p for p in path.split("/")), ns)

        def findall(elem: ET.Element, path: str) -> list[ET.Element]:
            return elem.findall("/".join(f"m:{p}" if ns else p for p in path.split("/")), ns)

        def text(elem: ET.Element | None, path: str) -> str | None:
            if elem is None:
                return None
            node = find(elem, path)
            return node.text.strip() if node is not None and node.text else None

        pom = _Pom(coord)
        parent_el = find(root, "parent")
        if parent_el is not None:
            parent = self.effective(_Coord(text(parent_el, "groupId") or "",
                                           text(parent_el, "artifactId") or "",
                                           text(parent_el, "version") or ""))
            pom.properties.update(parent.properties)
            pom.dependencies.extend(parent.dependencies)
            pom.managed.update(parent.managed)
            pom.properties["project.parent.version"] = parent.coord.version
        props = find(root, "properties")
        for prop in list(props) if props is not None else []:
            pom.properties[prop.tag.split("}")[-1]] = (prop.text or "").strip()
        for name in ("project.version", "pom.version", "version"):
            pom.properties[name] = coord.version
        pom.properties["project.groupId"] = coord.group
        pom.properties["project.artifactId"] = coord.artifact

        def dep(el: ET.Element) -> _Dep:
            def value(path: str) -> str | None:
                raw = text(el, path)
                return _interpolate(raw, pom.properties) if raw is not None else None

            return _Dep(
                group=value("groupId") or "", artifact=value("artifactId") or "",
                version=value("version"), scope=value("scope"),
                optional=(value("optional") or "false") == "true",
                type=value("type") or "jar", classifier=value("classifier"),
                exclusions=frozenset((text(x, "groupId") or "*", text(x, "artifactId") or "*")
                                     for x in findall(el, "exclusions/exclusion")))

        for el in findall(root, "dependencyManagement/dependencies/dependency"):
            d = dep(el)
            if d.scope == "import" and d.type == "pom" and d.version:
                imported = self.effective(_Coord(d.group, d.artifact, d.version))
                for key, managed in imported.managed.items():
                    pom.managed.setdefault(key, managed)
            else:
                pom.managed[(d.group, d.artifact)] = d
        pom.dependencies.extend(dep(el) for el in findall(root, "dependencies/dependency"))
        self._effective[coord] = pom
        return pom

    def _pom_bytes(self, coord: _Coord) -> bytes:
        path = self.pom_cache / coord.path("pom")
        if not path.exists():
            data = _fetch(MAVEN + coord.path("pom"))
            _check_sha1(coord.path("pom"), data)
            path.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, data)
        return path.read_bytes()


def _sdk_release_with(group: str, modules: tuple[str, ...], version: str) -> str:
    """`version`, or the first later patch release of the same minor line that has every module:
    the AWS SDK skips some modules in some releases (s3-transfer-manager has no 2.24.6, the
    bundle Hadoop 3.4.1 names)."""
    def versions(module: str) -> set[str]:
        meta = _fetch(f"{MAVEN}{group.replace('.', '/')}/{module}/maven-metadata.xml")
        return {v.text.strip() for v in ET.fromstring(meta).iter("version") if v.text}

    common = set.intersection(*(versions(m) for m in modules))
    if version in common:
        return version

    def parts(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", v)[:3])

    later = sorted((v for v in common if parts(v)[:2] == parts(version)[:2]
                    and parts(v) > parts(version)), key=parts)
    if not later:
        raise RuntimeError(f"no release of {group} {version[:4]}x has all of {modules}")
    return later[0]


def _excluded(key: tuple[str, str], exclusions: frozenset[tuple[str, str]]) -> bool:
    return any(g in ("*", key[0]) and a in ("*", key[1]) for g, a in exclusions)


def _interpolate(value: str, properties: dict[str, str]) -> str:
    for _ in range(10):  # properties may refer to properties
        new = re.sub(r"\$\{([^}]+)\}", lambda m: properties.get(m.group(1), m.group(0)), value)
        if new == value:
            break
        value = new
    return value


def _download_jar(coord: _Coord, cache: Path) -> Path:
    return maven_file(coord.path("jar"), cache)


def maven_file(path: str, cache: Path | None = None) -> Path:
    """A file of Maven Central (``path`` under the repository), downloaded once into ``cache``
    (checked against Maven Central's ``.sha1``, written atomically) and reused after."""
    cache = Path(cache) if cache is not None else DEFAULT_CACHE
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / path.rsplit("/", 1)[-1]
    sha_file = target.with_name(target.name + ".sha1")
    if (target.is_file() and sha_file.is_file() and target.stat().st_size > 0
            and hashlib.sha1(target.read_bytes()).hexdigest() == sha_file.read_text().strip()):
        return target
    started = time.monotonic()
    data = _fetch(MAVEN + path)
    digest = _check_sha1(path, data)
    _atomic_write(target, data)
    _atomic_write(sha_file, digest.encode())
    _log.info("downloaded %s (%d bytes) in %.1fs", path, len(data), time.monotonic() - started)
    return target


def _check_sha1(path: str, data: bytes) -> str:
    if not data:
        raise OSError(f"{MAVEN}{path} is empty")
    expected = _fetch(MAVEN + path + ".sha1").decode().split()[0].strip().lower()
    actual = hashlib.sha1(data).hexdigest()
    if actual != expected:
        raise OSError(f"{MAVEN}{path}: sha1 {actual}, Maven Central says {expected}")
    return actual


# Looked up once per host: this machine's resolver now and then drops a query, which stalls
# that request 5 s, and urllib looks the host up again for every request (some 160 here).
_addresses: dict[tuple[str, int], tuple[str, int]] = {}


def _connect(address: tuple[str, int], timeout: Any = None,
             source_address: Any = None) -> socket.socket:
    if address not in _addresses:
        info = socket.getaddrinfo(*address, type=socket.SOCK_STREAM)
        _addresses[address] = (str(info[0][4][0]), int(info[0][4][1]))
    try:
        return socket.create_connection(_addresses[address], timeout, source_address)
    except OSError:
        _addresses.pop(address, None)
        raise


class _Connection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _connect  # TLS still checks the certificate for the host


class _Handler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_Connection, req)


_opener = urllib.request.build_opener(_Handler())


def _fetch(url: str, attempts: int = 3) -> bytes:
    for attempt in range(attempts):
        try:
            with _opener.open(url, timeout=60) as response:
                data: bytes = response.read()
                length = response.headers.get("Content-Length")
                if length is not None and int(length) != len(data):
                    raise OSError(f"{url}: got {len(data)} of {length} bytes")
                return data
        except urllib.error.HTTPError as e:
            if e.code == 404 or attempt == attempts - 1:
                raise OSError(f"{url}: HTTP {e.code}") from e
        except OSError:
            if attempt == attempts - 1:
                raise
        time.sleep(1 + 2 * attempt)
    raise AssertionError("unreachable")


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------------------------------------
# Server

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"


class S3Access:
    """How Spark (s3a) and fsspec (s3fs) reach one bucket of an S3 API server at `endpoint`:
    the settings both need. `S3Server` (moto) and `S3ProxyServer` (s3proxy) are ones."""

    bucket: str
    _jars: list[Path] | None

    @property
    def endpoint(self) -> str:
        raise NotImplementedError

    def url(self, key: str = "", scheme: str = "s3a") -> str:
        return f"{scheme}://{self.bucket}/{key.lstrip('/')}"

    def jars(self) -> list[Path]:
        if self._jars is None:
            self._jars = s3_jars()
        return self._jars

    def hadoop_conf(self, *, per_bucket: bool = True) -> dict[str, str]:
        """The `fs.s3a.*` settings (for a Hadoop Configuration) that reach this server.

        Per bucket (`fs.s3a.bucket.<bucket>.endpoint`, ...) by default, so servers started one
        after another, each with its own bucket, can all be registered on one running JVM.
        """
        settings = {
            "endpoint": self.endpoint,
            "endpoint.region": REGION,
            "path.style.access": "true",
            "connection.ssl.enabled": "false",
            "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "access.key": ACCESS_KEY,
            "secret.key": SECRET_KEY,
            # Fail in seconds, not minutes, once the server is gone.
            "attempts.maximum": "2",
            "retry.limit": "2",
            "retry.interval": "100ms",
            "connection.establish.timeout": "15s",
            "connection.timeout": "60s",
        }
        prefix = f"fs.s3a.bucket.{self.bucket}." if per_bucket else "fs.s3a."
        return {prefix + key: value for key, value in settings.items()}

    def spark_conf(self) -> dict[str, str]:
        """Every Spark setting for `s3a://<bucket>/` on this server, `spark.jars` included."""
        conf = {f"spark.hadoop.{k}": v for k, v in self.hadoop_conf().items()}
        conf["spark.jars"] = ",".join(str(j) for j in self.jars())
        return conf

    def configure(self, builder: Any) -> Any:
        """Puts `spark_conf()` on a `SparkSession.Builder`, adding to any `spark.jars` it has
        (so it goes before or after `rockstate.configure`), and returns the builder."""
        options: dict[str, str] = getattr(builder, "_options", {})
        for key, value in self.spark_conf().items():
            if key == "spark.jars" and options.get(key):
                have = options[key].split(",")
                value = ",".join(have + [j for j in value.split(",") if j not in have])
            builder = builder.config(key, value)
        return builder

    def register(self, spark: Any) -> None:
        """Points a running session's Hadoop configuration at this server's bucket (for a
        session whose JVM started with `spark_conf()`'s jars, e.g. of an earlier server)."""
        jvm = spark.sparkContext._jvm
        loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        try:
            jvm.java.lang.Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem", False, loader)
        except Exception as e:
            raise RuntimeError("this JVM has no hadoop-aws: start its first session with "
                               "S3Server.spark_conf()'s spark.jars") from e
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        for key, value in self.hadoop_conf().items():
            conf.set(key, value)

    def storage_options(self) -> dict[str, Any]:
        """fsspec options for `s3://<bucket>/` (s3fs) on this server."""
        return {
            "key": ACCESS_KEY,
            "secret": SECRET_KEY,
            "endpoint_url": self.endpoint,
            "client_kwargs": {"region_name": REGION},
            # Spark writes behind s3fs's back: list afresh every time.
            "use_listings_cache": False,
        }


class S3Server(S3Access):
    """moto's S3 API on `127.0.0.1:<free port>` with one bucket (a fresh name by default).

    It runs in a thread of this process, or with `process=True` in a child process of its own
    (its own GIL; stopped with this object). Either way the server is werkzeug's, as in
    `moto_server`, less its duplicate `100 Continue` (`_moto_wsgi_server`). moto keeps objects
    in memory, in one store per process: servers in threads of one process share it (each has
    its own bucket), and the last of them to stop empties it.
    """

    _in_thread = 0  # servers running in threads of this process
    _lock = threading.Lock()

    def __init__(self, bucket: str | None = None, *, process: bool = False,
                 jars: list[Path] | None = None) -> None:
        self.bucket = bucket or f"rockstate-{uuid.uuid4().hex[:12]}"
        self.process = process
        self._jars = jars
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def endpoint(self) -> str:
        if not self.port:
            raise RuntimeError("S3Server not started")
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> S3Server:
        if self.port:
            raise RuntimeError("S3Server already started")
        if self.process:
            self._start_process()
        else:
            self._server = _moto_wsgi_server(0)
            with S3Server._lock:
                S3Server._in_thread += 1
            self.port = int(self._server.port)
            self._thread = threading.Thread(target=self._server.serve_forever,
                                            name=f"moto-s3-{self.port}", daemon=True)
            self._thread.start()
        try:
            self._create_bucket()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self._server is not None:
            with S3Server._lock:
                S3Server._in_thread -= 1
                last = S3Server._in_thread == 0
            if last:  # moto's own API: forget every bucket and object of this process
                with contextlib.suppress(OSError):
                    request = urllib.request.Request(f"{self.endpoint}/moto-api/reset",
                                                     method="POST")
                    urllib.request.urlopen(request, timeout=30).close()
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None
        self.port = 0

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _start_process(self) -> None:
        # The child binds port 0 and prints the port it got: no window for another process.
        self._proc = subprocess.Popen([sys.executable, __file__, "serve"],
                                      stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert self._proc.stdout is not None
        ready = select.select([self._proc.stdout], [], [], 60)[0]
        line = self._proc.stdout.readline().decode().strip() if ready else ""
        if not line.isdigit():
            self.stop()
            raise RuntimeError(f"moto server did not start (it said {line!r})")
        self.port = int(line)

    def _create_bucket(self) -> None:
        request = urllib.request.Request(f"{self.endpoint}/{self.bucket}", method="PUT")
        with urllib.request.urlopen(request, timeout=30) as response:
            if response.status != 200:
                raise RuntimeError(f"creating bucket {self.bucket}: HTTP {response.status}")

    def requests(self) -> dict[str, int]:
        """The requests this server has served so far, by kind (``request_kind``)."""
        with urllib.request.urlopen(self.endpoint + REQUESTS_PATH, timeout=30) as response:
            return json.loads(response.read())

def _moto_wsgi_server(port: int) -> Any:
    """moto's app on werkzeug's threaded server at 127.0.0.1:`port` (0: a free one), not
    started.

    Werkzeug answers `Expect: 100-continue` twice, once from Python's `BaseHTTPRequestHandler`
    and once from its own `run_wsgi`. The AWS SDK's Netty client (hadoop-aws's async client:
    `copyFromLocalFile`, multipart copies) takes the second `100` for the response and fails
    with `S3Exception: (Service: S3, Status Code: 100)`; so this handler sends only werkzeug's.
    """
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import WSGIRequestHandler, make_server

    class Handler(WSGIRequestHandler):
        def handle_expect_100(self) -> bool:
            return True

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass  # werkzeug logs every request at INFO

    moto = DomainDispatcherApplication(create_backend_app)
    counts: dict[str, int] = {}
    lock = threading.Lock()

    def app(environ: dict, start_response: Any) -> Any:
        if environ.get("PATH_INFO") == REQUESTS_PATH:
            with lock:
                body = json.dumps(counts).encode()
            start_response("200 OK", [("Content-Type", "application/json"),
                                      ("Content-Length", str(len(body)))])
            return [body]
        kind = request_kind(environ)
        with lock:
            counts[kind] = counts.get(kind, 0) + 1
        return moto(environ, start_response)

    return make_server("127.0.0.1", port, app, threaded=True, request_handler=Handler)


# Where the server answers with the requests it has served so far, by kind (request_kind).
REQUESTS_PATH = "/_rockstate/requests"


def request_kind(environ: dict) -> str:
    """A request as S3 bills it: PUT (copies and multipart parts too), POST (multipart start
    and end), GET, HEAD, LIST (of a bucket's keys or its uploads) or DELETE (a bulk delete
    too). Path-style: ``/<bucket>`` is the bucket, ``/<bucket>/<key>`` an object."""
    method = environ.get("REQUEST_METHOD", "")
    query = environ.get("QUERY_STRING", "")
    on_bucket = environ.get("PATH_INFO", "").strip("/").count("/") == 0
    if method == "POST":
        return "DELETE" if "delete" in query.split("&") or query.startswith("delete") \
            else "POST"
    if method == "GET" and (on_bucket or "uploads" in query):
        return "LIST"
    return method


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:  # S3Server(process=True)
    _server = _moto_wsgi_server(0)
    print(_server.port, flush=True)
    _server.serve_forever()
