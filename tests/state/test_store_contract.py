"""The Store contract, run against every store: MemoryStore, RedisStore and the fleet's FleetStore.

A store keeps robots.txt entries per origin, past their freshness (the last good copy), and runs
`refresh` so that everyone sharing it fetches once. For MemoryStore "everyone" is one gate, whose
in-flight map makes its fetches single; Redis and the fleet are shared by several proxies, each
with its own connection here, and the tests marked SHARED check that they fetch once between them.

Redis-backed stores run on the shared Redis under a key prefix of the test's own, and again on a
Redis Cluster of three primaries and three replicas (e2e/redis_cluster.py). Every clock the
stores and gates read is a FakeClock.
"""

import asyncio
import gc
import secrets
import sys
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

from robotsgate.rules_cache import RulesCache
from robotsgate.state.fleet import Fleet
from robotsgate.state.pacing import Pacer
from robotsgate.state.redis_store import RedisStore
from robotsgate.state.store import MemoryStore, RobotsEntry, Store

ROBOTS = b"User-agent: *\nDisallow: /private\n"
OTHER = b"User-agent: *\nDisallow: /other\n"
KEY = "http://a.example *"  # as the gate keys the copy for bots named by their User-Agent
MAX_ORIGINS = 50


@dataclass
class Backend:
    """One store implementation, and how to open it again as another proxy would."""

    name: str
    shared: bool  # several proxies share it (and fetch once between them)
    clock: FakeClock
    rules: RulesCache
    open: Callable[[], Store]  # a proxy's store on this backend (memory: the one store)


ALL = ["memory", "redis", "fleet", "redis-cluster", "fleet-cluster"]
SHARED = ["redis", "fleet", "redis-cluster", "fleet-cluster"]


@pytest.fixture(params=ALL)
async def backend(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Backend]:
    clock = FakeClock()
    rules = RulesCache(100)
    if request.param == "memory":
        store = MemoryStore(MAX_ORIGINS, rules)
        yield Backend("memory", False, clock, rules, lambda: store)
        return
    # Redis only for the backends that use it: the memory store's tests run without one.
    on_cluster = request.param.endswith("-cluster")
    if on_cluster:
        cluster = shared_cluster(tmp_path_factory.getbasetemp() / "redis-cluster")
        url, fleet_url = cluster.node_url(), cluster.url
        prefix = f"robotsgate-test:{secrets.token_hex(8)}:"  # a private cluster: nothing to clean
    else:
        url = fleet_url = request.getfixturevalue("redis_url")
        prefix = request.getfixturevalue("redis_prefix")
    if request.param.startswith("redis"):
        clients: list[Redis | RedisCluster] = []

        def redis_store() -> Store:
            clients.append(RedisCluster.from_url(url) if on_cluster else Redis.from_url(url))
            return RedisStore(clients[-1], prefix=prefix, clock=clock, rules=rules,
                              max_origins=MAX_ORIGINS, lock_ttl=10.0)

        yield Backend(request.param, True, clock, rules, redis_store)
        for client in clients:
            await client.aclose()
        return
    fleets: list[Fleet] = []

    def fleet_store() -> Store:
        fleet = Fleet(fleet_url, prefix=prefix, fallback="closed", clock=clock, rules=rules,
                      local_store=MemoryStore(MAX_ORIGINS, rules),
                      local_pacer=Pacer(clock, max_wait=60, max_hosts=MAX_ORIGINS),
                      max_origins=MAX_ORIGINS, max_wait=60, lock_ttl=10.0, monotonic=clock)
        fleets.append(fleet)
        return fleet.store

    yield Backend(request.param, True, clock, rules, fleet_store)
    for fleet in fleets:
        await fleet.aclose()


def shared_only(test: Callable[..., object]) -> Callable[..., object]:
    return pytest.mark.parametrize("backend", SHARED, indirect=True)(test)


def entry(backend: Backend, kind: str = "ok", body: bytes = ROBOTS, expires_in: float = 3600.0,
          error: str | None = None) -> RobotsEntry:
    """An entry as retrieval makes them: rules from the rules cache, one copy of each body."""
    now = backend.clock()
    if kind == "ok":
        parsed = backend.rules.share(body)
        return RobotsEntry("ok", "http://a.example/robots.txt", parsed.robots, 200,
                           parsed.sha256, now - 1.5, now + expires_in, error, parsed.body)
    if kind == "missing":
        return RobotsEntry("missing", "http://a.example/robots.txt", backend.rules.allow_all,
                           404, None, now - 1.5, now + expires_in, error)
    return RobotsEntry("unreachable", "http://a.example/robots.txt", None, 503, None,
                       now - 1.5, now + expires_in, error)


