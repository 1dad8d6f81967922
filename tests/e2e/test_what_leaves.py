"""What leaves is what was decided: the attack suite for every name, frame and address.

The decision is taken on one canonical origin; these bots then try to make the request that
leaves say something else: another TLS server name inside the tunnel (a front that routes by
it serves another site), another spelling of the Host (a server that compares bytes serves
another site), a body that an HTTP/1.1 origin reads as a second request, no :authority at all,
bytes a request line cannot carry, or an address that is the proxy itself, its metrics, this
machine's Redis. Real ``mitmdump -s addon.py``, raw sockets and the ``h2`` package as clients,
origins that record every byte. For each: nothing undecided reaches an origin, and the audit
says what happened.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.events
import pytest
import redis

from .clients import CLIENT_TIMEOUT
from .origins import Origin
from .proxy import Proxy
from .tls import CertAuthority
from .wire import Wire, WireOrigin, exchange, status_of

ProxyFactory = Callable[..., Proxy]
OriginFactory = Callable[..., Origin]

# Site A is what the proxy decides on (its robots.txt allows /secret); site B is what a bot
# would like served instead (its robots.txt forbids /secret).
A_ROBOTS = b"User-agent: *\nAllow: /\n"
B_ROBOTS = b"User-agent: *\nDisallow: /secret\n"


def blocks(proxy: Proxy, reason: str) -> list[dict[str, Any]]:
    return [r for r in proxy.audit() if r["event"] == "block" and r["reason"] == reason]


def by_name(name: str | None, host: bytes | None, path: str) -> bytes:
    """Site B for the server name b.example, site A for anything else."""
    site = b"B" if name == "b.example" else b"A"
    if path == "/robots.txt":
        return B_ROBOTS if site == b"B" else A_ROBOTS
    return b"site " + site + b" " + path.encode() + b"\n"


@pytest.fixture
def fronted(test_ca: CertAuthority) -> Iterator[WireOrigin]:
    """An HTTP/1.1-only TLS origin on 127.0.0.1 that serves a site per server name, with a
    certificate for each (localhost and 127.0.0.1: A; b.example: B)."""
    context = test_ca.by_server_name({"b.example": test_ca.issue("b.example")})
    site = WireOrigin(tls=context, sites=by_name)
    yield site
    site.stop()


@pytest.fixture
def wire_origins() -> Iterator[Callable[..., WireOrigin]]:
    started: list[WireOrigin] = []

    def start(*args: Any, **kwargs: Any) -> WireOrigin:
        site = WireOrigin(*args, **kwargs)
        started.append(site)
        return site

    yield start
    for site in started:
        site.stop()


def tunnel(proxy: Proxy, authority: str, server_name: str | None,
           alpn: tuple[str, ...] = ("http/1.1",)) -> ssl.SSLSocket:
    """A CONNECT tunnel through the proxy to ``authority``, then TLS inside it naming
    ``server_name`` (none when None), trusting the proxy's CA."""
    wire = Wire(proxy.port).connect(authority)
    context = ssl.create_default_context(cafile=str(proxy.ca))
    context.check_hostname = False  # the bot trusts what it is given: the attack is its own
    context.set_alpn_protocols(list(alpn))
    return context.wrap_socket(wire.sock, server_hostname=server_name)


