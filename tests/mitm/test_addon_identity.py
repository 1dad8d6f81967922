"""The addon's identity, Host, tunnel and audit-failure paths, with taddons/tflow."""

import json
from pathlib import Path

import httpx
import pytest
from mitmproxy import exceptions, http
from mitmproxy.test import tflow
from support.driver import driven

from robotsgate.config.assemble import Clocks

ROBOTS = {
    "http://example.com/robots.txt":
        b"User-agent: MappedBot\nDisallow: /mapped-only\n\nUser-agent: *\nDisallow: /private\n",
    "https://closed.example/robots.txt": b"User-agent: *\nDisallow: /\n",
    "https://open.example/robots.txt": b"User-agent: *\nDisallow: /private\n",
}


def answer(request: httpx.Request) -> httpx.Response:
    body = ROBOTS.get(str(request.url))
    return httpx.Response(404) if body is None else httpx.Response(200, content=body)


@pytest.fixture
def audit_path(tmp_path: Path) -> Path:
    return tmp_path / "audit.jsonl"


@pytest.fixture
def gate(audit_path: Path):
    with driven(clocks=Clocks(clock=lambda: 1_700_000_000.0),
                transport=httpx.MockTransport(answer), robots_audit_log=str(audit_path)) as addon:
        yield addon, addon.tctx


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def flow(url: str, *, user_agent: str | None = "curl/8.0", client: str = "192.0.2.7",
         host: str | None = None) -> http.HTTPFlow:
    f = tflow.tflow()
    f.request.url = url
    f.client_conn.peername = (client, 40000)
    if user_agent is None:
        f.request.headers.pop("User-Agent", None)
    else:
        f.request.headers["User-Agent"] = user_agent
    if host is not None:
        f.request.headers["Host"] = host
    return f


async def test_map_by_client_address_beats_the_user_agent(gate, audit_path):
    addon, _ = gate
    addon.configure(robots_agents=["192.0.2.0/24=MappedBot"])
    f = flow("http://example.com/mapped-only")
    await addon.request(f)
    assert f.response is not None and f.response.status_code == 403
    [record] = records(audit_path)
    assert record["agent"] == "MappedBot" and record["agent_source"] == "map-address"
    assert record["user_agent_mismatch"] is True
    g = flow("http://example.com/private")  # MappedBot's own group replaces '*'
    await addon.request(g)
    assert g.response is None


async def test_proxyauth_user_is_the_token_unless_mapped(gate, audit_path):
    addon, _ = gate
    f = flow("http://example.com/mapped-only", user_agent="MappedBot/1.0")
    f.metadata["proxyauth"] = ("MappedBot", "secret")
    await addon.request(f)
    assert f.response is not None and f.response.status_code == 403
    assert records(audit_path)[0]["agent_source"] == "proxyauth"
    assert records(audit_path)[0]["user_agent_mismatch"] is False


async def test_robots_agent_is_used_when_nothing_maps(gate, audit_path):
    addon, _ = gate
    addon.configure(robots_agent="MappedBot", robots_agents=["10.0.0.0/8=OtherBot"])
    f = flow("http://example.com/mapped-only")
    await addon.request(f)
    assert f.response is not None and f.response.status_code == 403
    assert records(audit_path)[0]["agent_source"] == "option"


async def test_require_agent_answers_407_when_nothing_identifies_the_bot(gate, audit_path):
    addon, _ = gate
    addon.configure(robots_require_agent=True)
    f = flow("http://example.com/page", user_agent=None)
    await addon.request(f)
    assert f.response is not None and f.response.status_code == 407
    assert "Proxy-Authenticate" in f.response.headers
    assert b"User-Agent" in f.response.content
    assert records(audit_path)[0]["reason"] == "unidentified"
    named = flow("http://example.com/page", user_agent="SomeBot/1.0")
    await addon.request(named)
    assert named.response is None


async def test_require_agent_is_satisfied_by_configuration(gate):
    addon, _ = gate
    addon.configure(robots_require_agent=True, robots_agents=["192.0.2.7=MappedBot"])
    f = flow("http://example.com/page", user_agent=None)
    await addon.request(f)
    assert f.response is None


