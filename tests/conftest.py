"""What the unit tests share as fixtures: a fake clock, origins, Redis.

- `clock`: a `FakeClock` (tests/support/clock.py): wall clock, monotonic clock and sleep in one,
  moving only when someone sleeps or the test moves it.
- `origins`: an empty `Origins` (tests/support/origins.py): robots.txt (or any) answers from a
  table, counted, through httpx.MockTransport.
- `redis_url`, `redis_prefix`, `redis_clients`: the shared Redis on 127.0.0.1:6379 (or
  $ROBOTSGATE_TEST_REDIS), a key prefix of the test's own that is deleted afterwards, and
  connections to it (one per "proxy"). Without that Redis the test fails saying how to get one.

Helpers are not imported from here but from tests/support:
`from support.gate import wire_gate`, `from support.origins import Origins, ok`.
"""

from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from e2e.redis_server import SHARED_URL, delete_prefix, new_prefix, require_shared_redis
from redis.asyncio import Redis
from support.clock import FakeClock
from support.origins import Origins

# -- clocks ---------------------------------------------------------------------------------------


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


# -- origins --------------------------------------------------------------------------------------

@pytest.fixture
def origins() -> Origins:
    """No origin has anything yet: add routes with `origins.routes[url_or_host] = ...`."""
    return Origins()


# -- Redis ----------------------------------------------------------------------------------------

REDIS_URL = SHARED_URL  # ROBOTSGATE_TEST_REDIS, or 127.0.0.1:6379


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The shared Redis, checked once: a test that needs it fails (never skips) without it."""
    require_shared_redis(REDIS_URL)
    return REDIS_URL


@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix no other test uses; every key under it is deleted afterwards."""
    prefix = new_prefix()
    yield prefix
    delete_prefix(redis_url, prefix)


@pytest.fixture
async def redis_clients(redis_url: str) -> AsyncIterator[Callable[[], Redis]]:
    """Factory: one more connection pool to the shared Redis, as another proxy would have."""
    made: list[Redis] = []

    def make() -> Redis:
        client = Redis.from_url(redis_url)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()
