"""Politeness with a fake clock: nothing here sleeps.

The schedule itself (spacing, refusals, pushback, backoff) is the Pacing contract, run against
every pacer in tests/state/test_pacing_contract.py. Here: Retry-After, Visit-time windows, and
the intervals the gate asks the pacer for.
"""

from datetime import UTC, datetime, time
from email.utils import format_datetime
from typing import Any

import pytest
from support.clock import FakeClock
from support.gate import request_for, wire_gate
from support.origins import Origins, ok

from robotsgate.decision.gate import Gate, GateConfig
from robotsgate.decision.verdict import Request
from robotsgate.protocol import VisitTime, seconds_until_open
from robotsgate.state.pacing import parse_retry_after


def at(hour: int, minute: int = 0, second: int = 0) -> float:
    return datetime(2026, 11, 21, hour, minute, second, tzinfo=UTC).timestamp()


# -- Retry-After ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "seconds"), [
    ("120", 120.0), (" 5 ", 5.0), ("0", 0.0), (None, None), ("", None), ("soon", None),
    ("-5", None), ("1.5", None),
])
def test_retry_after_seconds(value, seconds):
    assert parse_retry_after(value, 1_700_000_000.0) == seconds


def test_retry_after_http_date():
    now = 1_700_000_000.0
    date = format_datetime(datetime.fromtimestamp(now + 90, UTC), usegmt=True)
    assert parse_retry_after(date, now) == pytest.approx(90, abs=1)
    past = format_datetime(datetime.fromtimestamp(now - 90, UTC), usegmt=True)
    assert parse_retry_after(past, now) == 0.0


# -- Visit-time ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("window", "now", "closed_for"), [
    ((time(9), time(17)), at(12), 0),
    ((time(9), time(17)), at(8, 59, 30), 30),
    ((time(9), time(17)), at(17), 16 * 3600),
    ((time(9), time(17)), at(23), 10 * 3600),
    # across midnight: 22:00-06:00
    ((time(22), time(6)), at(23), 0),
    ((time(22), time(6)), at(2), 0),
    ((time(22), time(6)), at(6), 16 * 3600),
    ((time(22), time(6)), at(21, 30), 1800),
])
def test_seconds_until_the_visit_window_opens(window, now, closed_for):
    assert seconds_until_open(VisitTime(*window), now) == closed_for


# -- the gate's politeness decisions --------------------------------------------------------------

def gate_for(body: bytes, clock: FakeClock, max_wait: float = 60.0, **config: Any) -> Gate:
    """h.example serves `body`; `config` is the GateConfig (min_delay=...)."""
    origins = Origins({"h.example": ok(body)})
    return wire_gate(origins.fetcher(), clock, max_wait=max_wait,
                     config=GateConfig(**config)).gate


def request(url: str, user_agent: str = "curl/8") -> Request:
    return request_for(url, user_agent)


async def test_crawl_delay_spaces_requests_with_fractions():
    clock = FakeClock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 0.5\n", clock)
    waits = [(await gate.check(request("http://h.example/a"))).wait for _ in range(3)]
    assert waits == [0.0, 0.5, 1.0]


async def test_request_rate_is_converted_to_seconds_per_request():
    clock = FakeClock()
    gate = gate_for(b"User-agent: *\nRequest-rate: 3/1m\n", clock)
    await gate.check(request("http://h.example/a"))
    second = await gate.check(request("http://h.example/b"))
    assert second.wait == 20.0 and second.reason == "request-rate"


async def test_two_bots_share_one_budget_per_host():
    clock = FakeClock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 1\n", clock)
    await gate.check(request("http://h.example/a", "OneBot"))
    assert (await gate.check(request("http://h.example/a", "OtherBot"))).wait == 1.0


async def test_each_agent_gets_its_own_groups_delay():
    clock = FakeClock()
    body = b"User-agent: SlowBot\nCrawl-delay: 5\nAllow: /\n\nUser-agent: *\nCrawl-delay: 1\n"
    gate = gate_for(body, clock)
    await gate.check(request("http://h.example/a", "SlowBot/1.0"))
    after_slow = await gate.check(request("http://h.example/a", "curl"))
    assert after_slow.wait == 5.0


async def test_a_long_crawl_delay_is_clamped_and_says_what_was_asked():
    clock = FakeClock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 600\n", clock, max_crawl_delay=30, max_wait=300)
    first = await gate.check(request("http://h.example/a"))
    assert first.action == "forward" and first.reason == "crawl-delay-clamped"
    assert first.asked_delay == 600.0
    second = await gate.check(request("http://h.example/b"))
    assert second.wait == 30.0 and second.asked_delay == 600.0


async def test_a_long_crawl_delay_can_be_refused():
    clock = FakeClock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 600\n", clock, max_crawl_delay=30,
                    on_long_delay="refuse")
    verdict = await gate.check(request("http://h.example/a"))
    assert verdict.action == "throttle" and verdict.status == 429
    assert verdict.reason == "crawl-delay-too-long" and verdict.asked_delay == 600.0


async def test_outside_visit_time_is_503_until_the_window_opens():
    clock = FakeClock(at(5))
    gate = gate_for(b"User-agent: *\nVisit-time: 0600-0845\n", clock)
    closed = await gate.check(request("http://h.example/a"))
    assert closed.action == "closed" and closed.status == 503 and closed.retry_after == 3600
    clock.now = at(7)
    assert (await gate.check(request("http://h.example/a"))).action == "forward"


async def test_disallowed_requests_take_no_slot():
    clock = FakeClock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 3\nDisallow: /private\n", clock)
    await gate.check(request("http://h.example/private"))
    assert (await gate.check(request("http://h.example/a"))).wait == 0.0


async def test_two_crawl_delays_in_one_merged_group_keep_the_longer():
    # No rule between them: RFC 9309 reads both User-agent lines as one group.
    clock = FakeClock()
    body = b"User-agent: SlowBot\nCrawl-delay: 5\n\nUser-agent: *\nCrawl-delay: 1\n"
    gate = gate_for(body, clock)
    await gate.check(request("http://h.example/a", "curl"))
    assert (await gate.check(request("http://h.example/a", "curl"))).wait == 5.0
