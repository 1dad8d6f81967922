"""The addon driven with mitmproxy's own test helpers (taddons, tflow): no proxy, no network."""

import asyncio
import dataclasses
import gc
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mitmproxy import exceptions, http
from mitmproxy.connection import ConnectionState, Server
from mitmproxy.proxy.server_hooks import ServerConnectionHookData
from mitmproxy.test import tflow
from support.clock import FakeClock
from support.driver import Driven, driven
from support.origins import Origins

from robotsgate.config.assemble import Clocks, Upstream
from robotsgate.mitm.flow import KEY, state

ROBOTS = b"# test\nUser-agent: *\nDisallow: /private\nAllow: /private/ok\n"


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
    with driven(clocks=Clocks(clock=lambda: 1_700_000_000.0),
                transport=httpx.MockTransport(origins), robots_audit_log=str(audit_path)) as addon:
        yield addon, addon.tctx


@pytest.mark.parametrize("url", [
    "http://example.com/public",
    "http://example.com/private/ok/page",  # Allow: /private/ok wins over Disallow: /private
], ids=["no-rule", "allow-rule-wins-over-shorter-disallow"])
async def test_allowed_request_is_left_alone(gate, url: str):
    addon, _ = gate
    f = flow(url)
    await addon.request(f)
    assert f.response is None


async def test_disallowed_request_is_answered_403_with_the_reason(gate, audit_path):
    addon, _ = gate
    addon.configure(robots_agent="MyBot")
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


async def test_unreachable_robots_txt_is_503_with_retry_after(gate, audit_path):
    addon, _ = gate
    addon.configure(robots_error_ttl=120)
    f = flow("http://down.example/anything")
    await addon.request(f)
    assert f.response is not None and f.response.status_code == 503
    assert f.response.headers["Retry-After"] == "120"
    assert f.response.headers["X-Robotsgate-Reason"] == "robots-unavailable"
    [record] = records(audit_path)
    assert record["reason"] == "robots-unavailable" and record["robots_status"] == 503
    # Why, in the answer and the record, not only that it failed.
    assert record["error"] == "HTTP 503"
    assert "could not be fetched (HTTP 503)" in f.response.text


async def test_a_refusal_by_a_rule_has_no_error(gate, audit_path):
    addon, _ = gate
    await addon.request(flow("http://example.com/private/x"))
    [record] = records(audit_path)
    assert record["reason"] == "disallowed" and record["error"] is None


async def test_monitor_mode_forwards_but_records_would_block(gate, audit_path):
    addon, _ = gate
    addon.configure(robots_mode="monitor")
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

    with driven(transport=httpx.MockTransport(broken), robots_audit_log=str(audit_path)) as addon:
        f = flow("http://example.com/page")
        await addon.request(f)
    assert f.response is not None and f.response.status_code == 503
    assert f.response.headers["X-Robotsgate-Reason"] == "internal-error"
    assert "boom" in caplog.text
    [record] = records(audit_path)
    assert record["reason"] == "internal-error" and record["status"] == 503
    assert "boom" in record["error"]


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
    with driven(robots_audit_log=str(tmp_path / "a.jsonl")) as addon, \
            pytest.raises(exceptions.OptionsError, match=message):
        addon.configure(**{option: value})


def test_upstream_mode_is_used_for_the_robots_txt_fetch_too():
    assert Upstream.proxy_of(["regular"]) is None
    assert Upstream.proxy_of(["upstream:http://proxy.internal:3128"]) == \
        "http://proxy.internal:3128"


# -- politeness through the addon ------------------------------------------------------------

@pytest.fixture
def paced(audit_path: Path):
    fake = FakeClock()
    origins = Origins({
        "http://slow.example/robots.txt": httpx.Response(
            200, content=b"User-agent: *\nCrawl-delay: 2\nDisallow: /private\n"),
        "http://greedy.example/robots.txt": httpx.Response(
            200, content=b"User-agent: *\nCrawl-delay: 3600\n"),
    })
    with driven(clocks=Clocks(clock=fake, monotonic=fake, sleep=fake.sleep),
                transport=httpx.MockTransport(origins), robots_audit_log=str(audit_path),
                robots_pacing_margin_ms=0) as addon:
        yield addon, addon.tctx, fake


async def forward(addon: Driven, url: str, status: int = 200,
                  **headers: str) -> http.HTTPFlow:
    """One request through the request hook and, when forwarded, an origin answer back."""
    f = flow(url)
    await addon.request(f)
    if f.response is None:
        f.response = tflow.tresp(status_code=status)
        f.response.headers.clear()
        for name, value in headers.items():
            f.response.headers[name.replace("_", "-")] = value
        addon.responseheaders(f)
        await addon.response(f)
    return f


