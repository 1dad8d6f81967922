"""The Redis store, pacer and fetch lock against a real Redis (127.0.0.1:6379).

Each test has its own random key prefix and deletes its keys afterwards. Tests that stop Redis
start their own redis-server on a free port. Several "proxies" are several store/pacer/gate
objects on one Redis, each with its own connection, as separate processes would have.
"""

import asyncio
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import pytest
from e2e.redis_server import SHARED_URL, RedisServer, delete_prefix, new_prefix
from mitmproxy import exceptions
from mitmproxy.test import taddons
from redis.asyncio import Redis

from robotsgate.addon import RobotsGate
from robotsgate.fetch import Fetcher
from robotsgate.fleet import Fleet, SharedStateUnavailable, check_url, redacted
from robotsgate.gate import Gate, GateConfig, Request
from robotsgate.origin import Origin
from robotsgate.pacing import Pacer, Refusal, Slot
from robotsgate.redis_pacing import RedisPacer
from robotsgate.redis_store import RedisStore
from robotsgate.store import MemoryStore, RobotsEntry

ROBOTS = b"User-agent: *\nDisallow: /private\n"
NOW = time.time


@pytest.fixture
def prefix() -> Iterator[str]:
    p = new_prefix()
    yield p
    delete_prefix(SHARED_URL, p)


@pytest.fixture
async def clients() -> AsyncIterator[Callable[[], Redis]]:
    """Factory: one more connection pool to the shared Redis, as another proxy would have."""
    made: list[Redis] = []

    def make() -> Redis:
        client = Redis.from_url(SHARED_URL)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


class Origins:
    """robots.txt answers through httpx.MockTransport, counting the fetches that reach it."""

    def __init__(self, body: bytes = ROBOTS, status: int = 200, delay: float = 0.0,
                 headers: dict[str, str] | None = None) -> None:
        self.body, self.status, self.delay, self.headers = body, status, delay, headers or {}
        self.fetches = 0
        self.started: list[float] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.fetches += 1
        self.started.append(time.monotonic())
        if self.delay:
            await asyncio.sleep(self.delay)
        return httpx.Response(self.status, content=self.body, headers=self.headers)


def gate_on(store: RedisStore, origins: Origins) -> Gate:
    fetcher = Fetcher(timeout=5, transport=httpx.MockTransport(origins))
    gate = Gate(GateConfig(), fetcher, store, NOW)
    store.parse = gate.parse
    return gate


def fleet_gate(fleet: Fleet, origins: Origins) -> Gate:
    fetcher = Fetcher(timeout=5, transport=httpx.MockTransport(origins))
    gate = Gate(GateConfig(), fetcher, fleet.store, NOW, fleet.pacer)
    fleet.bind(gate.parse)
    return gate


def redis_store(client: Redis, prefix: str, **kwargs: float) -> RedisStore:
    options: dict[str, float] = {"lock_ttl": 10.0, **kwargs}
    return RedisStore(client, prefix=prefix, clock=NOW, max_origins=100, **options)


# The key under which a gate keeps a.example's robots.txt for request()'s TestBot.
A_KEY = "http://a.example testbot"


def request(url: str, user_agent: str = "TestBot/1.0") -> Request:
    u = httpx.URL(url)
    return Request(Origin.of(u.scheme, u.host, u.port), u.raw_path.decode(), user_agent)


def entry(kind: str = "ok", body: bytes = ROBOTS, expires_in: float = 3600.0,
          error: str | None = None) -> RobotsEntry:
    now = NOW()
    sha = hashlib.sha256(body).hexdigest() if kind == "ok" else None
    status = {"ok": 200, "missing": 404, "unreachable": 503}[kind]
    return RobotsEntry(kind, "http://a.example/robots.txt", None, status,  # type: ignore[arg-type]
                       sha, now - 1.5, now + expires_in, error, body)


# -- the store ----------------------------------------------------------------------------------

async def test_an_entry_written_by_one_proxy_is_read_by_another(clients, prefix):
    writer = redis_store(clients(), prefix)
    reader = redis_store(clients(), prefix)
    gate = gate_on(reader, Origins())
    written = entry(error="HTTP 503")
    await writer.put("http://a.example", written)
    read = await reader.get("http://a.example")
    assert read is not None
    for field in ("kind", "robots_url", "status", "sha256", "fetched_at", "expires_at", "error",
                  "body"):
        assert getattr(read, field) == getattr(written, field), field
    assert read.robots is not None and not read.robots.decide("*", "/private/x").allowed
    assert read.robots is gate.parse(written.sha256 or "", ROBOTS)


