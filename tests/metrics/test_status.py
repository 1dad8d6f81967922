"""The status line (robotsgate.metrics.status): said every robots_status_interval seconds by the
proxy, driven here through the addon with an injected clock whose sleeps end when the test says, so
that nothing waits for real time."""

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mitmproxy.test import tflow
from support.driver import Driven, driven
from support.origins import Origins

from robotsgate.config.assemble import Clocks
from robotsgate.metrics import status
from robotsgate.metrics.prometheus import Metrics
from robotsgate.payments.spending import Money


class Ticks:
    """A clock whose sleeps last until the test ends them: `end(seconds)` moves time on by
    `seconds` and wakes whoever sleeps that long."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self.sleeping: list[tuple[float, asyncio.Future[None]]] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        woken = asyncio.get_running_loop().create_future()
        self.sleeping.append((seconds, woken))
        await woken

    def asleep(self, seconds: float) -> int:
        return sum(1 for slept, woken in self.sleeping if slept == seconds and not woken.done())

    async def end(self, seconds: float) -> None:
        self.now += seconds
        for slept, woken in self.sleeping:
            if slept == seconds and not woken.done():
                woken.set_result(None)
        for _ in range(5):  # let whoever woke run on
            await asyncio.sleep(0)


ROBOTS = {
    "http://example.com/robots.txt": httpx.Response(
        200, content=b"User-agent: *\nDisallow: /private\n"),
    "http://slow.example/robots.txt": httpx.Response(200, content=b"User-agent: *\n"
                                                                   b"Crawl-delay: 2\n"),
}


@pytest.fixture
def ticks() -> Ticks:
    return Ticks()


@pytest.fixture
def proxy(ticks: Ticks, tmp_path: Path) -> Iterator[Driven]:
    with driven(clocks=Clocks(clock=ticks, monotonic=ticks, sleep=ticks.sleep),
                transport=httpx.MockTransport(Origins(ROBOTS)), robots_pacing_margin_ms=0,
                robots_audit_log=str(tmp_path / "audit.jsonl")) as addon:
        yield addon


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.getMessage().startswith("robotsgate: ") and " requests " in
            record.getMessage()]


def flow(url: str):  # type: ignore[no-untyped-def]
    f = tflow.tflow()
    f.request.url = url
    f.request.headers["User-Agent"] = "TestBot/1.0"
    return f


async def test_every_interval_a_line_says_what_the_proxy_did(
        proxy: Driven, ticks: Ticks, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    proxy.configure(robots_status_interval=60)
    proxy.running()
    try:
        await asyncio.sleep(0)
        assert ticks.asleep(60) == 1 and said(caplog) == []
        for url in ("http://example.com/a", "http://example.com/private/b",
                    "http://example.com/private/c", "http://slow.example/1"):
            await proxy.request(flow(url))
        # The second request to slow.example is held for its Crawl-delay: still waiting.
        held = asyncio.ensure_future(proxy.request(flow("http://slow.example/2")))
        await asyncio.sleep(0)
        assert ticks.asleep(2) == 1
        proxy.metrics.charged("USD", 50_000)  # what robotsgate.mitm.payments counts

        await ticks.end(60)

        assert said(caplog) == [
            "robotsgate: 5 requests (at 5/min): 3 forwarded (1 delayed), 2 refused (2 "
            "disallowed); 1 host waiting; 0 robots.txt fetches in flight; spent USD 0.05"]
        held.cancel()  # a bot that gave up waiting: no longer held
        with contextlib.suppress(asyncio.CancelledError):
            await held
        await ticks.end(60)  # nothing new: the rate since the last line is nothing
        assert said(caplog)[1] == (
            "robotsgate: 5 requests (at 0/min): 3 forwarded (1 delayed), 2 refused (2 "
            "disallowed); 0 hosts waiting; 0 robots.txt fetches in flight; spent USD 0.05")
    finally:
        await proxy.done()


async def test_the_interval_is_an_option_and_0_says_nothing(
        proxy: Driven, ticks: Ticks, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    proxy.configure(robots_status_interval=0)
    proxy.running()
    try:
        await asyncio.sleep(0)
        assert ticks.sleeping == []
        proxy.configure(robots_status_interval=5)  # a running proxy: at once
        await asyncio.sleep(0)
        await ticks.end(5)
        assert len(said(caplog)) == 1
        proxy.configure(robots_status_interval=0)
        await ticks.end(5)
        assert len(said(caplog)) == 1
    finally:
        await proxy.done()


def test_the_default_is_a_line_a_minute() -> None:
    from robotsgate.config.options import SPECS

    assert SPECS["robots_status_interval"].default == 60


def test_a_reading_counts_what_the_metrics_count() -> None:
    metrics, held = Metrics(), status.Held()
    metrics.forwarded("allowed", 0.0)
    metrics.forwarded("crawl-delay", 0.5)
    metrics.recorded("block", "robots-unavailable")
    metrics.recorded("would-block", "disallowed")
    metrics.recorded("withheld", "usage-preference")  # forwarded already: not a request again
    metrics.charged("EUR", 10_000)
    metrics.charged("USD", 1_000_000)
    held.arrive("a.example")
    held.arrive("a.example")
    held.arrive("b.example")
    held.leave("b.example")
    with metrics.fetching():
        reading = status.read(metrics, held)
    assert reading == status.Counts(
        forwarded=2, delayed=1, refused={"robots-unavailable": 1},
        would_refuse={"disallowed": 1}, hosts_waiting=1, fetching=1,
        spent=(Money("EUR", 10_000), Money("USD", 1_000_000)))
    assert reading.requests == 4
    assert status.line(reading, status.Counts(), 120) == (
        "robotsgate: 4 requests (at 2/min): 2 forwarded (1 delayed), 1 refused (1 "
        "robots-unavailable), 1 forwarded that enforce mode would refuse (1 disallowed); "
        "1 host waiting; 1 robots.txt fetch in flight; spent EUR 0.01, USD 1.00")


def test_the_proxy_page_shows_the_line_the_proxy_says() -> None:
    """docs/operating/proxy.md's example, written by `line` from the numbers it shows."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "operating" / "proxy.md").read_text()
    [shown] = [text for text in page.split("```") if text.strip().startswith(
        "robotsgate: 1,204 requests")]
    now = status.Counts(forwarded=1150, delayed=310,
                         refused={"disallowed": 41, "robots-unavailable": 13},
                         hosts_waiting=3, fetching=1, spent=(Money("USD", 50_000),))
    before = status.Counts(forwarded=1108, refused={"disallowed": 0})
    assert status.line(now, before, 60) == shown.strip()
