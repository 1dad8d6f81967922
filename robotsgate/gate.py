"""The decision service: request -> robots.txt (cached, fetched once) -> Verdict.

No mitmproxy types here: the addon turns flows into `Request`s and Verdicts into responses, so
everything below it can be driven without a proxy, with an injected clock, fetcher and store.
"""

import asyncio
import hashlib
import math
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from cachetools import LRUCache

from robotsgate.archive import RobotsArchive
from robotsgate.fetch import FetchResult
from robotsgate.metrics import Metrics
from robotsgate.origin import Origin
from robotsgate.pacing import Pacer, Pacing, Refusal, Slot, seconds_until_open
from robotsgate.protocol import Decision, RobotsTxt
from robotsgate.protocol.urls import server_equivalent
from robotsgate.store import RobotsEntry, Store

_PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]+")  # as RobotsTxt.agent_for reads a User-Agent
_IDENTITIES_REMEMBERED = 4096


def _cache_key(origin: Origin, who: str) -> str:
    return f"{origin.key} {who}"  # no space in an origin's key: the two parts stay apart


@dataclass(frozen=True, slots=True)
class Request:
    origin: Origin
    path: str  # path and query, as sent
    user_agent: str | None
    agent: str | None = None  # the product token, when known from configuration


# forward: after `wait` seconds. block: 403, a rule disallows it. unavailable: 503, robots.txt
# unreachable. throttle: 429, the wait would be too long. closed: 503, outside Visit-time.
Action = Literal["forward", "block", "unavailable", "throttle", "closed"]
_STATUS = {"block": 403, "unavailable": 503, "throttle": 429, "closed": 503}


@dataclass(frozen=True, slots=True)
class Verdict:
    action: Action
    # forward: allowed | robots.txt | crawl-delay | request-rate | min-delay | pushback |
    #          crawl-delay-clamped; otherwise: disallowed | robots-unavailable | wait-too-long |
    #          crawl-delay-too-long | pushback | visit-time
    reason: str
    agent: str  # the product token the decision was made for
    robots_url: str
    entry: RobotsEntry | None = None
    decision: Decision | None = None
    retry_after: int | None = None  # seconds, for the answers that carry Retry-After
    wait: float = 0.0  # seconds to hold the request before forwarding it
    interval: float = 0.0  # the host's spacing this request keeps (seconds between starts)
    asked_delay: float | None = None  # the site's Crawl-delay, when it was clamped or refused

    @property
    def status(self) -> int | None:
        return _STATUS.get(self.action)


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
    min_delay: float = 0.0  # seconds between requests to a host, whatever robots.txt says
    max_crawl_delay: float = 60.0  # a longer Crawl-delay is clamped to this, or refused
    on_long_delay: Literal["clamp", "refuse"] = "clamp"
    # Added to every non-zero interval: the proxy controls when it releases a request, not how
    # long forwarding takes (about a millisecond, more under load), and the origin must never
    # see two requests closer than it asked.
    pacing_margin: float = 0.0


