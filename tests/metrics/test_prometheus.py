"""Prometheus metrics: counted by the gate and the addon, served on /metrics."""

import asyncio
import socket
from pathlib import Path

import httpx
import pytest
from mitmproxy import exceptions
from mitmproxy.test import tflow
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.parser import text_string_to_metric_families
from support.driver import driven
from support.gate import wire_gate

from robotsgate.config.assemble import Clocks
from robotsgate.decision.verdict import Request
from robotsgate.metrics.prometheus import WAIT_BUCKETS, Metrics
from robotsgate.mitm import RobotsGate
from robotsgate.origin import Origin
from robotsgate.retrieval.fetch import Fetcher

ROBOTS = b"User-agent: *\nDisallow: /private\nCrawl-delay: 2\n"
NOW = 1_700_000_000.0


def value(metrics: Metrics, name: str, **labels: str) -> float:
    found = metrics.registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def answer(request: httpx.Request) -> httpx.Response:
    if request.url.host == "down.example":
        return httpx.Response(503)
    if request.url.host == "missing.example":
        return httpx.Response(404)
    return httpx.Response(200, content=ROBOTS)


def request(url: str) -> Request:
    u = httpx.URL(url)
    return Request(Origin.of(u.scheme, u.host, u.port), u.raw_path.decode(), "Bot/1.0")


async def test_the_gate_counts_fetches_and_cache_lookups() -> None:
    metrics = Metrics()
    gate = wire_gate(Fetcher(timeout=2, transport=httpx.MockTransport(answer)), lambda: NOW,
                     store_size=10, metrics=metrics).gate
    for url in ("http://a.example/1", "http://a.example/2", "http://a.example/3",
                "http://down.example/1", "http://missing.example/1", "http://missing.example/2"):
        await gate.check(request(url))
    assert value(metrics, "robotsgate_robots_fetches_total", outcome="ok") == 1
    assert value(metrics, "robotsgate_robots_fetches_total", outcome="unreachable") == 1
    assert value(metrics, "robotsgate_robots_fetches_total", outcome="missing") == 1
    assert value(metrics, "robotsgate_robots_cache_misses_total") == 3
    assert value(metrics, "robotsgate_robots_cache_hits_total") == 3


async def test_in_flight_fetches_are_a_gauge() -> None:
    metrics = Metrics()
    release = asyncio.Event()
    started = asyncio.Event()

    async def slow(request: httpx.Request) -> httpx.Response:
        started.set()
        await release.wait()
        return httpx.Response(200, content=ROBOTS)

    gate = wire_gate(Fetcher(timeout=30, transport=httpx.MockTransport(slow)), lambda: NOW,
                     store_size=10, metrics=metrics).gate
    waiting = [asyncio.create_task(gate.check(request(f"http://a.example/{n}")))
               for n in range(5)]
    await started.wait()
    assert value(metrics, "robotsgate_robots_fetches_in_flight") == 1  # five wait for one fetch
    release.set()
    await asyncio.gather(*waiting)
    assert value(metrics, "robotsgate_robots_fetches_in_flight") == 0
    assert value(metrics, "robotsgate_robots_cache_misses_total") == 5


def flow(url: str):  # type: ignore[no-untyped-def]
    f = tflow.tflow()
    f.request.url = url
    f.request.headers["User-Agent"] = "Bot/1.0"
    return f