FIELDS = ("kind", "robots_url", "status", "sha256", "error", "body")
TIMES = ("fetched_at", "expires_at")
# A shared store keeps times on Redis's clock, and each proxy reads them back on its own with
# its own measurement of the difference: to the millisecond on real clocks, but these FakeClocks
# stand still while Redis's moves on between two proxies' measurements (on a busy machine, a
# cluster client's first measurement comes well over half a second after another's). A clock
# read the wrong way is off by years here (the FakeClock is in 2023).
TIME_TOLERANCE = 5.0


def same(read: RobotsEntry | None, written: RobotsEntry) -> bool:
    return read is not None and all(getattr(read, f) == getattr(written, f) for f in FIELDS) \
        and all(abs(getattr(read, f) - getattr(written, f)) <= TIME_TOLERANCE for f in TIMES)


class Fetches:
    """`fetch` functions for Store.refresh that publish an entry, as retrieval does, and count."""

    def __init__(self, store: Store, key: str = KEY) -> None:
        self.store, self.key = store, key
        self.calls = 0

    def of(self, made: RobotsEntry) -> Callable[[], Awaitable[RobotsEntry]]:
        async def fetch() -> RobotsEntry:
            self.calls += 1
            await self.store.put(self.key, made)
            return made

        return fetch


# -- what is kept -----------------------------------------------------------------------------


async def test_nothing_is_known_of_an_origin_never_put(backend: Backend) -> None:
    assert await backend.open().get(KEY) is None


async def test_an_entry_put_is_read_back_whole_with_its_rules(backend: Backend) -> None:
    writer, reader = backend.open(), backend.open()
    written = entry(backend, error="HTTP 503")
    await writer.put(KEY, written)
    read = await reader.get(KEY)
    assert same(read, written), read
    assert read is not None and read.robots is not None
    assert not read.robots.decide("*", "/private/x").allowed
    assert read.robots.decide("*", "/public").allowed


async def test_rules_come_back_through_the_rules_cache(backend: Backend) -> None:
    # Two origins serving one body: one parsed copy, the rules cache's, whatever held them.
    writer, reader = backend.open(), backend.open()
    await writer.put("http://a.example", entry(backend))
    await writer.put("http://b.example", entry(backend))
    a, b = await reader.get("http://a.example"), await reader.get("http://b.example")
    assert a is not None and b is not None and a.sha256 is not None
    assert a.robots is b.robots is backend.rules.parse(a.sha256, ROBOTS)


async def test_missing_and_unreachable_keep_their_meaning(backend: Backend) -> None:
    writer, reader = backend.open(), backend.open()
    await writer.put("http://missing.example", entry(backend, "missing"))
    await writer.put("http://down.example", entry(backend, "unreachable", error="HTTP 503"))
    missing = await reader.get("http://missing.example")
    down = await reader.get("http://down.example")
    assert missing is not None and missing.kind == "missing" and missing.usable
    assert missing.robots is not None and missing.robots.decide("*", "/anything").allowed
    assert down is not None and (down.kind, down.robots, down.error) == (
        "unreachable", None, "HTTP 503")
    assert not down.usable


async def test_a_put_replaces_the_whole_entry(backend: Backend) -> None:
    # Read back by the writer and by a proxy that has not read it before. (One that has may
    # answer from what it read for a while: see test_redis.)
    writer = backend.open()
    await writer.put(KEY, entry(backend))
    other = entry(backend, body=OTHER)
    await writer.put(KEY, other)
    for read in (await writer.get(KEY), await backend.open().get(KEY)):
        assert same(read, other) and read is not None and read.robots is not None
        assert read.robots.decide("*", "/private").allowed
    # Nothing of the entry before stays behind: no hash, no body, no rules.
    down = entry(backend, "unreachable", error="HTTP 500")
    await writer.put(KEY, down)
    for read in (await writer.get(KEY), await backend.open().get(KEY)):
        assert same(read, down) and read is not None and read.robots is None


async def test_an_expired_entry_is_kept_as_the_last_good_copy(backend: Backend) -> None:
    writer, reader = backend.open(), backend.open()
    expired = entry(backend, expires_in=-30.0)
    await writer.put(KEY, expired)
    read = await reader.get(KEY)
    assert same(read, expired) and read is not None and read.robots is not None


async def test_what_a_proxy_keeps_in_its_own_memory_is_bounded(backend: Backend) -> None:
    store = backend.open()

    async def fill(start: int, count: int) -> None:
        for i in range(start, start + count):
            await store.put(f"http://o{i}.example", entry(backend))
            await store.get(f"http://o{i}.example")

    await fill(0, 2 * MAX_ORIGINS)  # every bound reached
    gc.collect()
    before = sys.getallocatedblocks()
    await fill(2 * MAX_ORIGINS, 1000)
    gc.collect()
    # Keeping one object per origin anywhere would be 1,000 blocks and more.
    assert sys.getallocatedblocks() - before < 500