class Gate:
    """Decides requests. One instance owns its in-flight fetches and its parse cache."""

    def __init__(self, config: GateConfig, fetcher: RobotsFetcher, store: Store,
                 clock: Callable[[], float], pacer: Pacing | None = None, *,
                 metrics: Metrics | None = None, archive: RobotsArchive | None = None) -> None:
        self.config = config
        self.metrics = metrics or Metrics()
        self._archive = archive  # every distinct body fetched, kept as evidence
        self.pacer: Pacing = pacer or Pacer(clock, max_wait=60,
                                            max_hosts=config.parsed_cache_size)
        self._fetcher = fetcher
        self._store = store
        self._clock = clock
        self._inflight: dict[str, asyncio.Task[RobotsEntry]] = {}
        # Hosting platforms serve one file to thousands of sites: parse each body once, and keep
        # one copy of it and of its hash.
        self._parsed: LRUCache[str, tuple[str, RobotsTxt, bytes]] = LRUCache(
            maxsize=config.parsed_cache_size)
        self._allow_all = RobotsTxt.parse(b"", semantics=config.semantics)
        self.fetches = 0  # robots.txt fetches started, for metrics and tests
        self._identities: dict[tuple[str, str | None], tuple[str, str | None]] = {}
        self._long_decisions = asyncio.Lock()  # decisions that take more than one slice

    async def check(self, request: Request) -> Verdict:
        origin = request.origin
        if request.path == "/robots.txt" or request.path.startswith("/robots.txt?"):
            # The bot's own robots.txt request goes through untouched (no fetch of ours first).
            return Verdict("forward", "robots.txt", request.agent or self.config.agent or "*",
                           origin.robots_url)
        entry = await self.entry(origin, request.user_agent, request.agent or self.config.agent)
        if entry.robots is None:
            retry = max(1, math.ceil(entry.expires_at - self._clock()))
            return Verdict("unavailable", "robots-unavailable",
                           request.agent or self.config.agent or "*",
                           origin.robots_url, entry, retry_after=retry)
        robots = entry.robots
        agent = request.agent or self.config.agent or robots.agent_for(request.user_agent or "")
        # decide() reads "//x/y" as a network-path reference (host x); a request's path is a path.
        path = request.path if not request.path.startswith("//") else "http://_" + request.path
        decision = await self._in_slices(robots.decide_steps(agent, path))
        if decision.allowed:
            # What the server will really serve may be another path (/a/../private,
            # /%70rivate): when it is, deny if either reading is denied.
            equivalent = server_equivalent(request.path)
            if equivalent != request.path:
                other = await self._in_slices(robots.decide_steps(agent, equivalent))
                if not other.allowed:
                    decision = other
        if not decision.allowed:
            return Verdict("block", "disallowed", agent, origin.robots_url, entry, decision)
        verdict = Verdict("forward", "allowed", agent, origin.robots_url, entry, decision)
        return await self._pace(origin, robots, verdict)

    async def _pace(self, origin: Origin, robots: RobotsTxt, verdict: Verdict) -> Verdict:
        agent = verdict.agent
        window = robots.visit_time(agent)
        if window is not None:
            closed_for = seconds_until_open(window, self._clock())
            if closed_for:
                return replace(verdict, action="closed", reason="visit-time",
                               retry_after=int(closed_for))
        interval, reason, asked = self._interval(robots, agent)
        if reason == "crawl-delay-too-long":
            return replace(verdict, action="throttle", reason=reason, asked_delay=asked,
                           retry_after=math.ceil(asked or 0))
        slot = await self.pacer.reserve(origin.host, interval)
        if isinstance(slot, Refusal):
            return replace(verdict, action="throttle",
                           reason="pushback" if slot.paused else "wait-too-long",
                           retry_after=max(1, math.ceil(slot.retry_after)), asked_delay=asked)
        if slot.wait <= 0 and reason != "crawl-delay-clamped":
            return verdict if interval <= 0 else replace(verdict, interval=interval)
        return replace(verdict, reason="pushback" if slot.paused else reason, wait=slot.wait,
                       asked_delay=asked, interval=interval)

    async def pace_regardless(self, origin: Origin, verdict: Verdict) -> tuple[float, float]:
        """(seconds to hold, interval kept) for a request that goes out whatever its verdict
        (monitor mode).

        It takes its turn in the host's schedule like an allowed request, at the agent's
        interval when robots.txt is known (a long Crawl-delay clamped), else at the least
        interval; never refused, since it is forwarded anyway.
        """
        entry = verdict.entry
        if entry is not None and entry.robots is not None:
            interval = self._interval(entry.robots, verdict.agent, clamp=True)[0]
        else:
            interval = self.config.min_delay
            if interval > 0:
                interval += self.config.pacing_margin
        slot = await self.pacer.reserve(origin.host, interval, max_wait=math.inf)
        return (slot.wait if isinstance(slot, Slot) else 0.0), interval

    async def _in_slices(self, steps: Generator[None, None, Decision]) -> Decision:
        """Run a decision that comes in slices of bounded work (RobotsTxt.decide_steps).

        Ordinary decisions come in one slice and never give the event loop up. A long one
        (a hostile robots.txt, a long path) lets the loop serve other requests between its
        slices, and long ones take turns: however many there are, each turn of the loop does
        at most one slice of them, so one site cannot stall the others.
        """
        try:
            next(steps)
        except StopIteration as done:
            decision: Decision = done.value
            return decision
        async with self._long_decisions:
            try:
                while True:
                    await asyncio.sleep(0)
                    next(steps)
            except StopIteration as done:
                decision = done.value
                return decision

    def _interval(self, robots: RobotsTxt, agent: str, *, clamp: bool = False
                  ) -> tuple[float, str, float | None]:
        """(seconds between request starts, what sets it, the Crawl-delay asked if cut down)."""
        config = self.config
        delay = robots.crawl_delay(agent) or 0.0
        asked = None
        reason = "crawl-delay"
        if delay > config.max_crawl_delay:
            asked = delay
            if config.on_long_delay == "refuse" and not clamp:
                return 0.0, "crawl-delay-too-long", asked
            delay, reason = config.max_crawl_delay, "crawl-delay-clamped"
        rate = robots.request_rate(agent)
        interval, why = delay, reason  # the largest of the three; on a tie, the first named
        if rate is not None and rate.interval > interval:
            interval, why = rate.interval, "request-rate"
        if config.min_delay > interval:
            interval, why = config.min_delay, "min-delay"
        if asked is not None and interval == delay:
            why = "crawl-delay-clamped"
        if interval > 0:
            interval += config.pacing_margin
        return interval, why, asked

    async def check_host(self, origin: Origin, user_agent: str | None,
                         agent: str | None) -> Verdict:
        """For a tunnel the proxy cannot see into: the host alone decides.

        Refused when robots.txt disallows everything for the agent, or cannot be fetched.
        """
        agent = agent or self.config.agent
        entry = await self.entry(origin, user_agent, agent)
        if entry.robots is None:
            retry = max(1, math.ceil(entry.expires_at - self._clock()))
            return Verdict("unavailable", "robots-unavailable", agent or "*", origin.robots_url,
                           entry, retry_after=retry)
        agent = agent or entry.robots.agent_for(user_agent or "")
        if entry.robots.disallows_all(agent):
            return Verdict("block", "disallowed-host", agent, origin.robots_url, entry,
                           entry.robots.decide(agent, "/"))
        return Verdict("forward", "tunnel", agent, origin.robots_url, entry)

    async def entry(self, origin: Origin, user_agent: str | None,
                    agent: str | None = None) -> RobotsEntry:
        """The origin's robots.txt as served to this bot, fetched when missing or expired; one
        fetch per origin and bot.

        A site may serve each bot its own file, so a copy is fetched as the bot it decides
        for and kept for that bot only: with a product token configured (`agent`), as that
        token; otherwise as the request's User-Agent, kept for User-Agents that name the same
        products.
        """
        who, fetch_as = self._fetch_identity(user_agent, agent)
        key = _cache_key(origin, who)
        cached = await self._store.get(key)
        if cached is not None and cached.expires_at > self._clock():
            self.metrics.cache(hit=True)
            return cached
        self.metrics.cache(hit=False)
        task = self._inflight.get(key)
        if task is None:
            # The store decides who fetches: this gate, or (shared store) one proxy of a fleet.
            task = asyncio.create_task(self._store.refresh(
                key, cached, lambda: self._refresh(origin, key, fetch_as, cached)))
            self._inflight[key] = task
            task.add_done_callback(lambda _: self._inflight.pop(key, None))
        # shield: a client that goes away must not cancel the fetch the others wait for.
        return await asyncio.shield(task)

    def cache_key(self, origin: Origin, user_agent: str | None, agent: str | None = None
                  ) -> str:
        """The store's key for the copy of `origin`'s robots.txt kept for this bot."""
        return _cache_key(origin, self._fetch_identity(user_agent, agent)[0])

    def _fetch_identity(self, user_agent: str | None, agent: str | None
                        ) -> tuple[str, str | None]:
        """(whom a copy is kept for, the User-Agent to fetch it with)."""
        ua = user_agent or ""
        known = self._identities.get((ua, agent))
        if known is not None:
            return known
        products = {token.lower() for token in _PRODUCT_TOKEN.findall(ua)}
        if agent:
            # The bot's own User-Agent when it names the token (sites see what they expect),
            # else the token itself.
            known = agent.lower(), user_agent if agent.lower() in products else agent
        else:
            known = " ".join(sorted(products)) or "*", user_agent
        if len(self._identities) >= _IDENTITIES_REMEMBERED:
            self._identities.clear()
        self._identities[(ua, agent)] = known
        return known

    async def _refresh(self, origin: Origin, key: str, user_agent: str | None,
                       stale: RobotsEntry | None) -> RobotsEntry:
        self.fetches += 1
        with self.metrics.fetching():
            result = await self._fetcher.fetch(origin.robots_url, user_agent)
        self.metrics.fetched(result.outcome)
        entry = self._entry_for(origin, result, stale)
        if self._archive is not None and entry.sha256 is not None and result.outcome == "ok":
            # Before the entry is used: no decision without its evidence (a failure fails closed).
            await self._archive.keep(entry.sha256, result, entry.fetched_at)
        await self._store.put(key, entry)
        return entry

    def _entry_for(self, origin: Origin, result: FetchResult,
                   stale: RobotsEntry | None) -> RobotsEntry:
        now = self._clock()
        ttl = self.config.cache_ttl
        if result.max_age is not None:
            ttl = min(ttl, result.max_age)
        if result.outcome == "ok":
            sha, body, robots = self._shared(result.body)
            return RobotsEntry("ok", origin.robots_url, robots, result.status, sha, now,
                               now + ttl, body=body)
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

    def parse(self, sha: str, body: bytes) -> RobotsTxt:
        """A body's rules through this gate's parse cache (a shared store reads bodies back)."""
        return self._cached(sha, body)[1]

    def _shared(self, body: bytes) -> tuple[str, bytes, RobotsTxt]:
        """(sha256, body, rules): the same three objects for every origin serving this body."""
        sha, robots, kept = self._cached(hashlib.sha256(body).hexdigest(), body)
        return sha, kept, robots

    def _cached(self, sha: str, body: bytes) -> tuple[str, RobotsTxt, bytes]:
        cached = self._parsed.get(sha)
        if cached is None:
            robots = RobotsTxt.parse(body, semantics=self.config.semantics,
                                     case_sensitive=self.config.case_sensitive)
            cached = (sha, robots, body)
            self._parsed[sha] = cached
        return cached
