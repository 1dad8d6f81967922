"""The attack suite: raw bytes against a real ``mitmdump -s addon.py``.

Every test sends what a bot that wants through would send, with raw sockets, to origins that
record every byte they receive, and checks two things: nothing disallowed arrived at the origin,
and the audit log says exactly what happened.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any

import h2.config
import h2.connection
import h2.events
import pytest
import wsproto
import wsproto.events

from .origins import Origin, Reply, Seen
from .proxy import Proxy
from .wire import Wire, WireOrigin, exchange, h2_request_bytes, status_of, statuses

ProxyFactory = Callable[..., Proxy]
ROBOTS = b"User-agent: *\nDisallow: /private\n"


@pytest.fixture
def wire_origin() -> Iterator[Callable[..., WireOrigin]]:
    started: list[WireOrigin] = []

    def start(robots: Any = ROBOTS, **kwargs: Any) -> WireOrigin:
        site = WireOrigin(robots, **kwargs)
        started.append(site)
        return site

    yield start
    for site in started:
        site.stop()


def blocks(proxy: Proxy, reason: str | None = None) -> list[dict[str, Any]]:
    return [r for r in proxy.audit() if r["event"] == "block"
            and (reason is None or r["reason"] == reason)]


def request(target: str, host: str, *extra: str, method: str = "GET") -> bytes:
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", *extra, "", ""]
    return "\r\n".join(lines).encode()


# --- raw TCP inside a CONNECT tunnel -------------------------------------------------------------


REST = b"Host: {host}\r\nConnection: close\r\n\r\n"


@pytest.mark.parametrize("parts", [
    pytest.param((b"GET /priv", b"ate HTTP/1.1\r\n" + REST), id="split-request-line"),
    pytest.param((b"\r\nGET /private HTTP/1.1\r\n" + REST,), id="leading-crlf"),
    pytest.param((b"G", b"ET /private HTTP/1.1\r\n" + REST), id="one-byte-first"),
])
@pytest.mark.parametrize("ignore", [False, True], ids=["plain", "ignore_hosts-elsewhere"])
def test_a_request_the_protocol_sniffer_misses_is_still_decided(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin],
        parts: tuple[bytes, ...], ignore: bool) -> None:
    # With ignore_hosts set, every CONNECT is decided on its host first (port 80: as http).
    site = wire_origin(host="127.0.0.6", port=80) if ignore else wire_origin()
    options = {"ignore_hosts": [r"^elsewhere\.invalid"]} if ignore else {}
    p = proxy(**options)
    wire = Wire(p.port).connect(f"{site.host}:{site.port}")
    wire.send(*(part.replace(b"{host}", site.authority.encode()) for part in parts))
    answer = wire.read_all(timeout=3)
    wire.close()
    assert "/private" not in site.pages() and b"/private" not in site.raw.split(b"robots.txt")[-1]
    # Read as HTTP after all: the request is decided (403), or refused as malformed (400, or
    # the connection closed).
    assert status_of(answer) in (403, 400, None), answer
    if status_of(answer) == 403:
        assert [r["url"] for r in blocks(p, "disallowed")] == [site.url("/private")]


def test_bytes_that_are_not_http_in_a_tunnel_never_reach_the_origin(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin()
    p = proxy()
    wire = Wire(p.port).connect(site.authority)
    wire.send(b"SSH-2.0-OpenSSH_9.0\r\n", b"\x00\x00\x01\x0c GET /private HTTP/1.1\r\n\r\n")
    answer = wire.read_all(timeout=3)
    wire.close()
    assert site.raw == b"", site.raw
    assert status_of(answer) in (400, None), answer


def test_raw_tcp_that_the_operator_asked_for_is_read_as_http(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    # tcp_hosts tells mitmproxy to relay raw TCP for a host: robotsgate still reads each request.
    site = wire_origin()
    p = proxy(tcp_hosts=[r"127\.0\.0\.1"])
    wire = Wire(p.port).connect(site.authority)
    wire.send(request("/private", site.authority), request("/page", site.authority))
    answer = wire.read_all(timeout=3)
    wire.close()
    assert site.pages() == ["/page"]
    assert statuses(answer) == [403, 200], answer


# --- upgrades ------------------------------------------------------------------------------------


@pytest.mark.parametrize("upgrade", ["h2c", "H2C", "H2c"])
def test_an_h2c_upgrade_is_served_as_http_1_and_cannot_open_a_pipe(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin], upgrade: str) -> None:
    site = wire_origin(h2c=True)
    p = proxy()
    settings, h2_bytes = h2_request_bytes(site.authority, "/private")
    wire = Wire(p.port)
    wire.send(request(f"http://{site.authority}/page", site.authority,
                      "Connection: Upgrade, HTTP2-Settings", f"Upgrade: {upgrade}",
                      f"HTTP2-Settings: {settings.decode()}"))
    head = wire.head()
    wire.send(h2_bytes)  # what an h2c client sends once it believes it switched
    wire.read_all(timeout=2)
    wire.close()
    assert head.startswith(b"HTTP/1.1 200"), head
    assert site.pages() == ["/page"]
    assert all(r.via == "http/1.1" and r.header(b"upgrade") is None for r in site.requests)


@pytest.mark.parametrize("upgrade", ["h2c, x-other", "x-pipe", "websocket, h2c", "TLS/1.2"])
def test_any_other_upgrade_is_refused_and_audited(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin], upgrade: str) -> None:
    site = wire_origin(h2c=True)
    p = proxy()
    answer = exchange(p.port, request(f"http://{site.authority}/page", site.authority,
                                      "Connection: Upgrade", f"Upgrade: {upgrade}"))
    assert status_of(answer) == 400, answer
    assert site.pages() == []
    [record] = blocks(p, "upgrade")
    assert record["url"] == f"http://{site.authority}/page" and record["status"] == 400


def test_an_origin_switching_protocols_unasked_gets_no_pipe(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin(switch=["/switch"])
    p = proxy()
    wire = Wire(p.port)
    wire.send(request(f"http://{site.authority}/switch", site.authority))
    answer = wire.read_all(timeout=1.5)
    wire.send(request("/private", site.authority))  # into the pipe, if there were one
    answer += wire.read_all(timeout=1.5)
    wire.close()
    assert b"101" not in answer.split(b"\r\n", 1)[0], answer
    assert b"/private" not in site.raw
    # Not a block: /switch was allowed and reached the origin; its answer was cut.
    assert blocks(p) == []
    [record] = [r for r in p.audit() if r["event"] == "cut"]
    assert record["url"] == f"http://{site.authority}/switch" and record["reason"] == "upgrade"


def test_a_websocket_to_an_allowed_path_works_and_one_to_a_disallowed_path_is_refused(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin(websocket=True)
    p = proxy()

    def handshake(path: str) -> tuple[Wire, wsproto.WSConnection, bytes]:
        ws = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        wire = Wire(p.port)
        wire.send(ws.send(wsproto.events.Request(host=site.authority, target=site.url(path))))
        head = wire.head()
        ws.receive_data(head)
        return wire, ws, head

    wire, ws, head = handshake("/chat")
    assert head.startswith(b"HTTP/1.1 101"), head
    assert any(isinstance(e, wsproto.events.AcceptConnection) for e in ws.events())
    wire.send(ws.send(wsproto.events.Message(data="hello")))
    ws.receive_data(wire.sock.recv(65536))
    assert [e.data for e in ws.events() if isinstance(e, wsproto.events.TextMessage)] == \
        ["hello"]
    wire.close()

    wire, _, head = handshake("/private/chat")
    wire.close()
    assert head.startswith(b"HTTP/1.1 403"), head
    assert site.pages() == ["/chat"]
    assert [r["url"] for r in blocks(p, "disallowed")] == [site.url("/private/chat")]


# --- bodies streamed before the request hook -----------------------------------------------------


def test_a_streamed_body_to_a_disallowed_path_never_leaves(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin()
    p = proxy(stream_large_bodies="1k")
    body = b"x" * 200_000
    answer = exchange(p.port, request(f"http://{site.authority}/private", site.authority,
                                      f"Content-Length: {len(body)}", method="POST") + body)
    assert status_of(answer) == 403, answer[:300]
    assert site.pages() == [] and b"xxxx" not in site.raw
    assert [r["url"] for r in blocks(p, "disallowed")] == [f"http://{site.authority}/private"]


def test_a_chunked_body_to_a_disallowed_path_never_leaves(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin()
    p = proxy(stream_large_bodies="1k")
    chunk = b"y" * 4096
    wire = Wire(p.port)
    wire.send(request(f"http://{site.authority}/private", site.authority,
                      "Transfer-Encoding: chunked", method="POST"),
              *([f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"] * 5), b"0\r\n\r\n",
              pause=0.05)
    wire.read_all(timeout=3)
    wire.close()
    assert site.pages() == [] and b"yyyy" not in site.raw
    assert [r["url"] for r in blocks(p, "disallowed")] == [f"http://{site.authority}/private"]


def test_a_streamed_body_to_an_allowed_path_still_streams(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin()
    p = proxy(stream_large_bodies="1k")
    body = b"\xaa" * 200_000
    answer = exchange(p.port, request(f"http://{site.authority}/upload", site.authority,
                                      f"Content-Length: {len(body)}", method="POST") + body)
    assert status_of(answer) == 200, answer[:300]
    assert site.pages() == ["/upload"] and site.raw.count(b"\xaa") == len(body)


# --- the target is what is decided ---------------------------------------------------------------


@pytest.mark.parametrize("version", ["HTTP/1.0", "HTTP/1.1", "HTTP/1.2"])
@pytest.mark.parametrize("host_line", [None, "Host:", "Host:   "], ids=["none", "empty", "blank"])
def test_a_request_without_a_usable_host_goes_out_naming_its_target(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin],
        version: str, host_line: str | None) -> None:
    # A name-based origin: the site "localhost" allows everything, its default site (no Host,
    # or any other) disallows everything.
    def robots(host: bytes | None) -> bytes:
        named = host is not None and host.split(b":")[0] == b"localhost"
        return b"User-agent: *\nAllow: /\n" if named else b"User-agent: *\nDisallow: /\n"

    site = wire_origin(robots)
    p = proxy()
    authority = f"localhost:{site.port}"
    head = [f"GET http://{authority}/page {version}"] + ([host_line] if host_line else [])
    answer = exchange(p.port, ("\r\n".join([*head, "Connection: close", "", ""])).encode())
    assert status_of(answer) == 200, answer
    [page] = [r for r in site.requests if r.path == "/page"]
    assert page.header(b"host") == authority.encode()
    assert all(r.header(b"host") for r in site.requests)


def test_a_folded_header_reaches_the_origin_as_one_line(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin()
    p = proxy()
    answer = exchange(p.port, f"GET http://{site.authority}/page HTTP/1.1\r\n"
                      f"Host: {site.authority}\r\nX-Note: first\r\n  second\r\n\tthird\r\n"
                      "Connection: close\r\n\r\n".encode())
    assert status_of(answer) == 200, answer
    assert b"X-Note: first second third\r\n" in site.raw
    assert b"\r\n  second" not in site.raw and b"\r\n\tthird" not in site.raw


@pytest.mark.parametrize("framing", [
    ("Content-Length: 5", "Transfer-Encoding: chunked"),
    ("Content-Length: 5", "Content-Length: 5"),
    ("Transfer-Encoding: gzip, chunked",),
])
def test_a_body_servers_may_frame_differently_is_refused(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin],
        framing: tuple[str, ...]) -> None:
    # mitmproxy refuses these itself unless validate_inbound_headers is off; robotsgate does
    # whatever the options say.
    site = wire_origin()
    p = proxy(validate_inbound_headers="false")
    answer = exchange(p.port, request(site.url("/page"), site.authority, *framing,
                                      "Connection: close", method="POST") + b"0\r\n\r\n")
    assert status_of(answer) == 400, answer
    assert site.pages() == []
    [record] = blocks(p, "framing")
    assert record["url"] == site.url("/page")


# --- monitor mode paces what it forwards ---------------------------------------------------------


def test_monitor_mode_paces_the_requests_it_would_have_blocked(
        proxy: ProxyFactory, origin: Callable[..., Origin]) -> None:
    site = origin(robots="User-agent: *\nDisallow: /private\nCrawl-delay: 1\n")
    p = proxy(robots_mode="monitor", robots_pacing_margin_ms=20)
    wire = Wire(p.port)
    for i in range(3):
        wire.send(request(f"{site.url(f'/private/{i}')}", f"127.0.0.1:{site.port}"))
        assert wire.head().startswith(b"HTTP/1.1 200")
        wire.sock.recv(65536)
    wire.close()
    arrivals = [s.arrived for s in site.seen if s.path.startswith("/private")]
    assert len(arrivals) == 3
    assert all(b - a >= 1.0 for a, b in itertools.pairwise(arrivals)), arrivals
    assert [r["event"] for r in p.audit()].count("would-block") == 3


def test_monitor_mode_paces_would_be_throttled_requests_too(
        proxy: ProxyFactory, origin: Callable[..., Origin]) -> None:
    # robots_max_wait=0: in enforce mode the second request would be 429; in monitor mode it is
    # forwarded, after its turn.
    site = origin(robots="User-agent: *\nCrawl-delay: 1\n")
    p = proxy(robots_mode="monitor", robots_max_wait=0, robots_pacing_margin_ms=20)
    started = time.monotonic()
    wire = Wire(p.port)
    for i in range(2):
        wire.send(request(site.url(f"/page/{i}"), f"127.0.0.1:{site.port}"))
        assert wire.head().startswith(b"HTTP/1.1 200")
        wire.sock.recv(65536)
    wire.close()
    arrivals = [s.arrived for s in site.seen if s.path.startswith("/page")]
    assert len(arrivals) == 2 and arrivals[1] - arrivals[0] >= 1.0, (arrivals, started)
    assert [r["reason"] for r in p.audit() if r["event"] == "would-block"] == ["wait-too-long"]


# --- connections that carry no HTTP ------------------------------------------------------------


def test_a_tunnel_to_a_dns_port_is_refused_and_audited(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    # mitmproxy speaks DNS to port 53 inside a tunnel: queries robotsgate cannot decide.
    resolver = wire_origin(host="127.0.0.9", port=53)
    p = proxy()
    wire = Wire(p.port).connect("127.0.0.9:53")
    query = bytes.fromhex("001d" "abcd01000001000000000000" "076578616d706c6503636f6d0000010001")
    wire.send(query)
    answer = wire.read_all(timeout=3)
    wire.close()
    assert answer == b"" and resolver.raw == b""
    [record] = blocks(p, "protocol")
    assert record["method"] == "DNS" and record["url"] == "dns://127.0.0.9:53"


# --- whom robots.txt is fetched as --------------------------------------------------------------


def cloaking_origin(origin: Callable[..., Origin]) -> Origin:
    """Serves RedBot a robots.txt that shuts it out, and everybody else one that lets them in."""
    site = origin()

    def robots(seen: Seen) -> Reply:
        if "redbot" in seen.user_agent.lower():
            return Reply(200, "User-agent: *\nDisallow: /\n")
        return Reply(200, "User-agent: *\nAllow: /\n")

    site.set_robots(handler=robots)
    return site


def test_robots_txt_is_fetched_as_the_configured_agent(
        proxy: ProxyFactory, origin: Callable[..., Origin]) -> None:
    site = cloaking_origin(origin)
    p = proxy(robots_agent="RedBot", robots_contact="https://bots.example/about")
    answer = exchange(p.port, request(site.url("/page"), f"127.0.0.1:{site.port}",
                                      "User-Agent: Mozilla/5.0", "Connection: close"))
    assert status_of(answer) == 403, answer
    assert [s.user_agent for s in site.robots_fetches()] == [
        "RedBot (+https://bots.example/about)"]
    assert not site.saw("/page")


def basic(user: str) -> str:
    return "Proxy-Authorization: Basic " + base64.b64encode(f"{user}:pw".encode()).decode()


def test_a_copy_fetched_for_one_bot_never_decides_for_another(
        proxy: ProxyFactory, origin: Callable[..., Origin]) -> None:
    site = cloaking_origin(origin)
    p = proxy(proxyauth="any")  # each bot names itself as its proxy-auth user
    answers = {}
    for user, path in (("BlueBot", "/a"), ("RedBot", "/b"), ("BlueBot", "/c")):
        answers[path] = status_of(exchange(p.port, request(
            site.url(path), f"127.0.0.1:{site.port}", basic(user),
            "User-Agent: RedBot/2.0 (every bot says it is RedBot)", "Connection: close")))
    assert answers == {"/a": 200, "/b": 403, "/c": 200}
    # One fetch for each bot, as that bot's product token; never its User-Agent.
    assert [s.user_agent for s in site.robots_fetches()] == ["BlueBot", "RedBot"]
    # The proxy's credentials never reach the origin.
    assert all("proxy-authorization" not in s.headers for s in site.seen)


def firewalled_origin(origin: Callable[..., Origin]) -> Origin:
    """A site behind a firewall that refuses some clients: a long User-Agent (431), a library's
    name (403), none at all (403). Each of those answers, for robots.txt, would mean "no
    rules"."""
    site = origin()

    def robots(seen: Seen) -> Reply:
        agent = seen.user_agent
        if len(agent) > 8000:
            return Reply(431, "Request Header Fields Too Large\n")
        if not agent or "python" in agent.lower() or "curl" in agent.lower():
            return Reply(403, "Forbidden\n")
        return Reply(200, "User-agent: *\nDisallow: /private\n")

    site.set_robots(handler=robots)
    return site