async def test_crawl_delay_holds_requests_and_says_so(paced, audit_path):
    addon, _, fake = paced
    first = await forward(addon, "http://slow.example/a")
    second = await forward(addon, "http://slow.example/b")
    assert fake.sleeps == [2.0]
    assert first.response.headers["X-Robotsgate-Delay-Ms"] == "0"  # type: ignore[union-attr]
    assert second.response.headers["X-Robotsgate-Delay-Ms"] == "2000"  # type: ignore[union-attr]
    [record] = records(audit_path)
    assert record["event"] == "delay" and record["reason"] == "crawl-delay"
    assert record["delay_ms"] == 2000 and record["status"] is None


async def test_an_origin_cannot_speak_in_robotsgates_name(paced):
    # Headers robotsgate sets replace any of the same name the origin sent, whatever its case;
    # the origin's other headers stay as they were, in their order.
    addon, _, _ = paced
    f = flow("http://slow.example/a")
    await addon.request(f)
    f.response = http.Response.make(200, b"<p>page</p>", [
        (b"Content-Type", b"text/html"), (b"x-robotsgate-delay-ms", b"999"),
        (b"Server", b"origin"), (b"X-Robots-Tag", b"noindex"), (b"x-robots-tag", b"nofollow"),
        (b"ETag", b'"1"')])
    await addon.response(f)
    assert f.response.headers.get_all("X-Robotsgate-Delay-Ms") == ["0"]
    assert f.response.headers.get_all("X-Robots-Tag") == ["noindex, nofollow"]
    assert [name for name, _ in f.response.headers.fields][:4] == [
        b"Content-Type", b"Server", b"ETag", b"content-length"]


async def test_only_the_requests_own_connection_says_it_left(paced):
    addon, _, fake = paced
    first = flow("http://slow.example/a")
    await addon.request(first)  # released; mitmproxy now opens a connection for it
    fake.now += 0.010
    other = tflow.tclient_conn()  # another client's connection to the same host
    addon.server_connected(ServerConnectionHookData(
        server=Server(address=("slow.example", 80)), client=other))
    fake.now += 0.040
    addon.server_connected(ServerConnectionHookData(
        server=Server(address=("slow.example", 80)), client=first.client_conn))
    await forward(addon, "http://slow.example/b")
    # The schedule's 2 s from the first start, and the 40 ms its connection took: counted from
    # when it really left, not from another client's connection.
    assert fake.sleeps == [pytest.approx(1.95), pytest.approx(0.05)]


def tunnel_connection(host: str, port: int, *, tls: bool, alpn: bytes | None = None) -> Server:
    """A server connection already open (an HTTPS tunnel's is, from its CONNECT on)."""
    server = tflow.tserver_conn()
    server.address, server.state, server.tls = (host, port), ConnectionState.OPEN, tls
    server.alpn = alpn
    return server


@pytest.mark.parametrize(("address", "alpn", "leaves_at_release", "sleeps"), [
    (("slow.example", 80), None, True, [1.5]),
    # Another host on that connection: mitmproxy opens a new one (whose event would say when).
    (("other.example", 80), None, False, [1.5]),
    # It may be queued behind the origin's stream limit: it left at the latest when answered.
    (("slow.example", 80), b"h2", False, [1.5, 2.0]),
])
async def test_a_request_on_an_open_connection_is_out_when_released(paced, address, alpn,
                                                                     leaves_at_release, sleeps):
    addon, _, fake = paced
    first = flow("http://slow.example/a")
    first.server_conn = tunnel_connection(*address, tls=False, alpn=alpn)
    await addon.request(first)
    fake.now += 0.5  # its answer is slow to come
    second = asyncio.create_task(addon.request(flow("http://slow.example/b")))
    for _ in range(20):
        await asyncio.sleep(0)
    # On the tunnel's open connection it left when released: the next waits for its slot
    # only. Otherwise it waits until the first is known to have left.
    assert second.done() == leaves_at_release
    if not leaves_at_release:
        addon.responseheaders(first)
        await second
    assert fake.sleeps == [pytest.approx(s) for s in sleeps]


