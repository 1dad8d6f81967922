"""The Pacing contract, run against every pacer: Pacer (Python), RedisPacer (the same algorithm in
Lua) and the fleet's FleetPacer. This suite is what keeps the two algorithms equal.

    slot = max(now, next, paused_until); next = slot + interval; refused if slot - now > max_wait

Time: the Pacer reads a FakeClock; the Lua script reads Redis's own clock (TIME), which cannot be
injected. "Time passes" is made the same way for both: the FakeClock moves on, and in Redis every
schedule of the test's prefix moves back by as much (the script only ever compares them with
now). Redis's clock still moves with real time while a test runs, so waits are compared with
`near`: less than expected by no more than the real time the test has taken (at least
TOLERANCE), never more. The Redis-backed pacers run on the
shared Redis under a key prefix of the test's own; the fleet's with its fallback `closed`; and
both again on a Redis Cluster of three primaries and three replicas (e2e/redis_cluster.py).
"""

import math
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import httpx
import pytest
from e2e.redis_cluster import shared_cluster
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from support.clock import FakeClock
from support.gate import request_for, wire_gate
from support.origins import Origins, ok

from robotsgate.decision.gate import GateConfig
from robotsgate.rules_cache import RulesCache
from robotsgate.state.fleet import Fleet
from robotsgate.state.pacing import NoSlot, Pacer, Pacing, Slot
from robotsgate.state.redis_pacing import RedisPacer
from robotsgate.state.store import MemoryStore

TOLERANCE = 0.5  # seconds a wait may fall short of the one expected, at the least
# When the running test's Redis-backed pacers were opened (time.monotonic()), None for the Python
# pacer: a schedule in Redis can have moved on by as much real time as has passed since.
_redis_since: list[float | None] = [None]


@dataclass
class Backend:
    """One pacer implementation: proxies sharing one schedule, and a way to let time pass."""

    name: str
    clock: FakeClock
    open: Callable[..., list[Pacing]]  # (count, max_wait=...) -> that many proxies' pacers
    advance: Callable[[float], Awaitable[None]]