@pytest.mark.parametrize("agent", [
    pytest.param("User-Agent: " + "A" * 20_000, id="20-KB-user-agent"),
    pytest.param("User-Agent: python-requests/2.32", id="library-user-agent"),
    pytest.param(None, id="no-user-agent"),
])
def test_a_bot_cannot_choose_how_robots_txt_is_fetched(
        proxy: ProxyFactory, origin: Callable[..., Origin], agent: str | None) -> None:
    site = firewalled_origin(origin)
    p = proxy(robots_contact="https://bots.example/about")
    extra = [agent] if agent else []
    first = exchange(p.port, request(site.url("/private/1"), f"127.0.0.1:{site.port}", *extra,
                                     "Connection: close"))
    # Another bot, named only by its User-Agent, shares the copy: still the site's rules.
    second = exchange(p.port, request(site.url("/private/2"), f"127.0.0.1:{site.port}",
                                      "User-Agent: OtherBot/1.0", "Connection: close"))
    assert (status_of(first), status_of(second)) == (403, 403), (first, second)
    assert [s.user_agent for s in site.robots_fetches()] == [
        "robotsgate (+https://bots.example/about)"]
    assert site.paths() == ["/robots.txt"]
    assert {r["robots_status"] for r in blocks(p, "disallowed")} == {200}


