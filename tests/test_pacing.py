"""Politeness with a fake clock: nothing here sleeps."""

import itertools
from datetime import UTC, datetime, time
from email.utils import format_datetime

import httpx
import pytest

from robotsgate.fetch import Fetcher
from robotsgate.gate import Gate, GateConfig, Request
from robotsgate.origin import Origin
from robotsgate.pacing import Pacer, Refusal, Slot, parse_retry_after, seconds_until_open
from robotsgate.protocol import VisitTime
from robotsgate.store import MemoryStore


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def at(hour: int, minute: int = 0, second: int = 0) -> float:
    return datetime(2026, 11, 21, hour, minute, second, tzinfo=UTC).timestamp()


# -- the schedule -------------------------------------------------------------------------------

async def test_requests_to_one_host_are_spaced_start_to_start():
    clock = Clock()
    pacer = Pacer(clock, max_wait=60, max_hosts=10)
    waits = [await pacer.reserve("example.com", 1.0) for _ in range(4)]
    assert waits == [Slot(0.0, False), Slot(1.0, False), Slot(2.0, False), Slot(3.0, False)]


async def test_time_that_has_passed_counts_towards_the_interval():
    clock = Clock()
    pacer = Pacer(clock, max_wait=60, max_hosts=10)
    await pacer.reserve("example.com", 2.0)
    clock.now += 0.5
    assert (await pacer.reserve("example.com", 2.0)).wait == pytest.approx(1.5)
    clock.now += 10
    assert (await pacer.reserve("example.com", 2.0)).wait == 0.0


async def test_slots_are_handed_out_in_arrival_order():
    clock = Clock()
    pacer = Pacer(clock, max_wait=600, max_hosts=10)
    starts = []
    for i in range(20):
        clock.now += 0.01 * (i % 3)
        slot = await pacer.reserve("example.com", 0.5)
        assert isinstance(slot, Slot)
        starts.append(clock.now + slot.wait)
    assert starts == sorted(starts)
    assert all(b - a >= 0.5 - 1e-9 for a, b in itertools.pairwise(starts))


async def test_hosts_have_independent_schedules():
    pacer = Pacer(Clock(), max_wait=60, max_hosts=10)
    await pacer.reserve("a.example", 5.0)
    assert (await pacer.reserve("b.example", 5.0)).wait == 0.0
    assert (await pacer.reserve("a.example", 5.0)).wait == 5.0


async def test_a_wait_longer_than_max_wait_is_refused_and_takes_no_slot():
    pacer = Pacer(Clock(), max_wait=2, max_hosts=10)
    assert [s.wait for s in [await pacer.reserve("h", 1.0) for _ in range(3)]] == [0, 1, 2]  # type: ignore[union-attr]
    refused = await pacer.reserve("h", 1.0)
    assert isinstance(refused, Refusal) and refused.retry_after == 3.0
    assert await pacer.reserve("h", 0.5) == Refusal(3.0, False), \
        "the refusal must not move the schedule"


async def test_a_shorter_interval_after_a_longer_one_waits_for_the_longer():
    pacer = Pacer(Clock(), max_wait=60, max_hosts=10)
    await pacer.reserve("h", 10.0)
    assert (await pacer.reserve("h", 1.0)).wait == 10.0


# -- pushback --------------------------------------------------------------------------------------

async def test_pushback_with_retry_after_pauses_the_host_for_everyone():
    clock = Clock()
    pacer = Pacer(clock, max_wait=60, max_hosts=10)
    assert await pacer.pushback("h", 30.0) == 30.0
    slot = await pacer.reserve("h", 0.0)
    assert slot == Slot(30.0, True)
    assert await pacer.reserve("other", 0.0) == Slot(0.0, False)


async def test_pushback_without_retry_after_backs_off_exponentially_up_to_the_cap():
    clock = Clock()
    pacer = Pacer(clock, max_wait=600, max_hosts=10, backoff_base=1.0, backoff_cap=10.0)
    assert [await pacer.pushback("h", None) for _ in range(6)] == [1, 2, 4, 8, 10, 10]


async def test_recovery_resets_the_backoff():
    clock = Clock()
    pacer = Pacer(clock, max_wait=600, max_hosts=10, backoff_base=1.0, backoff_cap=100.0)
    await pacer.pushback("h", None)
    await pacer.pushback("h", None)
    await pacer.recovered("h")
    assert await pacer.pushback("h", None) == 1


async def test_a_pause_longer_than_max_wait_is_refused_as_pushback():
    pacer = Pacer(Clock(), max_wait=5, max_hosts=10)
    await pacer.pushback("h", 120.0)
    assert await pacer.reserve("h", 0.0) == Refusal(120.0, True)


async def test_after_the_pause_requests_flow_again():
    clock = Clock()
    pacer = Pacer(clock, max_wait=60, max_hosts=10)
    await pacer.pushback("h", 10.0)
    clock.now += 10
    assert await pacer.reserve("h", 0.0) == Slot(0.0, False)


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