@pytest.fixture(params=["memory", "redis", "fleet", "redis-cluster", "fleet-cluster"])
async def backend(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Backend]:
    clock = FakeClock()

    async def advance_clock(seconds: float) -> None:
        clock.now += seconds

    _redis_since[0] = None
    if request.param == "memory":
        def memory(count: int = 1, *, max_wait: float = 1000.0) -> list[Pacing]:
            # One process, one schedule: every "proxy" is the same pacer.
            return [Pacer(clock, max_wait=max_wait, max_hosts=100)] * count

        yield Backend("memory", clock, memory, advance_clock)
        return

    on_cluster = request.param.endswith("-cluster")
    admin: Redis | RedisCluster
    if on_cluster:
        cluster = shared_cluster(tmp_path_factory.getbasetemp() / "redis-cluster")
        url, fleet_url = cluster.node_url(), cluster.url
        prefix = f"robotsgate-test:{secrets.token_hex(8)}:"  # a private cluster: nothing to clean
        admin = RedisCluster.from_url(url)
    else:
        url = fleet_url = request.getfixturevalue("redis_url")
        prefix = request.getfixturevalue("redis_prefix")
        admin = Redis.from_url(url)
    # The schedule is whole from the start: what a fleet whose Redis lost it does first (wait
    # for every proxy to re-assert what it knew) is test_redis's business.
    for epoch in RedisPacer(admin, prefix=prefix, max_wait=1, max_hosts=1).epoch_keys:
        await admin.set(epoch, "0")

    async def advance(seconds: float) -> None:
        await advance_clock(seconds)
        async for key in admin.scan_iter(match=f"{prefix}pace:*"):
            times = await admin.hmget(key, ["next", "paused_until"])
            moved = {name: repr(float(value) - seconds)
                     for name, value in zip(("next", "paused_until"), times, strict=True)
                     if value is not None}
            if moved:
                await admin.hset(key, mapping=moved)

    clients: list[Redis | RedisCluster] = []
    fleets: list[Fleet] = []
    # Clients connected (a cluster's client knows its slots) before the test runs: Redis's
    # clock would otherwise count a connection made between two of a test's calls, on a busy
    # machine more than TOLERANCE.
    ready: list[Redis | RedisCluster] = []
    if request.param.startswith("redis"):
        ready = [RedisCluster.from_url(url) if on_cluster else Redis.from_url(url)
                 for _ in range(2)]
        for client in ready:
            await client.ping()
        clients.extend(ready)

    def redis_pacers(count: int = 1, *, max_wait: float = 1000.0) -> list[Pacing]:
        taken = [ready.pop(0) for _ in range(min(count, len(ready)))]
        made = [RedisCluster.from_url(url) if on_cluster else Redis.from_url(url)
                for _ in range(count - len(taken))]
        clients.extend(made)
        return [RedisPacer(client, prefix=prefix, max_wait=max_wait, max_hosts=100,
                           monotonic=clock) for client in taken + made]

    def fleet_pacers(count: int = 1, *, max_wait: float = 1000.0) -> list[Pacing]:
        rules = RulesCache(10)
        for _ in range(count):
            # idle_ttl 0: no proxy trusts what it knew of an idle host, so that another's
            # schedule reaches it at once (the notice that does it in production is
            # test_redis's business).
            fleets.append(Fleet(fleet_url, prefix=prefix, fallback="closed", clock=clock,
                                rules=rules, local_store=MemoryStore(100, rules),
                                local_pacer=Pacer(clock, max_wait=max_wait, max_hosts=100),
                                max_origins=100, max_wait=max_wait, lock_ttl=10.0,
                                idle_ttl=0.0, monotonic=clock))
        return [fleet.pacer for fleet in fleets[-count:]]

    _redis_since[0] = time.monotonic()  # set up: the test's own calls start now
    if request.param.startswith("redis"):
        yield Backend(request.param, clock, redis_pacers, advance)
    else:
        yield Backend(request.param, clock, fleet_pacers, advance)
    for fleet in fleets:
        await fleet.aclose()
    for client in [*clients, admin]:
        await client.aclose()


def tolerance() -> float:
    """How far short of the expected a wait may fall: TOLERANCE, or on Redis's clock the real
    time the test has taken so far (a busy machine's pauses included), if more."""
    since = _redis_since[0]
    return TOLERANCE if since is None else max(TOLERANCE, time.monotonic() - since)


def near(slot: Slot | NoSlot, expected: float) -> bool:
    value = slot.wait if isinstance(slot, Slot) else slot.retry_after
    return expected - tolerance() <= value <= expected + 1e-3


def slot(wait: float, paused: bool = False) -> Callable[[Slot | NoSlot], bool]:
    return lambda got: isinstance(got, Slot) and got.paused is paused and near(got, wait)


def refusal(retry_after: float, paused: bool = False) -> Callable[[Slot | NoSlot], bool]:
    return lambda got: isinstance(got, NoSlot) and got.paused is paused and \
        near(got, retry_after)


# -- the schedule ---------------------------------------------------------------------------------


async def test_requests_to_a_host_are_spaced_start_to_start_across_proxies(
        backend: Backend) -> None:
    a, b = backend.open(2)
    slots = [await (a if i % 2 else b).reserve("h.example", 10.0) for i in range(4)]
    assert all(slot(10.0 * k)(s) for k, s in enumerate(slots)), slots


async def test_time_that_has_passed_counts_towards_the_interval(backend: Backend) -> None:
    [pacer] = backend.open()
    await pacer.reserve("h.example", 20.0)
    await backend.advance(5.0)
    assert slot(15.0)(got := await pacer.reserve("h.example", 20.0)), got
    await backend.advance(100.0)
    assert await pacer.reserve("h.example", 20.0) == Slot(0.0, False)


async def test_hosts_have_independent_schedules(backend: Backend) -> None:
    [pacer] = backend.open()
    await pacer.reserve("a.example", 50.0)
    assert await pacer.reserve("b.example", 50.0) == Slot(0.0, False)
    assert slot(50.0)(got := await pacer.reserve("a.example", 50.0)), got


