"""The departures contract, run against every engine of turns: one proxy's own (Departures, in
memory) and a fleet's (each proxy's Departures taking the fleet's turn in Redis as well, on one
Redis and on a Redis Cluster of three primaries and three replicas).

    a paced request is released once the previous request to its host has really left (its
    connection ready, or its answer come) and a whole interval has passed since; a released
    request never confirmed counts as having left when the wait for it gives up.

"The previous request" may have come through another proxy of the fleet: in memory every
"proxy" is the same engine (one process), in a fleet each has its own. Time is real (Redis's
clock cannot be injected): intervals are tenths of a second, and each test asserts a lower
bound (a request waited at least so long after another left) or an order (a request released
while another is still unconfirmed), never an upper bound.
"""

import asyncio
import itertools
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest
from e2e.redis_cluster import shared_cluster
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from robotsgate.rules_cache import RulesCache
from robotsgate.state.departures import Departures
from robotsgate.state.fleet import Fleet
from robotsgate.state.pacing import Pacer
from robotsgate.state.redis_pacing import RedisPacer
from robotsgate.state.store import MemoryStore

TICK = 0.005  # seconds a clock may read differently from another
CONFIRM = 0.4  # seconds a released request may go unconfirmed, in this suite
INTERVAL = 0.2


@dataclass
class Backend:
    name: str
    open: Callable[[int], list[Departures]]  # count -> that many proxies' engines


@pytest.fixture(params=["memory", "fleet", "fleet-cluster"])
async def backend(request: pytest.FixtureRequest,
                  tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Backend]:
    def engine(shared: object = None) -> Departures:
        return Departures(time.monotonic, asyncio.sleep, max_hosts=100,
                          confirm_timeout=CONFIRM, shared=shared)  # type: ignore[arg-type]

    if request.param == "memory":
        def memory(count: int) -> list[Departures]:
            return [engine()] * count  # one process, one engine

        yield Backend("memory", memory)
        return

    admin: Redis | RedisCluster
    if request.param == "fleet-cluster":
        cluster = shared_cluster(tmp_path_factory.getbasetemp() / "redis-cluster")
        url = cluster.url
        prefix = f"robotsgate-test:{secrets.token_hex(8)}:"  # a private cluster: nothing to clean
        admin = RedisCluster.from_url(cluster.node_url())
    else:
        url = request.getfixturevalue("redis_url")
        prefix = request.getfixturevalue("redis_prefix")
        admin = Redis.from_url(url)
    # The schedule is whole from the start (what a fleet does when Redis lost it is
    # test_redis's business).
    for epoch in RedisPacer(admin, prefix=prefix, max_wait=1, max_hosts=1).epoch_keys:
        await admin.set(epoch, "0")
    fleets: list[Fleet] = []

    def fleet(count: int) -> list[Departures]:
        rules = RulesCache(10)
        for _ in range(count):
            fleets.append(Fleet(url, prefix=prefix, fallback="closed", clock=time.time,
                                rules=rules, local_store=MemoryStore(100, rules),
                                local_pacer=Pacer(time.monotonic, max_wait=100, max_hosts=100),
                                max_origins=100, max_wait=100, lock_ttl=10.0,
                                confirm_timeout=CONFIRM))
        return [engine(f.departures) for f in fleets[-count:]]

    yield Backend(request.param, fleet)
    for f in fleets:
        await f.aclose()
    await admin.aclose()


async def release(departures: Departures, flow: str, host: str = "h.example", *,
                  tls: bool = False, client: str | None = None) -> float:
    """A request's turn: when it was released (monotonic)."""
    async with departures.turn(host, INTERVAL, flow, tls=tls, client=client):
        pass
    return time.monotonic()


async def test_the_next_request_leaves_an_interval_after_the_previous_really_left(
        backend: Backend) -> None:
    a, b = backend.open(2)
    await release(a, "first")
    await asyncio.sleep(0.1)  # its connection took 100 ms to open: it left then
    left = time.monotonic()
    a.connected("h.example", tls=False)
    assert await release(b, "second") - left >= INTERVAL - TICK


async def test_a_request_released_and_not_yet_confirmed_holds_the_next(backend: Backend) -> None:
    a, b = backend.open(2)
    await release(a, "first")
    second = asyncio.ensure_future(release(b, "second"))
    await asyncio.sleep(INTERVAL + 0.1)
    assert not second.done()  # an interval went by, but the first has not left yet
    left = time.monotonic()
    a.connected("h.example", tls=False)
    assert await second - left >= INTERVAL - TICK


