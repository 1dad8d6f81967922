"""No way around it, end to end: bot identity and every attempt to slip past the proxy.

Each test sends the attack through a real ``mitmdump -s addon.py`` to a real origin and checks
what the client got, what the audit log says and, above all, that the origin never saw the
request. Paths that most clients would clean up (``/a/../private``, ``//private``) are sent with
``http.client`` (which sends the request target exactly as given) or ``curl --path-as-is``.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from .clients import CLIENT_TIMEOUT, Resp, curl, requests_call
from .machine import clean_env, require_tool
from .origins import Origin, page_body
from .proxy import Proxy
from .tls import CertAuthority

OriginFactory = Callable[..., Origin]
ProxyFactory = Callable[..., Proxy]

ROBOTS = """\
User-agent: *
Disallow: /private
Disallow: /blog
"""


def is_page(resp: Resp, path: str) -> bool:
    return resp.status == 200 and resp.body == page_body(path)


def only_robots_seen(site: Origin) -> bool:
    """The origin saw its robots.txt fetched (or nothing at all), and no other request."""
    return all(path == "/robots.txt" for path in site.paths())


def assert_blocked(resp: Resp, rule: str = "Disallow: /private") -> None:
    assert resp.status == 403, (resp.status, resp.headers, resp.text)
    assert resp.header("X-Robotsgate-Reason") == "disallowed", resp.headers
    assert resp.header("X-Robotsgate-Rule") == rule, resp.headers


# --- raw clients ---------------------------------------------------------------------------------


def raw_request(
    conn: http.client.HTTPConnection,
    target: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
) -> Resp:
    """One request on ``conn`` with the request target exactly as given (nothing normalised)."""
    conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
    for name, value in (headers or {}).items():
        conn.putheader(name, value)
    if body is not None:
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    r = conn.getresponse()
    data = r.read()
    return Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data)


@contextlib.contextmanager
def proxy_connection(proxy: Proxy) -> Iterator[http.client.HTTPConnection]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=CLIENT_TIMEOUT)
    try:
        yield conn
    finally:
        conn.close()


def raw_get(proxy: Proxy, site: Origin, path: str, **headers: str) -> Resp:
    """``GET http://host:port<path>`` through the proxy, the path sent byte for byte."""
    authority = f"{site.host}:{site.port}"
    with proxy_connection(proxy) as conn:
        return raw_request(
            conn, f"http://{authority}{path}", headers={"Host": authority, **headers}
        )


@dataclass
class CurlRun:
    code: int  # curl's exit status
    stdout: str
    stderr: str


def run_curl(proxy: Proxy, args: Sequence[str], ca: Path | None = None) -> CurlRun:
    """curl through the proxy with arbitrary arguments; its exit status is the caller's business."""
    cmd = [
        require_tool("curl"), "-sS", "--max-time", str(int(CLIENT_TIMEOUT)), "--proxy", proxy.url,
        "--cacert", str(ca or proxy.ca), *args,
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, env=clean_env(), timeout=CLIENT_TIMEOUT + 10)
    return CurlRun(done.returncode, done.stdout.decode(errors="replace"),
                   done.stderr.decode(errors="replace"))


def curl_status(proxy: Proxy, url: str, *args: str) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of a curl run that must itself succeed."""
    with tempfile.TemporaryDirectory(prefix="robotsgate-curl-") as d:
        head, body = Path(d) / "head", Path(d) / "body"
        run = run_curl(proxy, ["--suppress-connect-headers", "-D", str(head), "-o", str(body),
                               *args, url])
        assert run.code == 0, run.stderr
        block = [b for b in head.read_bytes().split(b"\r\n\r\n") if b.strip()][-1]
        lines = block.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(lines[0].split()[1]), headers, body.read_bytes() if body.exists() else b""


# --- identity ------------------------------------------------------------------------------------

IDENTITY_ROBOTS = """\
User-agent: MappedBot
Disallow: /mapped

User-agent: OptionBot
Disallow: /option