async def test_a_shorter_interval_after_a_longer_one_waits_for_the_longer(
        backend: Backend) -> None:
    [pacer] = backend.open()
    await pacer.reserve("h.example", 100.0)
    assert slot(100.0)(got := await pacer.reserve("h.example", 1.0)), got


async def test_an_unpaced_request_waits_only_for_a_paced_one_before_it(backend: Backend) -> None:
    [pacer] = backend.open()
    for _ in range(3):  # nothing scheduled: free, and nothing to remember
        assert await pacer.reserve("h.example", 0.0) == Slot(0.0, False)
    assert await pacer.reserve("h.example", 10.0) == Slot(0.0, False)
    assert slot(10.0)(got := await pacer.reserve("h.example", 0.0)), got
    assert slot(10.0)(got := await pacer.reserve("h.example", 0.0)), got  # took no time itself


async def test_a_wait_beyond_max_wait_is_refused_and_takes_no_slot(backend: Backend) -> None:
    a, b = backend.open(2, max_wait=25.0)
    for k in range(3):
        assert slot(10.0 * k)(got := await (a, b)[k % 2].reserve("h.example", 10.0)), got
    assert refusal(30.0)(got := await a.reserve("h.example", 10.0)), got
    assert refusal(30.0)(got := await b.reserve("h.example", 5.0)), "the schedule moved"
    await backend.advance(10.0)
    assert slot(20.0)(got := await a.reserve("h.example", 10.0)), got


async def test_max_wait_given_with_a_reservation_replaces_the_pacers(backend: Backend) -> None:
    [pacer] = backend.open(max_wait=5.0)
    await pacer.reserve("h.example", 100.0)
    # Never refused (monitor mode: the request goes out anyway, in its turn).
    assert slot(100.0)(got := await pacer.reserve("h.example", 100.0, max_wait=math.inf)), got
    assert refusal(200.0)(got := await pacer.reserve("h.example", 100.0)), got
    [patient] = backend.open(max_wait=1000.0)
    await patient.reserve("p.example", 10.0)
    assert refusal(10.0)(got := await patient.reserve("p.example", 10.0, max_wait=5.0)), got


# -- pushback --------------------------------------------------------------------------------------


async def test_a_pushback_pauses_the_host_for_every_proxy(backend: Backend) -> None:
    a, b = backend.open(2)
    assert await a.pushback("h.example", 30.0) == 30.0
    assert slot(30.0, paused=True)(got := await b.reserve("h.example", 0.0)), got
    assert await b.reserve("other.example", 0.0) == Slot(0.0, False)


async def test_the_schedule_carries_on_after_the_pause(backend: Backend) -> None:
    [pacer] = backend.open()
    await pacer.pushback("h.example", 30.0)
    assert slot(30.0, paused=True)(got := await pacer.reserve("h.example", 100.0)), got
    # Waiting for the previous request's interval now, not for the pause.
    assert slot(130.0, paused=False)(got := await pacer.reserve("h.example", 0.0)), got


async def test_a_pause_shorter_than_the_schedule_moves_nothing(backend: Backend) -> None:
    [pacer] = backend.open()
    await pacer.reserve("h.example", 100.0)
    await pacer.reserve("h.example", 100.0)
    assert await pacer.pushback("h.example", 10.0) == 10.0
    assert slot(200.0, paused=False)(got := await pacer.reserve("h.example", 0.0)), got


async def test_the_longer_pause_wins(backend: Backend) -> None:
    [pacer] = backend.open()
    await pacer.pushback("h.example", 60.0)
    assert await pacer.pushback("h.example", 10.0) == 10.0
    assert slot(60.0, paused=True)(got := await pacer.reserve("h.example", 0.0)), got