async def test_the_addon_counts_decisions_by_result_and_reason(tmp_path: Path) -> None:
    slept: list[float] = []
    monotonic = [100.0]

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        monotonic[0] += seconds

    with driven(clocks=Clocks(clock=lambda: NOW, monotonic=lambda: monotonic[0], sleep=sleep),
                transport=httpx.MockTransport(answer), robots_audit_log=str(tmp_path / "a.jsonl"),
                robots_pacing_margin_ms=0) as addon:
        for url in ("http://a.example/private/1", "http://a.example/private/2",
                    "http://a.example/public/1", "http://a.example/public/2",
                    "http://down.example/x", "http://a.example/robots.txt"):
            f = flow(url)
            await addon.request(f)
            addon.responseheaders(f)  # the origin answered (or the proxy did)
        addon.configure(robots_mode="monitor")
        await addon.request(flow("http://a.example/private/3"))
    m = addon.metrics
    assert value(m, "robotsgate_decisions_total", result="blocked", reason="disallowed") == 2
    assert value(m, "robotsgate_decisions_total", result="blocked",
                 reason="robots-unavailable") == 1
    assert value(m, "robotsgate_decisions_total", result="would-block", reason="disallowed") == 1
    # Crawl-delay 2: the first public request goes at once, the second waits its turn.
    assert value(m, "robotsgate_decisions_total", result="forwarded", reason="allowed") == 1
    assert value(m, "robotsgate_decisions_total", result="forwarded", reason="crawl-delay") == 1
    assert value(m, "robotsgate_decisions_total", result="forwarded", reason="robots.txt") == 1
    assert value(m, "robotsgate_wait_seconds_count") == 3
    assert value(m, "robotsgate_wait_seconds_sum") == 2.0
    # The would-block request of monitor mode took its turn too (after the second public one).
    assert slept == [2.0, 2.0]
    assert value(m, "robotsgate_wait_seconds_bucket", le="1.0") == 2
    assert value(m, "robotsgate_wait_seconds_bucket", le="2.5") == 3


def test_two_addons_count_apart() -> None:
    a, b = RobotsGate().runtime, RobotsGate().runtime
    a.metrics.recorded("block", "disallowed")
    assert value(a.metrics, "robotsgate_decisions_total", result="blocked",
                 reason="disallowed") == 1
    assert value(b.metrics, "robotsgate_decisions_total", result="blocked",
                 reason="disallowed") == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_metrics_are_served_on_the_metrics_port_and_stop_with_the_addon(
        tmp_path: Path) -> None:
    port = free_port()
    with driven(clocks=Clocks(clock=lambda: NOW), transport=httpx.MockTransport(answer),
                robots_audit_log=str(tmp_path / "a.jsonl"), robots_metrics_port=port) as addon:
        await addon.request(flow("http://a.example/private/1"))
        async with httpx.AsyncClient(trust_env=False) as client:
            text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
        samples = parse(text)
        assert samples["robotsgate_decisions_total",
                       (("reason", "disallowed"), ("result", "blocked"))] == 1
        assert samples["robotsgate_robots_fetches_total", (("outcome", "ok"),)] == 1
        await addon.done()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", trust_env=False)


def test_a_metrics_port_in_use_is_refused_naming_the_option(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with driven(robots_audit_log=str(tmp_path / "a.jsonl")) as addon, \
                pytest.raises(exceptions.OptionsError, match="robots_metrics_port"):
            addon.configure(robots_metrics_port=taken.getsockname()[1])


def test_waits_land_in_the_buckets_prometheus_client_would_put_them_in() -> None:
    # The waits are counted in plain integers and published at scrape time: the published
    # histogram must be the one prometheus_client's own Histogram makes of the same waits.
    reference_registry = CollectorRegistry()
    reference = Histogram("robotsgate_wait_seconds", "waits", buckets=WAIT_BUCKETS,
                          registry=reference_registry)
    metrics = Metrics()
    # On a bound, between bounds, below the first, past the last.
    for wait in (0.0, 0.0, 0.01, 0.011, 0.25, 1.0, 2.6, 299.9, 300.0, 301.0, 5000.0):
        reference.observe(wait)
        metrics.forwarded("crawl-delay", wait)
    for bound in [*WAIT_BUCKETS, float("inf")]:
        le = "+Inf" if bound == float("inf") else repr(bound)
        expected = reference_registry.get_sample_value("robotsgate_wait_seconds_bucket",
                                                       {"le": le})
        assert value(metrics, "robotsgate_wait_seconds_bucket", le=le) == expected, le
    assert value(metrics, "robotsgate_wait_seconds_count") == 11
    assert value(metrics, "robotsgate_wait_seconds_sum") == pytest.approx(
        reference_registry.get_sample_value("robotsgate_wait_seconds_sum"))
    assert value(metrics, "robotsgate_decisions_total", result="forwarded",
                 reason="crawl-delay") == 11