def read_response(sock: socket.socket, timeout: float = 5.0) -> bytes:
    """Everything until the peer closes or stays silent for ``timeout`` seconds."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (OSError, ssl.SSLError):
        pass
    return data


def h1_get(sock: socket.socket, path: str, host: str) -> bytes:
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    return read_response(sock)


def h2_exchange(sock: ssl.SSLSocket, headers: list[tuple[str, str]], body: bytes = b"",
                *, validate: bool = True) -> tuple[int | None, bytes]:
    """One HTTP/2 request on ``sock``: (its status, its body). ``validate=False`` lets the
    client send headers h2 would refuse (no :authority, a space in :path)."""
    config = h2.config.H2Configuration(client_side=True, validate_outbound_headers=validate,
                                       normalize_outbound_headers=validate)
    conn = h2.connection.H2Connection(config)
    conn.initiate_connection()
    conn.send_headers(1, headers, end_stream=not body)
    if body:
        conn.send_data(1, body, end_stream=True)
    sock.sendall(conn.data_to_send())
    status: int | None = None
    answer = b""
    sock.settimeout(CLIENT_TIMEOUT)
    while True:
        try:
            data = sock.recv(65536)
        except (OSError, ssl.SSLError):
            break
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                status = int(dict(event.headers)[b":status"])
            elif isinstance(event, h2.events.DataReceived):
                answer += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, 1)
            elif isinstance(event, h2.events.StreamEnded | h2.events.StreamReset):
                return status, answer
        sock.sendall(conn.data_to_send())
    return status, answer


def pages_seen(site: WireOrigin) -> list[str]:
    return [r.path for r in site.requests if r.path != "/robots.txt"]


# --- the TLS server name is the decided host's -------------------------------------------------


@pytest.mark.parametrize("strategy", ["eager", "lazy"])
@pytest.mark.parametrize("alpn", [("http/1.1",), ("h2", "http/1.1")], ids=["http1", "h2"])
@pytest.mark.parametrize("target", ["localhost", "127.0.0.1"], ids=["name", "ip-literal"])
def test_a_server_name_for_another_host_is_refused(
        proxy: ProxyFactory, fronted: WireOrigin, strategy: str, alpn: tuple[str, ...],
        target: str) -> None:
    p = proxy(trust_test_ca=True, connection_strategy=strategy)
    authority = f"{target}:{fronted.port}"
    sock = tunnel(p, authority, "b.example", alpn)
    if sock.selected_alpn_protocol() == "h2":
        status, body = h2_exchange(sock, [(":method", "GET"), (":scheme", "https"),
                                          (":authority", authority), (":path", "/secret")])
    else:
        answer = h1_get(sock, "/secret", authority)
        status, body = status_of(answer), answer
    sock.close()
    assert status == 421, body
    assert b"b.example" in body
    # Nothing of site B was asked for, and no connection to the origin named it.
    assert "b.example" not in fronted.server_names
    assert pages_seen(fronted) == []
    [record] = p.wait_audit(1)
    assert (record["event"], record["reason"], record["status"]) == ("block", "server-name", 421)


@pytest.mark.parametrize("strategy", ["eager", "lazy"])
def test_the_upstream_server_name_is_always_the_decided_hosts(
        proxy: ProxyFactory, fronted: WireOrigin, strategy: str) -> None:
    p = proxy(trust_test_ca=True, connection_strategy=strategy)
    named = tunnel(p, f"localhost:{fronted.port}", "LOCALHOST.")  # another spelling: the same
    assert status_of(h1_get(named, "/secret", f"localhost:{fronted.port}")) == 200
    unnamed = tunnel(p, f"127.0.0.1:{fronted.port}", None)  # an address: no server name
    answer = h1_get(unnamed, "/secret", f"127.0.0.1:{fronted.port}")
    assert answer.endswith(b"site A /secret\n"), answer
    # What reached the origin named exactly the decided host (an address is sent as none).
    assert [r.server_name for r in fronted.requests if r.path == "/secret"] == \
        ["localhost", None]


# --- the Host leaves as it was decided --------------------------------------------------------


def exact_host(host: bytes | None) -> bytes:
    """robots.txt of a server that picks its site by the Host bytes, as nginx's server_name and
    many frameworks do: exactly "localhost:PORT" is site A, anything else the default site B."""
    exact = host is not None and re.fullmatch(rb"localhost:[1-9][0-9]*", host)
    return A_ROBOTS if exact else B_ROBOTS


@pytest.mark.parametrize("spelling", [
    pytest.param(b"LOCALHOST.", id="upper-case-trailing-dot"),
    pytest.param("loc\u00adalhost".encode(), id="soft-hyphen"),
    pytest.param("lo\u200bcalhost".encode(), id="zero-width-space"),
    pytest.param("\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54".encode(),
                 id="fullwidth"),
])
def test_the_host_leaves_in_the_one_form_decided(
        proxy: ProxyFactory, wire_origins: Callable[..., WireOrigin], spelling: bytes) -> None:
    site = wire_origins(exact_host)
    p = proxy()
    host = spelling + b":" + str(site.port).encode()
    for port_text in (str(site.port), f"0{site.port}"):  # a port is a number
        answer = exchange(p.port, b"GET http://localhost:" + port_text.encode() + b"/secret "
                          b"HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
        assert status_of(answer) == 200, answer
    # Every request that reached the origin, robots.txt and pages, named it one way.
    assert {r.header(b"host") for r in site.requests} == {f"localhost:{site.port}".encode()}
    assert pages_seen(site) == ["/secret", "/secret"]


# --- an HTTP/2 body never becomes a request -------------------------------------------------


SMUGGLED = b"GET /secret HTTP/1.1\r\nHost: localhost\r\n\r\n"


@pytest.mark.parametrize("strategy", ["eager", "lazy"])
def test_an_http2_body_never_becomes_a_request_at_an_http1_origin(
        proxy: ProxyFactory, wire_origins: Callable[..., WireOrigin], test_ca: CertAuthority,
        strategy: str) -> None:
    site = wire_origins(B_ROBOTS, tls=test_ca.server_context())
    p = proxy(trust_test_ca=True, connection_strategy=strategy)
    authority = f"localhost:{site.port}"
    sock = tunnel(p, authority, "localhost", ("h2", "http/1.1"))
    if sock.selected_alpn_protocol() == "h2":  # lazy: no origin yet, the bot gets HTTP/2
        status, _ = h2_exchange(sock, [(":method", "GET"), (":scheme", "https"),
                                       (":authority", authority), (":path", "/public")],
                                SMUGGLED)
    else:  # eager: the origin's HTTP/1.1 was chosen before the bot's protocol
        sock.sendall(b"GET /public HTTP/1.1\r\nHost: " + authority.encode() + b"\r\n"
                     b"Content-Length: " + str(len(SMUGGLED)).encode() + b"\r\n"
                     b"Connection: close\r\n\r\n" + SMUGGLED)
        status = status_of(read_response(sock))
    sock.close()
    assert status == 200
    # One request, with its body framed, never read as a request of its own.
    [public] = [r for r in site.requests if r.path != "/robots.txt"]
    assert (public.path, public.body) == ("/public", SMUGGLED)
    assert b"GET /secret" not in b"".join(r.path.encode() for r in site.requests)


def test_an_http2_request_without_authority_goes_out_naming_the_tunnels_host(
        proxy: ProxyFactory, wire_origins: Callable[..., WireOrigin],
        test_ca: CertAuthority) -> None:
    site = wire_origins(A_ROBOTS, tls=test_ca.server_context())
    p = proxy(trust_test_ca=True, connection_strategy="lazy", validate_inbound_headers="false")
    sock = tunnel(p, f"localhost:{site.port}", "localhost", ("h2",))
    assert sock.selected_alpn_protocol() == "h2"
    status, _ = h2_exchange(sock, [(":method", "GET"), (":scheme", "https"),
                                   (":path", "/page")], validate=False)
    sock.close()
    assert status == 200
    [page] = [r for r in site.requests if r.path == "/page"]
    assert page.header(b"host") == f"localhost:{site.port}".encode()


@pytest.mark.parametrize("path", ["/public /secret", "/public\t/secret"])
def test_an_http2_path_http1_cannot_carry_is_refused_whatever_the_validation(
        proxy: ProxyFactory, wire_origins: Callable[..., WireOrigin], test_ca: CertAuthority,
        path: str) -> None:
    site = wire_origins(A_ROBOTS, tls=test_ca.server_context())
    p = proxy(trust_test_ca=True, connection_strategy="lazy", validate_inbound_headers="false")
    sock = tunnel(p, f"localhost:{site.port}", "localhost", ("h2",))
    status, _ = h2_exchange(sock, [(":method", "GET"), (":scheme", "https"),
                                   (":authority", f"localhost:{site.port}"), (":path", path)],
                            validate=False)
    sock.close()
    assert status == 400
    assert site.requests == []
    assert len(blocks(p, "framing")) == 1


def test_a_target_with_a_fragment_is_refused(
        proxy: ProxyFactory, wire_origins: Callable[..., WireOrigin]) -> None:
    site = wire_origins(B_ROBOTS)
    p = proxy()
    answer = exchange(p.port, f"GET {site.url('/public#/../secret')} HTTP/1.1\r\n"
                              f"Host: {site.authority}\r\nConnection: close\r\n\r\n".encode())
    assert status_of(answer) == 400, answer
    assert site.requests == []
    [record] = blocks(p, "framing")
    assert record["url"].endswith("/public#/../secret")


# --- the proxy never reaches itself -------------------------------------------------------------


def test_the_proxy_never_connects_to_itself(
        proxy: ProxyFactory, origin: OriginFactory) -> None:
    site = origin(robots="User-agent: *\nDisallow: /private\n")
    metrics = free_port()
    p = proxy(robots_metrics_port=metrics, nofile=256)
    port = p.port
    targets = [f"http://127.1:{port}/robots.txt", f"http://LOCALHOST:{port}/",
               f"http://0.0.0.0:{port}/", f"http://[::ffff:127.0.0.1]:{port}/",
               f"http://2130706433:{port}/", f"http://127.0.0.1:{metrics}/metrics"]
    for target in targets:
        answer = exchange(port, f"GET {target} HTTP/1.1\r\nHost: {target.split('/')[2]}\r\n"
                                f"Connection: close\r\n\r\n".encode())
        assert status_of(answer) == 403, (target, answer)
        assert b"X-Robotsgate-Reason: destination" in answer
        assert b"robotsgate_" not in answer  # not one line of its metrics
    tunnel_answer = exchange(port, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n"
                                   f"Host: 127.0.0.1:{port}\r\n\r\n".encode())
    assert status_of(tunnel_answer) == 403
    # Many more, faster than a loop could drain: the proxy stays within a few descriptors.
    wires = [Wire(port) for _ in range(100)]
    for wire in wires:
        wire.send(f"GET http://127.1:{port}/robots.txt HTTP/1.1\r\nHost: 127.1:{port}\r\n"
                  f"\r\n".encode())
    answers = [status_of(wire.head()) for wire in wires]
    open_now = p.descriptors()
    for wire in wires:
        wire.close()
    assert answers == [403] * len(wires)
    assert open_now < 230, open_now
    # Other bots are served meanwhile and after.
    assert status_of(exchange(port, f"GET {site.url('/page')} HTTP/1.1\r\n"
                                    f"Host: 127.0.0.1:{site.port}\r\nConnection: close\r\n\r\n"
                                    .encode())) == 200
    records = blocks(p, "destination")
    assert len(records) == len(targets) + 1 + len(wires)
    assert all("the proxy's own port" in r["error"] for r in records)


def test_a_robots_txt_redirect_to_a_refused_address_is_not_followed(
        proxy: ProxyFactory, origin: OriginFactory) -> None:
    site = origin()
    # Only the site itself may be reached; its robots.txt sends the fetch to this machine's
    # Redis, and to the cloud metadata address.
    for target in ("http://127.0.0.1:6379/robots.txt", "http://169.254.169.254/latest/"):
        site.forget()
        site.set_robots(b"moved\n", status=301, headers={"Location": target})
        before = redis.Redis(port=6379).info("stats")["total_connections_received"]
        p = proxy(robots_egress_allow=[f"127.0.0.1:{site.port}"])
        answer = exchange(p.port, f"GET {site.url('/page')} HTTP/1.1\r\nHost: "
                                  f"127.0.0.1:{site.port}\r\nConnection: close\r\n\r\n".encode())
        after = redis.Redis(port=6379).info("stats")["total_connections_received"]
        p.stop()
        assert status_of(answer) == 503, answer
        assert site.paths() == ["/robots.txt"]
        [record] = blocks(p, "robots-unavailable")
        assert "not reachable through this proxy" in record["error"], record
        assert after - before == 1  # this test's own INFO: nothing from the proxy


@pytest.mark.parametrize("allow", [[], ["127.0.0.2"]], ids=["default", "another-address"])
def test_loopback_is_refused_unless_allowed(
        proxy: ProxyFactory, origin: OriginFactory, allow: list[str]) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    p = proxy(robots_egress_allow=allow)
    answer = exchange(p.port, f"GET {site.url('/page')} HTTP/1.1\r\nHost: "
                              f"127.0.0.1:{site.port}\r\nConnection: close\r\n\r\n".encode())
    assert status_of(answer) == 403, answer
    assert b"a loopback address" in answer
    assert site.paths() == []  # not even robots.txt
    [record] = blocks(p, "destination")
    assert record["error"] == (f"127.0.0.1:{site.port} (a loopback address, refused unless "
                               f"robots_egress_allow names it)")


def test_an_allowed_address_written_in_mapped_form_means_its_ipv4_address(
        proxy: ProxyFactory, origin: OriginFactory) -> None:
    # ::ffff:127.0.0.1 is 127.0.0.1 (the one loopback form this machine can dial that carries
    # an IPv4 address; NAT64, 6to4 and SIIT forms need a translator, decided in-process in
    # tests/egress/test_egress.py). Both the entry and the request's target are read as IPv4.
    site = origin(robots="User-agent: *\nAllow: /\n")
    p = proxy(robots_egress_allow=[f"[::ffff:127.0.0.1]:{site.port}"])
    for target in (f"127.0.0.1:{site.port}", f"[::ffff:127.0.0.1]:{site.port}"):
        answer = exchange(p.port, f"GET http://{target}/page HTTP/1.1\r\nHost: {target}\r\n"
                                  "Connection: close\r\n\r\n".encode())
        assert status_of(answer) == 200, answer
    assert site.paths() == ["/robots.txt", "/page", "/page"]
    assert blocks(p, "destination") == []


def test_an_ipv6_zone_id_is_refused(
        proxy: ProxyFactory, origin: OriginFactory) -> None:
    site = origin()
    p = proxy()
    for raw in (f"GET http://[::1%253]:{site.port}/ HTTP/1.1\r\nHost: [::1%253]:{site.port}\r\n"
                f"Connection: close\r\n\r\n",
                f"CONNECT [::1%3]:{site.port} HTTP/1.1\r\nHost: [::1%3]:{site.port}\r\n\r\n"):
        answer = exchange(p.port, raw.encode())
        assert status_of(answer) == 403, answer
    assert site.paths() == []
    assert len(blocks(p, "destination")) == 2


# --- what is the proxy's stays with the proxy --------------------------------------------------


def test_the_proxys_own_headers_never_reach_the_origin(
        proxy: ProxyFactory, wire_origins: Callable[..., WireOrigin]) -> None:
    site = wire_origins(A_ROBOTS)
    p = proxy()
    answer = exchange(p.port, f"GET {site.url('/page')} HTTP/1.1\r\nHost: {site.authority}\r\n"
                              "X-Robotsgate-Agent: Googlebot\r\nx-robotsgate-delay-ms: 0\r\n"
                              "Proxy-Authorization: Basic Ym90OnNlY3JldA==\r\n"
                              "Connection: close\r\n\r\n".encode())
    assert status_of(answer) == 200, answer
    [page] = [r for r in site.requests if r.path == "/page"]
    names = {name.lower() for name, _ in page.headers}
    assert not {n for n in names if n.startswith(b"x-robotsgate")}
    assert b"proxy-authorization" not in names
    assert b"Ym90OnNlY3JldA" not in site.raw


def test_fields_named_in_connection_stay_on_the_bots_hop_and_its_options_are_kept(
        proxy: ProxyFactory, wire_origins: Callable[..., WireOrigin]) -> None:
    site = wire_origins(A_ROBOTS, websocket=True)
    p = proxy()
    answer = exchange(p.port, f"GET {site.url('/page')} HTTP/1.1\r\nHost: {site.authority}\r\n"
                              "Connection: X-Hop, close, referer\r\nX-Hop: for the proxy only\r\n"
                              "Referer: http://elsewhere.example/\r\nKeep-Alive: timeout=5\r\n"
                              "Proxy-Connection: keep-alive\r\nX-Kept: yes\r\n\r\n".encode())
    assert status_of(answer) == 200, answer
    [page] = [r for r in site.requests if r.path == "/page"]
    names = {name.lower() for name, _ in page.headers}
    assert not names & {b"x-hop", b"referer", b"keep-alive", b"proxy-connection"}
    # close is the proxy's own option too: it goes on, alone, and the bot's connection closes.
    assert page.header(b"connection") == b"close" and page.header(b"x-kept") == b"yes"
    # A WebSocket handshake keeps its upgrade; what else Connection names stays behind.
    wire = Wire(p.port).send(f"GET {site.url('/chat')} HTTP/1.1\r\nHost: {site.authority}\r\n"
                             "Upgrade: websocket\r\nConnection: Upgrade, X-Hop\r\n"
                             "X-Hop: for the proxy only\r\nSec-WebSocket-Version: 13\r\n"
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode())
    head = wire.head()
    wire.close()
    assert head.startswith(b"HTTP/1.1 101"), head
    [chat] = [r for r in site.requests if r.path == "/chat"]
    assert chat.header(b"connection") == b"Upgrade" and chat.header(b"x-hop") is None
    assert p.audit() == []


@pytest.mark.parametrize(("named", "extra", "mode"), [
    ("close, X-Other, HOST", "", "enforce"), ("content-length", "Content-Length: 4\r\n", "monitor"),
    ("Transfer-Encoding", "Transfer-Encoding: chunked\r\n", "enforce"),
    ("user-agent", "", "monitor")])
def test_a_connection_naming_what_the_request_is_decided_by_is_refused(
        proxy: ProxyFactory, wire_origins: Callable[..., WireOrigin], named: str, extra: str,
        mode: str) -> None:
    site = wire_origins(A_ROBOTS)
    p = proxy(robots_mode=mode)
    body = "0\r\n\r\n" if "chunked" in extra else "body" if extra else ""
    answer = exchange(p.port, f"POST {site.url('/page')} HTTP/1.1\r\nHost: {site.authority}\r\n"
                              f"User-Agent: ShopBot/1.0\r\n{extra}Connection: {named}\r\n\r\n"
                              f"{body}".encode())
    assert status_of(answer) == 400, answer
    assert b"X-Robotsgate-Reason: hop-by-hop" in answer
    assert site.pages() == []
    [record] = blocks(p, "hop-by-hop")
    assert record["status"] == 400 and record["url"] == site.url("/page")


def test_a_sites_control_bytes_never_reach_the_bot_in_robotsgates_headers(
        proxy: ProxyFactory, origin: OriginFactory) -> None:
    # A rule that clears the screen of whoever reads it, and rings the bell.
    site = origin(robots=b"User-agent: *\nDisallow: /p\x1b[2J\x07\n")
    p = proxy()
    answer = exchange(p.port, f"GET {site.url('/p%1B[2J%07')} HTTP/1.1\r\nHost: "
                              f"127.0.0.1:{site.port}\r\nConnection: close\r\n\r\n".encode())
    head = answer.split(b"\r\n\r\n", 1)[0]
    assert status_of(answer) == 403, answer
    assert b"X-Robotsgate-Rule: Disallow: /p\\x1b[2J\\x07\r\n" in head
    assert b"\x1b" not in head and b"\x07" not in head


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])



# --- the audit keeps every record -------------------------------------------------------------


def test_two_proxies_rotating_one_audit_file_lose_no_record(
        proxy: ProxyFactory, origin: OriginFactory, tmp_path: Path) -> None:
    site = origin(robots="User-agent: *\nDisallow: /private\n")
    log = tmp_path / "shared-audit.jsonl"
    shared = {"robots_audit_log": str(log), "robots_audit_max_bytes": 4000,
              "robots_audit_keep": 500}
    proxies = [proxy(**shared), proxy(**shared)]
    per_proxy = 150

    def refuse(p: Proxy, first: int) -> list[int | None]:
        got = []
        for n in range(first, first + per_proxy):
            got.append(status_of(exchange(p.port, f"GET {site.url(f'/private/{n}')} HTTP/1.1"
                                                  f"\r\nHost: 127.0.0.1:{site.port}\r\n"
                                                  f"Connection: close\r\n\r\n".encode())))
        return got

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(refuse, proxies, (0, 10_000)))
    assert answers == [[403] * per_proxy] * 2
    files = [f for f in tmp_path.glob("shared-audit.jsonl*") if not f.name.endswith(".lock")]
    assert len(files) > 10  # rotated, many times, by both
    urls = sorted(json.loads(line)["url"] for f in files for line in f.read_text().splitlines())
    assert urls == sorted(site.url(f"/private/{first + n}") for first in (0, 10_000)
                          for n in range(per_proxy))
