"""Fleet mode through real proxies: several mitmdump processes sharing one Redis.

The shared Redis (127.0.0.1:6379) with a key prefix per test; tests that stop Redis run their
own redis-server, and the Redis Cluster test its own cluster of three primaries and three
replicas. Time is asserted as lower bounds only.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis

from robotsgate.state.redis_pacing import TAGS, bucket_of

from .clients import CLIENT_TIMEOUT, Resp, curl, httpx_call, requests_call, run_concurrently
from .load import OtherTraffic
from .origins import Origin
from .proxy import Proxy, run_mitmdump
from .redis_cluster import Cluster
from .redis_server import (
    SHARED_URL,
    RedisServer,
    delete_prefix,
    new_prefix,
    require_shared_redis,
)

CLIENTS = (curl, requests_call, httpx_call)


def pace_key(prefix: str, host: str) -> bytes:
    """A host's schedule in Redis, as the README documents it."""
    return f"{prefix}pace:{{{TAGS[bucket_of(host)]}}}:{host}".encode()


@pytest.fixture
def prefix() -> Iterator[str]:
    require_shared_redis()
    p = new_prefix()
    yield p
    delete_prefix(SHARED_URL, p)


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis")
    yield server
    server.stop()


def fleet(proxy: Callable[..., Proxy], count: int, url: str, prefix: str,
          **options: object) -> list[Proxy]:
    return [proxy(robots_redis=url, robots_redis_prefix=prefix, **options) for _ in range(count)]


def test_three_proxies_keep_one_crawl_delay(origin: Callable[..., Origin],
                                            proxy: Callable[..., Proxy], prefix: str) -> None:
    site = origin(robots="User-agent: *\nCrawl-delay: 1\n")
    # Three proxy processes (plus clients and origin) on a small shared machine are scheduled
    # with more jitter than the 10 ms default covers; the margin is the operator's knob for it
    # (README, Fleet). Without a shared schedule the gaps would be near zero, not a bit short.
    proxies = fleet(proxy, 3, SHARED_URL, prefix, robots_max_wait=60,
                    robots_pacing_margin_ms=50)
    # Three bots, each with its own client, spread over the three proxies.
    calls = [
        (lambda p=p, b=b, client=client: client(
            p, site.url(f"/{b}/{p.port}"), headers={"User-Agent": f"Bot{b}/1.0"}))
        for b, client in enumerate(CLIENTS) for p in proxies]
    results = run_concurrently(calls)
    assert [r.status for r in results] == [200] * 9, results

    arrivals = sorted(s.arrived for s in site.seen if not s.path.startswith("/robots.txt"))
    assert len(arrivals) == 9
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert min(gaps) >= 1.0, f"two requests came closer than the Crawl-delay: {gaps}"
    assert len(site.robots_fetches()) == 1


def test_busy_proxies_keep_the_crawl_delay_between_them(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy], prefix: str) -> None:
    """A proxy busy with other traffic lets a released request leave late; the next one, from
    the other proxy, must still leave a whole interval after it (default margin: 10 ms)."""
    # Not 127.0.0.1, where the other traffic goes: one host name, one schedule.
    site = origin("127.0.0.3", robots="User-agent: *\nCrawl-delay: 1\n")
    proxies = fleet(proxy, 2, SHARED_URL, prefix, robots_max_wait=60)

    async def burst(b: int) -> list[int]:
        async def through(p: Proxy) -> list[int]:
            async with httpx.AsyncClient(proxy=p.url, trust_env=False, timeout=CLIENT_TIMEOUT,
                                         limits=httpx.Limits(max_connections=2)) as client:
                answers = await asyncio.gather(
                    *(client.get(site.url(f"/paced/{b}/{p.port}/{i}")) for i in range(2)))
            return [a.status_code for a in answers]

        return [s for got in await asyncio.gather(*map(through, proxies)) for s in got]

    with OtherTraffic([p.url for p in proxies]) as load:
        statuses = [s for b in range(3) for s in asyncio.run(burst(b))]
    assert statuses == [200] * 12
    assert load.answered > 1000  # the proxies were busy all along
    arrivals = sorted(s.arrived for s in site.seen if s.path.startswith("/paced/"))
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert min(gaps) >= 1.0, f"two requests came closer than the Crawl-delay: {gaps}"