def gate_for(body: bytes, clock: Clock, **config: object) -> Gate:
    async def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body)

    fetcher = Fetcher(timeout=2, transport=httpx.MockTransport(answer))
    pacer = Pacer(clock, max_wait=int(config.pop("max_wait", 60)), max_hosts=100)  # type: ignore[call-overload]
    return Gate(GateConfig(**config), fetcher, MemoryStore(100), clock, pacer)  # type: ignore[arg-type]


def request(url: str, user_agent: str = "curl/8") -> Request:
    u = httpx.URL(url)
    return Request(Origin.of(u.scheme, u.host, u.port), u.raw_path.decode(), user_agent)


async def test_crawl_delay_spaces_requests_with_fractions():
    clock = Clock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 0.5\n", clock)
    waits = [(await gate.check(request("http://h.example/a"))).wait for _ in range(3)]
    assert waits == [0.0, 0.5, 1.0]


async def test_request_rate_is_converted_to_seconds_per_request():
    clock = Clock()
    gate = gate_for(b"User-agent: *\nRequest-rate: 3/1m\n", clock)
    await gate.check(request("http://h.example/a"))
    second = await gate.check(request("http://h.example/b"))
    assert second.wait == 20.0 and second.reason == "request-rate"


async def test_the_largest_of_crawl_delay_request_rate_and_the_floor_wins():
    clock = Clock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 2\nRequest-rate: 1/1s\n", clock, min_delay=3.0)
    await gate.check(request("http://h.example/a"))
    second = await gate.check(request("http://h.example/b"))
    assert second.wait == 3.0 and second.reason == "min-delay"


async def test_http_and_https_of_a_host_share_one_schedule():
    clock = Clock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 4\n", clock)
    await gate.check(request("http://h.example/a"))
    assert (await gate.check(request("https://h.example/a"))).wait == 4.0


async def test_two_bots_share_one_budget_per_host():
    clock = Clock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 1\n", clock)
    await gate.check(request("http://h.example/a", "OneBot"))
    assert (await gate.check(request("http://h.example/a", "OtherBot"))).wait == 1.0


async def test_each_agent_gets_its_own_groups_delay():
    clock = Clock()
    body = b"User-agent: SlowBot\nCrawl-delay: 5\nAllow: /\n\nUser-agent: *\nCrawl-delay: 1\n"
    gate = gate_for(body, clock)
    await gate.check(request("http://h.example/a", "SlowBot/1.0"))
    after_slow = await gate.check(request("http://h.example/a", "curl"))
    assert after_slow.wait == 5.0


async def test_a_long_crawl_delay_is_clamped_and_says_what_was_asked():
    clock = Clock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 600\n", clock, max_crawl_delay=30, max_wait=300)
    first = await gate.check(request("http://h.example/a"))
    assert first.action == "forward" and first.reason == "crawl-delay-clamped"
    assert first.asked_delay == 600.0
    second = await gate.check(request("http://h.example/b"))
    assert second.wait == 30.0 and second.asked_delay == 600.0


async def test_a_long_crawl_delay_can_be_refused():
    clock = Clock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 600\n", clock, max_crawl_delay=30,
                    on_long_delay="refuse")
    verdict = await gate.check(request("http://h.example/a"))
    assert verdict.action == "throttle" and verdict.status == 429
    assert verdict.reason == "crawl-delay-too-long" and verdict.asked_delay == 600.0


async def test_a_wait_beyond_max_wait_is_answered_429_with_retry_after():
    clock = Clock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 10\n", clock, max_wait=15)
    verdicts = [await gate.check(request("http://h.example/a")) for _ in range(3)]
    assert [v.action for v in verdicts] == ["forward", "forward", "throttle"]
    assert verdicts[2].status == 429 and verdicts[2].retry_after == 20
    assert verdicts[2].reason == "wait-too-long"


async def test_outside_visit_time_is_503_until_the_window_opens():
    clock = Clock(at(5))
    gate = gate_for(b"User-agent: *\nVisit-time: 0600-0845\n", clock)
    closed = await gate.check(request("http://h.example/a"))
    assert closed.action == "closed" and closed.status == 503 and closed.retry_after == 3600
    clock.now = at(7)
    assert (await gate.check(request("http://h.example/a"))).action == "forward"


async def test_disallowed_requests_take_no_slot():
    clock = Clock()
    gate = gate_for(b"User-agent: *\nCrawl-delay: 3\nDisallow: /private\n", clock)
    await gate.check(request("http://h.example/private"))
    assert (await gate.check(request("http://h.example/a"))).wait == 0.0


async def test_two_crawl_delays_in_one_merged_group_keep_the_longer():
    # No rule between them: RFC 9309 reads both User-agent lines as one group.
    clock = Clock()
    body = b"User-agent: SlowBot\nCrawl-delay: 5\n\nUser-agent: *\nCrawl-delay: 1\n"
    gate = gate_for(body, clock)
    await gate.check(request("http://h.example/a", "curl"))
    assert (await gate.check(request("http://h.example/a", "curl"))).wait == 5.0
