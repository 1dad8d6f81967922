"""The addon driven with mitmproxy's own test helpers (taddons, tflow): no proxy, no network."""

import hashlib
import json
from pathlib import Path

import httpx
import pytest
from mitmproxy import exceptions, http
from mitmproxy.test import taddons, tflow

from robotsgate.addon import RobotsGate, _upstream_proxy

ROBOTS = b"# test\nUser-agent: *\nDisallow: /private\nAllow: /private/ok\n"


class Origins:
    def __init__(self, answers: dict[str, httpx.Response]) -> None:
        self.answers = answers
        self.seen: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(str(request.url))
        answer = self.answers.get(str(request.url))
        if answer is None:
            return httpx.Response(404)
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)


@pytest.fixture
def origins() -> Origins:
    return Origins({"http://example.com/robots.txt": httpx.Response(200, content=ROBOTS),
                    "http://down.example/robots.txt": httpx.Response(503)})


@pytest.fixture
def audit_path(tmp_path: Path) -> Path:
    return tmp_path / "audit.jsonl"


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def flow(url: str, user_agent: str = "TestBot/1.0", **headers: str) -> http.HTTPFlow:
    f = tflow.tflow()
    f.request.url = url
    f.request.headers["User-Agent"] = user_agent
    for name, value in headers.items():
        f.request.headers[name.replace("_", "-")] = value
    return f


@pytest.fixture
def gate(origins: Origins, audit_path: Path):
    addon = RobotsGate(clock=lambda: 1_700_000_000.0, transport=httpx.MockTransport(origins))
    with taddons.context(addon) as tctx:
        tctx.configure(addon, robots_audit_log=str(audit_path))
        yield addon, tctx


async def test_allowed_request_is_left_alone(gate):
    addon, _ = gate
    f = flow("http://example.com/public")
    await addon.request(f)
    assert f.response is None


async def test_disallowed_request_is_answered_403_with_the_reason(gate, audit_path):
    addon, tctx = gate
    tctx.configure(addon, robots_agent="MyBot")
    f = flow("http://example.com/private/x?y=1")
    await addon.request(f)
    assert f.response is not None and f.response.status_code == 403
    h = f.response.headers
    assert h["X-Robotsgate-Reason"] == "disallowed"
    assert h["X-Robotsgate-Rule"] == "Disallow: /private"
    assert h["X-Robotsgate-Line"] == "3"
    assert h["X-Robotsgate-Robots-Url"] == "http://example.com/robots.txt"
    assert h["X-Robotsgate-Agent"] == "MyBot"
    assert b"line 3" in f.response.content
    [record] = records(audit_path)
    assert record["event"] == "block" and record["reason"] == "disallowed"
    assert record["status"] == 403 and record["agent"] == "MyBot"
    assert record["url"] == "http://example.com/private/x?y=1"
    assert record["rule"] == "Disallow: /private" and record["line"] == 3
    assert record["group"] == "*" and record["mode"] == "enforce"
    assert record["robots_status"] == 200 and record["user_agent"] == "TestBot/1.0"
    assert record["ts"].startswith("2023-11-14T22:13:20")


async def test_audit_sha256_identifies_the_body(gate, audit_path):
    addon, _ = gate
    await addon.request(flow("http://example.com/private"))
    assert records(audit_path)[0]["robots_sha256"] == hashlib.sha256(ROBOTS).hexdigest()


async def test_allow_rule_wins_over_shorter_disallow(gate):
    addon, _ = gate
    f = flow("http://example.com/private/ok/page")
    await addon.request(f)
    assert f.response is None


async def test_unreachable_robots_txt_is_503_with_retry_after(gate, audit_path):
    addon, tctx = gate
    tctx.configure(addon, robots_error_ttl=120)
    f = flow("http://down.example/anything")
    await addon.request(f)
    assert f.response is not None and f.response.status_code == 503
    assert f.response.headers["Retry-After"] == "120"
    assert f.response.headers["X-Robotsgate-Reason"] == "robots-unavailable"
    [record] = records(audit_path)
    assert record["reason"] == "robots-unavailable" and record["robots_status"] == 503


async def test_monitor_mode_forwards_but_records_would_block(gate, audit_path):
    addon, tctx = gate
    tctx.configure(addon, robots_mode="monitor")
    f = flow("http://example.com/private")
    await addon.request(f)
    assert f.response is None
    [record] = records(audit_path)
    assert record["event"] == "would-block" and record["mode"] == "monitor"
    assert record["status"] == 403


async def test_connection_close_is_echoed(gate):
    addon, _ = gate
    f = flow("http://example.com/private", connection="close")
    await addon.request(f)
    assert f.response is not None and f.response.headers["Connection"] == "close"
    g = flow("http://example.com/private")
    await addon.request(g)
    assert g.response is not None and "Connection" not in g.response.headers


async def test_internal_error_fails_closed(audit_path, caplog):
    def broken(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("boom")

    addon = RobotsGate(transport=httpx.MockTransport(broken))
    with taddons.context(addon) as tctx:
        tctx.configure(addon, robots_audit_log=str(audit_path))
        f = flow("http://example.com/page")
        await addon.request(f)
    assert f.response is not None and f.response.status_code == 503
    assert f.response.headers["X-Robotsgate-Reason"] == "internal-error"
    assert "boom" in caplog.text
    [record] = records(audit_path)
    assert record["reason"] == "internal-error" and record["status"] == 503


async def test_flows_already_answered_are_not_touched(gate, origins):
    addon, _ = gate
    f = flow("http://example.com/private")
    f.response = tflow.tresp()
    await addon.request(f)
    assert f.response.status_code == 200 and origins.seen == []


async def test_the_bots_own_robots_txt_passes(gate, origins):
    addon, _ = gate
    f = flow("http://example.com/robots.txt")
    await addon.request(f)
    assert f.response is None and origins.seen == []


@pytest.mark.parametrize(("option", "value", "message"), [
    ("robots_mode", "bogus", "robots_mode"),
    ("robots_semantics", "strict", "robots_semantics"),
    ("robots_path_case", "upper", "robots_path_case"),
    ("robots_agent", "My Bot/1.0", "robots_agent"),
    ("robots_cache_ttl", 0, "robots_cache_ttl"),
    ("robots_cache_ttl", 90_000, "robots_cache_ttl"),
    ("robots_cache_size", -1, "robots_cache_size"),
    ("robots_fetch_timeout", 0, "robots_fetch_timeout"),
    ("robots_error_ttl", 0, "robots_error_ttl"),
    ("robots_audit_log", "/nonexistent/dir/audit.jsonl", "robots_audit_log"),
])
def test_bad_options_are_refused_naming_the_option(option, value, message, tmp_path):
    addon = RobotsGate()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, robots_audit_log=str(tmp_path / "a.jsonl"))
        with pytest.raises(exceptions.OptionsError, match=message):
            tctx.configure(addon, **{option: value})


def test_upstream_mode_is_used_for_the_robots_txt_fetch_too():
    assert _upstream_proxy(["regular"]) is None
    assert _upstream_proxy(["upstream:http://proxy.internal:3128"]) == "http://proxy.internal:3128"
