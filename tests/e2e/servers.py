"""Helpers for the end-to-end tests: real origin servers, a real mitmdump, real clients.

An ``Origin`` is a threaded HTTP/1.1 server (keep-alive capable) bound to a loopback address. Each
test configures what it answers for ``/robots.txt`` (body, status, headers, redirects, an optional
bounded hang) and for any other path (200 with a body naming the path, unless a route overrides
it). Every request it receives is recorded so tests can assert what reached the origin and what
did not.

Distinct host names: glibc here resolves only ``localhost`` (to 127.0.0.1) and not
``*.localhost``, so tests tell hosts apart by using other loopback addresses (127.0.0.2,
127.0.0.3: Linux routes all of 127.0.0.0/8 to ``lo``; the server binds that exact address) and by
treating ``localhost`` and ``127.0.0.1`` as two different host names for the same server.

``Proxy`` runs ``mitmdump -s addon.py`` on a free port with its own confdir and audit log. The
client helpers (curl, requests, httpx) reach origins only through their proxy settings, trust the
proxy's CA, and never wait longer than ``CLIENT_TIMEOUT``.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

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
    headers: dict[str, str] = field(default_factory=dict)
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
            self.send_header(name, value)
        if "content-type" not in names:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        if "content-length" not in names:
            self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()

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
        self.routes: dict[str, Reply] = {}
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
        headers: Mapping[str, str] | None = None,
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
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Answer ``path`` (exact match, query included) with a fixed reply."""
        self.routes[path] = Reply(status, body, dict(headers or {}), delay)

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
            return self.routes[seen.path]
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


# --- a test certificate authority --------------------------------------------------------------


@dataclass(frozen=True)
class CertAuthority:
    """A CA and one server certificate for 127.0.0.1-127.0.0.3 and localhost, as files."""

    ca_pem: Path
    cert_pem: Path
    key_pem: Path

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert_pem, self.key_pem)
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx


def make_test_ca(directory: Path) -> CertAuthority:
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "robotsgate e2e test CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName("localhost")]
    sans += [x509.IPAddress(ipaddress.ip_address(f"127.0.0.{i}")) for i in (1, 2, 3)]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )

    ca_pem = directory / "test-ca.pem"
    cert_pem = directory / "server-cert.pem"
    key_pem = directory / "server-key.pem"
    ca_pem.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return CertAuthority(ca_pem, cert_pem, key_pem)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


# --- the proxy and the clients ------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
ADDON = REPO / "addon.py"
MITMDUMP = Path(sys.executable).parent / "mitmdump"

