"""Paced requests take turns by when the previous one really left (state/departures.py)."""

import asyncio

import pytest
from support.clock import FakeClock

from robotsgate.state.departures import CONFIRM_TIMEOUT, Departures

# Small numbers: pytest.approx's relative tolerance would swallow milliseconds at 1.7e9.
START = 1000.0


def on_a_fake_clock(confirm_timeout: float = CONFIRM_TIMEOUT) -> tuple[FakeClock, Departures]:
    """Departures of up to ten hosts whose time (``monotonic`` and ``sleep``) is one FakeClock's,
    at START."""
    clock = FakeClock(START)
    return clock, Departures(clock, clock.sleep, max_hosts=10, confirm_timeout=confirm_timeout)


async def release(departures: Departures, flow: str, *, interval: float = 1.0,
                  tls: bool = False, host: str = "a.example") -> None:
    async with departures.turn(host, interval, flow, tls=tls):
        pass


async def test_a_late_departure_pushes_the_next_request_back() -> None:
    clock, departures = on_a_fake_clock()
    await release(departures, "first")
    released = clock.now
    clock.now += 0.030  # its connection took 30 ms to open: that is when it left
    departures.connected("a.example", tls=False)
    await release(departures, "second")
    # One whole interval after it really left, not after its release.
    assert clock.now == pytest.approx(released + 1.030)


async def test_another_clients_connection_to_the_host_confirms_nothing() -> None:
    clock, departures = on_a_fake_clock()
    async with departures.turn("a.example", 1.0, "first", tls=True, client="bot"):
        pass
    released = clock.now
    clock.now += 0.010
    # Someone else's tunnel to the same host, opened eagerly: the request is not out yet.
    departures.connected("a.example", tls=True, client="other")
    clock.now += 0.040
    departures.connected("a.example", tls=True, client="bot")
    await release(departures, "second", tls=True)
    assert clock.now == pytest.approx(released + 1.050)


async def test_a_request_on_an_open_connection_left_when_it_was_released() -> None:
    clock, departures = on_a_fake_clock()
    await release(departures, "first")
    clock.now += 0.5  # its answer came half a second later, with no connection opened for it
    departures.settled("a.example", "first")
    await release(departures, "second")
    assert clock.sleeps == [0.5]


async def test_https_leaves_once_the_handshake_is_done() -> None:
    clock, departures = on_a_fake_clock()
    await release(departures, "first", tls=True)
    released = clock.now
    clock.now += 0.010
    departures.connected("a.example", tls=False)  # TCP up: the request is not out yet
    clock.now += 0.040
    departures.connected("a.example", tls=True)
    await release(departures, "second", tls=True)
    assert clock.now == pytest.approx(released + 1.050)


async def test_the_next_request_waits_for_the_previous_to_be_confirmed() -> None:
    clock, departures = on_a_fake_clock()
    await release(departures, "first")
    second = asyncio.create_task(release(departures, "second"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not second.done()  # the first one's connection is still opening
    clock.now += 0.2
    departures.connected("a.example", tls=False)
    await second
    assert clock.sleeps == [1.0]


async def test_turns_are_taken_in_arrival_order() -> None:
    clock, departures = on_a_fake_clock()
    order: list[str] = []

    async def one(flow: str) -> None:
        async with departures.turn("a.example", 1.0, flow, tls=False):
            order.append(flow)
        departures.settled("a.example", flow)

    await asyncio.gather(*(one(f"f{i}") for i in range(5)))
    assert order == ["f0", "f1", "f2", "f3", "f4"]
    assert clock.sleeps == [1.0] * 4


async def test_an_answer_to_another_request_confirms_nothing() -> None:
    clock, departures = on_a_fake_clock(confirm_timeout=0.05)
    await release(departures, "first")
    departures.settled("a.example", "someone-else")
    clock.now += 3.0
    await release(departures, "second")  # gives up waiting after confirm_timeout
    # Taken as having left when the wait gave up (now): a whole interval from then.
    assert clock.sleeps == [1.0]


async def test_hosts_do_not_wait_for_each_other() -> None:
    clock, departures = on_a_fake_clock()
    await release(departures, "first", host="a.example")
    await release(departures, "second", host="b.example")
    assert clock.sleeps == []