@pytest.mark.parametrize(("alpn", "sleeps"), [(None, [1.5]), (b"h2", [1.5, 0.5])])
async def test_on_a_multiplexed_connection_a_request_left_at_the_latest_when_answered(
        paced, alpn, sleeps):
    addon, _, fake = paced
    first = flow("http://slow.example/a")
    await addon.request(first)
    first.server_conn = tunnel_connection("slow.example", 80, tls=False, alpn=alpn)
    fake.now += 0.5
    addon.responseheaders(first)  # on an HTTP/2 connection it may have waited for a stream
    await forward(addon, "http://slow.example/b")
    assert fake.sleeps == [pytest.approx(s) for s in sleeps]


@pytest.mark.parametrize(("version", "headers", "at_headers"), [
    ("HTTP/1.1", {}, False),  # no body: nothing streams before the request hook
    ("HTTP/1.1", {"Content-Length": "5"}, True),
    ("HTTP/1.1", {"Transfer-Encoding": "chunked"}, True),
    ("HTTP/2.0", {}, True),  # nothing has to announce an HTTP/2 body
])
async def test_with_streamed_bodies_a_request_that_may_stream_takes_its_turn_first(
        paced, version, headers, at_headers):
    addon, _, _ = paced
    # As with mitmproxy's stream_large_bodies set.
    addon.runtime.install(dataclasses.replace(addon.runtime.live, stream_bodies=True))
    await forward(addon, "http://slow.example/a")
    second = flow("http://slow.example/b")
    second.request.headers.pop("content-length")
    second.request.headers.update(headers)
    second.request.http_version = version
    await addon.requestheaders(second)
    # Its turn taken before its body, and then it leaves at once, the body following; or its
    # turn left for the request hook, the body read whole first.
    assert (state(second).paced is None) is at_headers
    assert second.request.stream is at_headers


async def test_a_wait_beyond_max_wait_is_answered_429(paced, audit_path):
    addon, _, fake = paced
    fake.advance = False  # three requests at once
    addon.configure(robots_max_wait=3)
    for _ in range(2):
        await forward(addon, "http://slow.example/a")
    third = await forward(addon, "http://slow.example/a")
    assert third.response is not None and third.response.status_code == 429
    assert third.response.headers["Retry-After"] == "4"
    assert third.response.headers["X-Robotsgate-Reason"] == "wait-too-long"
    assert "X-Robotsgate-Delay-Ms" not in third.response.headers
    assert records(audit_path)[-1]["reason"] == "wait-too-long"


async def test_long_crawl_delay_clamped_is_audited_with_what_the_site_asked(paced, audit_path):
    addon, _, fake = paced
    addon.configure(robots_max_crawl_delay=10, robots_max_wait=60)
    await forward(addon, "http://greedy.example/a")
    await forward(addon, "http://greedy.example/b")
    assert fake.sleeps == [10.0]
    last = records(audit_path)[-1]
    assert last["reason"] == "crawl-delay-clamped" and last["asked_delay_ms"] == 3_600_000
    assert last["delay_ms"] == 10_000


async def test_long_crawl_delay_refused(paced, audit_path):
    addon, _, _ = paced
    addon.configure(robots_max_crawl_delay=10, robots_on_long_delay="refuse")
    f = await forward(addon, "http://greedy.example/a")
    assert f.response is not None and f.response.status_code == 429
    assert records(audit_path)[-1]["asked_delay_ms"] == 3_600_000


async def test_origin_429_pauses_the_host_for_every_bot(paced):
    addon, _, fake = paced
    await forward(addon, "http://slow.example/a", status=429, retry_after="30")
    fake.now += 5
    await forward(addon, "http://slow.example/b")
    assert fake.sleeps == [25.0]


async def test_origin_503_without_retry_after_backs_off(paced):
    addon, _, fake = paced
    # free.example has no robots.txt (404): no delay but the backoff's.
    await forward(addon, "http://free.example/a", status=503)  # pause 1 s
    fake.now += 2
    await forward(addon, "http://free.example/b", status=503)  # pause 2 s
    fake.now += 0.5
    await forward(addon, "http://free.example/c")
    assert fake.sleeps == [pytest.approx(1.5)]


async def test_the_proxys_own_answers_are_not_pushback(paced):
    addon, _, fake = paced
    f = flow("http://slow.example/private")
    await addon.request(f)
    assert f.response is not None and f.response.status_code == 403
    await addon.response(f)
    assert "X-Robotsgate-Delay-Ms" not in f.response.headers
    await forward(addon, "http://slow.example/a")
    assert fake.sleeps == []


