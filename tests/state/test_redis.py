"""What only the Redis-backed state does, against a real Redis (127.0.0.1:6379).

What every store and every pacer does (Redis's among them) is in tests/state/, the contract
suites. Here: how long Redis keeps an entry, the mirror each proxy keeps, the fetch lock, the
round trips the pacer saves, the fleet's notices and its outages, and the fleet options.

Each test has its own random key prefix and deletes its keys afterwards. Tests that stop Redis
start their own redis-server on a free port. Several "proxies" are several store/pacer/gate
objects on one Redis, each with its own connection, as separate processes would have.
"""

import asyncio
import hashlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import pytest
from e2e.redis_cluster import cluster_port
from e2e.redis_server import RedisServer
from mitmproxy import exceptions
from mitmproxy.test import tflow
from redis.asyncio import Redis
from redis.exceptions import ResponseError
from support.driver import driven
from support.gate import request_for, wire_gate
from support.origins import Origins, ok
from support.relay import Relay

from robotsgate.decision.gate import Gate
from robotsgate.mitm.flow import state
from robotsgate.rules_cache import RulesCache
from robotsgate.state.departures import Departures
from robotsgate.state.fleet import Fleet, SharedStateUnavailable
from robotsgate.state.pacing import Pacer, Slot
from robotsgate.state.redis_clock import RedisClock
from robotsgate.state.redis_departures import RedisDepartures
from robotsgate.state.redis_pacing import RedisPacer
from robotsgate.state.redis_politeness import PROGRAM, TRANSITIONS, Program
from robotsgate.state.redis_store import RedisStore
from robotsgate.state.redis_url import check_url, redacted
from robotsgate.state.store import MemoryStore, RobotsEntry

ROBOTS = b"User-agent: *\nDisallow: /private\n"
NOW = time.time


def redis_store(client: Redis, prefix: str, rules: RulesCache | None = None,
                **kwargs: float) -> RedisStore:
    options: dict[str, float] = {"lock_ttl": 10.0, **kwargs}
    return RedisStore(client, prefix=prefix, clock=NOW,
                      rules=RulesCache(10) if rules is None else rules,
                      max_origins=100, **options)


# The key under which a gate keeps a.example's robots.txt for request_for()'s TestBot.
A_KEY = "http://a.example *"  # the copy for bots named by their User-Agent


def entry(kind: str = "ok", body: bytes = ROBOTS, expires_in: float = 3600.0,
          error: str | None = None) -> RobotsEntry:
    now = NOW()
    sha = hashlib.sha256(body).hexdigest() if kind == "ok" else None
    status = {"ok": 200, "missing": 404, "unreachable": 503}[kind]
    return RobotsEntry(kind, "http://a.example/robots.txt", None, status,  # type: ignore[arg-type]
                       sha, now - 1.5, now + expires_in, error, body)


def gate_on(store: RedisStore, origins: Origins, rules: RulesCache) -> Gate:
    return wire_gate(origins.fetcher(timeout=5), NOW, store=store, rules=rules).gate


class Timed:
    """robots.txt answered 200, and when each fetch reached the origin (monotonic seconds)."""

    def __init__(self) -> None:
        self.started: list[float] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.started.append(time.monotonic())
        return httpx.Response(200, content=ROBOTS)


# -- the store ------------------------------------------------------------------------------------

async def test_a_stale_copy_outlives_its_expiry_in_redis(redis_clients, redis_prefix):
    client = redis_clients()
    store = redis_store(client, redis_prefix, keep_stale=600.0)
    await store.put("http://a.example", entry(expires_in=10.0))
    assert await client.pttl(store.key("http://a.example")) > 600_000  # 10 s + 600 s to keep


async def test_a_proxy_answers_from_its_mirror_without_asking_redis(redis_clients, redis_prefix):
    client = redis_clients()
    writer = redis_store(client, redis_prefix)
    mirrored = redis_store(redis_clients(), redis_prefix)
    unmirrored = redis_store(redis_clients(), redis_prefix, mirror_ttl=0.0)
    await writer.put("http://a.example", entry())
    assert await mirrored.get("http://a.example") is not None
    assert await unmirrored.get("http://a.example") is not None
    await client.delete(writer.key("http://a.example"))
    assert await mirrored.get("http://a.example") is not None
    assert await unmirrored.get("http://a.example") is None


async def test_freshness_is_judged_on_redis_clock_not_the_writers(redis_clients, redis_prefix):
    rules = RulesCache(10)
    ahead = RedisStore(redis_clients(), prefix=redis_prefix, clock=lambda: time.time() + 3600,
                       rules=rules, max_origins=100, lock_ttl=10.0)
    behind = RedisStore(redis_clients(), prefix=redis_prefix, clock=lambda: time.time() - 3600,
                        rules=rules, max_origins=100, lock_ttl=10.0)
    on_time = redis_store(redis_clients(), redis_prefix, rules)
    # Written by a proxy an hour ahead, fresh for 60 s from its fetch.
    written = time.time() + 3600
    await ahead.put("http://a.example", RobotsEntry(
        "ok", "http://a.example/robots.txt", None, 200, hashlib.sha256(ROBOTS).hexdigest(),
        written, written + 60, None, ROBOTS))
    for reader, clock in ((on_time, 0.0), (behind, -3600.0)):
        read = await reader.get("http://a.example")
        assert read is not None
        # Fresh for 60 s on the reader's own clock, whatever the writer's said.
        expires_in = read.expires_at - (time.time() + clock)
        assert 50 < expires_in <= 61, expires_in
        assert abs(read.fetched_at - (time.time() + clock)) < 10


async def test_something_else_under_the_key_counts_as_no_entry(redis_clients, redis_prefix):
    client = redis_clients()
    store = redis_store(client, redis_prefix)
    await client.hset(store.key("http://a.example"), mapping={"kind": "ok", "robots_url": "x"})
    assert await store.get("http://a.example") is None


