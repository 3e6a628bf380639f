"""An HTTP proxy between s3a and an S3 API server that injects the faults object stores give:
HTTP 503 SlowDown and 500 InternalError, connections reset in the middle of a response body,
latency spikes, and (with the server's own restart, see ``S3ProxyServer.restart``) requests cut
off while the server is down.

Bounded and loopback only: it listens on 127.0.0.1, each connection has a timeout, at most
``MAX_CONNECTIONS`` run at once, and a request body larger than ``MAX_BODY`` is refused. Which
request gets which fault is decided by ``FaultPlan`` rules (a method, a path pattern, how many
times, or a seeded share of matching requests), so that a run replays from its seed.
"""

from __future__ import annotations

import http.client
import random
import re
import socket
import socketserver
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

MAX_CONNECTIONS = 64
MAX_BODY = 256 * 1024 * 1024
TIMEOUT_S = 60
FAULTS = ("503", "500", "reset", "latency")

_ERROR = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code>"
          "<Message>{message}</Message><RequestId>rockstate-fault-proxy</RequestId></Error>")
_STATUS = {"503": (503, "Service Unavailable", "SlowDown", "Please reduce your request rate."),
           "500": (500, "Internal Server Error", "InternalError",
                   "We encountered an internal error. Please try again.")}


@dataclass
class Rule:
    fault: str  # one of FAULTS
    method: str = ""  # "" for any
    path: str = ""  # a regular expression searched in the request's path; "" for any
    times: int = 1  # how many matching requests get it (-1: no limit)
    share: float = 1.0  # of the matching requests, the seeded share that gets it
    latency_s: float = 2.0


@dataclass
class FaultPlan:
    seed: int = 0
    rules: list[Rule] = field(default_factory=list)
    dealt: Counter = field(default_factory=Counter)  # faults dealt, by kind
    requests: Counter = field(default_factory=Counter)  # requests seen, by method
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def add(self, rule: Rule) -> None:
        with self._lock:
            self.rules.append(rule)

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def decide(self, method: str, path: str) -> Rule | None:
        with self._lock:
            self.requests[method] += 1
            for rule in self.rules:
                if rule.times == 0 or (rule.method and rule.method != method):
                    continue
                if rule.path and not re.search(rule.path, path):
                    continue
                if rule.share < 1.0 and self._rng.random() >= rule.share:
                    continue
                if rule.times > 0:
                    rule.times -= 1
                self.dealt[rule.fault] += 1
                return rule
            return None


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        if not self.server.slots.acquire(blocking=False):
            return  # over the bound: the connection is closed, as an overloaded server does
        self.connection.settimeout(TIMEOUT_S)
        upstream: http.client.HTTPConnection | None = None
        try:
            while True:
                request = self._read_request()
                if request is None:
                    return
                method, path, headers, body = request
                rule = self.server.plan.decide(method, path)
                if rule is not None and rule.fault in _STATUS:
                    self._error(rule.fault)
                    continue
                if rule is not None and rule.fault == "latency":
                    time.sleep(rule.latency_s)
                if upstream is None:
                    upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port,
                                                          timeout=TIMEOUT_S)
                try:
                    status, reason, out_headers, payload = _forward(upstream, method, path,
                                                                    headers, body)
                except (OSError, http.client.HTTPException):
                    upstream.close()
                    upstream = None
                    self._reset()  # the server is gone (a restart): so is this connection
                    return
                if rule is not None and rule.fault == "reset" and payload:
                    self._respond(status, reason, out_headers, payload,
                                  cut=len(payload) // 2)
                    self._reset()
                    return
                # A HEAD's answer keeps the server's Content-Length: the object's size.
                self._respond(status, reason, out_headers, payload, head=method == "HEAD")
        except (OSError, ValueError):
            return
        finally:
            if upstream is not None:
                upstream.close()
            self.server.slots.release()

    def _read_request(self):
        line = self.rfile.readline(65537)
        if not line:
            return None
        method, target, _ = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        headers: list[tuple[str, str]] = []
        while True:
            h = self.rfile.readline(65537).decode("latin-1").rstrip("\r\n")
            if not h:
                break
            name, value = h.split(":", 1)
            headers.append((name.strip(), value.strip()))
        lower = {k.lower(): v for k, v in headers}
        if lower.get("expect", "").lower() == "100-continue":  # the client waits for this
            headers = [(k, v) for k, v in headers if k.lower() != "expect"]
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.wfile.flush()
        if lower.get("transfer-encoding", "").lower() == "chunked":
            body = self._read_chunked()
            headers = [(k, v) for k, v in headers if k.lower() != "transfer-encoding"]
            headers.append(("Content-Length", str(len(body))))
        else:
            length = int(lower.get("content-length", "0"))
            if length > MAX_BODY:
                raise ValueError(f"a request body of {length} bytes")
            body = self.rfile.read(length) if length else b""
        return method, target, headers, body

    def _read_chunked(self) -> bytes:
        parts, total = [], 0
        while True:
            size = int(self.rfile.readline(1024).split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline(65537).strip():
                    pass  # trailers
                return b"".join(parts)
            total += size
            if total > MAX_BODY:
                raise ValueError("a chunked request body over the bound")
            parts.append(self.rfile.read(size))
            self.rfile.readline(3)

    def _error(self, fault: str) -> None:
        status, reason, code, message = _STATUS[fault]
        body = _ERROR.format(code=code, message=message).encode()
        self._respond(status, reason, [("Content-Type", "application/xml")], body)

    def _respond(self, status: int, reason: str, headers: list[tuple[str, str]],
                 body: bytes, head: bool = False, cut: int | None = None) -> None:
        """Sends a response; ``cut``: only that many bytes of the body (then a reset)."""
        lines = [f"HTTP/1.1 {status} {reason}"]
        lines += [f"{k}: {v}" for k, v in headers if k.lower() not in (
            "transfer-encoding", "connection") and (head or k.lower() != "content-length")]
        if not head:
            lines.append(f"Content-Length: {len(body)}")
        sent = body if cut is None else body[:cut]
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + sent)
        self.wfile.flush()

    def _reset(self) -> None:
        # SO_LINGER 0: close sends a TCP reset, as a dropped connection does.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()


def _forward(upstream: http.client.HTTPConnection, method: str, path: str,
             headers: list[tuple[str, str]], body: bytes):
    upstream.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for k, v in headers:
        upstream.putheader(k, v)
    upstream.endheaders(body if body else None)
    response = upstream.getresponse()
    payload = response.read()
    return response.status, response.reason, response.getheaders(), payload


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream_port: int, plan: FaultPlan) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream_port = upstream_port
        self.plan = plan
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)


class FaultProxy:
    """``FaultProxy(upstream_port, plan).start()``; ``port`` is where s3a connects."""

    def __init__(self, upstream_port: int, plan: FaultPlan | None = None) -> None:
        self.plan = plan or FaultPlan()
        self._server = _Server(upstream_port, self.plan)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="s3-fault-proxy")

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
