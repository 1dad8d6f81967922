"""Politeness through the real proxy, measured where it matters: at the origin.

Lower bounds only (a request came *at least* the Crawl-delay after the previous one), and
order (it came before the previous one was answered); no upper bounds on time.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable

import pytest

from .clients import curl, httpx_async_client, httpx_call, requests_call, run_concurrently
from .h2_origin import H2Origin
from .origins import Origin
from .proxy import Proxy
from .tls import CertAuthority
from .wire import Wire, status_of


def test_two_bots_share_one_crawl_delay_and_other_hosts_flow_meanwhile(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    slow = origin(robots="User-agent: *\nCrawl-delay: 1\n")
    other = origin("127.0.0.2", robots="User-agent: *\nDisallow: /nothing\n")
    gate = proxy(robots_max_wait=60)

    def bot(agent: str, i: int) -> Callable[[], object]:
        return lambda: requests_call(gate, slow.url(f"/{agent}/{i}"),
                                     headers={"User-Agent": f"{agent}/1.0"})

    calls = [bot(agent, i) for agent in ("OneBot", "OtherBot") for i in range(5)]
    # Meanwhile, five requests to another host, started with the others.
    calls += [lambda i=i: curl(gate, other.url(f"/fast/{i}")) for i in range(5)]
    results = run_concurrently(calls)
    assert all(r.status == 200 for r in results), results  # type: ignore[attr-defined]

    arrivals = [s for s in slow.seen if not s.path.startswith("/robots.txt")]
    assert len(arrivals) == 10
    assert {s.user_agent for s in arrivals} == {"OneBot/1.0", "OtherBot/1.0"}
    times = [s.arrived for s in arrivals]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 1.0, f"two requests came closer than the Crawl-delay: {gaps}"

    # The other host was not held behind the slow one: all its requests arrived before the
    # slow host's schedule was half done.
    fast = [s.arrived for s in other.seen if s.path.startswith("/fast/")]
    assert len(fast) == 5
    assert max(fast) < times[5]


def test_forwarded_responses_say_how_long_they_waited(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    site = origin(robots="User-agent: *\nCrawl-delay: 1\n")
    gate = proxy()
    first = httpx_call(gate, site.url("/a"))
    second = httpx_call(gate, site.url("/b"))
    assert first.header("X-Robotsgate-Delay-Ms") is not None
    assert int(second.header("X-Robotsgate-Delay-Ms") or 0) > 0
    delays = [r for r in gate.wait_audit(1) if r["event"] == "delay"]
    assert delays and delays[0]["reason"] == "crawl-delay" and delays[0]["delay_ms"] > 0


def test_origin_429_pauses_the_host_for_every_bot(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    site.route("/busy", status=429, body="slow down\n", headers={"Retry-After": "2"})
    gate = proxy(robots_max_wait=1)
    assert curl(gate, site.url("/busy")).status == 429  # the origin's own answer
    refused = curl(gate, site.url("/page"), headers={"User-Agent": "AnotherBot"})
    assert refused.status == 429
    assert refused.header("X-Robotsgate-Reason") == "pushback"
    assert int(refused.header("Retry-After") or 0) >= 1
    assert not site.saw("/page")


def test_outside_visit_time_is_503_with_retry_after(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    import datetime

    now = datetime.datetime.now(datetime.UTC)
    opens = now + datetime.timedelta(hours=2)
    closes = now + datetime.timedelta(hours=3)
    window = f"{opens:%H%M}-{closes:%H%M}"
    site = origin(robots=f"User-agent: *\nVisit-time: {window}\n")
    gate = proxy()
    answer = requests_call(gate, site.url("/page"))
    assert answer.status == 503
    assert answer.header("X-Robotsgate-Reason") == "visit-time"
    assert 3600 <= int(answer.header("Retry-After") or 0) <= 2 * 3600
    assert not site.saw("/page")


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_paced_request_is_out_once_its_connection_is_up_not_once_answered(
        scheme: str, origin: Callable[..., Origin], https_origin: Callable[..., Origin],
        proxy: Callable[..., Proxy]) -> None:
    """The next request waits for the previous one's connection (its TLS handshake for https),
    not for its answer: with a page that takes 3 s and Crawl-delay: 1, the second request
    reaches the origin before the first is answered."""
    site = (https_origin if scheme == "https" else origin)()
    site.set_robots("User-agent: *\nCrawl-delay: 1\n")
    site.route("/slow/0", body=b"slow\n", delay=3.0)
    site.route("/slow/1", body=b"slow\n", delay=3.0)
    gate = proxy(robots_max_wait=60, trust_test_ca=True)
    # Each on a connection of its own: each needs a new connection to the origin.
    results = run_concurrently([lambda i=i: curl(gate, site.url(f"/slow/{i}"))
                                for i in range(2)])
    assert [r.status for r in results] == [200, 200], results
    first, second = sorted((s for s in site.seen if s.path.startswith("/slow/")),
                           key=lambda s: s.arrived)
    assert second.arrived - first.arrived >= 1.0
    assert second.arrived < first.arrived + 3.0, "held until the first was answered"


def test_a_body_sent_late_does_not_choose_when_its_request_leaves(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    """With stream_large_bodies set, a paced request with a body takes its turn before its body
    is read. It must then leave at once: had mitmproxy waited for a small body, the bot would
    send it just before the next request's turn, and both would reach the origin together."""
    site = origin(robots="User-agent: *\nCrawl-delay: 2\n")
    gate = proxy(robots_max_wait=60, stream_large_bodies="1m")
    authority = f"127.0.0.1:{site.port}"

    def head(path: str, *extra: str, method: str = "GET") -> bytes:
        return "\r\n".join([f"{method} {site.url(path)} HTTP/1.1", f"Host: {authority}",
                            *extra, "", ""]).encode()

    slow = Wire(gate.port)
    slow.send(head("/warm"))
    assert slow.head().startswith(b"HTTP/1.1 200")
    slow.read_all(timeout=0.3)  # the warm-up's body; the connection to the origin stays open
    time.sleep(2.2)  # the next slot is free
    slow.send(head("/late-body", "Content-Length: 5", method="POST"))  # its body comes later
    time.sleep(0.3)
    other = Wire(gate.port)
    other.send(head("/next", "Connection: close"))
    time.sleep(1.5)
    slow.send(b"hello")  # just before the next request's turn
    assert slow.head().startswith(b"HTTP/1.1 200")
    assert status_of(other.read_all(timeout=15)) == 200
    slow.close()
    other.close()
    late, following = (next(s for s in site.seen if s.path == path)
                       for path in ("/late-body", "/next"))
    assert following.arrived - late.arrived >= 2.0, (late.arrived, following.arrived)