# -- the fetch lock -------------------------------------------------------------------------------

async def test_a_dead_holders_lock_is_taken_over_when_it_expires(redis_clients, redis_prefix):
    client = redis_clients()
    rules = RulesCache(10)
    store = redis_store(client, redis_prefix, rules)
    # Another proxy took the lock and died: nobody will publish or release.
    await client.set(store.lock_key(A_KEY), "dead", px=400)
    taken = time.monotonic()
    timed = Timed()
    origins = Origins({"a.example": timed})
    verdict = await gate_on(store, origins, rules).check(request_for("http://a.example/page"))
    assert verdict.action == "forward" and origins.fetches == 1
    assert timed.started[0] - taken >= 0.39, "fetched while the lock was still held"


async def test_a_holder_whose_fetch_failed_lets_the_others_take_over(redis_clients, redis_prefix):
    holder_store = redis_store(redis_clients(), redis_prefix)
    waiter_store = redis_store(redis_clients(), redis_prefix)
    fetching = asyncio.Event()
    fetched_by_waiter: list[bool] = []

    async def broken() -> RobotsEntry:
        fetching.set()
        await asyncio.sleep(0.2)
        raise RuntimeError("the holder failed")

    async def works() -> RobotsEntry:
        fetched_by_waiter.append(True)
        await waiter_store.put("http://a.example", entry())
        return entry()

    holder = asyncio.create_task(holder_store.refresh("http://a.example", None, broken))
    await fetching.wait()  # the holder has the lock
    result = await waiter_store.refresh("http://a.example", None, works)
    with pytest.raises(RuntimeError):
        await holder
    assert result.kind == "ok" and fetched_by_waiter == [True]


async def test_the_lock_is_renewed_while_its_fetch_runs_past_its_lease(redis_clients,
                                                                       redis_prefix):
    lease = 0.3
    holder_store = redis_store(redis_clients(), redis_prefix, lock_ttl=lease)
    waiter_store = redis_store(redis_clients(), redis_prefix, lock_ttl=lease)
    client = redis_clients()
    fetching = asyncio.Event()
    leases: list[int] = []
    waiter_fetched: list[bool] = []

    async def slow() -> RobotsEntry:
        fetching.set()
        for _ in range(8):  # several leases long
            await asyncio.sleep(lease / 2)
            leases.append(await client.pttl(holder_store.lock_key("http://a.example")))
        await holder_store.put("http://a.example", entry())
        return entry()

    async def waiter_fetch() -> RobotsEntry:
        waiter_fetched.append(True)
        return entry()

    holder = asyncio.create_task(holder_store.refresh("http://a.example", None, slow))
    await fetching.wait()
    result = await waiter_store.refresh("http://a.example", None, waiter_fetch)
    await holder
    assert waiter_fetched == [], "the waiter took over a lock whose holder was still fetching"
    assert result.kind == "ok" and waiter_store.fetches_waited == 1
    # Held all along, and never for much longer than a lease from any moment.
    assert leases and all(0 < ms <= lease * 1000 for ms in leases), leases


# -- the shared schedule --------------------------------------------------------------------------

def redis_pacer(client: Redis, prefix: str, **kwargs: float) -> RedisPacer:
    options: dict[str, float] = {"max_wait": 1000.0, "regroup": 0.1, **kwargs}
    return RedisPacer(client, prefix=prefix, max_hosts=100, **options)  # type: ignore[arg-type]


async def test_the_politeness_program_runs_its_transitions_and_no_other(
        redis_clients, redis_prefix):
    client = redis_clients()
    program = Program(client, RedisClock(client))
    table = PROGRAM[PROGRAM.index("local transitions = {"):PROGRAM.index("}", PROGRAM.index(
        "local transitions = {"))]
    assert sorted(TRANSITIONS) == sorted(
        name.split("=")[0].strip() for name in table.split("{")[1].split(","))
    key = f"{redis_prefix}pace:h.example"
    assert await program.run("recovered", [key], []) == 0
    with pytest.raises(ResponseError, match="no transition reserve2"):
        await program.run("reserve2", [key], [])
    with pytest.raises(ResponseError, match="LATE"):  # a fenced run past its deadline
        await client.register_script(PROGRAM)(keys=[key], args=["1", "recovered"])


async def test_ordinary_answers_cost_no_round_trip(redis_clients, redis_prefix):
    pacer = redis_pacer(redis_clients(), redis_prefix)
    await pacer.recovered("h.example")
    assert pacer.round_trips == 0


# -- the fleet: notices, outages ------------------------------------------------------------------

def fleet_on(url: str, prefix: str, fallback: str = "closed", rules: RulesCache | None = None,
             **kwargs: float) -> Fleet:
    rules = RulesCache(10) if rules is None else rules
    # A new fleet's first reservation waits for every proxy to re-assert what it knew (nothing
    # here): kept short, except where that is what a test is about.
    options: dict[str, float] = {"regroup": 0.1, **kwargs}
    return Fleet(url, prefix=prefix, fallback=fallback, clock=NOW,  # type: ignore[arg-type]
                 rules=rules, local_store=MemoryStore(100, rules),
                 local_pacer=Pacer(time.monotonic, max_wait=1000, max_hosts=100),
                 max_origins=100, max_wait=1000, lock_ttl=10, retry_interval=0.05, **options)