def test_three_proxies_times_100_first_requests_fetch_robots_txt_once(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy], prefix: str) -> None:
    site = origin()
    # A slow robots.txt: every request arrives while the first fetch is still in flight.
    site.set_robots("User-agent: *\nDisallow: /private\n", delay=1.0)
    proxies = fleet(proxy, 3, SHARED_URL, prefix)

    async def burst() -> list[int]:
        clients = [httpx.AsyncClient(proxy=p.url, trust_env=False, timeout=CLIENT_TIMEOUT,
                                     limits=httpx.Limits(max_connections=100))
                   for p in proxies]
        try:
            answers = await asyncio.gather(*(
                c.get(site.url(f"/{'private' if i % 2 else 'page'}/{i}"))
                for c in clients for i in range(100)))
        finally:
            for c in clients:
                await c.aclose()
        return [a.status_code for a in answers]

    statuses = asyncio.run(burst())
    assert statuses == [200, 403] * 150
    assert len(site.robots_fetches()) == 1
    assert len([s for s in site.seen if s.path.startswith("/page/")]) == 150


def answer(p: Proxy, url: str) -> Resp:
    return httpx_call(p, url)


def until(call: Callable[[], Resp], done: Callable[[Resp], bool], what: str,
          timeout: float = 20.0) -> Resp:
    """Ask until the answer is the one expected (bounded): the proxy notices on its own."""
    deadline = time.monotonic() + timeout
    while True:
        response = call()
        if done(response):
            return response
        assert time.monotonic() < deadline, f"never happened: {what}; last {response}"
        time.sleep(0.1)


def wait_for_output(p: Proxy, text: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in p.output():
        assert time.monotonic() < deadline, f"{text!r} never logged:\n{p.output()}"
        time.sleep(0.05)


def test_redis_down_with_fallback_closed_answers_503_until_it_is_back(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy],
        private_redis: RedisServer) -> None:
    site = origin(robots="User-agent: *\nCrawl-delay: 1\n")
    [gate] = fleet(proxy, 1, private_redis.url, "rg:", robots_redis_fallback="closed")
    assert answer(gate, site.url("/before")).status == 200
    assert pace_key("rg:", "127.0.0.1") in private_redis.stored_keys()

    private_redis.stop()
    refused = until(lambda: answer(gate, site.url("/during")), lambda r: r.status != 200,
                    "a refusal while Redis is down")
    assert refused.status == 503 and refused.header("X-Robotsgate-Reason") == "redis-unavailable"
    assert refused.header("Retry-After")
    for _ in range(3):
        assert answer(gate, site.url("/during")).status == 503
    assert not site.saw("/during"), "forwarded while the shared state was unreachable"
    refusals = [r for r in gate.audit() if r["reason"] == "redis-unavailable"]
    assert refusals and all(r["status"] == 503 for r in refusals)
    # Each says why: which Redis, and what the connection attempt met.
    assert all(r["error"].startswith(f"Redis at {private_redis.url} is unreachable (")
               for r in refusals), refusals[0]["error"]
    wait_for_output(gate, "robots_redis_fallback=closed")

    private_redis.start()  # empty: a Redis restarted without persistence
    until(lambda: answer(gate, site.url("/after")), lambda r: r.status == 200, "service again")
    assert site.saw("/after")
    # Shared again: the schedule lives in the new Redis.
    assert pace_key("rg:", "127.0.0.1") in private_redis.stored_keys()


def test_redis_down_with_fallback_local_forwards_and_says_so_loudly(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy],
        private_redis: RedisServer) -> None:
    site = origin(robots="User-agent: *\nCrawl-delay: 1\n")
    [gate] = fleet(proxy, 1, private_redis.url, "rg:", robots_redis_fallback="local",
                   robots_pacing_margin_ms=50)
    assert answer(gate, site.url("/before")).status == 200

    private_redis.stop()
    wait_for_output(gate, "robots_redis_fallback=local")
    during = [answer(gate, site.url(f"/during/{i}")) for i in range(2)]
    assert [r.status for r in during] == [200, 200]
    assert site.saw("/during/0") and site.saw("/during/1")
    assert "politeness budget is NOT shared" in gate.output()

    private_redis.start()
    wait_for_output(gate, "reachable again")
    assert answer(gate, site.url("/after")).status == 200
    assert pace_key("rg:", "127.0.0.1") in private_redis.stored_keys()
    # The robots.txt it had carried on through the outage: no refetch.
    assert len(site.robots_fetches()) == 1
    # Pacing held across both switches: the schedule the proxy kept alone went on from the
    # shared one, and was handed back to it.
    arrivals = sorted(s.arrived for s in site.seen if not s.path.startswith("/robots.txt"))
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert min(gaps) >= 1.0, gaps