# -- refresh: one fetch -----------------------------------------------------------------------


async def test_refresh_runs_the_fetch_and_hands_back_its_entry(backend: Backend) -> None:
    store = backend.open()
    fetches = Fetches(store)
    made = entry(backend)
    assert await store.refresh(KEY, None, fetches.of(made)) is made
    assert fetches.calls == 1
    assert same(await backend.open().get(KEY), made)


async def test_a_stale_copy_is_refreshed_not_handed_back(backend: Backend) -> None:
    store = backend.open()
    await store.put(KEY, entry(backend, expires_in=-30.0))
    stale = await store.get(KEY)
    assert stale is not None
    fetches = Fetches(store)
    fresh = entry(backend, body=OTHER)
    assert await store.refresh(KEY, stale, fetches.of(fresh)) is fresh
    assert fetches.calls == 1


async def test_after_a_failed_fetch_the_next_refresh_fetches(backend: Backend) -> None:
    store = backend.open()

    async def broken() -> RobotsEntry:
        raise RuntimeError("the fetch failed")

    with pytest.raises(RuntimeError):
        await store.refresh(KEY, None, broken)
    fetches = Fetches(backend.open())
    made = entry(backend)
    # At once: nothing (a fetch lock, say) is left behind to wait for.
    assert await asyncio.wait_for(backend.open().refresh(KEY, None, fetches.of(made)), 5) is made
    assert fetches.calls == 1


@shared_only
async def test_what_another_proxy_published_meanwhile_is_handed_back(backend: Backend) -> None:
    a, b = backend.open(), backend.open()
    await a.put(KEY, entry(backend, expires_in=-30.0))
    stale = await b.get(KEY)  # b finds the copy expired...
    assert stale is not None
    published = entry(backend, body=OTHER)
    await a.refresh(KEY, stale, Fetches(a).of(published))  # ...and a refreshes it first
    fetches = Fetches(b)
    refreshed = await b.refresh(KEY, stale, fetches.of(entry(backend)))
    assert fetches.calls == 0 and same(refreshed, published)


@shared_only
async def test_an_answer_that_expired_at_once_is_still_the_answer_waited_for(
        backend: Backend) -> None:
    # Cache-Control: no-cache. Whoever asked before it was published takes it; whoever asks
    # after it fetches again.
    a, b = backend.open(), backend.open()
    assert await b.get(KEY) is None
    published = entry(backend, expires_in=0.0)
    await a.refresh(KEY, None, Fetches(a).of(published))
    fetches = Fetches(b)
    assert same(await b.refresh(KEY, None, fetches.of(entry(backend))), published)
    assert fetches.calls == 0


async def test_one_fetch_for_everyone_sharing_the_store(backend: Backend) -> None:
    release, started = asyncio.Event(), asyncio.Event()

    async def slow(req: httpx.Request) -> httpx.Response:
        started.set()
        await release.wait()
        return ok(ROBOTS)

    origins = Origins({"a.example": slow})
    # Three proxies on a shared store; one process on a store of its own.
    gates = [wire_gate(origins.fetcher(), backend.clock, store=backend.open(),
                       rules=backend.rules).gate for _ in range(3 if backend.shared else 1)]
    tasks = [asyncio.create_task(gate.check(request_for(
        f"http://a.example/{'private' if i % 2 else 'page'}/{i}")))
        for gate in gates for i in range(60)]
    await started.wait()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not any(task.done() for task in tasks), "no decision before robots.txt is known"
    release.set()
    verdicts = await asyncio.gather(*tasks)
    assert origins.fetches == 1
    assert [v.action for v in verdicts] == ["forward", "block"] * (len(tasks) // 2)


async def test_the_last_good_copy_is_used_while_robots_txt_is_unreachable(
        backend: Backend) -> None:
    origins = Origins({"a.example": httpx.Response(503)})
    wired = wire_gate(origins.fetcher(), backend.clock, store=backend.open(),
                      rules=backend.rules)
    await backend.open().put(KEY, entry(backend, expires_in=-30.0))
    blocked = await wired.gate.check(request_for("http://a.example/private/x"))
    allowed = await wired.gate.check(request_for("http://a.example/public"))
    assert origins.fetches == 1, "the stale copy is refreshed first, once"
    assert (blocked.action, allowed.action) == ("block", "forward")
    assert blocked.entry is not None and blocked.entry.error == "HTTP 503"