async def until(condition: Callable[[], Awaitable[bool]] | Callable[[], bool],
                what: str, timeout: float = 10.0) -> None:
    """Wait (bounded) for something another connection or process does."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        assert time.monotonic() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.01)


@pytest.fixture
async def fleets() -> AsyncIterator[list[Fleet]]:
    made: list[Fleet] = []
    yield made
    for fleet in made:
        await fleet.aclose()


@pytest.fixture
def shared_fleet(redis_url: str, redis_prefix: str, fleets: list[Fleet]
                 ) -> Callable[..., Fleet]:
    """Factory: one more proxy's Fleet on the shared Redis, under the test's prefix."""

    def make(**kwargs: float) -> Fleet:
        fleet = fleet_on(redis_url, redis_prefix, **kwargs)
        fleets.append(fleet)
        return fleet

    return make


async def test_a_host_with_no_delay_costs_no_round_trip_once_known_idle(shared_fleet):
    fleet = shared_fleet()
    await fleet.pacer.reserve("h.example", 0.0)
    await until(lambda: fleet.shared_pacer.is_listening, "subscribed")
    await fleet.pacer.reserve("h.example", 0.0)
    trips = fleet.shared_pacer.round_trips
    for _ in range(10):
        assert await fleet.pacer.reserve("h.example", 0.0) == Slot(0.0, False)
    assert fleet.shared_pacer.round_trips == trips


async def test_another_proxys_pause_reaches_a_host_known_idle(shared_fleet):
    # idle_ttl is long: only the notice can make the idle host paused here.
    a, b = shared_fleet(idle_ttl=600), shared_fleet(idle_ttl=600)
    a.start()
    await b.pacer.reserve("h.example", 0.0)
    await until(lambda: b.shared_pacer.is_listening and a.shared_pacer.is_listening, "subscribed")
    assert await b.pacer.reserve("h.example", 0.0) == Slot(0.0, False)  # now known idle
    await a.pacer.pushback("h.example", 60.0)

    async def paused() -> bool:
        slot = await b.pacer.reserve("h.example", 0.0)
        return isinstance(slot, Slot) and slot.paused and slot.wait > 50

    await until(paused, "b sees a's pause")


async def test_another_proxys_schedule_reaches_a_host_known_idle(shared_fleet):
    a, b = shared_fleet(idle_ttl=600), shared_fleet(idle_ttl=600)
    a.start()
    await b.pacer.reserve("h.example", 0.0)
    await until(lambda: b.shared_pacer.is_listening and a.shared_pacer.is_listening, "subscribed")
    await b.pacer.reserve("h.example", 0.0)
    await a.pacer.reserve("h.example", 100.0)

    async def waits() -> bool:
        slot = await b.pacer.reserve("h.example", 0.0)
        return isinstance(slot, Slot) and slot.wait > 90

    await until(waits, "b waits for a's schedule")


async def test_a_proxy_that_never_saw_a_pushback_still_resets_the_backoff(shared_fleet):
    a, b = shared_fleet(), shared_fleet()
    await a.pacer.reserve("x.example", 0.0)
    await b.pacer.reserve("x.example", 0.0)
    await until(lambda: b.shared_pacer.is_listening and a.shared_pacer.is_listening, "subscribed")
    assert await a.pacer.pushback("h.example", None) == 1
    assert await a.pacer.pushback("h.example", None) == 2

    async def reset() -> bool:
        await b.pacer.recovered("h.example")
        return b.shared_pacer.round_trips > 0

    await until(reset, "b learns of the pushback")
    assert await a.pacer.pushback("h.example", None) == 1


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis")
    yield server
    server.stop()


async def test_closed_refuses_while_redis_is_down_and_recovers(private_redis, fleets, caplog):
    fleet = fleet_on(private_redis.url, "rg:", "closed")
    fleets.append(fleet)
    assert isinstance(await fleet.pacer.reserve("h.example", 1.0), Slot)
    private_redis.stop()
    with caplog.at_level(logging.ERROR, "robotsgate.fleet"):
        with pytest.raises(SharedStateUnavailable):
            await fleet.pacer.reserve("h.example", 1.0)
        with pytest.raises(SharedStateUnavailable):
            await fleet.store.get("http://a.example")
    assert any("robots_redis_fallback=closed" in r.getMessage() for r in caplog.records)
    private_redis.start()
    await until(lambda: not fleet.down, "back up")
    assert isinstance(await fleet.pacer.reserve("h.example", 1.0), Slot)
    pacer = fleet.shared_pacer
    assert private_redis.stored_keys() == sorted(
        key.encode() for key in [*pacer.epoch_keys, pacer.key("h.example")])


async def test_local_uses_this_proxys_memory_while_redis_is_down(private_redis, fleets, caplog):
    rules = RulesCache(10)
    fleet = fleet_on(private_redis.url, "rg:", "local", rules)
    fleets.append(fleet)
    origins = Origins({"a.example": ok(ROBOTS), "b.example": ok(ROBOTS)})
    gate = wire_gate(origins.fetcher(), NOW, store=fleet.store, rules=rules,
                     pacer=fleet.pacer).gate
    assert (await gate.check(request_for("http://a.example/page"))).action == "forward"
    first = await fleet.pacer.reserve("h.example", 100.0)
    assert isinstance(first, Slot)
    private_redis.stop()
    with caplog.at_level(logging.WARNING, "robotsgate.fleet"):
        # The shared schedule carries on in memory: the next slot is still ~100 s away.
        during = await fleet.pacer.reserve("h.example", 100.0)
        assert isinstance(during, Slot) and during.wait > 90
        assert (await gate.check(request_for("http://b.example/page"))).action == "forward"
        assert fleet.down
        # What this proxy had read from Redis carries on: no refetch because Redis went away.
        assert (await gate.check(request_for("http://a.example/private"))).action == "block"
        assert origins.urls == ["http://a.example/robots.txt", "http://b.example/robots.txt"]
        private_redis.start()
        await until(lambda: not fleet.down, "back up")
    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert any(level == logging.ERROR and "robots_redis_fallback=local" in text
               for level, text in messages), messages
    assert any(level == logging.WARNING and "reachable again" in text
               for level, text in messages), messages
    # What was scheduled alone joined the (empty, restarted) Redis: the third slot is 200 s on.
    after = await fleet.pacer.reserve("h.example", 100.0)
    assert isinstance(after, Slot) and after.wait > 190
    assert fleet.shared_pacer.key("h.example").encode() in private_redis.stored_keys()


def outages_logged(records: list[logging.LogRecord]) -> int:
    return sum(r.levelno == logging.ERROR and " is unreachable (" in r.getMessage()
               for r in records)


async def refused_in_bursts(fleet: Fleet, bursts: int = 6) -> int:
    """Bursts of reservations and reads, as busy proxies make: how many were refused."""
    refused = 0
    for burst in range(bursts):
        answers = await asyncio.gather(
            *(fleet.pacer.reserve(f"h{i}.example", 0.0) for i in range(64)),
            *(fleet.store.get(f"http://{burst}-{i}.example") for i in range(16)),
            return_exceptions=True)
        refused += sum(isinstance(a, SharedStateUnavailable) for a in answers)
        assert not [a for a in answers if isinstance(a, BaseException) and
                    not isinstance(a, SharedStateUnavailable)], answers
        await asyncio.sleep(0.05)
    return refused


async def pooled_connections(fleet: Fleet, count: int = 48) -> None:
    """Open many connections (every one of them before the restart that follows)."""
    await asyncio.gather(*(fleet.pacer.reserve(f"h{i}.example", 1.0) for i in range(count)))
    await until(lambda: fleet.shared_pacer.is_listening, "subscribed")
    assert len(fleet.client.connection_pool._available_connections) > 8  # type: ignore[attr-defined]


async def test_a_restarted_redis_costs_one_outage_and_no_refusal_after(private_redis, fleets,
                                                                       caplog):
    fleet = fleet_on(private_redis.url, "rg:", "closed")
    fleets.append(fleet)
    await pooled_connections(fleet)
    with caplog.at_level(logging.WARNING, "robotsgate.fleet"):
        private_redis.stop()
        with pytest.raises(SharedStateUnavailable):
            await fleet.pacer.reserve("h.example", 1.0)
        private_redis.start()
        await until(lambda: not fleet.down, "back up")
        refused = await refused_in_bursts(fleet)
    assert refused == 0, f"{refused} refused after Redis was back"
    assert outages_logged(caplog.records) == 1, [r.getMessage() for r in caplog.records]


async def test_a_restart_between_two_commands_is_no_outage_at_all(private_redis, fleets, caplog):
    fleet = fleet_on(private_redis.url, "rg:", "closed")
    fleets.append(fleet)
    await pooled_connections(fleet)
    with caplog.at_level(logging.WARNING, "robotsgate.fleet"):
        private_redis.stop()
        private_redis.start()
        # The notice channel's connection was closed too: it comes back on its own.
        await until(lambda: fleet.shared_pacer.is_listening and not fleet.down, "listening")
        refused = await refused_in_bursts(fleet)
    assert refused == 0, f"{refused} refused after Redis was back"
    # The channel may have found Redis still down (an outage, rightly); never one more.
    assert outages_logged(caplog.records) <= 1, [r.getMessage() for r in caplog.records]


# A script that keeps Redis busy for a tenth of a second (answering, only slowly).
_BUSY = """
local t = redis.call('TIME')
local start = tonumber(t[1]) + tonumber(t[2]) / 1000000
local now = start
while now - start < 0.1 do
  t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
