"""Faults, end to end: robots.txt servers that misbehave, bursts, a killed proxy, a full disk.

Every fault ends in a defined answer: 503 where robots.txt could not be had (complete disallow,
RFC 9309 §2.3.1.4), "allowed" where the RFC says there are no restrictions. Every wait is
bounded: a hanging server is cut short by ``robots_fetch_timeout`` and the clients' own timeouts.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import brotli  # mitmproxy's own dependencies: the encodings httpx decodes
import pytest
import requests

from robotsgate.pages.content import zstd

from .clients import Resp, curl, get_all_at_once, httpx_call, requests_call
from .machine import free_port
from .origins import MAX_HANG, Origin, page_body
from .proxy import Proxy, run_mitmdump

OriginFactory = Callable[..., Origin]
ProxyFactory = Callable[..., Proxy]

ROBOTS = "User-agent: *\nDisallow: /private\n"
MAX_BYTES = 512_000  # what the proxy parses of a robots.txt (500 KiB)
# How much misbehaving robots.txt files may grow the proxy's peak memory, at most: each fetch
# keeps 500 KiB, so a few at once need a few MiB; decoding a bomb's first read costs 64 MiB+.
RSS_BOUND = 100 * 1024 * 1024


def is_page(resp: Resp, path: str) -> bool:
    return resp.status == 200 and resp.body == page_body(path)


def assert_unavailable(resp: Resp) -> None:
    assert resp.status == 503, (resp.status, resp.headers, resp.text)
    assert resp.header("X-Robotsgate-Reason") == "robots-unavailable", resp.headers
    assert (resp.header("Retry-After") or "").isdigit(), resp.headers


def memory(proxy: Proxy) -> dict[str, int]:
    """The proxy process's VmRSS (now) and VmHWM (peak so far), in bytes."""
    assert proxy.process is not None
    values = {}
    for line in Path(f"/proc/{proxy.process.pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = int(rest.split()[0]) * 1024
    return values


# --- a raw TCP origin, for answers an HTTP server library will not give --------------------------


class RawOrigin:
    """A loopback TCP server: reads each request's head, records its path, then ``answer``s.

    ``answer(sock, path, stopping)`` writes whatever it likes (a torn body, a trickle) and
    returns; the connection is closed after it. ``stopping`` is set when the test is over.
    """

    def __init__(self, answer: Callable[[socket.socket, str, threading.Event], None]) -> None:
        self._answer = answer
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._paths: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def paths(self) -> list[str]:
        with self._lock:
            return list(self._paths)

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(MAX_HANG)
            head = b""
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    head += chunk
                path = head.split(b"\r\n", 1)[0].split()[1].decode()
                with self._lock:
                    self._paths.append(path)
                self._answer(conn, path, self._stopping)

    def stop(self) -> None:
        self._stopping.set()
        self._listener.close()
        self._thread.join(timeout=10)


@pytest.fixture
def raw_origin() -> Iterator[Callable[..., RawOrigin]]:
    started: list[RawOrigin] = []

    def start(answer: Callable[[socket.socket, str, threading.Event], None]) -> RawOrigin:
        server = RawOrigin(answer)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def reset_mid_body(conn: socket.socket, path: str, stopping: threading.Event) -> None:
    """Promise 1000 bytes, send a few, then reset the connection (RST, not FIN)."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n"
                 b"User-agent: *\nAllow: /\n# and then")
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def trickle(conn: socket.socket, path: str, stopping: threading.Event) -> None:
    """A byte of a robots.txt that never ends, every 0.2 s: no single read ever times out."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n")
    deadline = time.monotonic() + MAX_HANG
    while not stopping.is_set() and time.monotonic() < deadline:
        conn.sendall(b"#")
        stopping.wait(0.2)


# --- the robots.txt server misbehaves ----------------------------------------------------------