async def test_a_request_never_confirmed_counts_as_gone_when_the_wait_for_it_gives_up(
        backend: Backend) -> None:
    a, b = backend.open(2)
    released = await release(a, "lost")  # its proxy never hears of it again
    assert await release(b, "next") - released >= CONFIRM + INTERVAL - TICK


async def test_https_leaves_once_its_handshake_is_done_not_at_its_tcp_connection(
        backend: Backend) -> None:
    a, b = backend.open(2)
    await release(a, "first", tls=True)
    second = asyncio.ensure_future(release(b, "second", tls=True))
    a.connected("h.example", tls=False)  # TCP only: the request is not out yet
    await asyncio.sleep(INTERVAL + 0.1)
    assert not second.done()
    left = time.monotonic()
    a.connected("h.example", tls=True)
    assert await second - left >= INTERVAL - TICK


async def test_another_clients_connection_to_the_host_confirms_nothing(backend: Backend) -> None:
    a, b = backend.open(2)
    await release(a, "first", client="bot")
    second = asyncio.ensure_future(release(b, "second", client="bot"))
    a.connected("h.example", tls=False, client="someone-else")  # a tunnel opened eagerly
    await asyncio.sleep(INTERVAL + 0.1)
    assert not second.done()
    left = time.monotonic()
    a.connected("h.example", tls=False, client="bot")
    assert await second - left >= INTERVAL - TICK


async def test_an_answer_to_the_request_confirms_it_left_when_released(backend: Backend) -> None:
    a, b = backend.open(2)
    released = await release(a, "first")
    await asyncio.sleep(0.05)
    a.settled("h.example", "first")  # answered on a connection that was already open
    assert await release(b, "second") - released >= INTERVAL - TICK


async def test_an_answer_to_another_request_confirms_nothing(backend: Backend) -> None:
    a, b = backend.open(2)
    await release(a, "first")
    second = asyncio.ensure_future(release(b, "second"))
    a.settled("h.example", "someone-else")
    await asyncio.sleep(INTERVAL + 0.1)
    assert not second.done()
    a.settled("h.example", "first", queued=True)  # queued behind others: gone by now
    left = time.monotonic()
    assert await second - left >= INTERVAL - TICK


async def test_hosts_do_not_hold_each_other(backend: Backend) -> None:
    a, b = backend.open(2)
    await release(a, "first", "one.example")  # unconfirmed for now
    await release(b, "other", "two.example")  # released while one.example's is pending
    a.connected("one.example", tls=False)


async def test_one_proxys_requests_take_their_turns_in_arrival_order(backend: Backend) -> None:
    [a] = backend.open(1)
    order: list[str] = []

    async def request(flow: str) -> None:
        await release(a, flow)
        order.append(flow)
        a.connected("h.example", tls=False)

    await asyncio.gather(*(request(f"r{i}") for i in range(4)))
    assert order == ["r0", "r1", "r2", "r3"]


async def release_at_once(departures: Departures, flow: str, host: str = "h.example") -> float:
    """The turn of a request that leaves as it is released (a connection already open): when
    it was released, and so left (monotonic)."""
    async with departures.turn(host, INTERVAL, flow, tls=False, client="bot",
                               at_once=lambda: True):
        pass
    released = time.monotonic()
    departures.settled(host, flow)
    return released


async def test_requests_that_leave_as_they_are_released_are_a_whole_interval_apart(
        backend: Backend) -> None:
    a, b = backend.open(2)
    first = await release_at_once(a, "first")
    second = await release_at_once(b, "second")
    assert second - first >= INTERVAL - TICK
    # At once, from both proxies: each leaves an interval after the one before, in turn.
    released = sorted(await asyncio.gather(
        *(release_at_once((a, b)[i % 2], f"r{i}") for i in range(4))))
    gaps = [later - earlier for earlier, later in itertools.pairwise([second, *released])]
    assert min(gaps) >= INTERVAL - TICK, gaps


async def test_a_request_released_at_once_after_an_unconfirmed_one_waits_for_it(
        backend: Backend) -> None:
    a, b = backend.open(2)
    await release(a, "first")  # its connection is being opened
    second = asyncio.ensure_future(release_at_once(b, "second"))
    await asyncio.sleep(INTERVAL + 0.1)
    assert not second.done()
    left = time.monotonic()
    a.connected("h.example", tls=False)
    assert await second - left >= INTERVAL - TICK