User-agent: UaBot
Disallow: /ua

User-agent: alice
Disallow: /alice

User-agent: *
Disallow: /star
"""
IDENTITY_PATHS = ("/mapped", "/option", "/ua", "/alice", "/star")


def statuses(proxy: Proxy, site: Origin, **kwargs: Any) -> dict[str, int]:
    return {p: requests_call(proxy, site.url(p), **kwargs).status for p in IDENTITY_PATHS}


def blocked_only(path: str) -> dict[str, int]:
    return {p: 403 if p == path else 200 for p in IDENTITY_PATHS}


def test_client_address_map_picks_the_group_whatever_the_user_agent(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=IDENTITY_ROBOTS)
    gate = proxy(robots_agents="127.0.0.1/32=MappedBot")

    got = statuses(gate, site, headers={"User-Agent": "UaBot/1.0"})

    # MappedBot's group applied, not UaBot's (the header's) nor *'s.
    assert got == blocked_only("/mapped")
    [record] = gate.wait_audit(1)
    assert record["agent"] == "MappedBot"
    assert record["agent_source"] == "map-address"
    assert record["user_agent"] == "UaBot/1.0"
    assert record["user_agent_mismatch"] is True
    assert record["group"] == "MappedBot"
    assert not site.saw("/mapped")


def test_a_network_that_does_not_contain_the_client_does_not_map_it(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=IDENTITY_ROBOTS)
    gate = proxy(robots_agents="10.0.0.0/8=MappedBot")

    assert statuses(gate, site, headers={"User-Agent": "UaBot/1.0"}) == blocked_only("/ua")
    [record] = gate.wait_audit(1)
    assert record["agent_source"] == "user-agent"
    assert record["user_agent_mismatch"] is None


@pytest.mark.parametrize(
    ("options", "blocked", "source"),
    [
        ({"robots_agents": "127.0.0.0/8=MappedBot", "robots_agent": "OptionBot"},
         "/mapped", "map-address"),
        ({"robots_agent": "OptionBot"}, "/option", "option"),
        ({}, "/ua", "user-agent"),
    ],
    ids=["map-over-option-and-header", "option-over-header", "header"],
)  # fmt: skip
def test_identity_precedence_map_then_option_then_user_agent(
    options: dict[str, str],
    blocked: str,
    source: str,
    origin: OriginFactory,
    proxy: ProxyFactory,
) -> None:
    site = origin(robots=IDENTITY_ROBOTS)
    gate = proxy(**options)

    assert statuses(gate, site, headers={"User-Agent": "UaBot/1.0"}) == blocked_only(blocked)
    [record] = gate.wait_audit(1)
    assert record["agent_source"] == source
    assert record["url"] == site.url(blocked)


def curl_as(proxy: Proxy, site: Origin, user: str, **headers: str) -> dict[str, int]:
    """Status per identity path, sent with proxy credentials ``user:pw``."""
    got = {}
    extra = [arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")]
    for path in IDENTITY_PATHS:
        status, _, _ = curl_status(proxy, site.url(path), "--proxy-user", f"{user}:pw", *extra)
        got[path] = status
    return got


def test_proxy_auth_user_is_the_token_unless_mapped(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=IDENTITY_ROBOTS)
    gate = proxy(proxyauth="any", robots_agents="bob=MappedBot", robots_agent="OptionBot")

    # The user name beats robots_agent and the User-Agent header; a mapped user is its token.
    assert curl_as(gate, site, "alice", **{"User-Agent": "UaBot/1.0"}) == blocked_only("/alice")
    assert curl_as(gate, site, "bob", **{"User-Agent": "UaBot/1.0"}) == blocked_only("/mapped")

    records = gate.wait_audit(2)
    assert [(r["agent"], r["agent_source"]) for r in records] == [
        ("alice", "proxyauth"),
        ("MappedBot", "map-user"),
    ]
    assert all(r["user_agent_mismatch"] is True for r in records)
    # Each path reached the origin once: for the bot whose group does not disallow it.
    assert (site.count("/alice"), site.count("/mapped")) == (1, 1)


def test_user_map_beats_address_map_which_beats_the_user_name(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=IDENTITY_ROBOTS)
    gate = proxy(proxyauth="any", robots_agents=["bob=MappedBot", "127.0.0.0/8=OptionBot"])

    assert curl_as(gate, site, "bob") == blocked_only("/mapped")
    assert curl_as(gate, site, "alice") == blocked_only("/option")

    records = gate.wait_audit(2)
    assert [(r["agent"], r["agent_source"]) for r in records] == [
        ("MappedBot", "map-user"),
        ("OptionBot", "map-address"),
    ]


def test_proxy_auth_single_user_and_wrong_password(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=IDENTITY_ROBOTS)
    gate = proxy(proxyauth="alice:secret")

    status, _, _ = curl_status(gate, site.url("/alice"), "--proxy-user", "alice:secret")
    assert status == 403
    status, _, _ = curl_status(gate, site.url("/star"), "--proxy-user", "alice:secret")
    assert status == 200  # alice's group, not *'s
    status, headers, _ = curl_status(gate, site.url("/star"), "--proxy-user", "alice:wrong")
    assert status == 407  # mitmproxy's own refusal: never forwarded
    assert "proxy-authenticate" in headers
    assert site.paths() == ["/robots.txt", "/star"]
    [record] = gate.wait_audit(1)
    assert (record["agent"], record["agent_source"]) == ("alice", "proxyauth")


def test_proxy_auth_user_applies_inside_an_intercepted_tunnel(
    https_origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = https_origin(robots=IDENTITY_ROBOTS)
    gate = proxy(proxyauth="any", trust_test_ca=True)

    status, _, _ = curl_status(gate, site.url("/alice"), "--proxy-user", "alice:pw")
    assert status == 403
    status, _, body = curl_status(gate, site.url("/star"), "--proxy-user", "alice:pw")
    assert (status, body) == (200, page_body("/star"))
    [record] = gate.wait_audit(1)
    assert (record["agent"], record["agent_source"]) == ("alice", "proxyauth")
    assert record["url"] == site.url("/alice")
    assert not site.saw("/alice")


def test_require_agent_answers_407_to_a_request_without_user_agent(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy(robots_require_agent="true")

    status, headers, body = curl_status(gate, site.url("/public"), "-H", "User-Agent:")

    assert status == 407
    assert headers.get("proxy-authenticate", "").startswith("Basic")
    assert headers.get("x-robotsgate-reason") == "unidentified"
    assert b"User-Agent" in body, body  # says how to identify
    assert site.paths() == []
    [record] = gate.wait_audit(1)
    assert (record["event"], record["reason"], record["status"]) == ("block", "unidentified", 407)
    assert record["user_agent"] is None

    # Identified, the same request goes through.
    status, _, body = curl_status(gate, site.url("/public"), "-A", "GoodBot/1.0")
    assert (status, body) == (200, page_body("/public"))


def test_require_agent_accepts_a_mapped_client_without_user_agent(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy(robots_require_agent="true", robots_agents="127.0.0.1=MappedBot")

    status, _, body = curl_status(gate, site.url("/public"), "-H", "User-Agent:")

    assert (status, body) == (200, page_body("/public"))
    assert gate.audit() == []


def test_user_agent_mismatch_is_recorded(origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy(robots_agent="MyBot")

    assert curl(gate, site.url("/private/a")).status == 403  # curl's own User-Agent
    assert curl(gate, site.url("/private/b"), headers={"User-Agent": "MyBot/2.0"}).status == 403

    first, second = gate.wait_audit(2)
    assert first["user_agent"].startswith("curl/")
    assert (first["agent"], first["agent_source"], first["user_agent_mismatch"]) == (
        "MyBot", "option", True,
    )  # fmt: skip
    assert second["user_agent_mismatch"] is False


# --- the same path written another way ---------------------------------------------------------

BYPASS_PATHS = [
    "/%70rivate",  # an unreserved character escaped
    "/priv%61te",
    "/%70%72%69%76%61%74%65",
    "/bl%6fg",  # lower-case hex
    "/bl%6Fg",  # upper-case hex
    "/%2e%2e/private",  # escaped dot segments, either case
    "/%2E%2E/private",
    "/a/%2e%2E/private",
    "/a/../private",  # dot segments
    "/./private",
    "/a/./b/../../private",
    "/private/..",  # resolves to "/", but also names /private
    "//private",  # doubled slashes
    "///private/x",
    "/private;x=1",  # ;params
    "/pub;x/../private",
    "/a\\..\\private",  # backslashes, as some servers read them
]


@pytest.mark.parametrize("path", BYPASS_PATHS)
def test_path_written_another_way_is_still_denied(
    path: str, origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy()

    resp = raw_get(gate, site, path)

    rule = "Disallow: /blog" if "bl" in path else "Disallow: /private"
    assert_blocked(resp, rule)
    assert only_robots_seen(site), site.paths()
    [record] = gate.wait_audit(1)
    assert (record["reason"], record["status"]) == ("disallowed", 403)
    assert record["url"] == site.url(path)  # audited as sent


def test_lookalikes_of_allowed_paths_still_go_through(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    """Deny-if-either-reading-denies must not turn into deny-anything-odd."""
    site = origin(robots=ROBOTS)
    gate = proxy()
    paths = ["/privat", "/%70ublic", "/a/../public", "/pub//lic", "/public;x=1", "/x/%2e/y",
             "/PRIVATE", "/b/../public"]

    for path in paths:
        assert is_page(raw_get(gate, site, path), path), path

    assert site.paths() == ["/robots.txt", *paths]
    assert gate.audit() == []


def test_curl_path_as_is_dot_segments_are_denied(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy()

    for path in ("/a/../private", "/./private"):
        status, headers, _ = curl_status(gate, site.url(path), "--path-as-is")
        assert (status, headers.get("x-robotsgate-reason")) == (403, "disallowed"), path

    assert only_robots_seen(site), site.paths()
    # curl sent the dot segments as they are: the proxy saw, and audited, the raw form.
    assert [r["url"] for r in gate.wait_audit(2)] == [
        site.url("/a/../private"),
        site.url("/./private"),
    ]


def test_absolute_url_with_user_info_is_not_forwarded(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy()
    authority = f"{site.host}:{site.port}"

    with proxy_connection(gate) as conn:
        resp = raw_request(conn, f"http://user:pw@{authority}/private",
                           headers={"Host": authority})

    assert resp.status in (400, 403), resp
    assert site.paths() == []


# --- the same host written another way ---------------------------------------------------------


def test_upper_case_and_trailing_dot_host_are_one_origin(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy()

    assert is_page(raw_get_host(gate, site, "localhost", "/public"), "/public")
    for host in ("LOCALHOST", "localhost.", "LOCALHOST.", "LocalHost."):
        assert_blocked(raw_get_host(gate, site, host, "/private"))
        assert_blocked(raw_get_host(gate, site, host, "/%70rivate"))

    assert site.paths() == ["/robots.txt", "/public"]  # one robots.txt for all the spellings
    assert site.robots_fetches()[0].host == f"localhost:{site.port}"
    records = gate.wait_audit(8)
    assert {r["robots_url"] for r in records} == {f"http://localhost:{site.port}/robots.txt"}


def raw_get_host(proxy: Proxy, site: Origin, host: str, path: str) -> Resp:
    authority = f"{host}:{site.port}"
    with proxy_connection(proxy) as conn:
        return raw_request(conn, f"http://{authority}{path}", headers={"Host": authority})


@pytest.fixture
def port80_origin() -> Iterator[Origin]:
    """An origin on 127.0.0.5:80 (the tests run as root), for default-port spellings."""
    site = Origin("127.0.0.5", port=80)
    yield site
    site.stop()


@pytest.fixture
def port443_origin(test_ca: CertAuthority) -> Iterator[Origin]:
    site = Origin("127.0.0.2", tls=test_ca.server_context(), port=443)
    yield site
    site.stop()


def test_default_port_is_the_same_origin_as_no_port(
    port80_origin: Origin, proxy: ProxyFactory
) -> None:
    site = port80_origin
    site.set_robots(ROBOTS)
    gate = proxy()

    assert is_page(curl(gate, "http://127.0.0.5/public"), "/public")
    assert_blocked(curl(gate, "http://127.0.0.5/private"))
    assert_blocked(curl(gate, "http://127.0.0.5:80/private"))
    assert_blocked(raw_get(gate, site, "/private"))  # "http://127.0.0.5:80/private", Host with :80

    # robots.txt once per bot (curl, then the raw client), never the disallowed path.
    assert [p for p in site.paths() if p != "/robots.txt"] == ["/public"]
    records = gate.wait_audit(3)
    assert {r["robots_url"] for r in records} == {"http://127.0.0.5/robots.txt"}


def test_default_https_port_is_the_same_origin_as_no_port(
    port443_origin: Origin, proxy: ProxyFactory
) -> None:
    site = port443_origin
    site.set_robots(ROBOTS)
    gate = proxy(trust_test_ca=True)

    assert is_page(curl(gate, "https://127.0.0.2/public"), "/public")
    assert_blocked(curl(gate, "https://127.0.0.2/private"))
    assert_blocked(curl(gate, "https://127.0.0.2:443/private"))

    assert site.paths() == ["/robots.txt", "/public"]
    records = gate.wait_audit(2)
    assert {r["robots_url"] for r in records} == {"https://127.0.0.2/robots.txt"}


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_host_header_naming_another_host_is_refused_400(
    scheme: str, origin: OriginFactory, https_origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = (origin if scheme == "http" else https_origin)(robots=ROBOTS)
    gate = proxy(trust_test_ca=True)

    # An allowed path: the Host header alone is what is refused.
    status, headers, body = curl_status(gate, site.url("/public"), "-H", "Host: other.example")

    assert status == 400
    assert headers.get("x-robotsgate-reason") == "host-mismatch"
    assert b"other.example" in body
    assert site.paths() == []
    [record] = gate.wait_audit(1)
    assert (record["event"], record["reason"], record["status"]) == ("block", "host-mismatch", 400)

    # The same host spelled differently in the Host header is the same host.
    status, _, body = curl_status(gate, site.url("/public", host="localhost"), "-H",
                                  f"Host: LOCALHOST.:{site.port}")
    assert (status, body) == (200, page_body("/public"))


# --- tunnels the proxy does not intercept --------------------------------------------------------


def test_tunnel_to_a_host_that_disallows_everything_is_refused(
    https_origin: OriginFactory, proxy: ProxyFactory, test_ca: CertAuthority
) -> None:
    site = https_origin("127.0.0.3", robots="User-agent: *\nDisallow: /\n")
    gate = proxy(ignore_hosts=r"^127\.0\.0\.3:", trust_test_ca=True)

    # The bot trusts the origin's own CA: it expects to see the origin, not the proxy.
    run = run_curl(gate, ["-v", site.url("/page")], ca=test_ca.ca_pem)

    assert run.code != 0  # 56: the CONNECT was answered with an error
    assert "< HTTP/1.1 403" in run.stderr, run.stderr
    assert "X-Robotsgate-Reason: disallowed-host" in run.stderr
    assert site.paths() == ["/robots.txt"]  # the proxy's own fetch, nothing else
    [record] = gate.wait_audit(1)
    assert (record["event"], record["reason"], record["status"]) == ("block", "disallowed-host",
                                                                     403)
    assert record["method"] == "CONNECT"
    assert record["robots_url"] == site.robots_url


def test_tunnel_to_a_host_that_allows_some_paths_is_let_through_and_audited(
    https_origin: OriginFactory, proxy: ProxyFactory, test_ca: CertAuthority
) -> None:
    site = https_origin("127.0.0.3", robots=ROBOTS)
    gate = proxy(ignore_hosts=r"^127\.0\.0\.3:", trust_test_ca=True)

    run = run_curl(gate, [site.url("/public")], ca=test_ca.ca_pem)

    assert run.code == 0, run.stderr
    assert run.stdout == page_body("/public").decode()  # end to end TLS with the origin itself
    [record] = gate.wait_audit(1)
    assert (record["event"], record["method"], record["status"]) == ("tunnel", "CONNECT", None)
    assert record["robots_url"] == site.robots_url


def test_tunnel_to_an_unreachable_robots_txt_is_refused_503(
    https_origin: OriginFactory, proxy: ProxyFactory, test_ca: CertAuthority
) -> None:
    site = https_origin("127.0.0.3")
    site.set_robots("down\n", status=500)
    gate = proxy(ignore_hosts=r"^127\.0\.0\.3:", trust_test_ca=True)

    run = run_curl(gate, ["-v", site.url("/page")], ca=test_ca.ca_pem)

    assert run.code != 0
    assert "< HTTP/1.1 503" in run.stderr, run.stderr
    assert not site.saw("/page")
    [record] = gate.wait_audit(1)
    assert (record["reason"], record["status"]) == ("robots-unavailable", 503)


def test_tunnel_by_name_to_an_ignored_address_is_decided(
    https_origin: OriginFactory, proxy: ProxyFactory, test_ca: CertAuthority
) -> None:
    """ignore_hosts names the address; the bot connects by name (localhost, 127.0.0.1).

    mitmproxy matches ignore_hosts against the address it connected to as well as the CONNECT
    target, so this tunnel is not intercepted either: it must be decided like one.
    """
    site = https_origin("127.0.0.1", robots="User-agent: *\nDisallow: /\n")
    gate = proxy(ignore_hosts=rf"^127\.0\.0\.1:{site.port}$", trust_test_ca=True)

    run = run_curl(gate, ["-v", site.url("/private", host="localhost")], ca=test_ca.ca_pem)

    assert not site.saw("/private"), "the tunnel went through unseen and undecided"
    assert run.code != 0
    assert [r["event"] for r in gate.wait_audit(1)] == ["block"]


def test_tunnel_with_an_ignored_server_name_is_not_passed_unseen(
    https_origin: OriginFactory, proxy: ProxyFactory, test_ca: CertAuthority
) -> None:
    """ignore_hosts names a host; the bot CONNECTs elsewhere and sends that name as TLS SNI.

    mitmproxy matches ignore_hosts against the SNI too, and passes such a connection through.
    """
    site = https_origin("127.0.0.3", robots="User-agent: *\nDisallow: /\n")
    gate = proxy(ignore_hosts=r"^ignored\.example:", trust_test_ca=True)
    target = f"{site.host}:{site.port}"

    with socket.create_connection(("127.0.0.1", gate.port), timeout=CLIENT_TIMEOUT) as sock:
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = read_head(sock)
        reached = False
        if head.startswith(b"HTTP/1.1 200"):
            context = ssl.create_default_context(cafile=str(test_ca.ca_pem))
            context.load_verify_locations(str(gate.ca))  # either may answer
            context.check_hostname = False
            with context.wrap_socket(sock, server_hostname="ignored.example") as tls:
                tls.sendall(f"GET /private HTTP/1.1\r\nHost: {target}\r\n"
                            "Connection: close\r\n\r\n".encode())
                reached = read_head(tls).startswith(b"HTTP/1.1 200")

    assert not site.saw("/private"), "the tunnel went through unseen and undecided"
    assert not reached


def read_head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


# --- every request is decided --------------------------------------------------------------------


def test_head_and_post_are_decided(origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy()

    head = curl(gate, site.url("/private/head"), method="HEAD")
    post = curl(gate, site.url("/private/post"), method="POST", data=b"a=1")
    allowed = curl(gate, site.url("/public/post"), method="POST", data=b"a=1")

    assert head.status == 403 and head.header("X-Robotsgate-Reason") == "disallowed"
    assert_blocked(post)
    assert is_page(allowed, "/public/post")
    assert [(s.method, s.path, s.body) for s in site.seen] == [
        ("GET", "/robots.txt", b""),
        ("POST", "/public/post", b"a=1"),
    ]
    assert [r["method"] for r in gate.wait_audit(2)] == ["HEAD", "POST"]


def test_websocket_upgrade_is_decided(origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy()
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version": "13",
    }

    resp = raw_get(gate, site, "/private/socket", **upgrade)
    allowed = raw_get(gate, site, "/public/socket", **upgrade)

    assert_blocked(resp)
    # An allowed upgrade is forwarded as one (this origin does not speak WebSocket: 200).
    assert is_page(allowed, "/public/socket")
    forwarded = [s for s in site.seen if s.path != "/robots.txt"]
    assert [s.path for s in forwarded] == ["/public/socket"]
    assert forwarded[0].headers.get("upgrade") == "websocket"
    [record] = gate.wait_audit(1)
    assert record["url"] == site.url("/private/socket")


def test_http2_streams_are_each_decided(https_origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = https_origin(robots=ROBOTS)
    # lazy: mitmproxy picks the client's protocol before it connects upstream, so it speaks h2
    # to curl even though this origin only speaks HTTP/1.1.
    gate = proxy(trust_test_ca=True, connection_strategy="lazy")

    # One curl, one connection, three streams: allowed, disallowed, allowed.
    run = run_curl(gate, [
        "--http2", "-w", "%{http_code} %{http_version} %{num_connects}\\n", "-o", "/dev/null",
        site.url("/public/1"), "-o", "/dev/null", site.url("/private/2"), "-o", "/dev/null",
        site.url("/public/3"),
    ])  # fmt: skip

    assert run.code == 0, run.stderr
    lines = [line.split() for line in run.stdout.splitlines()]
    assert [(code, version) for code, version, _ in lines] == [
        ("200", "2"), ("403", "2"), ("200", "2"),
    ]  # fmt: skip
    assert [connects for _, _, connects in lines][1:] == ["0", "0"]  # the same connection
    assert [p for p in site.paths() if p != "/robots.txt"] == ["/public/1", "/public/3"]
    [record] = gate.wait_audit(1)
    assert record["url"] == site.url("/private/2")


def test_keep_alive_connection_decides_every_request(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy()
    authority = f"{site.host}:{site.port}"

    with proxy_connection(gate) as conn:
        results = []
        ports = set()
        for path in ("/public", "/private", "/public/again", "/%70rivate"):
            resp = raw_request(conn, f"http://{authority}{path}", headers={"Host": authority})
            results.append(resp.status)
            assert conn.sock is not None
            ports.add(conn.sock.getsockname()[1])

    assert results == [200, 403, 200, 403]
    assert len(ports) == 1  # one connection throughout
    assert site.paths() == ["/robots.txt", "/public", "/public/again"]
    records = gate.wait_audit(2)
    assert {r["client"] for r in records} == {f"127.0.0.1:{ports.pop()}"}


def test_keep_alive_session_inside_an_intercepted_tunnel_decides_every_request(
    https_origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = https_origin(robots=ROBOTS)
    gate = proxy(trust_test_ca=True)

    with requests.Session() as session:
        session.proxies = {"https": gate.url}
        session.verify = str(gate.ca)
        got = [session.get(site.url(p), timeout=CLIENT_TIMEOUT).status_code
               for p in ("/public", "/private", "/public/again")]

    assert got == [200, 403, 200]
    assert site.paths() == ["/robots.txt", "/public", "/public/again"]
    records = gate.wait_audit(1)
    assert records[0]["url"] == site.url("/private")