START_TIMEOUT = 20.0  # seconds for mitmdump to accept connections
CLIENT_TIMEOUT = 30.0  # seconds for any single client request
PROXY_ENV_VARS = (
    "NO_PROXY",
    "no_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_ENV_VARS}
    env.update(extra or {})
    return env


# --- the proxy ---------------------------------------------------------------------------------


def mitmdump_command(port: int, confdir: Path, options: Mapping[str, Any]) -> list[str]:
    cmd = [
        str(MITMDUMP),
        "-s",
        str(ADDON),
        "--listen-host",
        "127.0.0.1",
        "--listen-port",
        str(port),
        "--set",
        f"confdir={confdir}",
    ]
    for name, value in options.items():
        # A list or tuple is a sequence option: one --set per entry.
        for item in value if isinstance(value, list | tuple) else [value]:
            cmd += ["--set", f"{name}={item}"]
    return cmd


def mitmdump_env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return clean_env({"PYTHONPATH": f"{REPO}{os.pathsep}{path}" if path else str(REPO)})


class Proxy:
    """A running ``mitmdump -s addon.py`` on 127.0.0.1."""

    def __init__(self, workdir: Path, options: Mapping[str, Any]) -> None:
        self.workdir = workdir
        self.confdir = workdir / "conf"
        self.confdir.mkdir(parents=True, exist_ok=True)
        self.audit_path = workdir / "audit.jsonl"
        self.stdout_path = workdir / "mitmdump.out"
        self.stderr_path = workdir / "mitmdump.err"
        self.options = {"robots_audit_log": str(self.audit_path), **options}
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ca(self) -> Path:
        return self.confdir / "mitmproxy-ca-cert.pem"

    def output(self) -> str:
        parts = []
        for p in (self.stdout_path, self.stderr_path):
            if p.exists():
                parts.append(p.read_text(errors="replace"))
        return "\n".join(parts)

    def _start(self) -> None:
        for _attempt in range(3):
            self.port = free_port()
            cmd = mitmdump_command(self.port, self.confdir, self.options)
            with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
                self.process = subprocess.Popen(
                    cmd, stdout=out, stderr=err, cwd=REPO, env=mitmdump_env()
                )
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    break
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                        pass
                except OSError:
                    time.sleep(0.05)
                    continue
                if self.ca.exists():
                    return
                time.sleep(0.05)
            output = self.output()
            self.stop()
            if "address already in use" in output.lower():
                continue  # lost the race for the free port; try another
            pytest.fail(
                f"mitmdump did not start (exit {self.process.returncode}) with "
                f"{' '.join(cmd)}\n{output}"
            )
        pytest.fail(f"mitmdump could not bind a port:\n{self.output()}")

    def stop(self) -> None:
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def audit(self) -> list[dict[str, Any]]:
        """Every audit record written so far (each line must be one whole JSON object)."""
        if not self.audit_path.exists():
            return []
        text = self.audit_path.read_text()
        if text and not text.endswith("\n"):
            # A record is written in one flushed write; allow for one being written right now.
            time.sleep(0.2)
            text = self.audit_path.read_text()
        records = []
        for line in text.splitlines():
            assert line.strip(), f"empty line in audit log: {text!r}"
            record = json.loads(line)
            assert isinstance(record, dict), line
            records.append(record)
        return records

    def wait_audit(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The audit records once there are at least ``count`` (bounded wait)."""
        deadline = time.monotonic() + timeout
        records = self.audit()
        while len(records) < count and time.monotonic() < deadline:
            time.sleep(0.05)
            records = self.audit()
        assert len(records) >= count, f"expected {count} audit records, got {records}"
        return records


def run_mitmdump(
    tmp_path: Path, options: Mapping[str, Any], timeout: float = 30.0
) -> tuple[int | None, str]:
    """Run mitmdump that is expected to exit by itself; (exit code or None if it kept running,
    combined output)."""
    port = free_port()
    confdir = tmp_path / "conf"
    confdir.mkdir(parents=True, exist_ok=True)
    cmd = mitmdump_command(port, confdir, options)
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
        env=mitmdump_env(),
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=10)
        return None, out.decode(errors="replace")


# --- clients -----------------------------------------------------------------------------------


@dataclass
class Resp:
    """A response as any of the clients saw it (header names lower-cased)."""

    status: int
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")


def _join_headers(pairs: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pairs:
        key = name.lower()
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


def curl(
    proxy: Proxy,
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    data: bytes | None = None,
) -> Resp:
    """curl, pointed at the proxy through http_proxy/https_proxy and trusting the proxy's CA."""
    env = clean_env({"http_proxy": proxy.url, "https_proxy": proxy.url, "HTTPS_PROXY": proxy.url})
    with tempfile.TemporaryDirectory(prefix="robotsgate-curl-") as d:
        head, body = Path(d) / "head", Path(d) / "body"
        cmd = [
            "curl",
            "-sS",
            "--max-time",
            str(int(CLIENT_TIMEOUT)),
            "--suppress-connect-headers",
            "--cacert",
            str(proxy.ca),
            "-D",
            str(head),
            "-o",
            str(body),
        ]
        if method == "HEAD":
            cmd.append("-I")
        elif method != "GET" or data is not None:
            cmd += ["-X", method]
        if data is not None:
            cmd += ["--data-binary", "@-"]
        for name, value in (headers or {}).items():
            cmd += ["-H", f"{name}: {value}"]
        cmd.append(url)
        done = subprocess.run(
            cmd, input=data, capture_output=True, env=env, timeout=CLIENT_TIMEOUT + 10
        )
        assert done.returncode == 0, f"curl failed ({done.returncode}): {done.stderr!r}"
        blocks = [b for b in head.read_bytes().split(b"\r\n\r\n") if b.strip()]
        lines = blocks[-1].decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        pairs = []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            pairs.append((name.strip(), value.strip()))
        return Resp(status, _join_headers(pairs), body.read_bytes() if body.exists() else b"")


def requests_call(
    proxy: Proxy,
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    data: bytes | None = None,
) -> Resp:
    """requests with ``proxies=`` pointing at the proxy."""
    r = requests.request(
        method,
        url,
        headers=dict(headers or {}),
        data=data,
        proxies={"http": proxy.url, "https": proxy.url},
        verify=str(proxy.ca),
        timeout=CLIENT_TIMEOUT,
        allow_redirects=False,
    )
    return Resp(r.status_code, _join_headers(list(r.headers.items())), r.content)


def proxy_ssl_context(proxy: Proxy) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(proxy.ca))


def httpx_client(proxy: Proxy, **kwargs: Any) -> httpx.Client:
    return httpx.Client(
        proxy=proxy.url,
        verify=proxy_ssl_context(proxy),
        trust_env=False,
        timeout=CLIENT_TIMEOUT,
        **kwargs,
    )


def httpx_async_client(proxy: Proxy, **kwargs: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        proxy=proxy.url,
        verify=proxy_ssl_context(proxy),
        trust_env=False,
        timeout=CLIENT_TIMEOUT,
        **kwargs,
    )


def httpx_call(
    proxy: Proxy,
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    data: bytes | None = None,
) -> Resp:
    """httpx with ``proxy=`` pointing at the proxy."""
    with httpx_client(proxy) as client:
        r = client.request(method, url, headers=dict(headers or {}), content=data)
        return Resp(r.status_code, _join_headers(list(r.headers.multi_items())), r.content)


Client = Callable[..., Resp]
CLIENTS: dict[str, Client] = {"curl": curl, "requests": requests_call, "httpx": httpx_call}


def run_concurrently[T](calls: list[Callable[[], T]]) -> list[T]:
    """Run every call at once (each in a thread, released together); bounded in time."""
    results: list[T | None] = [None] * len(calls)
    start = threading.Barrier(len(calls))

    def run(i: int) -> None:
        start.wait(timeout=30)
        results[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a client did not finish"
    return results  # type: ignore[return-value]  # every slot was filled: all threads ended