def bursts(proxies: list[Proxy], sites: list[Origin], size: int) -> list[int]:
    """A burst of `size` concurrent requests through each proxy to each site in turn, each
    site new to the fleet (so every burst needs Redis: robots.txt, its lock, the schedule):
    their statuses."""

    async def run() -> list[int]:
        clients = [httpx.AsyncClient(proxy=p.url, trust_env=False, timeout=CLIENT_TIMEOUT,
                                     limits=httpx.Limits(max_connections=size))
                   for p in proxies]
        statuses: list[int] = []
        try:
            for r, site in enumerate(sites):
                answers = await asyncio.gather(*(
                    c.get(site.url(f"/burst/{r}/{n}/{i}"))
                    for n, c in enumerate(clients) for i in range(size)))
                statuses += [a.status_code for a in answers]
                await asyncio.sleep(0.2)
        finally:
            for c in clients:
                await c.aclose()
        return statuses

    return asyncio.run(run())


def test_after_a_redis_restart_no_request_is_refused_and_no_outage_repeats(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy],
        private_redis: RedisServer) -> None:
    site = origin(robots="User-agent: *\nDisallow: /private\n")
    later = [origin(host=f"127.0.0.{11 + i}", robots="User-agent: *\nDisallow: /private\n")
             for i in range(6)]
    proxies = fleet(proxy, 2, private_redis.url, "rg:", robots_redis_fallback="closed")
    # Every proxy's pool full of connections that the restart will close under it.
    assert bursts(proxies, [site], 100) == [200] * 200

    private_redis.stop()
    for p in proxies:
        until(lambda p=p: answer(p, site.url("/during")), lambda r: r.status == 503,
              "a refusal while Redis is down")
    private_redis.start()
    for p in proxies:
        until(lambda p=p: answer(p, site.url("/after")), lambda r: r.status == 200,
              "service again")

    statuses = bursts(proxies, later, 100)
    assert statuses.count(200) == len(statuses), \
        f"{len(statuses) - statuses.count(200)} of {len(statuses)} refused after recovery"
    for p in proxies:
        assert p.output().count(" is unreachable (") == 1, p.output()
        assert "reachable again" in p.output()


def test_a_lock_holder_killed_mid_fetch_costs_the_others_one_short_lease(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy], prefix: str) -> None:
    fetch_timeout = 3
    site = origin()
    # Slow enough to kill the proxy fetching it, fast enough for the next one to finish.
    site.set_robots("User-agent: *\nDisallow: /private\n", delay=2.0)
    holder, other = fleet(proxy, 2, SHARED_URL, prefix, robots_fetch_timeout=fetch_timeout)
    doomed = threading.Thread(target=lambda: _ignore_errors(
        lambda: answer(holder, site.url("/first"))), daemon=True)
    doomed.start()
    deadline = time.monotonic() + 20
    while not site.robots_fetches():
        assert time.monotonic() < deadline, "the holder never fetched robots.txt"
        time.sleep(0.01)
    admin = redis.Redis.from_url(SHARED_URL)
    try:
        [lock] = admin.keys(f"{prefix}fetch:*")
        lease = admin.pttl(lock)
    finally:
        admin.close()
    # About as long as the fetch it guards, not a multiple of it.
    assert 0 < lease <= (fetch_timeout + 2) * 1000, lease
    assert holder.process is not None
    holder.process.kill()
    holder.process.wait(timeout=10)

    calls = [(lambda i=i: answer(other, site.url(f"/after/{i}"))) for i in range(40)]
    assert [r.status for r in run_concurrently(calls)] == [200] * 40
    # The dead holder's fetch, then exactly one more: the others waited for one another.
    assert len(site.robots_fetches()) == 2
    assert all(site.saw(f"/after/{i}") for i in range(40))


