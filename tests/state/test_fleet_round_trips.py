"""Round trips to Redis per paced request, counted by Redis itself (INFO commandstats: the
EVALSHA calls each node ran), on a Redis of the test's own and on a Redis Cluster of three
primaries (a host's keys in one slot: one call is one node's).

Each request is driven as the proxy drives it (robotsgate.state.driver.Politeness: the slot
reserved when it is decided, its turn as it leaves, its departure reported), through each
proxy's Fleet. A request that leaves as it is released, on a connection already open:

- whose slot is now (the host's interval has passed since the last departure): one call, its
  reservation, which takes its turn and records its departure;
- that waits for its slot: two, its reservation and, at its slot, its turn with its departure.

One that opens a connection: three (its reservation, its turn, and its departure once the
connection is ready, which only then is known).

Counts are exact: nothing else uses these Redis servers meanwhile. The slack (how far ahead a
departure is recorded) is generous here, so that a slow machine's scheduling never makes a
request miss it (and take its turn again: a correct, but other, count).
"""

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e.redis_cluster import shared_cluster
from e2e.redis_server import RedisServer
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from robotsgate.rules_cache import RulesCache
from robotsgate.state.departures import Departures
from robotsgate.state.driver import Politeness
from robotsgate.state.fleet import Fleet
from robotsgate.state.pacing import Pacer, Slot
from robotsgate.state.redis_pacing import RedisPacer
from robotsgate.state.store import MemoryStore

INTERVAL = 0.1
SLACK = 0.4


@dataclass
class Setup:
    proxies: list[Politeness]
    fleets: list[Fleet]
    calls: Callable[[], Awaitable[int]]  # EVALSHA calls run so far, on every primary
    publishes: Callable[[], Awaitable[int]]  # notices published so far


async def calls_of(urls: list[str], command: str = "evalsha") -> int:
    """How many times every primary ran `command` (inside scripts too)."""
    total = 0
    for url in urls:
        node = Redis.from_url(url)
        try:
            if (await node.info("replication")).get("role") != "master":
                continue
            stats = await node.info("commandstats")
            total += int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))
        finally:
            await node.aclose()
    return total


@pytest.fixture(params=["redis", "redis-cluster"])
async def setup(request: pytest.FixtureRequest, tmp_path: Path,
                tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Setup]:
    server: RedisServer | None = None
    if request.param == "redis-cluster":
        cluster = shared_cluster(tmp_path_factory.getbasetemp() / "redis-cluster")
        url = cluster.url
        nodes = [cluster.node_url(node) for node in cluster.alive()]
    else:
        server = RedisServer(tmp_path / "redis")
        url = server.url
        nodes = [url]
    prefix = f"robotsgate-test:{secrets.token_hex(8)}:"
    # The schedule is whole from the start (a new fleet's first calls regroup it otherwise).
    admin = RedisCluster.from_url(nodes[0]) if request.param == "redis-cluster" else \
        Redis.from_url(url)
    try:
        for epoch in RedisPacer(admin, prefix=prefix, max_wait=1, max_hosts=1).epoch_keys:
            await admin.set(epoch, "0")
    finally:
        await admin.aclose()
    rules = RulesCache(10)
    fleets = [Fleet(url, prefix=prefix, fallback="closed", clock=time.time, rules=rules,
                    local_store=MemoryStore(100, rules),
                    local_pacer=Pacer(time.monotonic, max_wait=100, max_hosts=100),
                    max_origins=100, max_wait=100, lock_ttl=10.0, regroup=0.1, slack=SLACK)
              for _ in range(2)]
    proxies = []
    for fleet in fleets:
        fleet.start()
        departures = Departures(time.monotonic, asyncio.sleep, max_hosts=100,
                                shared=fleet.departures)
        proxies.append(Politeness(fleet.pacer, departures, monotonic=time.monotonic,
                                  sleep=asyncio.sleep))
    for fleet in fleets:  # the watchers' own calls (every group's epoch) done with
        while not fleet.shared_pacer.is_listening:
            await asyncio.sleep(0.01)
    try:
        yield Setup(proxies, fleets, lambda: calls_of(nodes),
                    lambda: calls_of(nodes, "publish"))
    finally:
        for fleet in fleets:
            await fleet.aclose()
        if server is not None:
            server.stop()


async def request(proxy: Politeness, flow: str, *, at_once: bool = True,
                  host: str = "h.example") -> None:
    """A paced request as the proxy makes it: decided (its slot), held for its turn, gone."""
    slot = await proxy.pacing.reserve(host, INTERVAL)
    assert isinstance(slot, Slot)
    await proxy.turn(host, time.monotonic() + slot.wait, INTERVAL, flow, tls=False,
                     client="bot", at_once=lambda: at_once)
    if at_once:
        proxy.settled(host, flow)  # it left as it was released
    else:
        await asyncio.sleep(0.01)  # its connection opens
        proxy.departures.connected(host, tls=False, client="bot")


async def reported(setup: Setup) -> None:
    """Every departure report sent in the background has been answered."""
    for fleet in setup.fleets:
        await fleet.departures.aclose()


async def test_a_request_whose_slot_is_now_costs_one_call(setup: Setup) -> None:
    before, published = await setup.calls(), await setup.publishes()
    for i in range(6):  # alternately through both proxies, each once the interval has passed
        await request(setup.proxies[i % 2], f"r{i}")
        await asyncio.sleep(INTERVAL + SLACK + 0.05)
    await reported(setup)
    assert await setup.calls() - before == 6
    # And no notice to every proxy: none of them took the host for idle.
    assert await setup.publishes() - published == 0


async def test_a_request_that_waits_for_its_slot_costs_two(setup: Setup) -> None:
    before = await setup.calls()
    await asyncio.gather(*(request(setup.proxies[i % 2], f"r{i}") for i in range(5)))
    await reported(setup)
    # The first one's slot is now; the other four wait for theirs.
    assert await setup.calls() - before == 1 + 2 * 4


async def test_a_request_that_opens_a_connection_costs_three(setup: Setup) -> None:
    before = await setup.calls()
    for i in range(3):
        await request(setup.proxies[i % 2], f"r{i}", at_once=False)
        await asyncio.sleep(INTERVAL + SLACK + 0.05)
    await reported(setup)
    assert await setup.calls() - before == 3 * 3