async def test_a_host_header_for_another_host_is_400(gate, audit_path):
    addon, _ = gate
    f = flow("http://example.com/page", host="other.example")
    await addon.request(f)
    assert f.response is not None and f.response.status_code == 400
    assert f.response.headers["X-Robotsgate-Reason"] == "host-mismatch"
    assert records(audit_path)[0]["reason"] == "host-mismatch"


@pytest.mark.parametrize("host", ["example.com", "EXAMPLE.COM.", "example.com:80"])
async def test_a_host_header_for_the_same_host_is_fine(gate, host):
    addon, _ = gate
    f = flow("http://example.com/page", host=host)
    await addon.request(f)
    assert f.response is None


@pytest.mark.parametrize(("setting", "status", "forwarded"), [("closed", 503, False),
                                                                ("continue", 403, False)])
async def test_an_unwritable_audit_log(setting, status, forwarded, caplog):
    with driven(transport=httpx.MockTransport(answer), robots_audit_log="/dev/full",
                robots_audit_failure=setting) as addon:
        f = flow("http://example.com/private")
        await addon.request(f)
    assert (f.response is None) is forwarded
    assert f.response is not None and f.response.status_code == status
    assert "cannot write the audit log" in caplog.text


def test_bad_agent_map_is_refused_naming_the_option(tmp_path):
    with driven(robots_audit_log=str(tmp_path / "a.jsonl")) as addon, \
            pytest.raises(exceptions.OptionsError, match="robots_agents"):
        addon.configure(robots_agents=["10.0.0.0/8 CrawlerBot"])


# -- tunnels mitmproxy does not intercept -------------------------------------------------------

def connect(host: str, port: int = 443) -> http.HTTPFlow:
    f = tflow.tflow()
    f.request.method = "CONNECT"
    f.request.host, f.request.port = host, port
    f.request.headers["User-Agent"] = "curl/8.0"
    f.client_conn.peername = ("192.0.2.7", 40000)
    return f


async def test_an_ignored_host_that_disallows_everything_gets_no_tunnel(gate, audit_path):
    addon, _ = gate
    addon.configure(ignore_hosts=[r"\.example:443$"])
    f = connect("closed.example")
    await addon.http_connect(f)
    assert f.response is not None and f.response.status_code == 403
    [record] = records(audit_path)
    assert record["reason"] == "disallowed-host" and record["rule"] == "Disallow: /"


async def test_an_ignored_host_with_some_allowed_paths_gets_a_recorded_tunnel(gate, audit_path):
    addon, _ = gate
    addon.configure(ignore_hosts=[r"\.example:443$"])
    f = connect("open.example")
    await addon.http_connect(f)
    assert f.response is None
    [record] = records(audit_path)
    assert record["event"] == "tunnel" and record["reason"] == "not-intercepted"


async def test_an_ignored_host_whose_robots_txt_cannot_be_fetched_gets_503():
    with driven(transport=httpx.MockTransport(lambda request: httpx.Response(500)),
                robots_audit_log="-", ignore_hosts=[r"unreachable"]) as addon_down:
        f = connect("unreachable.example")
        await addon_down.http_connect(f)
    assert f.response is not None and f.response.status_code == 503


async def test_intercepted_tunnels_are_left_to_the_requests_inside(gate, audit_path):
    addon, _ = gate
    f = connect("closed.example")
    await addon.http_connect(f)
    assert f.response is None
    assert records(audit_path) == []


async def test_with_ignore_hosts_set_every_tunnel_is_decided_on_its_host(gate, audit_path):
    # mitmproxy may also pass a tunnel through by its address or TLS server name, which are not
    # known at CONNECT time: a CONNECT that does not match ignore_hosts is still decided.
    addon, _ = gate
    addon.configure(ignore_hosts=[r"^127\.0\.0\.3:"])
    f = connect("closed.example")
    await addon.http_connect(f)
    assert f.response is not None and f.response.status_code == 403
    g = connect("open.example")
    await addon.http_connect(g)
    assert g.response is None
    assert [r["event"] for r in records(audit_path)] == ["block"]  # no "tunnel": intercepted