def test_hanging_robots_server_answers_503(origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin()
    site.set_robots(ROBOTS, delay=MAX_HANG)  # never answers in time; cut short at teardown
    gate = proxy(robots_fetch_timeout=1)

    assert_unavailable(requests_call(gate, site.url("/page")))
    assert site.paths() == ["/robots.txt"]
    [record] = gate.wait_audit(1)
    assert (record["reason"], record["status"]) == ("robots-unavailable", 503)


def test_trickling_robots_server_answers_503(
    raw_origin: Callable[..., RawOrigin], proxy: ProxyFactory
) -> None:
    site = raw_origin(trickle)
    gate = proxy(robots_fetch_timeout=1)

    assert_unavailable(httpx_call(gate, site.url("/page")))
    assert site.paths() == ["/robots.txt"]


def test_connection_reset_mid_body_answers_503(
    raw_origin: Callable[..., RawOrigin], proxy: ProxyFactory
) -> None:
    site = raw_origin(reset_mid_body)
    gate = proxy()

    assert_unavailable(httpx_call(gate, site.url("/page")))
    assert site.paths() == ["/robots.txt"]  # "Allow: /" was in the torn body: not used
    [record] = gate.wait_audit(1)
    assert record["reason"] == "robots-unavailable"


def ten_megabytes() -> bytes:
    """A rule at the start, another past the first 500 KiB, and filler to 10 MB."""
    filler = b"# " + b"x" * 97 + b"\n"  # 100 bytes a line
    body = bytearray(ROBOTS.encode())
    while len(body) < MAX_BYTES + 50_000:
        body += filler
    body += b"Disallow: /late\n"
    while len(body) < 10_000_000:
        body += filler
    return bytes(body)


def test_ten_megabyte_robots_txt_is_cut_at_500_kib(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    body = ten_megabytes()
    sites = [origin(robots=body) for _ in range(3)]
    gate = proxy()
    before = memory(gate)

    for site in sites:
        assert httpx_call(gate, site.url("/private/x")).status == 403  # the rule at the start
        assert is_page(httpx_call(gate, site.url("/late/x")), "/late/x")  # past 500 KiB: unread
    after = memory(gate)

    assert after["VmHWM"] - before["VmRSS"] < RSS_BOUND, (before, after)
    assert gate.process is not None and gate.process.poll() is None
    records = gate.wait_audit(3)
    assert all(r["rule"] == "Disallow: /private" for r in records)


ENDLESS_LIMIT = 200_000_000  # what "endless" sends at most before it just hangs


def endless(conn: socket.socket, path: str, stopping: threading.Event) -> None:
    """A robots.txt without a length that goes on and on (up to ENDLESS_LIMIT, then hangs)."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                 + ROBOTS.encode())
    filler = (b"# " + b"x" * 97 + b"\n") * 655  # 64 KiB or so
    sent = 0
    while not stopping.is_set() and sent < ENDLESS_LIMIT:
        conn.sendall(filler)
        sent += len(filler)
    stopping.wait(MAX_HANG)


def test_endless_robots_txt_is_read_no_further_than_500_kib(
    raw_origin: Callable[..., RawOrigin], proxy: ProxyFactory
) -> None:
    site = raw_origin(endless)
    gate = proxy(robots_fetch_timeout=10)
    before = memory(gate)

    resp = httpx_call(gate, site.url("/private/x"))
    after = memory(gate)

    # Decided on what was read (a proxy reading on would time out: 503, or run out of memory).
    assert resp.status == 403, (resp.status, resp.headers)
    assert resp.header("X-Robotsgate-Rule") == "Disallow: /private"
    assert site.paths() == ["/robots.txt"]
    assert after["VmHWM"] - before["VmRSS"] < RSS_BOUND, (before, after)


def test_binary_garbage_robots_txt_allows_everything(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    garbage = random.Random(9309).randbytes(256 * 1024)
    site = origin()
    site.set_robots(garbage, headers={"Content-Type": "application/octet-stream"})
    normal = origin(robots=ROBOTS)
    gate = proxy()

    assert is_page(httpx_call(gate, site.url("/private/x")), "/private/x")  # no rules in it
    assert httpx_call(gate, normal.url("/private/x")).status == 403  # and the proxy goes on


def test_redirect_loop_is_treated_as_no_robots_txt(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin()
    site.set_robots(b"moved\n", status=302, headers={"Location": "/loop-a"})
    site.redirect("/loop-a", "/loop-b")
    site.redirect("/loop-b", "/robots.txt")
    gate = proxy()

    assert is_page(httpx_call(gate, site.url("/private/x")), "/private/x")
    assert is_page(httpx_call(gate, site.url("/private/y")), "/private/y")

    # Five redirects followed (six requests), then given up on, once; and remembered.
    hops = ["/robots.txt", "/loop-a", "/loop-b"] * 2
    assert site.paths() == [*hops, "/private/x", "/private/y"]


def test_five_redirects_are_followed(origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin()
    site.set_robots(b"moved\n", status=301, headers={"Location": "/r1"})
    for i in range(1, 5):
        site.redirect(f"/r{i}", f"/r{i + 1}")
    site.route("/r5", 200, ROBOTS)
    gate = proxy()

    assert httpx_call(gate, site.url("/private/x")).status == 403
    assert site.paths() == ["/robots.txt", "/r1", "/r2", "/r3", "/r4", "/r5"]


def test_redirect_to_an_unreachable_host_answers_503(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin()
    dead = f"http://127.0.0.1:{free_port()}/robots.txt"
    site.set_robots(b"moved\n", status=301, headers={"Location": dead})
    gate = proxy()

    assert_unavailable(httpx_call(gate, site.url("/page")))
    assert site.paths() == ["/robots.txt"]


BOMB_MIB = 256  # decoded size of each compression bomb


def bomb(encoding: str) -> bytes:
    """A short robots.txt followed by BOMB_MIB MiB of newlines, compressed as hard as it goes.

    gzip stays under 300 KB, brotli and zstd under 10 KB; each 64 KiB of gzip that is read from
    the network decodes to 64 MiB, and brotli or zstd much more.
    """
    newlines = b"\n" * (1 << 20)
    if encoding == "gzip":
        gz = zlib.compressobj(9, zlib.DEFLATED, 31)
        parts = [gz.compress(ROBOTS.encode())]
        parts += [gz.compress(newlines) for _ in range(BOMB_MIB)]
        return b"".join([*parts, gz.flush()])
    if encoding == "br":
        br = brotli.Compressor(quality=5)
        parts = [br.process(ROBOTS.encode())]
        parts += [br.process(newlines) for _ in range(BOMB_MIB)]
        return b"".join([*parts, br.finish()])
    zs = zstd.ZstdCompressor(level=3)
    parts = [zs.compress(ROBOTS.encode())]
    parts += [zs.compress(newlines) for _ in range(BOMB_MIB)]
    return b"".join([*parts, zs.flush(zstd.ZstdCompressor.FLUSH_FRAME)])


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd"])
def test_compression_bomb_is_decoded_no_further_than_needed(
    encoding: str, origin: OriginFactory, proxy: ProxyFactory
) -> None:
    body = bomb(encoding)
    # Four hostile sites at once, as a bot following links may well reach them.
    sites = [origin() for _ in range(4)]
    for site in sites:
        site.set_robots(body, headers={"Content-Encoding": encoding})
    gate = proxy()
    before = memory(gate)

    with ThreadPoolExecutor(len(sites)) as pool:
        answers = list(pool.map(lambda s: httpx_call(gate, s.url("/private/x")), sites))
    after = memory(gate)

    # A defined decision: the rule at the start (decoded), or robots.txt refused (503); either
    # way nothing reaches the origin.
    allowed = {403} if encoding == "gzip" else {403, 503}
    assert {a.status for a in answers} <= allowed, answers
    assert all(s.paths() == ["/robots.txt"] for s in sites)
    assert gate.process is not None and gate.process.poll() is None
    grown = after["VmHWM"] - before["VmRSS"]
    assert grown < RSS_BOUND, f"peak RSS grew by {grown >> 20} MiB ({before}, {after})"


def test_html_page_as_robots_txt_allows_everything(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    html = (
        "<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n"
        "<body><h1>Page not found</h1><p>Try the <a href='/'>home page</a>.</p></body></html>\n"
    )
    site = origin()
    site.set_robots(html, headers={"Content-Type": "text/html"})
    gate = proxy()

    assert is_page(httpx_call(gate, site.url("/private/x")), "/private/x")
    assert gate.audit() == []


def test_host_that_does_not_resolve_answers_503(proxy: ProxyFactory) -> None:
    gate = proxy()

    assert_unavailable(httpx_call(gate, "http://nonexistent.invalid/page"))
    [record] = gate.wait_audit(1)
    assert (record["reason"], record["status"]) == ("robots-unavailable", 503)
    assert record["robots_url"] == "http://nonexistent.invalid/robots.txt"


# --- load and crashes ----------------------------------------------------------------------------


async def test_thousand_simultaneous_first_requests_fetch_robots_txt_once(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin()
    site.set_robots(ROBOTS, delay=2.0)  # the one fetch stays in flight while requests pile up
    gate = proxy()
    paths = [f"/private/{i}" for i in range(1000)]

    responses = await get_all_at_once(gate, [site.url(p) for p in paths], timeout=300)

    assert [r.status_code for r in responses] == [403] * len(paths)
    assert site.paths() == ["/robots.txt"]  # one fetch, and nothing forwarded
    records = gate.wait_audit(len(paths), timeout=60)
    assert sorted(r["url"] for r in records) == sorted(site.url(p) for p in paths)


def test_new_sites_past_the_fetches_in_flight_wait_their_turn_untimed(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    # Eight new sites at once, each answering its robots.txt in 0.8 s (robots_fetch_timeout is
    # 1 s), two fetched at a time: the last two wait 2.4 s for their turn, past the 2 s a whole
    # fetch may take (twice robots_fetch_timeout). Their wait is the proxy's, not theirs: every
    # site is judged by its own robots.txt, none answered 503 (which would be remembered for
    # robots_error_ttl).
    sites = [origin() for _ in range(8)]
    for site in sites:
        site.set_robots(ROBOTS, delay=0.8)
    gate = proxy(robots_fetch_timeout=1, robots_fetch_concurrency=2)
    started = time.monotonic()
    with ThreadPoolExecutor(len(sites)) as pool:
        answers = list(pool.map(lambda site: requests_call(gate, site.url("/private/x")), sites))
    took = time.monotonic() - started
    assert [answer.status for answer in answers] == [403] * len(sites), answers
    assert all(answer.headers["x-robotsgate-reason"] == "disallowed" for answer in answers)
    assert all(site.paths() == ["/robots.txt"] for site in sites)
    assert took >= 4 * 0.8  # in four turns of two: the bound held
    records = gate.wait_audit(len(sites))
    assert {record["reason"] for record in records} == {"disallowed"}


def test_kill_9_during_a_burst_leaves_no_torn_audit_line(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy()
    stop = threading.Event()

    def hammer(n: int) -> None:
        with requests.Session() as session:
            session.proxies = {"http": gate.url}
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    session.get(site.url(f"/private/{n}/{i}?pad={'x' * 200}"), timeout=5)
                except requests.RequestException:
                    return  # the proxy is gone

    threads = [threading.Thread(target=hammer, args=(n,), daemon=True) for n in range(8)]
    for thread in threads:
        thread.start()
    try:
        gate.wait_audit(300, timeout=60)  # well into the burst
        assert gate.process is not None
        os.kill(gate.process.pid, signal.SIGKILL)
        gate.process.wait(timeout=10)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)

    text = gate.audit_path.read_text()
    assert text.endswith("\n"), text[-300:]
    lines = text.splitlines()
    assert len(lines) >= 300
    for line in lines:
        record = json.loads(line)  # a torn line would not parse
        assert record["reason"] == "disallowed", record
    assert site.paths() == ["/robots.txt"]


# --- the audit log cannot be written -------------------------------------------------------------


def full_disk_sites(origin: OriginFactory) -> tuple[Origin, Origin]:
    site = origin(robots=ROBOTS)
    slow = origin("127.0.0.2", robots="User-agent: *\nCrawl-delay: 1\n")
    return site, slow


def test_audit_log_on_a_full_disk_fails_closed(origin: OriginFactory, proxy: ProxyFactory) -> None:
    site, slow = full_disk_sites(origin)
    gate = proxy(robots_audit_log="/dev/full")  # robots_audit_failure=closed, the default

    blocked = httpx_call(gate, site.url("/private/x"))
    allowed = httpx_call(gate, site.url("/public"))  # nothing to record: forwarded
    first = httpx_call(gate, slow.url("/one"))
    delayed = httpx_call(gate, slow.url("/two"))  # its wait would be recorded: not forwarded

    for resp in (blocked, delayed):
        assert resp.status == 503, (resp.status, resp.headers)
        assert resp.header("X-Robotsgate-Reason") == "audit-unavailable"
    assert is_page(allowed, "/public")
    assert is_page(first, "/one")
    assert site.paths() == ["/robots.txt", "/public"]
    assert slow.paths() == ["/robots.txt", "/one"]
    assert_logged(gate, "cannot write the audit log /dev/full")


def test_audit_log_on_a_full_disk_can_continue(origin: OriginFactory, proxy: ProxyFactory) -> None:
    site, slow = full_disk_sites(origin)
    gate = proxy(robots_audit_log="/dev/full", robots_audit_failure="continue")

    blocked = httpx_call(gate, site.url("/private/x"))
    allowed = httpx_call(gate, site.url("/public"))
    first = httpx_call(gate, slow.url("/one"))
    delayed = httpx_call(gate, slow.url("/two"))

    assert blocked.status == 403
    assert blocked.header("X-Robotsgate-Reason") == "disallowed"
    assert is_page(allowed, "/public")
    assert is_page(first, "/one")
    assert is_page(delayed, "/two")
    assert site.paths() == ["/robots.txt", "/public"]
    assert slow.paths() == ["/robots.txt", "/one", "/two"]
    assert_logged(gate, "cannot write the audit log /dev/full")


def assert_logged(proxy: Proxy, text: str, timeout: float = 10.0) -> None:
    """mitmdump's output has ``text`` (bounded wait: its output may lag behind a response)."""
    deadline = time.monotonic() + timeout
    while text not in proxy.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert text in proxy.output(), proxy.output()[-2000:]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"robots_audit_log": "/nonexistent-dir/audit.jsonl"}, "robots_audit_log"),
        ({"robots_audit_failure": "maybe"}, "robots_audit_failure"),
    ],
)
def test_audit_log_that_cannot_be_opened_refuses_to_start(
    options: dict[str, Any], named: str, tmp_path: Path
) -> None:
    code, output = run_mitmdump(tmp_path, {"robots_audit_log": tmp_path / "a.log", **options})

    assert code is not None, f"mitmdump kept running with {options}:\n{output}"
    assert code != 0, output
    assert named in output


def test_a_robots_txt_behind_an_untrusted_certificate_says_why(
        https_origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    # The proxy is not told to trust the origin's CA: the robots.txt fetch fails verification,
    # and the answer, the audit record and the proxy's log all say so, not only "503".
    site = https_origin(robots="User-agent: *\nDisallow: /private\n")
    gate = proxy()

    answer = curl(gate, site.url("/page"))

    assert answer.status == 503
    assert "CERTIFICATE_VERIFY_FAILED" in answer.body.decode()
    [record] = gate.wait_audit(1)
    assert record["reason"] == "robots-unavailable"
    assert "CERTIFICATE_VERIFY_FAILED" in record["error"]
    assert "CERTIFICATE_VERIFY_FAILED" in gate.output()
    assert not site.saw("/page")