return 1
"""


async def test_a_queue_for_connections_is_not_an_outage(private_redis, fleets, caplog):
    """Far more commands than connections, on a Redis that answers each within its timeout
    but slowly: they wait their turn for a connection, longer than that timeout, and none is
    refused (redis-py's own pool gives up with "No connection available")."""
    fleet = fleet_on(private_redis.url, "rg:", "closed", timeout=0.5, max_connections=2)
    fleets.append(fleet)
    await fleet.pacer.reserve("warm.example", 1.0)
    busy = Redis.from_url(private_redis.url)
    reserving = True

    async def keep_busy() -> int:
        # One at a time: a command sent meanwhile waits for one of them at most.
        runs = 0
        while reserving:
            await busy.eval(_BUSY, 0)  # type: ignore[misc]
            runs += 1
        return runs

    try:
        with caplog.at_level(logging.WARNING, "robotsgate.fleet"):
            slow = asyncio.ensure_future(keep_busy())
            answers = await asyncio.gather(
                *(fleet.pacer.reserve(f"h{i}.example", 1.0) for i in range(24)),
                return_exceptions=True)
            reserving = False
            runs = await slow
    finally:
        await busy.aclose()
    assert runs > 5  # the last reservations waited well past the timeout for a connection
    assert all(isinstance(a, Slot) for a in answers), answers
    assert not fleet.down and outages_logged(caplog.records) == 0, caplog.records


async def test_a_burst_on_a_new_fleet_holds_no_connection_while_it_waits_for_another(
        private_redis, fleets, caplog):
    """Fenced commands need Redis's clock measured (a round trip) before they are sent: a
    burst of them, more than the connections, must not each hold one while waiting for the
    measurement's (which would never come)."""
    fleet = fleet_on(private_redis.url, "rg:", "closed", timeout=0.5, max_connections=2)
    fleets.append(fleet)
    with caplog.at_level(logging.WARNING, "robotsgate.fleet"):
        answers = await asyncio.gather(
            *(fleet.pacer.reserve(f"h{i}.example", 1.0) for i in range(8)),
            return_exceptions=True)
    assert all(isinstance(a, Slot) for a in answers), answers
    assert not fleet.down and outages_logged(caplog.records) == 0, caplog.records


async def test_commands_waiting_for_a_connection_give_up_once_redis_is_found_gone(
        private_redis, fleets):
    fleet = fleet_on(private_redis.url, "rg:", "closed", timeout=0.5, max_connections=2)
    fleets.append(fleet)
    await fleet.pacer.reserve("warm.example", 1.0)
    private_redis.pause()  # SIGSTOP: every command sent times out
    try:
        answers = await asyncio.gather(
            *(fleet.pacer.reserve(f"h{i}.example", 1.0) for i in range(40)),
            return_exceptions=True)
    finally:
        private_redis.resume()
    assert all(isinstance(a, SharedStateUnavailable) for a in answers), answers
    assert all("TimeoutError" in str(a) for a in answers), answers[-1]  # what was said
    # Only the commands that had a connection when Redis was found gone were sent (to run
    # late, to no effect); the others gave up in the queue instead of each timing out in
    # turn, and there is nothing of theirs to give back once Redis answers.
    assert len(fleet.shared_pacer._abandoned) <= 2


async def test_commands_that_timed_out_take_no_effect_when_a_paused_redis_runs_them(
        private_redis, fleets):
    locker = fleet_on(private_redis.url, "rg:", "closed", timeout=0.5)
    pacer = fleet_on(private_redis.url, "rg:", "closed", timeout=0.5)
    fleets += [locker, pacer]

    async def fetch() -> RobotsEntry:
        await locker.store.put("http://b.example", entry())
        return entry()

    # Both scripts known to Redis, and Redis's clock to both proxies.
    locker.start()
    await locker.store.refresh("http://b.example", None, fetch)
    await pacer.pacer.reserve("other.example", 1.0)
    await until(lambda: locker.shared_pacer.is_listening and pacer.shared_pacer.is_listening,
                "subscribed")

    private_redis.pause()
    try:
        with pytest.raises(SharedStateUnavailable):
            await locker.store.refresh("http://a.example", None, fetch)
        with pytest.raises(SharedStateUnavailable):
            await pacer.pacer.reserve("h.example", 100.0)
    finally:
        private_redis.resume()  # Redis now runs the lock and the reservation, late
    await until(lambda: not locker.down and not pacer.down, "back up")

    assert private_redis.stored_keys("rg:fetch:*") == [], "a lock nobody holds"
    # No slot was claimed by the reservation nobody waited for: the next one is now.
    slot = await pacer.pacer.reserve("h.example", 100.0)
    assert isinstance(slot, Slot) and slot.wait < 50, slot


@pytest.fixture
async def relay(redis_url: str) -> AsyncIterator[Relay]:
    """The shared Redis behind a relay that can lose its answers."""
    host, port = redis_url.removeprefix("redis://").split("/")[0].split(":")
    started = await Relay((host, int(port))).start()
    yield started
    await started.stop()


async def test_a_lock_taken_for_a_proxy_that_never_heard_is_released_when_redis_answers(
        relay, redis_url, redis_prefix, fleets):
    # The request to take the fetch lock reaches Redis and runs in time, but its answer is
    # lost: the proxy gives up on it while Redis holds the lock for it. Once Redis answers
    # again the lock is let go, not left to hold every other proxy for its lease (10 s here).
    fleet = fleet_on(relay.url, redis_prefix, "closed", timeout=0.5)
    fleets.append(fleet)
    fleet.start()
    await until(lambda: fleet.shared_pacer.is_listening, "subscribed")
    lock = fleet.shared_store.lock_key("http://a.example")
    admin = Redis.from_url(redis_url)

    async def fetch() -> RobotsEntry:
        raise AssertionError("never fetched: the lock's answer was lost")

    relay.mute = True
    with pytest.raises(SharedStateUnavailable):
        await fleet.store.refresh("http://a.example", None, fetch)
    assert await admin.exists(lock), "Redis took the lock for the proxy"
    relay.mute = False
    await until(lambda: not fleet.down, "back")

    async def released() -> bool:
        return not await admin.exists(lock)

    await until(released, "the lock let go", timeout=3)
    await admin.aclose()


async def test_a_slot_claimed_for_a_proxy_that_never_heard_is_given_back(
        relay, redis_prefix, fleets):
    # The reservation runs in Redis, its answer is lost: nobody will use that slot, and the
    # next request to the host must not wait for it once Redis answers again.
    fleet = fleet_on(relay.url, redis_prefix, "closed", timeout=0.5)
    fleets.append(fleet)
    await fleet.pacer.reserve("h.example", 100.0)  # the first request: now
    relay.mute = True
    with pytest.raises(SharedStateUnavailable):
        await fleet.pacer.reserve("h.example", 100.0)  # claims now + 100 s, unheard
    relay.mute = False
    await until(lambda: not fleet.down, "back")
    slot = await fleet.pacer.reserve("h.example", 100.0)
    # The second slot, 100 s after the first: not 200 s, as it would be after a slot nobody
    # used.
    assert isinstance(slot, Slot) and 90 < slot.wait < 101, slot


class SlowClock:
    """A monotonic clock that moves on by `lag` seconds while a question to Redis is out, as
    when Redis was paused and answered only on resuming."""

    def __init__(self, lag: float) -> None:
        self.now = 1000.0
        self.lag = lag
        self.asked = False

    def __call__(self) -> float:
        if self.asked:  # the second reading of a measurement: its answer came late
            self.now += self.lag
        self.asked = not self.asked
        return self.now


async def test_a_deadline_measured_during_a_pause_is_not_late(redis_clients):
    # Redis's TIME was asked 1.8 s before it answered: it answered somewhere in those 1.8 s
    # (here, at the end: a paused Redis resuming), so the offset may be 0.9 s ahead. The
    # deadline must still come no later than Redis's real time plus the fence, or a command
    # this proxy gives up on (at about twice the fence) could still run.
    client = redis_clients()
    ticks = SlowClock(lag=1.8)
    clock = RedisClock(client, fence=1.0, monotonic=ticks)
    await clock.sync()
    ticks.lag = 0.0  # later questions are answered at once
    seconds, micros = await client.time()
    redis_now = seconds + micros / 1e6
    deadline = float(await clock.deadline())
    assert deadline <= redis_now + 1.0 + 0.05, deadline - redis_now


async def reserve_when_back(fleet: Fleet, host: str, interval: float) -> Slot:
    """A reservation, once the fleet answers again (bounded)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            slot = await fleet.pacer.reserve(host, interval)
            assert isinstance(slot, Slot)
            return slot
        except SharedStateUnavailable:
            assert time.monotonic() < deadline, "never back"
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("loss", ["flushdb", "restart empty"])
async def test_the_schedule_survives_redis_losing_its_memory(private_redis, fleets, loss):
    a = fleet_on(private_redis.url, "rg:", "closed", regroup=1.0)
    b = fleet_on(private_redis.url, "rg:", "closed", regroup=1.0)
    fleets += [a, b]
    assert (await a.pacer.reserve("h.example", 100.0)) == Slot(0.0, False)
    second = await b.pacer.reserve("h.example", 100.0)  # b's slot, 100 s on: a knows nothing of it
    assert isinstance(second, Slot) and second.wait > 90
    await until(lambda: a.shared_pacer.is_listening and b.shared_pacer.is_listening,
                "subscribed")
    if loss == "flushdb":
        admin = Redis.from_url(private_redis.url)
        await admin.flushdb()
        await admin.aclose()
    else:
        private_redis.stop()
        private_redis.start()
    assert private_redis.stored_keys() == []
    # Asked of the proxy that knows only its own slot: b's is put back before it is decided.
    third = await reserve_when_back(a, "h.example", 100.0)
    assert third.wait > 150, f"{third}: sooner than 100 s after b's slot"
    assert a.shared_pacer.key("h.example").encode() in private_redis.stored_keys()


async def test_redis_down_from_the_start(tmp_path, fleets):
    server = RedisServer(tmp_path / "redis")
    server.stop()  # a port where nothing listens
    closed, local = fleet_on(server.url, "rg:", "closed"), fleet_on(server.url, "rg:", "local")
    fleets += [closed, local]
    with pytest.raises(SharedStateUnavailable):
        await closed.pacer.reserve("h.example", 1.0)
    assert await local.pacer.reserve("h.example", 1.0) == Slot(0.0, False)
    assert await local.store.get("http://a.example") is None


async def test_a_redis_cluster_node_is_refused_saying_so(tmp_path, fleets, caplog):
    node = RedisServer(tmp_path / "node", port=cluster_port(), options=(
        "--cluster-enabled", "yes", "--cluster-config-file", str(tmp_path / "nodes.conf")))
    try:
        fleet = fleet_on(node.url, "rg:", "closed")
        fleets.append(fleet)
        with caplog.at_level(logging.ERROR, "robotsgate.fleet"):
            fleet.start()
            await until(lambda: fleet.down, "refused")
            with pytest.raises(SharedStateUnavailable, match="Redis Cluster node"):
                await fleet.pacer.reserve("h.example", 1.0)
            with pytest.raises(SharedStateUnavailable, match="Redis Cluster node"):
                await fleet.store.get("http://a.example")
        assert any("is a Redis Cluster node: robots_redis must say so, as redis+cluster://"
                   in r.getMessage()
                   for r in caplog.records), [r.getMessage() for r in caplog.records]
    finally:
        node.stop()


# -- the options ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("option", "value", "message"), [
    ("robots_redis", "http://127.0.0.1:6379", "robots_redis: must look like redis://"),
    ("robots_redis", "redis://127.0.0.1:port/0", "robots_redis: Port"),
    ("robots_redis", "redis://127.0.0.1:6379/first", "robots_redis: database must be a number"),
    ("robots_redis", "redis://", "robots_redis: needs a host"),
    ("robots_redis", "redis+cluster://127.0.0.1:7000/1", "robots_redis: a Redis Cluster has only"),
    ("robots_redis", "redis+cluster://", "robots_redis: needs a host"),
    ("robots_redis_prefix", "", "robots_redis_prefix"),
    ("robots_redis_prefix", "my prefix", "robots_redis_prefix"),
    ("robots_redis_prefix", "rg{1}:", "robots_redis_prefix: .* without spaces or braces"),
    ("robots_redis_fallback", "open", "robots_redis_fallback"),
])
def test_bad_fleet_options_are_refused_naming_the_option(option, value, message, tmp_path):
    with driven(robots_audit_log=str(tmp_path / "a.jsonl")) as addon, \
            pytest.raises(exceptions.OptionsError, match=message):
        addon.configure(**{option: value})


def test_a_cluster_is_named_by_any_node_with_the_cluster_scheme():
    assert check_url("redis+cluster://127.0.0.1:7000") == "redis+cluster://127.0.0.1:7000"
    assert check_url("rediss+cluster://:pw@10.0.0.1:7000/0") == \
        "rediss+cluster://:pw@10.0.0.1:7000/0"


def test_a_password_in_the_url_stays_out_of_messages():
    assert redacted("redis://:secret@127.0.0.1:6379/0") == "redis://:***@127.0.0.1:6379/0"
    assert redacted("redis://app:secret@127.0.0.1/0") == "redis://app:***@127.0.0.1/0"
    with pytest.raises(ValueError) as refused:
        check_url("redis://app:secret@127.0.0.1:6379/db")
    assert "secret" not in str(refused.value)


# -- the fleet's turns: spacing as the origin sees it ---------------------------------------------

# Redis's TIME and this process's monotonic clock may tick at rates a few parts per million
# apart: a millisecond covers it for the intervals here.
TICK = 0.001


def departures_of(fleet: Fleet) -> Departures:
    return Departures(time.monotonic, asyncio.sleep, max_hosts=100, shared=fleet.departures)


async def release(departures: Departures, flow: str, interval: float,
                  host: str = "h.example") -> float:
    """A request's turn: when it was released (monotonic)."""
    async with departures.turn(host, interval, flow, tls=False):
        pass
    return time.monotonic()


async def test_a_late_departure_from_one_proxy_holds_back_the_next_from_another(shared_fleet):
    on_a, on_b = departures_of(shared_fleet()), departures_of(shared_fleet())
    await release(on_a, "first", 0.3)
    await asyncio.sleep(0.1)  # its connection took 100 ms to open: it left then, not before
    left = time.monotonic()
    on_a.connected("h.example", tls=False)
    released = await release(on_b, "second", 0.3)
    assert released - left >= 0.3 - TICK


async def test_the_next_request_waits_while_another_proxys_is_unconfirmed(shared_fleet):
    on_a, on_b = departures_of(shared_fleet()), departures_of(shared_fleet())
    await release(on_a, "first", 0.05)
    second = asyncio.create_task(release(on_b, "second", 0.05))
    await asyncio.sleep(0.6)  # longer than a poll: b asked Redis more than once meanwhile
    assert not second.done()
    left = time.monotonic()
    on_a.connected("h.example", tls=False)  # its connection opened at last
    assert await second - left >= 0.05 - TICK


async def test_a_turn_taken_with_a_slot_and_not_used_leaves_the_request_to_be_confirmed(
        shared_fleet):
    """A slot that is now comes with its turn taken, for a request that leaves as it is
    released. One that turns out to open a connection gives that turn back and takes its turn
    as any other: the next request, from another proxy, waits for it to be confirmed."""
    a, b = shared_fleet(), shared_fleet()
    on_a, on_b = departures_of(a), departures_of(b)
    assert await a.pacer.reserve("h.example", 0.05) == Slot(0.0, False)
    async with on_a.turn("h.example", 0.05, "first", tls=False, at_once=lambda: False):
        pass
    second = asyncio.create_task(release(on_b, "second", 0.05))
    await asyncio.sleep(0.6)
    assert not second.done()  # the first is pending: its connection is not ready yet
    left = time.monotonic()
    on_a.connected("h.example", tls=False)
    assert await second - left >= 0.05 - TICK


async def test_a_request_that_cannot_leave_within_the_slack_takes_its_turn_to_be_confirmed(
        redis_clients, redis_prefix):
    client = redis_clients()
    for epoch in redis_pacer(client, redis_prefix).epoch_keys:  # the schedule is whole
        await client.set(epoch, "0")
    stalled = [0.0]  # seconds this "proxy" lost between its turn's answer and its release
    turns = RedisDepartures(
        redis_pacer(client, redis_prefix, monotonic=lambda: time.monotonic() + stalled[0]),
        confirm_timeout=10.0, max_hosts=10, monotonic=lambda: time.monotonic() + stalled[0])
    asked = 0

    def at_once() -> bool:
        nonlocal asked
        asked += 1
        if asked == 2:  # the first answer came, and the proxy stalled before the release
            stalled[0] += 1.0
        return True

    await turns.take("h.example", 0.1, "first", at_once)
    # The turn given back, and taken again as one to be confirmed (no timing: a busy proxy
    # makes progress): its departure was not recorded, it is to be reported.
    assert turns.round_trips == 2
    assert not turns.recorded("first", time.monotonic() + stalled[0])
    key = redis_pacer(client, redis_prefix).key("h.example")
    assert await client.hmget(key, ["pending", "turn_by"]) == [b"first", None]


def turns_on(client: Redis, prefix: str, confirm_timeout: float = 10.0,
             **kwargs: float) -> RedisDepartures:
    """One proxy's fleet turns, without the rest of its fleet."""
    return RedisDepartures(redis_pacer(client, prefix, **kwargs),
                           confirm_timeout=confirm_timeout, max_hosts=10)


async def test_a_departure_never_confirmed_counts_when_the_wait_for_it_gives_up(
        redis_clients, redis_prefix):
    client = redis_clients()
    # Its proxy died before its request was confirmed.
    await turns_on(client, redis_prefix, 0.3).take("h.example", 0.1, "first")
    released = time.monotonic()
    await turns_on(client, redis_prefix, 0.3).take("h.example", 0.1, "second")
    assert time.monotonic() - released >= 0.4 - TICK


async def test_a_departure_reported_after_it_was_given_up_on_still_counts(redis_clients,
                                                                          redis_prefix):
    client = redis_clients()
    a, b, c = (turns_on(client, redis_prefix, 0.3) for _ in range(3))
    await a.take("h.example", 0.1, "slow")  # its connection takes longer than anyone waits
    await b.take("h.example", 0.1, "next")  # taken over once the wait for it gave up
    await b.left("h.example", "next", 0.0)
    await asyncio.sleep(0.05)
    left = time.monotonic()
    await a.left("h.example", "slow", 0.0)  # it really left now, 50 ms after the other one
    await c.take("h.example", 0.1, "third")
    assert time.monotonic() - left >= 0.1 - TICK


async def test_a_request_in_flight_when_redis_loses_its_memory_still_spaces_the_next(
        redis_clients, redis_prefix):
    client = redis_clients()
    a, b = (turns_on(client, redis_prefix, regroup=1.0) for _ in range(2))
    await a.take("h.example", 0.5, "in-flight")
    # A FLUSHDB, say (of this test's keys alone: the Redis is shared): the mark that it is
    # leaving goes with everything else.
    await client.delete(*await client.keys(f"{redis_prefix}*"))
    second = asyncio.create_task(b.take("h.example", 0.5, "second"))
    await asyncio.sleep(0.3)
    assert not second.done()  # the group regroups: nothing goes meanwhile
    left = time.monotonic()
    await a.left("h.example", "in-flight", 0.0)  # its connection opened at last
    await second
    assert time.monotonic() - left >= 0.5 - TICK


async def test_no_departure_in_the_future_holds_a_host(redis_clients, redis_prefix):
    client = redis_clients()
    turns = turns_on(client, redis_prefix)
    turns.notice("h.example inf")  # a bad notice on the channel
    turns.notice("h.example 1e999")
    assert turns.heard("h.example") == 0.0
    await turns.take("h.example", 0.1, "first")
    await turns.left("h.example", "first", 0.0)
    key = redis_pacer(client, redis_prefix).key("h.example")
    seconds, _ = await client.time()
    await client.hset(key, "left", repr(seconds + 3600.0))  # a clock that stepped back an hour
    # Bounded: at most one interval from now, not an hour.
    await asyncio.wait_for(turns.take("h.example", 0.1, "second"), 5.0)


async def test_a_departure_heard_of_outlives_redis_losing_its_memory(shared_fleet, redis_clients):
    a, b = shared_fleet(), shared_fleet()
    on_a, on_b = departures_of(a), departures_of(b)
    a.start()
    b.start()
    await until(lambda: a.shared_pacer.is_listening and b.shared_pacer.is_listening,
                "subscribed")
    await release(on_a, "first", 0.5)
    left = time.monotonic()
    on_a.connected("h.example", tls=False)
    await until(lambda: b.shared_departures.heard("h.example") > 0, "b hears a's departure")
    await redis_clients().delete(a.shared_pacer.key("h.example"))  # a FLUSHDB, say
    released = await release(on_b, "second", 0.5)
    assert released - left >= 0.5 - TICK


async def test_a_departure_redis_missed_while_paused_is_told_when_it_is_back(private_redis,
                                                                             fleets):
    fleet = fleet_on(private_redis.url, "rg:", "closed", timeout=0.5)
    fleets.append(fleet)
    departures = departures_of(fleet)
    await release(departures, "first", 1.0)  # marked as leaving, in Redis
    admin = Redis.from_url(private_redis.url)
    key = fleet.shared_pacer.key("h.example")
    assert await admin.hget(key, "pending") == b"first"
    private_redis.pause()
    departures.connected("h.example", tls=False)  # it left; Redis does not answer
    await until(lambda: fleet.down, "the report timed out")
    private_redis.resume()
    # Without the report, the host would be held for the whole confirmation timeout (10 s).
    async def told() -> bool:
        return await admin.hget(key, "pending") is None

    await until(told, "told once back", timeout=5)
    await admin.aclose()


@pytest.mark.parametrize("fallback", ["closed", "local"])
async def test_redis_gone_before_a_requests_turn(private_redis, fleets, fallback):
    # In local, after the first half second of the outage (its grace here): no Redis to wait for.
    fleet = fleet_on(private_redis.url, "rg:", fallback, grace=0.5)
    fleets.append(fleet)
    departures = departures_of(fleet)
    await release(departures, "first", 0.01)
    departures.connected("h.example", tls=False)
    private_redis.stop()
    if fallback == "closed":
        with pytest.raises(SharedStateUnavailable):
            await release(departures, "second", 0.01)
    else:  # this proxy's own turns carry on
        await release(departures, "second", 0.01)
    assert fleet.down


async def test_a_restart_in_local_keeps_the_spacing_between_proxies(private_redis, fleets):
    # Proxy a's request leaves; Redis restarts empty before proxy b's turn. Alone, b knows
    # nothing of a's departure and would send at once. In local, b waits for Redis (the
    # outage is young), takes the fleet's turn once it answers, and hears of a's departure
    # there (a tells Redis once it is back): a whole interval after it.
    a = fleet_on(private_redis.url, "rg:", "local")
    b = fleet_on(private_redis.url, "rg:", "local")
    fleets += [a, b]
    on_a, on_b = departures_of(a), departures_of(b)
    await release(on_b, "zero", 0.01)  # b has used the fleet: it knows Redis's clock
    on_b.connected("h.example", tls=False)
    await release(on_a, "first", 1.0)
    private_redis.stop()
    left = time.monotonic()
    on_a.connected("h.example", tls=False)  # it leaves; Redis is gone, a keeps it to tell later

    async def restart() -> None:
        await asyncio.sleep(0.3)
        private_redis.start()

    restarting = asyncio.ensure_future(restart())
    released = await release(on_b, "second", 1.0)
    await restarting
    assert released - left >= 1.0 - TICK, released - left


async def test_the_proxy_refuses_a_request_whose_turn_finds_redis_gone(private_redis, tmp_path):
    robots = b"User-agent: *\nCrawl-delay: 0.01\n"
    origins = Origins({"http://a.example/robots.txt": httpx.Response(200, content=robots)})
    audit = tmp_path / "audit.jsonl"
    with driven(transport=httpx.MockTransport(origins), robots_audit_log=str(audit),
                robots_redis=private_redis.url, robots_redis_prefix="rg:",
                robots_redis_fallback="closed") as addon:
        flow = tflow.tflow()
        flow.request.url = "http://a.example/page"
        await addon.requestheaders(flow)  # decided, and its slot claimed in Redis
        assert flow.response is None and state(flow).paced is not None
        private_redis.stop()
        await addon.request_only(flow)  # its turn
        assert flow.response is not None and flow.response.status_code == 503
        assert flow.response.headers["X-Robotsgate-Reason"] == "redis-unavailable"
        await addon.done()
    [record] = [json.loads(line) for line in audit.read_text().splitlines()
                if json.loads(line)["event"] == "block"]
    assert record["reason"] == "redis-unavailable"
    assert "is unreachable" in record["error"]


def test_a_redis_of_the_wrong_kind_is_refused_at_start_up(tmp_path, redis_url):
    node = RedisServer(tmp_path / "node", port=cluster_port(), options=(
        "--cluster-enabled", "yes", "--cluster-config-file", str(tmp_path / "nodes.conf")))
    try:
        with driven(robots_audit_log=str(tmp_path / "a.jsonl")) as addon:
            with pytest.raises(exceptions.OptionsError,
                               match=r"robots_redis: redis://127\.0\.0\.1:\d+/0 is a Redis "
                                     r"Cluster node: say so, as redis\+cluster://"):
                addon.configure(robots_redis=node.url)
            with pytest.raises(exceptions.OptionsError,
                               match=r"robots_redis: .* is not a Redis Cluster node"):
                addon.configure(robots_redis=redis_url.replace("redis://", "redis+cluster://")
                                .rsplit("/", 1)[0])
            addon.configure(robots_redis=redis_url)  # the right kind
            node.stop()
            addon.configure(robots_redis=node.url)  # nothing answers there: the fallback's
    finally:
        node.stop()