async def test_identical_bodies_share_one_parsed_object(clients, prefix):
    writer = redis_store(clients(), prefix)
    reader = redis_store(clients(), prefix)
    gate_on(reader, Origins())
    await writer.put("http://a.example", entry())
    await writer.put("http://b.example", entry())
    a, b = await reader.get("http://a.example"), await reader.get("http://b.example")
    assert a is not None and b is not None and a.robots is b.robots


async def test_missing_and_unreachable_entries_keep_their_meaning(clients, prefix):
    writer = redis_store(clients(), prefix)
    reader = redis_store(clients(), prefix)
    gate_on(reader, Origins())
    await writer.put("http://missing.example", entry("missing", b""))
    await writer.put("http://down.example", entry("unreachable", b""))
    missing = await reader.get("http://missing.example")
    down = await reader.get("http://down.example")
    assert missing is not None and missing.robots is not None
    assert missing.robots.decide("*", "/anything").allowed
    assert down is not None and down.kind == "unreachable" and down.robots is None


async def test_a_stale_copy_outlives_its_expiry_in_redis(clients, prefix):
    client = clients()
    store = redis_store(client, prefix, keep_stale=600.0)
    await store.put("http://a.example", entry(expires_in=10.0))
    assert await client.pttl(store.key("http://a.example")) > 600_000  # 10 s + 600 s to keep


async def test_the_last_good_copy_in_redis_is_used_while_robots_txt_is_unreachable(
        clients, prefix):
    writer = redis_store(clients(), prefix)
    await writer.put(A_KEY, entry(expires_in=-30.0))  # expired 30 s ago
    down = Origins(status=503)
    gate = gate_on(redis_store(clients(), prefix), down)
    blocked = await gate.check(request("http://a.example/private/x"))
    allowed = await gate.check(request("http://a.example/public"))
    assert down.fetches == 1, "the stale copy is refreshed first"
    assert blocked.action == "block" and allowed.action == "forward"
    assert blocked.entry is not None and blocked.entry.error == "HTTP 503"


async def test_a_proxy_answers_from_its_mirror_without_asking_redis(clients, prefix):
    client = clients()
    writer = redis_store(client, prefix)
    mirrored = redis_store(clients(), prefix)
    unmirrored = redis_store(clients(), prefix, mirror_ttl=0.0)
    gate_on(mirrored, Origins())
    gate_on(unmirrored, Origins())
    await writer.put("http://a.example", entry())
    assert await mirrored.get("http://a.example") is not None
    assert await unmirrored.get("http://a.example") is not None
    await client.delete(writer.key("http://a.example"))
    assert await mirrored.get("http://a.example") is not None
    assert await unmirrored.get("http://a.example") is None


async def test_something_else_under_the_key_counts_as_no_entry(clients, prefix):
    client = clients()
    store = redis_store(client, prefix)
    await client.hset(store.key("http://a.example"), mapping={"kind": "ok", "robots_url": "x"})
    assert await store.get("http://a.example") is None


# -- one fetch for the whole fleet --------------------------------------------------------------

async def test_three_proxies_and_300_requests_fetch_robots_txt_once(clients, prefix):
    origins = Origins(delay=0.3)
    gates = [gate_on(redis_store(clients(), prefix), origins) for _ in range(3)]
    verdicts = await asyncio.gather(*(
        gate.check(request(f"http://a.example/{'private' if i % 2 else 'page'}/{i}"))
        for gate in gates for i in range(100)))
    assert origins.fetches == 1
    assert sum(gate.fetches for gate in gates) == 1
    assert [v.action for v in verdicts] == ["forward", "block"] * 150


async def test_the_others_take_an_answer_that_expired_at_once(clients, prefix):
    # Cache-Control: no-cache makes every later request refetch, but those already waiting take
    # the answer they waited for.
    origins = Origins(delay=0.2, headers={"Cache-Control": "no-cache"})
    gates = [gate_on(redis_store(clients(), prefix), origins) for _ in range(2)]
    verdicts = await asyncio.gather(*(gate.check(request(f"http://a.example/{i}"))
                                      for gate in gates for i in range(10)))
    assert origins.fetches == 1 and all(v.action == "forward" for v in verdicts)


async def test_a_dead_holders_lock_is_taken_over_when_it_expires(clients, prefix):
    client = clients()
    store = redis_store(client, prefix)
    # Another proxy took the lock and died: nobody will publish or release.
    await client.set(store.lock_key(A_KEY), "dead", px=400)
    taken = time.monotonic()
    origins = Origins()
    gate = gate_on(store, origins)
    verdict = await gate.check(request("http://a.example/page"))
    assert verdict.action == "forward" and origins.fetches == 1
    assert origins.started[0] - taken >= 0.39, "fetched while the lock was still held"


