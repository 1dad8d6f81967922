"""Raw-socket parts for the attack suite: an origin that records every byte it receives (and can
speak h2c or switch protocols unasked), a name-based virtual-host origin, and a client that
writes exactly the bytes it is given, in as many parts as it is given.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import h2.config
import h2.connection
import h2.events
import wsproto
import wsproto.events

from .clients import CLIENT_TIMEOUT
from .origins import page_body

_IDLE = 10.0  # seconds an origin connection may sit silent before the origin drops it


@dataclass(frozen=True)
class WireRequest:
    """One request as the origin parsed it (HTTP/1 or an h2 stream)."""

    method: str
    path: str
    headers: tuple[tuple[bytes, bytes], ...]  # as received: names and values untouched
    via: str  # "http/1.1" or "h2"
    server_name: str | None = None  # the TLS server name of its connection
    body: bytes = b""

    def header(self, name: bytes) -> bytes | None:
        return next((v for n, v in self.headers if n.lower() == name), None)


class WireOrigin:
    """An HTTP/1.1 origin on 127.0.0.1 that keeps every byte it receives.

    ``h2c=True``: it accepts an ``Upgrade: h2c`` (any case) with 101 and serves HTTP/2 streams on
    the connection from then on. ``websocket=True``: it accepts WebSocket handshakes and echoes
    text messages. ``switch``: paths it answers with 101 although nobody asked,
    after which it records whatever arrives. ``robots(host_header)`` gives robots.txt's body.
    """

    def __init__(self, robots: Callable[[bytes | None], bytes] | bytes = b"",
                 *, h2c: bool = False, switch: Sequence[str] = (), websocket: bool = False,
                 host: str = "127.0.0.1", port: int = 0, tls: ssl.SSLContext | None = None,
                 sites: Callable[[str | None, bytes | None, str], bytes] | None = None
                 ) -> None:
        self._robots = robots
        # TLS: every connection is wrapped; the server name each one asked for is kept (SNI,
        # None without one), and ``sites(server_name, host_header, path)`` gives a page's body:
        # an origin that chooses its site by server name or by the Host bytes.
        self._tls = tls
        self._sites = sites
        self.server_names: list[str | None] = []
        self._named: dict[int, str | None] = {}
        if tls is not None:
            chosen = tls.sni_callback

            def remember(sock: ssl.SSLSocket, name: str | None, ctx: ssl.SSLContext) -> None:
                self._named[id(sock)] = name
                if chosen is not None:
                    chosen(sock, name, ctx)  # type: ignore[arg-type]

            tls.sni_callback = remember  # type: ignore[assignment]
        self.h2c = h2c
        self.websocket = websocket
        self.switch = set(switch)
        self._lock = threading.Lock()
        self.requests: list[WireRequest] = []
        self._raw: list[bytes] = []
        self.host = host
        self._sock = socket.create_server((host, port))
        self.port: int = self._sock.getsockname()[1]
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    # --- what it saw -----------------------------------------------------------------------

    @property
    def raw(self) -> bytes:
        with self._lock:
            return b"".join(self._raw)

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests]

    def pages(self) -> list[str]:
        """Every path asked for but robots.txt."""
        return [p for p in self.paths() if p != "/robots.txt"]

    def url(self, path: str = "/") -> str:
        return f"http://{self.authority}{path}"

    @property
    def authority(self) -> str:
        return self.host if self.port == 80 else f"{self.host}:{self.port}"

    def stop(self) -> None:
        self._stopping.set()
        with contextlib.suppress(OSError):
            # shutdown wakes the accept() blocked in the other thread; close alone would leave
            # the address bound until that returned.
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._sock.close()
        self._thread.join(timeout=5)

    # --- serving -------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _recv(self, conn: socket.socket) -> bytes:
        try:
            data = conn.recv(65536)
        except OSError:
            return b""
        with self._lock:
            self._raw.append(data)
        return data

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(_IDLE)
        server_name: str | None = None
        if self._tls is not None:
            try:
                conn = self._tls.wrap_socket(conn, server_side=True)
            except (OSError, ssl.SSLError):
                conn.close()
                return
            server_name = self._named.pop(id(conn), None)
            with self._lock:
                self.server_names.append(server_name)
        with conn:
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    data = self._recv(conn)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                try:
                    method, target, _version = lines[0].split(b" ", 2)
                except ValueError:
                    return
                headers = tuple(
                    (name.strip(), value.strip())
                    for name, _, value in (line.partition(b":") for line in lines[1:]))
                request = WireRequest(method.decode(), target.decode(), headers, "http/1.1",
                                      server_name)
                if b"chunked" in (request.header(b"transfer-encoding") or b"").lower():
                    body, buf = self._chunked(conn, buf)
                    if body is None:
                        return
                else:
                    length = int(request.header(b"content-length") or b"0")
                    while len(buf) < length:
                        data = self._recv(conn)
                        if not data:
                            return
                        buf += data
                    body, buf = buf[:length], buf[length:]
                request = dataclasses.replace(request, body=body)
                with self._lock:
                    self.requests.append(request)
                upgrade = (request.header(b"upgrade") or b"").lower()
                if self.h2c and b"h2c" in upgrade:
                    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                                 b"Upgrade: h2c\r\n\r\n")
                    self._serve_h2(conn, request, buf)
                    return
                if upgrade == b"websocket" and self.websocket:
                    self._serve_websocket(conn, head + b"\r\n\r\n", buf)
                    return
                if request.path in self.switch:
                    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                                 b"Upgrade: x-pipe\r\n\r\n")
                    while self._recv(conn):
                        pass  # whatever comes now is kept in raw
                    return
                conn.sendall(self._answer(request))

    def _serve_websocket(self, conn: socket.socket, head: bytes, buf: bytes) -> None:
        """Accept the handshake, then echo every text message back."""
        ws = wsproto.WSConnection(wsproto.ConnectionType.SERVER)
        ws.receive_data(head)
        for event in ws.events():
            if isinstance(event, wsproto.events.Request):
                conn.sendall(ws.send(wsproto.events.AcceptConnection()))
        data = buf
        while True:
            if data:
                ws.receive_data(data)
                for event in ws.events():
                    if isinstance(event, wsproto.events.TextMessage):
                        conn.sendall(ws.send(wsproto.events.Message(data=event.data)))
                    elif isinstance(event, wsproto.events.CloseConnection):
                        conn.sendall(ws.send(event.response()))
                        return
            data = self._recv(conn)
            if not data:
                return

    def _chunked(self, conn: socket.socket, buf: bytes) -> tuple[bytes | None, bytes]:
        """A chunked body (RFC 9112 §7.1), read as a server does: (body, what follows it)."""
        body = b""
        while True:
            while b"\r\n" not in buf:
                data = self._recv(conn)
                if not data:
                    return None, b""
                buf += data
            line, _, buf = buf.partition(b"\r\n")
            try:
                size = int(line.split(b";")[0], 16)
            except ValueError:
                return None, b""
            while len(buf) < size + 2:
                data = self._recv(conn)
                if not data:
                    return None, b""
                buf += data
            if size == 0:
                # No trailers from our clients: the last chunk's CRLF ends the body.
                return body, buf[2:]
            body, buf = body + buf[:size], buf[size + 2:]

    def _body(self, request: WireRequest) -> bytes:
        if self._sites is not None:
            return self._sites(request.server_name, request.header(b"host"), request.path)
        if request.path == "/robots.txt":
            robots = self._robots
            return robots(request.header(b"host")) if callable(robots) else robots
        return page_body(request.path)

    def _answer(self, request: WireRequest) -> bytes:
        body = self._body(request)
        return (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                + str(len(body)).encode() + b"\r\n\r\n" + body)

    def _serve_h2(self, conn: socket.socket, upgrade: WireRequest, buf: bytes) -> None:
        h2conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        h2conn.initiate_upgrade_connection(upgrade.header(b"http2-settings") or b"")
        self._respond_h2(h2conn, 1, upgrade)
        conn.sendall(h2conn.data_to_send())
        data = buf
        while True:
            if data:
                try:
                    received = h2conn.receive_data(data)
                except Exception:
                    return
                for event in received:
                    if isinstance(event, h2.events.RequestReceived):
                        fields = tuple((bytes(n), bytes(v)) for n, v in event.headers or ())
                        pseudo = dict(fields)
                        request = WireRequest(pseudo.get(b":method", b"").decode(),
                                              pseudo.get(b":path", b"").decode(), fields, "h2")
                        with self._lock:
                            self.requests.append(request)
                        self._respond_h2(h2conn, event.stream_id, request)
                conn.sendall(h2conn.data_to_send())
            data = self._recv(conn)
            if not data:
                return

    def _respond_h2(self, h2conn: h2.connection.H2Connection, stream: int,
                    request: WireRequest) -> None:
        body = self._body(request)
        h2conn.send_headers(stream, [(":status", "200"), ("content-length", str(len(body)))])
        h2conn.send_data(stream, body, end_stream=True)


def h2_request_bytes(authority: str, path: str) -> tuple[bytes, bytes]:
    """(HTTP2-Settings value for an upgrade, the bytes an h2c client sends after the 101:
    the connection preface and a request for ``path`` on stream 3)."""
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    settings = client.initiate_upgrade_connection()
    client.send_headers(3, [(":method", "GET"), (":path", path), (":scheme", "http"),
                            (":authority", authority)], end_stream=True)
    return settings, client.data_to_send()


# --- a client that writes exactly what it is told ----------------------------------------------


class Wire:
    """A raw TCP connection to the proxy."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=CLIENT_TIMEOUT)

    def send(self, *parts: bytes, pause: float = 0.3) -> Wire:
        """Each part in its own write, ``pause`` seconds apart (so each is its own segment)."""
        for index, part in enumerate(parts):
            if index:
                time.sleep(pause)
            self.sock.sendall(part)
        return self

    def head(self) -> bytes:
        """Read one response head (up to the empty line)."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(1)
            if not chunk:
                break
            data += chunk
        return data

    def connect(self, authority: str) -> Wire:
        """CONNECT to ``authority``; asserts the tunnel was opened."""
        self.sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        head = self.head()
        assert head.startswith(b"HTTP/1.1 200"), head
        return self

    def read_all(self, timeout: float = 5.0) -> bytes:
        """Everything until the peer closes, or ``timeout`` seconds of silence."""
        self.sock.settimeout(timeout)
        data = b""
        with contextlib.suppress(OSError):
            while chunk := self.sock.recv(65536):
                data += chunk
        return data

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def exchange(port: int, *parts: bytes, pause: float = 0.3, timeout: float = 3.0) -> bytes:
    """Send ``parts`` on a new connection to the proxy; everything it answered until it closed
    the connection (or ``timeout`` seconds of silence)."""
    wire = Wire(port)
    try:
        return wire.send(*parts, pause=pause).read_all(timeout=timeout)
    finally:
        wire.close()


def status_of(response: bytes) -> int | None:
    """The status code of the first response in ``response``, if any."""
    if not response.startswith(b"HTTP/"):
        return None
    return int(response.split(b" ", 2)[1])


def statuses(response: bytes) -> list[int]:
    """The status codes of every response head in ``response``."""
    return [int(code) for code in re.findall(rb"HTTP/1\.[01] (\d{3}) ", response)]
