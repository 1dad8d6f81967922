"""What the unit tests share: fake clocks, origins on httpx's MockTransport, Redis, a wired gate.

- `FakeClock` (fixture `clock`): wall clock, monotonic clock and sleep in one, moving only when
  someone sleeps or the test moves it. Nothing in the unit tests needs to wait for real time.
- `Origins` (fixture `origins`): robots.txt (or any) answers from a table, counted, through
  httpx.MockTransport; `ok(body)` is a 200 with that body; `request_for(url)` a gate Request.
- `redis_url`, `redis_prefix`, `redis_clients`: the shared Redis on 127.0.0.1:6379 (or
  $ROBOTSGATE_TEST_REDIS), a key prefix of the test's own that is deleted afterwards, and
  connections to it (one per "proxy"). Without that Redis the test fails saying how to get one.
- `wire_gate(...)`: the gate built bottom-up as the proxy builds it (rules cache, store,
  retrieval, pacer, gate), with every part at hand.

Helpers are imported from here: `from conftest import FakeClock, Origins, ok, wire_gate`.
"""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass

import httpx
import pytest
from e2e.redis_server import SHARED_URL, delete_prefix, new_prefix, require_shared_redis
from redis.asyncio import Redis

from robotsgate.archive import RobotsArchive
from robotsgate.fetch import Fetcher
from robotsgate.gate import Gate, GateConfig, Request
from robotsgate.metrics import Metrics
from robotsgate.origin import Origin
from robotsgate.retrieval import Retrieval, RobotsFetcher
from robotsgate.rules_cache import RulesCache
from robotsgate.state.pacing import Pacer, Pacing
from robotsgate.state.store import MemoryStore, Store

# -- clocks ---------------------------------------------------------------------------------------


class FakeClock:
    """Time that moves only when someone sleeps or the test says so (`clock.now += 5`).

    One object serves as wall clock, monotonic clock and `sleep`: a test that hands it out for
    all three sees waits come out exactly, and `sleeps` says what was slept.
    """

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now
        self.sleeps: list[float] = []
        self.advance = True  # False: sleeping takes no time (every request arrives at once)
        self.broken = False  # True: reading the clock raises, as a failing dependency would

    def __call__(self) -> float:
        if self.broken:
            raise RuntimeError("clock broken")
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.advance:
            self.now += seconds
        await asyncio.sleep(0)  # a sleep gives the event loop up, as a real one does


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


# -- origins --------------------------------------------------------------------------------------

Handler = Callable[[httpx.Request], Awaitable[httpx.Response] | httpx.Response]
Route = httpx.Response | Handler


def ok(body: bytes, **headers: str) -> httpx.Response:
    """200 with `body` (header names with '_' for '-': ok(b"", cache_control="no-cache"))."""
    return httpx.Response(200, content=body,
                          headers={name.replace("_", "-"): v for name, v in headers.items()})


class Origins:
    """Answers requests from a table, by full URL first and then by host, and keeps them.

    A route is a response (answered afresh each time) or a handler, plain or async; anything
    not in the table is answered 404.
    """

    def __init__(self, routes: Mapping[str, Route] | None = None, /, **more: Route) -> None:
        self.routes: dict[str, Route] = {**(routes or {}), **more}
        self.seen: list[httpx.Request] = []

    @property
    def urls(self) -> list[str]:
        return [str(request.url) for request in self.seen]

    @property
    def fetches(self) -> int:
        return len(self.seen)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    def fetcher(self, timeout: float = 2.0) -> Fetcher:
        """The proxy's own robots.txt fetcher, talking to these origins."""
        return Fetcher(timeout=timeout, transport=self.transport())

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        route = self.routes.get(str(request.url)) or self.routes.get(request.url.host)
        if route is None:
            return httpx.Response(404)
        if isinstance(route, httpx.Response):
            return httpx.Response(route.status_code, headers=route.headers, content=route.content)
        answer = route(request)
        return await answer if isinstance(answer, Awaitable) else answer


@pytest.fixture
def origins() -> Origins:
    """No origin has anything yet: add routes with `origins.routes[url_or_host] = ...`."""
    return Origins()


def request_for(url: str, user_agent: str | None = "TestBot/1.0", agent: str | None = None
            ) -> Request:
    """A gate Request for `url`, path and query as sent."""
    u = httpx.URL(url)
    return Request(Origin.of(u.scheme, u.host, u.port), u.raw_path.decode(), user_agent, agent)


# -- the gate, wired ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Wired:
    gate: Gate
    retrieval: Retrieval
    store: Store
    rules: RulesCache
    pacer: Pacing


def wire_gate(fetcher: RobotsFetcher, clock: Callable[[], float], *,
              store: Store | None = None, rules: RulesCache | None = None,
              pacer: Pacing | None = None, metrics: Metrics | None = None,
              archive: RobotsArchive | None = None, semantics: str = "rfc9309",
              case_sensitive: bool = True, rules_size: int = 10_000, store_size: int = 100,
              cache_ttl: int = 86_400, error_ttl: int = 60, max_wait: float = 60.0,
              config: GateConfig | None = None) -> Wired:
    """Bottom-up, as the proxy does it. A `store` given is used with the `rules` it was built
    with; otherwise a MemoryStore of `store_size` origins keeps bodies and gets its rules back
    through the rules cache."""
    # "is None", not "or": an empty store or cache is falsy (it has a length).
    if rules is None:
        rules = RulesCache(rules_size, semantics=semantics, case_sensitive=case_sensitive)
    if store is None:
        store = MemoryStore(store_size, rules)
    if metrics is None:
        metrics = Metrics()
    retrieval = Retrieval(fetcher, rules, store, clock, cache_ttl=cache_ttl, error_ttl=error_ttl,
                          metrics=metrics, archive=archive)
    if pacer is None:
        pacer = Pacer(clock, max_wait=max_wait, max_hosts=store_size)
    gate = Gate(config or GateConfig(), store, retrieval, clock, pacer, metrics=metrics)
    return Wired(gate, retrieval, store, rules, pacer)


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