async def test_a_holder_whose_fetch_failed_lets_the_others_take_over(clients, prefix):
    holder_store, waiter_store = redis_store(clients(), prefix), redis_store(clients(), prefix)
    gate_on(holder_store, Origins())
    gate_on(waiter_store, Origins())
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


# -- the shared schedule --------------------------------------------------------------------------

def redis_pacer(client: Redis, prefix: str, **kwargs: float) -> RedisPacer:
    options: dict[str, float] = {"max_wait": 1000.0, **kwargs}
    return RedisPacer(client, prefix=prefix, max_hosts=100, **options)  # type: ignore[arg-type]


async def test_slots_are_spaced_across_proxies(clients, prefix):
    pacers = [redis_pacer(clients(), prefix) for _ in range(2)]
    slots = [await pacers[i % 2].reserve("h.example", 100.0) for i in range(4)]
    assert all(isinstance(s, Slot) and not s.paused for s in slots)
    waits = [s.wait for s in slots]
    # Redis's clock moves on between calls: each wait is a bit less than k intervals.
    assert all(k * 100 - 5 < w <= k * 100 for k, w in enumerate(waits)), waits


async def test_a_wait_beyond_max_wait_is_refused_and_takes_no_slot(clients, prefix):
    a, b = (redis_pacer(clients(), prefix, max_wait=150.0) for _ in range(2))
    assert isinstance(await a.reserve("h.example", 100.0), Slot)
    assert isinstance(await b.reserve("h.example", 100.0), Slot)
    refused = await a.reserve("h.example", 100.0)
    assert isinstance(refused, Refusal) and 195 < refused.retry_after <= 200
    again = await b.reserve("h.example", 0.5)
    assert isinstance(again, Refusal) and again.retry_after <= refused.retry_after


async def test_hosts_have_independent_shared_schedules(clients, prefix):
    pacer = redis_pacer(clients(), prefix)
    await pacer.reserve("a.example", 50.0)
    assert await pacer.reserve("b.example", 50.0) == Slot(0.0, False)


async def test_a_pushback_pauses_the_host_for_every_proxy(clients, prefix):
    a, b = redis_pacer(clients(), prefix), redis_pacer(clients(), prefix)
    assert await a.pushback("h.example", 30.0) == 30.0
    slot = await b.reserve("h.example", 0.0)
    assert isinstance(slot, Slot) and slot.paused and 25 < slot.wait <= 30
    assert await b.reserve("other.example", 0.0) == Slot(0.0, False)


async def test_the_backoff_counts_pushbacks_from_every_proxy(clients, prefix):
    a, b = (redis_pacer(clients(), prefix, backoff_base=1.0, backoff_cap=10.0)
            for _ in range(2))
    pauses = [await (a if i % 2 else b).pushback("h.example", None) for i in range(6)]
    assert pauses == [1, 2, 4, 8, 10, 10]
    await a.recovered("h.example")
    assert await b.pushback("h.example", None) == 1


async def test_ordinary_answers_cost_no_round_trip(clients, prefix):
    pacer = redis_pacer(clients(), prefix)
    await pacer.recovered("h.example")
    assert pacer.round_trips == 0


# -- the fleet: notices, outages -----------------------------------------------------------------

def fleet_on(url: str, prefix: str, fallback: str = "closed", **kwargs: float) -> Fleet:
    return Fleet(url, prefix=prefix, fallback=fallback, clock=NOW,  # type: ignore[arg-type]
                 local_store=MemoryStore(100),
                 local_pacer=Pacer(time.monotonic, max_wait=1000, max_hosts=100),
                 max_origins=100, max_wait=1000, lock_ttl=10, retry_interval=0.05, **kwargs)


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


async def test_a_host_with_no_delay_costs_no_round_trip_once_known_idle(prefix, fleets):
    fleet = fleet_on(SHARED_URL, prefix)
    fleets.append(fleet)
    await fleet.pacer.reserve("h.example", 0.0)
    await until(lambda: fleet.shared_pacer.is_listening, "subscribed")
    await fleet.pacer.reserve("h.example", 0.0)
    trips = fleet.shared_pacer.round_trips
    for _ in range(10):
        assert await fleet.pacer.reserve("h.example", 0.0) == Slot(0.0, False)
    assert fleet.shared_pacer.round_trips == trips