async def test_min_delay_applies_without_any_robots_txt_delay(paced):
    addon, _, fake = paced
    addon.configure(robots_min_delay_ms=250)
    await forward(addon, "http://free.example/a")
    await forward(addon, "http://free.example/b")
    assert fake.sleeps == [0.25]


async def test_the_pacing_margin_is_added_to_every_non_zero_interval(paced):
    addon, _, fake = paced
    addon.configure(robots_pacing_margin_ms=10)
    await forward(addon, "http://slow.example/a")
    await forward(addon, "http://slow.example/b")
    await forward(addon, "http://free.example/a")
    await forward(addon, "http://free.example/b")
    assert fake.sleeps == [pytest.approx(2.01)]  # free.example asks for no delay: none added


async def test_running_takes_what_exists_at_start_up_out_of_the_collectors_sight(gate) -> None:
    # Modules, classes and options live as long as the proxy: full collections must not walk
    # them again and again (the cost is measured by scripts/bench_proxy.py).
    addon, _ = gate
    try:
        addon.running()
        assert gc.get_freeze_count() > 1000
    finally:
        gc.unfreeze()
        await addon.done()


def test_a_flow_copied_by_mitmproxy_keeps_its_configuration(gate) -> None:
    # mitmproxy deep-copies a flow's metadata (Flow.get_state, flow.copy): the configuration
    # pinned to a flow is shared by its copy, not copied with every service it holds.
    addon, _ = gate
    f = flow("http://example.com/page")
    live = addon.runtime.of(f)
    assert state(f.copy()).live is live


async def test_a_replayed_flow_is_decided_again(gate):
    addon, _ = gate
    f = flow("http://example.com/public")
    await addon.request(f)
    assert f.response is None
    f.request.url = "http://example.com/private/x"  # the replay asks for something else
    f.is_replay = "request"
    await addon.request(f)
    assert f.response is not None and f.response.status_code == 403


async def test_a_flow_read_back_from_a_file_is_decided_here(gate):
    addon, _ = gate
    f = flow("http://example.com/private/x")
    f.metadata[KEY] = {"decided": "another-process"}  # as saved by another proxy (-w)
    await addon.request_only(f)
    assert f.response is not None and f.response.status_code == 403


async def test_a_replay_is_signed_afresh(origins: Origins, audit_path: Path, tmp_path: Path):
    from robotsgate.signing import keys as signing_keys

    key = signing_keys.generate(str(tmp_path / "key.pem"))
    now = [1_700_000_000.0]
    with driven(clocks=Clocks(clock=lambda: now[0]), transport=httpx.MockTransport(origins),
                robots_audit_log=str(audit_path), robots_signing_key=key.path,
                robots_signature_agent="https://bots.example/dir") as addon:
        f = flow("https://example.com/public")
        await addon.request(f)
        first = f.request.headers.get_all("signature")
        assert len(first) == 1 and first[0].startswith("sig1=:")
        now[0] += 10
        f.is_replay = "request"
        await addon.request(f)
        again = f.request.headers.get_all("signature")
        assert len(again) == 1 and again != first  # the old one dropped, a new one made
        assert f"created={int(now[0])}" in f.request.headers["signature-input"]


class _Part:
    """A part whose hooks note what they were called with, in `calls`; `slow` ones return an
    awaitable that notes when it is done."""

    def __init__(self, name: str, calls: list[str], *, slow: bool = False) -> None:
        self.name, self.calls, self.slow = name, calls, slow

    def requestheaders(self, f: object) -> Any:
        self.calls.append(f"{self.name}({f})")
        if self.slow:
            return self._done()
        return None

    def running(self) -> None:
        self.calls.append(f"{self.name}()")

    async def _done(self) -> None:
        await asyncio.sleep(0)
        self.calls.append(f"{self.name} done")


async def test_parts_hooks_run_in_order_each_awaited_before_the_next() -> None:
    from robotsgate.mitm import RobotsGate

    calls: list[str] = []
    root = RobotsGate()
    root.wire([_Part("a", calls), _Part("b", calls)])
    assert root.requestheaders("f") is None  # synchronous parts: a synchronous hook
    assert calls == ["a(f)", "b(f)"]
    root.running()  # a hook without arguments
    assert calls[2:] == ["a()", "b()"]

    calls.clear()
    root.wire([_Part("a", calls), _Part("b", calls, slow=True), _Part("c", calls),
               _Part("d", calls, slow=True)])
    pending = root.requestheaders("f")
    assert calls == ["a(f)", "b(f)"]  # c waits for b
    await pending
    assert calls == ["a(f)", "b(f)", "b done", "c(f)", "d(f)", "d done"]
