"""Retrieval: one robots.txt fetch turned into the entry every decision reads (RFC 9309 §2.3).

The fetcher says what the origin answered; this says what that means for the rules, how long they
are used (the cache TTL, shortened by Cache-Control), what becomes of the last good copy when the
origin is in trouble, and keeps the body as evidence before anything is decided by it. The entry
is then published in the store, where every request (every proxy of a fleet) finds it.

Its `retrieve` is what `Store.refresh` runs, once for everyone sharing the store. It sits below
the gate and knows nothing of it: the gate looks entries up and asks the store to refresh them.
"""

import logging
from collections.abc import Callable
from typing import Protocol

from robotsgate.metrics.prometheus import Metrics
from robotsgate.origin import Origin
from robotsgate.retrieval.archive import RobotsArchive
from robotsgate.retrieval.fetch import FetchResult, fetch_user_agent
from robotsgate.rules_cache import RulesCache
from robotsgate.state.store import RobotsEntry, Store

logger = logging.getLogger(__name__)


class RobotsFetcher(Protocol):
    async def fetch(self, robots_url: str, user_agent: str) -> FetchResult: ...


class Retrieval:
    def __init__(self, fetcher: RobotsFetcher, rules: RulesCache, store: Store,
                 clock: Callable[[], float], *, cache_ttl: int = 86_400, error_ttl: int = 60,
                 metrics: Metrics | None = None, archive: RobotsArchive | None = None,
                 contact: str = "") -> None:
        self._fetcher = fetcher
        self._rules = rules
        self._store = store
        self._clock = clock
        self._cache_ttl = cache_ttl  # seconds; RFC 9309 §2.4: no more than 24 hours
        self._error_ttl = error_ttl  # seconds before an unreachable robots.txt is asked again
        self._metrics = metrics or Metrics()
        self._archive = archive  # every distinct body fetched, kept as evidence
        self._contact = contact  # the operator's URL, in every fetch's User-Agent
        self.fetches = 0  # robots.txt fetches started, for metrics and tests

    async def retrieve(self, origin: Origin, key: str, token: str | None,
                       stale: RobotsEntry | None) -> RobotsEntry:
        """Fetch `origin`'s robots.txt as the bot `token` names (the proxy itself when None),
        publish the entry under `key`, return it.

        `stale` is the copy the caller had (expired), or None: kept in use, with the fetch's
        error, when the origin cannot be reached.
        """
        self.fetches += 1
        with self._metrics.fetching():
            result = await self._fetcher.fetch(origin.robots_url,
                                               fetch_user_agent(token, self._contact))
        self._metrics.fetched(result.outcome)
        entry = self.entry_for(origin, result, stale)
        if result.outcome == "unreachable":
            # Once per fetch, so once per origin (and bot) per robots_error_ttl at most.
            logger.warning("robotsgate: robots.txt of %s could not be fetched (%s): %s for the "
                           "next %d s", origin.key, result.error or f"HTTP {result.status}",
                           "its last good copy is used" if entry.robots is not None else
                           "nothing is forwarded to it", self._error_ttl)
        if self._archive is not None and entry.sha256 is not None and result.outcome == "ok":
            # Before the entry is used: no decision without its evidence (a failure fails closed).
            await self._archive.keep(entry.sha256, result, entry.fetched_at)
        await self._store.put(key, entry)
        return entry

    def entry_for(self, origin: Origin, result: FetchResult,
                  stale: RobotsEntry | None) -> RobotsEntry:
        """What a fetch's result means for `origin`'s rules, from now on."""
        now = self._clock()
        ttl = self._cache_ttl
        if result.max_age is not None:
            ttl = min(ttl, result.max_age)
        if result.outcome == "ok":
            parsed = self._rules.share(result.body)
            return RobotsEntry("ok", origin.robots_url, parsed.robots, result.status,
                               parsed.sha256, now, now + ttl, body=parsed.body)
        if result.outcome == "missing":
            return RobotsEntry("missing", origin.robots_url, self._rules.allow_all,
                               result.status, None, now, now + ttl, error=result.error)
        retry_at = now + self._error_ttl
        if stale is not None and stale.robots is not None:
            # RFC 9309 §2.3.1.4: keep using the last good copy while the origin is in trouble.
            return RobotsEntry(stale.kind, stale.robots_url, stale.robots, stale.status,
                               stale.sha256, stale.fetched_at, retry_at, result.error, stale.body)
        return RobotsEntry("unreachable", origin.robots_url, None, result.status, None, now,
                           retry_at, result.error)