def _ignore_errors(call: Callable[[], object]) -> None:
    with contextlib.suppress(Exception):  # the proxy it went through was killed under it
        call()


@pytest.mark.parametrize("loss", ["flushdb", "restart empty", "killed -9"])
def test_requests_queued_when_redis_loses_its_memory_keep_their_spacing(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy],
        private_redis: RedisServer, loss: str) -> None:
    site = origin(robots="User-agent: *\nCrawl-delay: 1\n")
    proxies = fleet(proxy, 2, private_redis.url, "rg:", robots_max_wait=60,
                    robots_pacing_margin_ms=50)
    assert answer(proxies[0], site.url("/warm")).status == 200
    queued = [(lambda i=i: answer(proxies[i % 2], site.url(f"/queued/{i}"))) for i in range(6)]
    later = [(lambda i=i: answer(proxies[i % 2], site.url(f"/later/{i}"))) for i in range(4)]
    results: list[Resp] = []

    def first_wave() -> None:
        results.extend(run_concurrently(queued))

    wave = threading.Thread(target=first_wave)
    wave.start()
    # Some of them have left, the others wait for slots Redis is about to forget.
    deadline = time.monotonic() + 20
    while not site.saw("/queued/0") and not site.saw("/queued/1"):
        assert time.monotonic() < deadline, "nothing left"
        time.sleep(0.01)
    if loss == "flushdb":
        admin = redis.Redis.from_url(private_redis.url)
        admin.flushdb()
        admin.close()
    else:
        if loss == "killed -9":
            private_redis.kill()
        else:
            private_redis.stop()
        private_redis.start()
        # An outage, rightly (closed): answered 503 until each proxy has Redis again.
        for n, p in enumerate(proxies):
            until(lambda n=n, p=p: answer(p, site.url(f"/back/{n}")),
                  lambda r: r.status == 200, "service again")
    after = run_concurrently(later)
    wave.join(timeout=60)
    assert len(results) == 6 and all(r.status == 200 for r in after), after
    for i, r in enumerate(results):
        # A queued request whose turn came while Redis was down (closed) is refused, not sent
        # without the fleet's turn.
        assert r.status == 200 or (loss != "flushdb" and r.status == 503 and r.header(
            "X-Robotsgate-Reason") == "redis-unavailable" and not site.saw(f"/queued/{i}")), r

    arrivals = sorted(s.arrived for s in site.seen if not s.path.startswith("/robots.txt"))
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    forwarded = sum(r.status == 200 for r in [*results, *after])
    assert len(arrivals) >= 1 + forwarded and min(gaps) >= 1.0, gaps


def test_a_paused_redis_costs_refusals_while_paused_and_nothing_after(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy],
        private_redis: RedisServer) -> None:
    site = origin(robots="User-agent: *\nCrawl-delay: 1\n")
    new = origin("127.0.0.4", robots="User-agent: *\nDisallow: /private\n")
    proxies = fleet(proxy, 2, private_redis.url, "rg:", robots_redis_fallback="closed",
                    robots_max_wait=60)
    assert [answer(p, site.url(f"/before/{n}")).status for n, p in enumerate(proxies)] == \
        [200, 200]
    private_redis.pause()  # SIGSTOP: what the proxies send meanwhile runs when it resumes
    try:
        during = run_concurrently([lambda: answer(proxies[0], new.url("/during")),
                                   lambda: answer(proxies[1], site.url("/during"))])
    finally:
        private_redis.resume()
    assert all(r.status == 503 and r.header("X-Robotsgate-Reason") == "redis-unavailable"
               for r in during), during
    assert not new.saw("/during") and not site.saw("/during")
    # Back by itself. The lock asked for during the pause ran late and took nothing: the origin
    # first asked for then is answered at once, not after a lease nobody renews.
    for n, p in enumerate(proxies):
        until(lambda n=n, p=p: answer(p, new.url(f"/after/{n}")), lambda r: r.status == 200,
              "service again")
    assert private_redis.stored_keys("rg:fetch:*") == []
    assert len(new.robots_fetches()) == 1
    later = run_concurrently([lambda i=i: answer(proxies[i % 2], site.url(f"/later/{i}"))
                              for i in range(3)])
    assert [r.status for r in later] == [200] * 3
    arrivals = sorted(s.arrived for s in site.seen if not s.path.startswith("/robots.txt"))
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert len(arrivals) == 5 and min(gaps) >= 1.0, gaps