# --- the audit keeps every record ----------------------------------------------------------------


def test_a_user_agent_that_is_not_utf8_is_decided_and_audited(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin()
    p = proxy()
    answer = exchange(p.port, request(site.url("/private"), site.authority, "Connection: close")
                              .replace(b"Connection", b"User-Agent: Bot\xff\xfe/1.0\r\nConnection"))
    assert status_of(answer) == 403, answer
    assert site.pages() == []
    [record] = blocks(p, "disallowed")
    assert record["user_agent"] == "Bot\udcff\udcfe/1.0"


# --- one host, one schedule ----------------------------------------------------------------------


def test_every_spelling_of_an_address_shares_one_schedule(
        proxy: ProxyFactory, origin: Callable[..., Origin]) -> None:
    site = origin(robots="User-agent: *\nCrawl-delay: 1\n")
    p = proxy(robots_pacing_margin_ms=20)
    spellings = ["127.0.0.1", "127.1", "2130706433", "0x7f000001", "127.0.1", "0177.0.0.1",
                 "[::ffff:127.0.0.1]"]
    wires = []
    for index, host in enumerate(spellings):  # all at once: the schedule must space them
        authority = f"{host}:{site.port}"
        wire = Wire(p.port)
        wire.send(request(f"http://{authority}/page/{index}", authority, "Connection: close"))
        wires.append(wire)
    answers = [status_of(wire.read_all(timeout=15)) for wire in wires]
    for wire in wires:
        wire.close()
    assert answers == [200] * len(spellings)
    arrivals = sorted(s.arrived for s in site.seen if s.path.startswith("/page/"))
    assert len(arrivals) == len(spellings)
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert min(gaps) >= 1.0, gaps
    assert len(site.robots_fetches()) == 1  # one origin, one copy
    assert {r["robots_url"] for r in p.audit()} == {site.robots_url}


# --- targets that name something else than what is decided ------------------------------------


def vhost_robots(host: bytes | None) -> bytes:
    """localhost disallows /private; the bare address (the default site) allows everything."""
    named = host is not None and host.split(b":")[0] == b"localhost"
    return b"User-agent: *\nDisallow: /private\n" if named else b"User-agent: *\nAllow: /\n"


def test_an_absolute_target_for_another_host_inside_a_tunnel_is_refused(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin(vhost_robots)
    p = proxy()
    wire = Wire(p.port).connect(site.authority)
    wire.send(request(f"http://localhost:{site.port}/private", site.authority,
                      "Connection: close"))
    answer = wire.read_all(timeout=3)
    wire.close()
    assert status_of(answer) == 400, answer
    assert site.pages() == []
    assert [r["reason"] for r in blocks(p)] == ["host-mismatch"]


def test_a_host_header_matching_ignore_hosts_opens_no_passthrough(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    # mitmproxy also passes a tunnel through unseen when the Host header inside it matches
    # ignore_hosts; robotsgate only lets through what it decided at the CONNECT.
    site = wire_origin(host="127.0.0.7", port=80)
    p = proxy(ignore_hosts=[r"^ignored\.example"])
    wire = Wire(p.port).connect("127.0.0.7:80")
    wire.send(request("/private", "ignored.example", "Connection: close"))
    answer = wire.read_all(timeout=3)
    wire.close()
    assert status_of(answer) == 400, answer
    assert site.pages() == []
    assert [r["reason"] for r in blocks(p)] == ["host-mismatch"]


def test_an_http2_path_that_does_not_start_with_a_slash_is_refused(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin()
    p = proxy()
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the proxy's own certificate; nothing to check here
    context.set_alpn_protocols(["h2"])
    raw = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        assert tls.selected_alpn_protocol() == "h2"
        client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        client.initiate_connection()
        client.send_headers(1, [(":method", "GET"), (":scheme", "http"),
                                (":authority", site.authority), (":path", "private/x")],
                            end_stream=True)
        tls.sendall(client.data_to_send())
        status = None
        deadline = time.monotonic() + 10
        while status is None and time.monotonic() < deadline:
            data = tls.recv(65536)
            if not data:
                break
            for event in client.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    status = dict(event.headers)[b":status"]
            tls.sendall(client.data_to_send())
    assert status == b"400"
    assert site.pages() == []
    [record] = blocks(p, "target")
    assert record["status"] == 400


def test_header_names_that_are_not_tokens_are_refused_when_mitmproxy_lets_them_in(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin()
    p = proxy(validate_inbound_headers="false")
    smuggled = request("/private", site.authority)
    body = b"0\r\n\r\n" + smuggled
    answer = exchange(p.port, request(site.url("/page"), site.authority,
                                      "Transfer-Encoding : chunked", f"Content-Length: {len(body)}",
                                      "Connection: close", method="POST") + body)
    assert status_of(answer) == 400, answer
    assert site.pages() == []
    assert [r["reason"] for r in blocks(p)] == ["framing"]


def test_a_reverse_tcp_proxy_with_a_tls_client_is_refused(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin()
    p = proxy(mode=f"reverse:tcp://{site.authority}")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    with contextlib.suppress(OSError), context.wrap_socket(raw) as tls:
        tls.sendall(request("/private", site.authority, "Connection: close"))
        tls.recv(65536)
    assert site.raw == b""
    [record] = blocks(p, "protocol")
    assert record["method"] == "TCP"


# --- encodings -----------------------------------------------------------------------------------


ENCODED_ROBOTS = b"""User-agent: *
Disallow: /p?u=https://x.example/
Disallow: /q?u=https%3A%2F%2Fy.example%2F
Disallow: /wiki/Special:
Disallow: /@admin
"""


@pytest.mark.parametrize("target", [
    "/p?u=https%3A%2F%2Fx.example%2F",  # RFC 9309 §2.2.2, one way
    "/p?u=https%3a%2f%2fx.example%2f",
    "/q?u=https://y.example/",  # and the other
    "/wiki/Special%3ARandom",  # reserved characters escaped: servers decode them
    "/wiki/Special%3aSearch",
    "/%40admin",
    "/%2540admin/../%40admin",
])
def test_encodings_cannot_slip_past_a_rule(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin], target: str) -> None:
    site = wire_origin(ENCODED_ROBOTS)
    p = proxy()
    answer = exchange(p.port, request(site.url(target), site.authority, "Connection: close"))
    assert status_of(answer) == 403, answer
    assert site.pages() == []
    assert len(blocks(p, "disallowed")) == 1


def test_encoded_paths_that_no_rule_names_pass(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin(ENCODED_ROBOTS)
    p = proxy()
    targets = ["/wiki/Main%20Page", "/p?u=https%3A%2F%2Fother.example%2F", "/%2540admin"]
    for target in targets:
        wire = Wire(p.port)
        wire.send(request(site.url(target), site.authority, "Connection: close"))
        assert status_of(wire.read_all(timeout=3)) == 200, target
        wire.close()
    assert site.pages() == targets


def test_a_target_longer_than_servers_accept_is_answered_414(
        proxy: ProxyFactory, wire_origin: Callable[..., WireOrigin]) -> None:
    site = wire_origin()
    p = proxy()
    target = "/page/" + "a" * 9000
    answer = exchange(p.port, request(site.url(target), site.authority, "Connection: close"))
    assert status_of(answer) == 414, answer[:200]
    assert site.pages() == []
    assert [r["reason"] for r in blocks(p)] == ["url-too-long"]