async def test_retry_after_is_taken_up_to_an_hour_and_never_below_zero(backend: Backend) -> None:
    [pacer] = backend.open(max_wait=10_000.0)
    assert await pacer.pushback("h.example", 10_000.0) == 3600.0
    assert slot(3600.0, paused=True)(got := await pacer.reserve("h.example", 0.0)), got
    assert await pacer.pushback("other.example", -5.0) == 0.0
    assert await pacer.reserve("other.example", 0.0) == Slot(0.0, False)


async def test_without_retry_after_every_proxys_pushbacks_back_off_together(
        backend: Backend) -> None:
    a, b = backend.open(2, max_wait=10_000.0)
    pauses = [await (a if i % 2 else b).pushback("h.example", None) for i in range(11)]
    assert pauses == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]


async def test_an_ordinary_answer_starts_the_backoff_over(backend: Backend) -> None:
    a, b = backend.open(2, max_wait=10_000.0)
    await a.pushback("h.example", None)
    await b.pushback("h.example", None)
    await a.recovered("h.example")
    assert await b.pushback("h.example", None) == 1.0
    await b.recovered("never-paused.example")  # nothing to start over: no harm
    assert await a.pushback("never-paused.example", None) == 1.0


async def test_only_a_host_that_backed_off_has_a_backoff_to_end(backend: Backend) -> None:
    # Asked of every answer (without I/O): an ordinary answer to a host never paused costs no
    # call to `recovered`, so this must be true whenever `recovered` has something to end.
    a, b = backend.open(2, max_wait=10_000.0)
    assert not a.backing_off("h.example")
    await a.pushback("h.example", None)
    assert a.backing_off("h.example")
    await a.recovered("h.example")
    assert not a.backing_off("h.example")
    assert await b.pushback("h.example", None) == 1.0  # started over


async def test_a_pause_beyond_max_wait_is_refused_as_pushback(backend: Backend) -> None:
    [pacer] = backend.open(max_wait=5.0)
    await pacer.pushback("h.example", 120.0)
    assert refusal(120.0, paused=True)(got := await pacer.reserve("h.example", 0.0)), got


async def test_after_the_pause_requests_flow_again(backend: Backend) -> None:
    [pacer] = backend.open()
    await pacer.pushback("h.example", 10.0)
    await backend.advance(10.0)
    assert await pacer.reserve("h.example", 0.0) == Slot(0.0, False)


# -- through the gate ----------------------------------------------------------------------------


async def test_the_gates_intervals_hold_on_every_pacer(backend: Backend) -> None:
    # The largest of Crawl-delay, Request-rate and the configured floor, plus the margin.
    origins = Origins({"h.example": ok(b"User-agent: *\nCrawl-delay: 20\nRequest-rate: 1/10s\n"),
                       "floor.example": ok(b"User-agent: *\nCrawl-delay: 2\n")})
    [pacer] = backend.open()
    gate = wire_gate(origins.fetcher(), backend.clock, pacer=pacer,
                     config=GateConfig(min_delay=30.0, pacing_margin=0.5)).gate
    first = await gate.check(request_for("http://h.example/a"))
    second = await gate.check(request_for("https://h.example/b"))  # one schedule per host
    assert (first.action, first.wait, first.interval) == ("forward", 0.0, 30.5)
    assert second.reason == "min-delay" and 30.5 - tolerance() <= second.wait <= 30.5 + 1e-3
    assert (await gate.check(request_for("http://floor.example/a"))).wait == 0.0


async def test_a_refusal_reaches_the_gate_as_429(backend: Backend) -> None:
    origins = Origins({"h.example": httpx.Response(200, content=b"User-agent: *\n"
                                                                b"Crawl-delay: 10\n")})
    [pacer] = backend.open(max_wait=15.0)
    gate = wire_gate(origins.fetcher(), backend.clock, pacer=pacer).gate
    verdicts = [await gate.check(request_for("http://h.example/a")) for _ in range(3)]
    assert [v.action for v in verdicts] == ["forward", "forward", "throttle"]
    assert (verdicts[2].status, verdicts[2].reason, verdicts[2].retry_after) == (
        429, "wait-too-long", 20)