def test_requests_queued_on_an_http2_origin_keep_their_spacing(
        test_ca: CertAuthority, proxy: Callable[..., Proxy]) -> None:
    """An HTTP/2 origin allowing one stream at a time: mitmproxy queues the next requests on
    the open connection until the slow one is answered. Released a second apart, they must
    not then leave together."""
    site = H2Origin(test_ca.server_context(), "User-agent: *\nCrawl-delay: 1\n",
                    delays={"/queued/slow": 3.0}, max_streams=1)
    gate = proxy(robots_max_wait=60, trust_test_ca=True)

    async def run() -> list[tuple[int, str]]:
        async with httpx_async_client(gate, http2=True) as client:
            warm = await client.get(site.url("/warm"))  # the connection, then kept open
            assert warm.http_version == "HTTP/2", warm.http_version
            await asyncio.sleep(1.1)

            async def get(path: str, after: float) -> tuple[int, str]:
                await asyncio.sleep(after)
                answer = await client.get(site.url(path))
                return answer.status_code, answer.http_version

            return await asyncio.gather(*(get(f"/queued/{name}", 0.05 * n)
                                          for n, name in enumerate(["slow", "b", "c"])))

    try:
        assert asyncio.run(run()) == [(200, "HTTP/2")] * 3
        arrivals = sorted(a.arrived for a in site.seen if a.path.startswith("/queued/"))
    finally:
        site.stop()
    assert {a.protocol for a in site.seen if a.path.startswith("/queued/")} == {"h2"}
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert len(arrivals) == 3 and min(gaps) >= 1.0, gaps
