"""Origin servers for the end-to-end tests: what a site answers, and every request it received.

An ``Origin`` is a threaded HTTP/1.1 server (keep-alive capable) bound to a loopback address,
speaking TLS when given a server context (tls.py). Each test configures what it answers for
``/robots.txt`` (body, status, headers, redirects, an optional bounded hang) and for any other
path (200 with a body naming the path, unless a route overrides it). Every request it receives
is recorded so tests can assert what reached the origin and what did not.

Distinct host names: glibc here resolves only ``localhost`` (to 127.0.0.1) and not
``*.localhost``, so tests tell hosts apart by using other loopback addresses (127.0.0.2,
127.0.0.3: Linux routes all of 127.0.0.0/8 to ``lo``; the server binds that exact address) and by
treating ``localhost`` and ``127.0.0.1`` as two different host names for the same server.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Upper bound for any deliberate stall of the origin; stop() cuts every stall short anyway.
MAX_HANG = 30.0


@dataclass(frozen=True)
class Seen:
    """One request as the origin received it."""

    method: str
    path: str  # path including the query string, exactly as on the request line
    headers: dict[str, str]  # header names lower-cased
    arrived: float  # time.monotonic() once the request line and headers had been read
    body: bytes = b""

    @property
    def host(self) -> str:
        return self.headers.get("host", "")

    @property
    def user_agent(self) -> str:
        return self.headers.get("user-agent", "")


@dataclass
class Reply:
    """What the origin answers for a path."""

    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str | list[str]] = field(default_factory=dict)  # a list: one line each
    delay: float = 0.0  # seconds to stall before answering (bounded by MAX_HANG and stop())

    def body_bytes(self) -> bytes:
        return self.body.encode() if isinstance(self.body, str) else self.body


RobotsSpec = str | bytes | Reply | Callable[[Seen], Reply]


def page_body(path: str) -> bytes:
    """The body every plain page of an origin answers with: it names the path (with query)."""
    return f"page {path}\n".encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        arrived = time.monotonic()
        headers = {k.lower(): v for k, v in self.headers.items()}
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._chunked()
        else:
            length = int(headers.get("content-length", "0") or 0)
            body = self.rfile.read(length) if length > 0 else b""
        seen = Seen(self.command, self.path, headers, arrived, body)
        origin = self.server.origin
        origin._record(seen)
        reply = origin._reply_for(seen)
        if reply.delay > 0:
            origin._stopping.wait(min(reply.delay, MAX_HANG))
            if origin._stopping.is_set():
                self.close_connection = True
                return
        data = reply.body_bytes()
        self.send_response(reply.status)
        names = {k.lower() for k in reply.headers}
        for name, value in reply.headers.items():
            for line in [value] if isinstance(value, str) else value:  # a list: one line each
                self.send_header(name, line)
        if "content-type" not in names:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        if "content-length" not in names and "transfer-encoding" not in names:
            # A reply that names its Transfer-Encoding brings its body already framed.
            self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()

    def _chunked(self) -> bytes:
        """A chunked body (RFC 9112 §7.1), trailers skipped."""
        body = b""
        while size := int(self.rfile.readline().split(b";")[0], 16):
            body += self.rfile.read(size)
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        return body

    do_GET = _handle
    do_HEAD = _handle
    do_POST = _handle
    do_PUT = _handle
    do_DELETE = _handle
    do_OPTIONS = _handle
    do_PATCH = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512  # many simultaneous connections must not be dropped by the backlog

    def __init__(self, address: tuple[str, int], origin: Origin, tls: ssl.SSLContext | None):
        self.origin = origin
        self.tls = tls
        super().__init__(address, _Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        # Runs in the per-connection thread, so a TLS handshake never blocks the accept loop.
        request.settimeout(MAX_HANG + 5)
        if self.tls is not None:
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (OSError, ssl.SSLError):
                return
        with contextlib.suppress(OSError, ssl.SSLError):
            super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class Origin:
    """A configurable origin server on a loopback address."""

    def __init__(
        self, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None, port: int = 0
    ) -> None:
        self.scheme = "https" if tls is not None else "http"
        self._lock = threading.Lock()
        self._seen: list[Seen] = []
        self._stopping = threading.Event()
        self.robots: RobotsSpec = Reply(404, "no robots.txt here\n")
        self.routes: dict[str, Reply | Callable[[Seen], Reply]] = {}
        self._server = _Server((host, port), self, tls)  # port 0: any free one
        self.host = host
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"origin-{host}:{self.port}",
            daemon=True,
        )
        self._thread.start()

    # --- configuration -------------------------------------------------------------------------

    def set_robots(
        self,
        body: str | bytes | None = None,
        *,
        status: int = 200,
        headers: Mapping[str, str | list[str]] | None = None,
        delay: float = 0.0,
        handler: Callable[[Seen], Reply] | None = None,
    ) -> None:
        """What ``GET /robots.txt`` answers from now on."""
        if handler is not None:
            self.robots = handler
            return
        self.robots = Reply(status, body if body is not None else b"", dict(headers or {}), delay)

    def route(
        self,
        path: str,
        status: int = 200,
        body: str | bytes = b"",
        headers: Mapping[str, str | list[str]] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Answer ``path`` (exact match, query included) with a fixed reply."""
        self.routes[path] = Reply(status, body, dict(headers or {}), delay)

    def answer(self, path: str, reply: Callable[[Seen], Reply]) -> None:
        """Answer ``path`` (exact match, query included) with what ``reply`` makes of each
        request."""
        self.routes[path] = reply

    def redirect(self, path: str, location: str, status: int = 301) -> None:
        self.route(path, status, b"moved\n", {"Location": location})

    # --- what it saw ---------------------------------------------------------------------------

    @property
    def seen(self) -> list[Seen]:
        with self._lock:
            return list(self._seen)

    def paths(self) -> list[str]:
        return [s.path for s in self.seen]

    def saw(self, path: str) -> bool:
        return path in self.paths()

    def count(self, path: str) -> int:
        return self.paths().count(path)

    def robots_fetches(self) -> list[Seen]:
        return [s for s in self.seen if s.path.split("?", 1)[0] == "/robots.txt"]

    def forget(self) -> None:
        with self._lock:
            self._seen.clear()

    # --- addresses -----------------------------------------------------------------------------

    def url(self, path: str = "/", host: str | None = None) -> str:
        return f"{self.scheme}://{host or self.host}:{self.port}{path}"

    @property
    def robots_url(self) -> str:
        return self.url("/robots.txt")

    # --- internals -----------------------------------------------------------------------------

    def _record(self, seen: Seen) -> None:
        with self._lock:
            self._seen.append(seen)

    def _reply_for(self, seen: Seen) -> Reply:
        if seen.path in self.routes:
            route = self.routes[seen.path]
            return route(seen) if callable(route) else route
        if seen.path.split("?", 1)[0] == "/robots.txt":
            robots = self.robots
            if callable(robots):
                return robots(seen)
            if isinstance(robots, Reply):
                return robots
            return Reply(200, robots)
        return Reply(200, page_body(seen.path))

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@contextlib.contextmanager
def serving(robots: str | bytes | None = None, host: str = "127.0.0.1",
            tls: ssl.SSLContext | None = None) -> Iterator[Origin]:
    """An ``Origin`` answering ``robots`` for /robots.txt (None: its default 404), stopped on
    the way out."""
    origin = Origin(host, tls=tls)
    try:
        if robots is not None:
            origin.set_robots(robots)
        yield origin
    finally:
        origin.stop()