def test_a_bad_redis_url_stops_the_proxy_at_start_up(tmp_path: Path) -> None:
    code, output = run_mitmdump(tmp_path, {"robots_redis": "redis://127.0.0.1:6379/first",
                                           "robots_audit_log": tmp_path / "a.log"})
    assert code is not None and code != 0, output
    assert "robots_redis" in output and "database must be a number" in output


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    nodes = Cluster(tmp_path / "cluster", node_timeout=1000)
    yield nodes
    nodes.stop()


def test_a_cluster_primary_killed_the_fleet_fails_closed_then_recovers_by_itself(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy], cluster: Cluster) -> None:
    site = origin(robots="User-agent: *\nCrawl-delay: 1\nDisallow: /private\n")
    proxies = fleet(proxy, 2, cluster.url, "rg:", robots_redis_fallback="closed",
                    robots_max_wait=60, robots_pacing_margin_ms=50)
    for n, p in enumerate(proxies):
        assert answer(p, site.url(f"/before/{n}")).status == 200
    # The primary that holds the origin's schedule: its replica takes over about 2 s after.
    cluster.kill(cluster.primary_of(pace_key("rg:", "127.0.0.1").decode()))
    killed = time.monotonic()

    refused: set[int] = set()  # proxies that have answered 503 since the kill
    recovered: dict[int, float] = {}  # proxy -> seconds from the kill to its first 200 after
    deadline = killed + 60  # generous: what is measured is printed, not asserted
    i = 0
    while len(recovered) < len(proxies):
        assert time.monotonic() < deadline, f"never recovered: {refused=}, {recovered=}"
        for n, p in enumerate(proxies):
            if n in recovered:
                continue
            path, private = f"/during/{n}/{i}", f"/private/{n}/{i}"
            allowed, disallowed = answer(p, site.url(path)), answer(p, site.url(private))
            assert disallowed.status in (403, 503), disallowed
            if allowed.status == 503:
                assert allowed.header("X-Robotsgate-Reason") == "redis-unavailable", allowed
                assert not site.saw(path), "a refused request reached the origin"
                refused.add(n)
            else:
                assert allowed.status == 200, allowed
                if n in refused:
                    recovered[n] = time.monotonic() - killed
        i += 1
        time.sleep(0.1)
    print(f"cluster failover: each proxy answered again after {recovered} s")
    # Every proxy noticed (503: nothing undecided went through), and came back on its own.
    assert refused == {0, 1}
    assert not any(s.path.startswith("/private") for s in site.seen)
    for p in proxies:
        assert "reachable again" in p.output()
    # Shared again, on the promoted replica: the schedule held across the failover.
    after = run_concurrently([(lambda n=n, p=p: answer(p, site.url(f"/after/{n}")))
                              for n, p in enumerate(proxies)])
    assert [r.status for r in after] == [200, 200], after
    arrivals = sorted(s.arrived for s in site.seen if not s.path.startswith("/robots.txt"))
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert min(gaps) >= 1.0, gaps
    assert len(site.robots_fetches()) == 1


def test_three_proxies_times_300_first_requests_queue_for_redis_and_none_is_refused(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy],
        private_redis: RedisServer) -> None:
    """A proxy's own queue for its Redis connections is not Redis being unreachable: a burst
    far larger than the pool waits for connections, within each request's deadline, and no
    request is refused for it and no proxy logs an outage."""
    site = origin()
    # Every request arrives while the one fetch is in flight, and wants Redis meanwhile.
    site.set_robots("User-agent: *\nDisallow: /private\n", delay=1.5)
    proxies = fleet(proxy, 3, private_redis.url, "rg:", robots_redis_fallback="closed")
    statuses = bursts(proxies, [site], 300)
    refused = len(statuses) - statuses.count(200)
    assert refused == 0, f"{refused} of {len(statuses)} refused: " \
        f"{ {s: statuses.count(s) for s in set(statuses)} }"
    assert len(site.robots_fetches()) == 1
    for p in proxies:
        assert " is unreachable (" not in p.output(), p.output()