async def test_another_proxys_pause_reaches_a_host_known_idle(prefix, fleets):
    # idle_ttl is long: only the notice can make the idle host paused here.
    a, b = fleet_on(SHARED_URL, prefix, idle_ttl=600), fleet_on(SHARED_URL, prefix, idle_ttl=600)
    fleets += [a, b]
    a.start()
    await b.pacer.reserve("h.example", 0.0)
    await until(lambda: b.shared_pacer.is_listening and a.shared_pacer.is_listening, "subscribed")
    assert await b.pacer.reserve("h.example", 0.0) == Slot(0.0, False)  # now known idle
    await a.pacer.pushback("h.example", 60.0)

    async def paused() -> bool:
        slot = await b.pacer.reserve("h.example", 0.0)
        return isinstance(slot, Slot) and slot.paused and slot.wait > 50

    await until(paused, "b sees a's pause")


async def test_another_proxys_schedule_reaches_a_host_known_idle(prefix, fleets):
    a, b = fleet_on(SHARED_URL, prefix, idle_ttl=600), fleet_on(SHARED_URL, prefix, idle_ttl=600)
    fleets += [a, b]
    a.start()
    await b.pacer.reserve("h.example", 0.0)
    await until(lambda: b.shared_pacer.is_listening and a.shared_pacer.is_listening, "subscribed")
    await b.pacer.reserve("h.example", 0.0)
    await a.pacer.reserve("h.example", 100.0)

    async def waits() -> bool:
        slot = await b.pacer.reserve("h.example", 0.0)
        return isinstance(slot, Slot) and slot.wait > 90

    await until(waits, "b waits for a's schedule")


async def test_a_proxy_that_never_saw_a_pushback_still_resets_the_backoff(prefix, fleets):
    a, b = fleet_on(SHARED_URL, prefix), fleet_on(SHARED_URL, prefix)
    fleets += [a, b]
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
    assert private_redis.stored_keys() == [b"rg:pace:h.example"]


async def test_local_uses_this_proxys_memory_while_redis_is_down(private_redis, fleets, caplog):
    fleet = fleet_on(private_redis.url, "rg:", "local")
    fleets.append(fleet)
    gate = fleet_gate(fleet, Origins())
    assert (await gate.check(request("http://a.example/page"))).action == "forward"
    first = await fleet.pacer.reserve("h.example", 100.0)
    assert isinstance(first, Slot)
    private_redis.stop()
    with caplog.at_level(logging.WARNING, "robotsgate.fleet"):
        # The shared schedule carries on in memory: the next slot is still ~100 s away.
        during = await fleet.pacer.reserve("h.example", 100.0)
        assert isinstance(during, Slot) and during.wait > 90
        assert (await gate.check(request("http://b.example/page"))).action == "forward"
        assert fleet.down
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
    assert b"rg:pace:h.example" in private_redis.stored_keys()


async def test_redis_down_from_the_start(tmp_path, fleets):
    server = RedisServer(tmp_path / "redis")
    server.stop()  # a port where nothing listens
    closed, local = fleet_on(server.url, "rg:", "closed"), fleet_on(server.url, "rg:", "local")
    fleets += [closed, local]
    with pytest.raises(SharedStateUnavailable):
        await closed.pacer.reserve("h.example", 1.0)
    assert await local.pacer.reserve("h.example", 1.0) == Slot(0.0, False)
    assert await local.store.get("http://a.example") is None


# -- the options ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("option", "value", "message"), [
    ("robots_redis", "http://127.0.0.1:6379", "robots_redis: must look like redis://"),
    ("robots_redis", "redis://127.0.0.1:port/0", "robots_redis: Port"),
    ("robots_redis", "redis://127.0.0.1:6379/first", "robots_redis: database must be a number"),
    ("robots_redis", "redis://", "robots_redis: needs a host"),
    ("robots_redis_prefix", "", "robots_redis_prefix"),
    ("robots_redis_prefix", "my prefix", "robots_redis_prefix"),
    ("robots_redis_fallback", "open", "robots_redis_fallback"),
])
def test_bad_fleet_options_are_refused_naming_the_option(option, value, message, tmp_path):
    addon = RobotsGate()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, robots_audit_log=str(tmp_path / "a.jsonl"))
        with pytest.raises(exceptions.OptionsError, match=message):
            tctx.configure(addon, **{option: value})


def test_a_password_in_the_url_stays_out_of_messages():
    assert redacted("redis://:secret@127.0.0.1:6379/0") == "redis://:***@127.0.0.1:6379/0"
    assert redacted("redis://app:secret@127.0.0.1/0") == "redis://app:***@127.0.0.1/0"
    with pytest.raises(ValueError) as refused:
        check_url("redis://app:secret@127.0.0.1:6379/db")
    assert "secret" not in str(refused.value)
