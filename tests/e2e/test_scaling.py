"""Several proxies on one machine, as deploy/ ships them: HAProxy (deploy/haproxy/robotsgate.cfg,
its ports moved to free ones) in front of two real `mitmdump -s addon.py` workers sharing one
Redis. Bots know only HAProxy's address; every site still has one robots.txt fetch and one
Crawl-delay, whichever worker each request went through."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .clients import curl
from .haproxy import HAProxy
from .origins import Origin
from .proxy import Proxy
from .redis_server import RedisServer


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis")
    yield server
    server.stop()


def test_two_workers_behind_haproxy_keep_one_fetch_and_one_crawl_delay(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy], redis_server: RedisServer,
        tmp_path: Path) -> None:
    site = origin(robots="User-agent: *\nDisallow: /private\nCrawl-delay: 1\n")
    workers = [proxy(robots_redis=redis_server.url, robots_max_wait=60,
                     robots_pacing_margin_ms=50) for _ in range(2)]
    front = HAProxy(tmp_path, [w.port for w in workers])
    try:
        # The bots know HAProxy's address only; the CA is the workers' (http here: none used).
        front.ca = workers[0].ca
        paths = [f"/page/{n}" for n in range(6)] + ["/private/x"]
        with ThreadPoolExecutor(len(paths)) as pool:  # every bot at once, a connection each
            answers = list(pool.map(
                lambda path: curl(front, site.url(path)).status,  # type: ignore[arg-type]
                paths))
    finally:
        front.stop()
    assert answers == [200] * 6 + [403]
    assert site.robots_fetches() and len(site.robots_fetches()) == 1
    assert not site.saw("/private/x")
    arrivals = sorted(s.arrived for s in site.seen if s.path.startswith("/page/"))
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert len(arrivals) == 6 and min(gaps) >= 1.0, gaps
    # Both workers had a share of the requests.
    assert all(w.audit() for w in workers), [len(w.audit()) for w in workers]
