"""The decision service: request -> robots.txt (cached, fetched once) -> Verdict.

No mitmproxy types here: the addon turns flows into `Request`s and Verdicts into responses, so
everything below it can be driven without a proxy, with an injected clock, fetcher and store.
"""

import asyncio
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from cachetools import LRUCache

from robotsgate.fetch import FetchResult
from robotsgate.protocol import Decision, RobotsTxt
from robotsgate.store import RobotsEntry, Store

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Origin:
    """One robots.txt per scheme + host + port (RFC 9309 §2.3)."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, scheme: str, host: str, port: int | None) -> "Origin":
        scheme = scheme.lower()
        # example.com. and EXAMPLE.com are example.com; the default port is no port.
        host = host.lower().rstrip(".")
        return cls(scheme, host, port or _DEFAULT_PORTS.get(scheme, 80))

    @property
    def key(self) -> str:
        return f"{self.scheme}://{self._netloc()}"

    @property
    def robots_url(self) -> str:
        return f"{self.key}/robots.txt"

    def _netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = _DEFAULT_PORTS.get(self.scheme)
        return host if self.port == default else f"{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Request:
    origin: Origin
    path: str  # path and query, as sent
    user_agent: str | None


Action = Literal["forward", "block", "unavailable"]


@dataclass(frozen=True, slots=True)
class Verdict:
    action: Action
    reason: str  # allowed | robots.txt | disallowed | robots-unavailable
    agent: str  # the product token the decision was made for
    robots_url: str
    entry: RobotsEntry | None = None
    decision: Decision | None = None
    retry_after: int | None = None  # seconds, for "unavailable"

    @property
    def status(self) -> int | None:
        return {"block": 403, "unavailable": 503}.get(self.action)


class RobotsFetcher(Protocol):
    async def fetch(self, robots_url: str, user_agent: str | None) -> FetchResult: ...


@dataclass(frozen=True, slots=True)
class GateConfig:
    agent: str | None = None  # one product token for all traffic; None: from each User-Agent
    semantics: str = "rfc9309"
    case_sensitive: bool = True
    cache_ttl: int = 86_400  # seconds; RFC 9309 §2.4: no more than 24 hours
    error_ttl: int = 60  # seconds before an unreachable robots.txt is asked for again
    parsed_cache_size: int = 10_000  # distinct robots.txt bodies kept parsed


class Gate:
    """Decides requests. One instance owns its in-flight fetches and its parse cache."""

    def __init__(self, config: GateConfig, fetcher: RobotsFetcher, store: Store,
                 clock: Callable[[], float]) -> None:
        self.config = config
        self._fetcher = fetcher
        self._store = store
        self._clock = clock
        self._inflight: dict[str, asyncio.Task[RobotsEntry]] = {}
        # Hosting platforms serve one file to thousands of sites: parse each body once.
        self._parsed: LRUCache[str, RobotsTxt] = LRUCache(maxsize=config.parsed_cache_size)
        self._allow_all = RobotsTxt.parse(b"", semantics=config.semantics)
        self.fetches = 0  # robots.txt fetches started, for metrics and tests

    async def check(self, request: Request) -> Verdict:
        origin = request.origin
        if request.path == "/robots.txt" or request.path.startswith("/robots.txt?"):
            # The bot's own robots.txt request goes through untouched (no fetch of ours first).
            return Verdict("forward", "robots.txt", self.config.agent or "*", origin.robots_url)
        entry = await self.entry(origin, request.user_agent)
        if entry.robots is None:
            retry = max(1, math.ceil(entry.expires_at - self._clock()))
            return Verdict("unavailable", "robots-unavailable", self.config.agent or "*",
                           origin.robots_url, entry, retry_after=retry)
        agent = self.config.agent or entry.robots.agent_for(request.user_agent or "")
        decision = entry.robots.decide(agent, request.path)
        if decision.allowed:
            return Verdict("forward", "allowed", agent, origin.robots_url, entry, decision)
        return Verdict("block", "disallowed", agent, origin.robots_url, entry, decision)

    async def entry(self, origin: Origin, user_agent: str | None) -> RobotsEntry:
        """The origin's robots.txt, fetched when missing or expired; one fetch per origin."""
        key = origin.key
        cached = await self._store.get(key)
        if cached is not None and cached.expires_at > self._clock():
            return cached
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.create_task(self._refresh(origin, user_agent, cached))
            self._inflight[key] = task
            task.add_done_callback(lambda _: self._inflight.pop(key, None))
        # shield: a client that goes away must not cancel the fetch the others wait for.
        return await asyncio.shield(task)

    async def _refresh(self, origin: Origin, user_agent: str | None,
                       stale: RobotsEntry | None) -> RobotsEntry:
        self.fetches += 1
        result = await self._fetcher.fetch(origin.robots_url, user_agent)
        entry = self._entry_for(origin, result, stale)
        await self._store.put(origin.key, entry)
        return entry

    def _entry_for(self, origin: Origin, result: FetchResult,
                   stale: RobotsEntry | None) -> RobotsEntry:
        now = self._clock()
        ttl = self.config.cache_ttl
        if result.max_age is not None:
            ttl = min(ttl, result.max_age)
        if result.outcome == "ok":
            sha = hashlib.sha256(result.body).hexdigest()
            return RobotsEntry("ok", origin.robots_url, self._parse(sha, result.body),
                               result.status, sha, now, now + ttl, body=result.body)
        if result.outcome == "missing":
            return RobotsEntry("missing", origin.robots_url, self._allow_all, result.status,
                               None, now, now + ttl, error=result.error)
        retry_at = now + self.config.error_ttl
        if stale is not None and stale.robots is not None:
            # RFC 9309 §2.3.1.4: keep using the last good copy while the origin is in trouble.
            return RobotsEntry(stale.kind, stale.robots_url, stale.robots, stale.status,
                               stale.sha256, stale.fetched_at, retry_at, result.error, stale.body)
        return RobotsEntry("unreachable", origin.robots_url, None, result.status, None, now,
                           retry_at, result.error)

    def _parse(self, sha: str, body: bytes) -> RobotsTxt:
        robots = self._parsed.get(sha)
        if robots is None:
            robots = RobotsTxt.parse(body, semantics=self.config.semantics,
                                     case_sensitive=self.config.case_sensitive)
            self._parsed[sha] = robots
        return robots
