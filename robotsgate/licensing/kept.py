"""What the documents of this package share once fetched: a site's RSL licences and an origin's
tdmrep.json are fetched by the proxy for itself, each once however many requests wait for it,
kept for robots_cache_ttl (a shorter Cache-Control max-age wins), and read the same way before
their bodies are: an answer 4xx is "missing" (the site says nothing there), one that did not come
(5xx, 429, a network error, a timeout, an address the egress policy refuses) is "unavailable",
kept for robots_error_ttl, and not known.

Its own module because licenses.py and tdmrep.py read different documents by one rule: how a
fetch is shared, how long what it says is kept, and what an answer means before its body does.
What a body means is each document's own (Documents.body).
"""

import asyncio
import hashlib
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, Literal, Protocol

import cachetools

from robotsgate.retrieval.fetch import FetchResult, fetch_user_agent

# ok: the document was read; missing: it says nothing; unavailable: what it says is not known.
Kind = Literal["ok", "missing", "unavailable"]

class LicenseFetcher(Protocol):
    async def fetch(self, robots_url: str, user_agent: str | None = None, *,
                    limit: int = ..., accept: str = ...) -> FetchResult: ...

    async def post_form(self, url: str, form: dict[str, str], *, basic: tuple[str, str],
                        user_agent: str, limit: int = ...) -> FetchResult: ...


class Expiring(Protocol):
    """A kept answer: until when it holds."""

    @property
    def expires_at(self) -> float: ...


async def once[K: Hashable, V](tasks: dict[K, asyncio.Task[V]], key: K,
               start: Callable[[], Coroutine[Any, Any, V]]) -> V:
    """What the task `tasks` holds for `key` answers, started now when none runs: one fetch (or
    token request) per key, however many requests wait for it."""
    task = tasks.get(key)
    if task is None:
        task = asyncio.create_task(start())
        tasks[key] = task
        task.add_done_callback(lambda _: tasks.pop(key, None))
    # shield: a client that goes away must not cancel the fetch the others wait for.
    return await asyncio.shield(task)


def sent_as(result: FetchResult, media: str, starts: tuple[bytes, ...], head: int) -> bool:
    """Sent as `media` (its word in the Content-Type: xml, json), or starting like it (one of
    `starts`, lower-case, within the first `head` bytes, after a byte order mark and white
    space): a document meant to be read as one."""
    kind = next((value for name, value in result.headers if name.lower() == "content-type"), "")
    begins = result.body[:head].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return media in kind.lower() or begins.startswith(starts)


class Documents[P, T: Expiring]:
    """Documents of one kind (P: what one holds once read, an RslDocument or a TdmRep; T: the
    record kept of one as last fetched), fetched under the proxy's own name and kept by key
    (`_kept`), each fetch shared by the requests that wait for it (`_inflight`). `record` makes
    the record of one document: (url, kind, what it holds, status, sha256, fetched_at,
    expires_at, error)."""

    def __init__(self, fetcher: LicenseFetcher, clock: Callable[[], float],
                 record: Callable[[str, Kind, P | None, int | None, str | None, float, float,
                                   str | None], T], *,
                 cache_ttl: int, error_ttl: int, contact: str, size: int, limit: int,
                 accept: str) -> None:
        self._fetcher = fetcher
        self._clock = clock
        self._record = record
        self._cache_ttl = cache_ttl
        self._error_ttl = error_ttl
        self._contact = contact
        self._limit = limit
        self._accept = accept
        self._kept: cachetools.LRUCache[str, T] = cachetools.LRUCache(size)
        self._inflight: dict[str, asyncio.Task[T]] = {}
        self.fetches = 0  # documents fetched, for tests

    @property
    def error_ttl(self) -> int:
        """Seconds an unavailable document is remembered: the Retry-After of its 503s."""
        return self._error_ttl

    async def _get(self, url: str) -> FetchResult:
        """`url` fetched now, as the proxy."""
        self.fetches += 1
        # One byte past the cap, so that the reader sees a longer document as too long (a cut
        # one could lose a prohibition or a reservation) instead of as a document cut short.
        return await self._fetcher.fetch(url, fetch_user_agent(None, self._contact),
                                         limit=self._limit + 1, accept=self._accept)

    def _read(self, url: str, result: FetchResult) -> T:
        """The record of what `result` says: the module's docstring before the body is read,
        body() after."""
        now = self._clock()
        ttl = self._cache_ttl if result.max_age is None else min(self._cache_ttl,
                                                                 result.max_age)
        if result.outcome == "missing":
            return self._record(url, "missing", None, result.status, None, now, now + ttl,
                                result.error)
        if result.outcome == "unreachable":
            return self._record(url, "unavailable", None, result.status, None, now,
                                now + self._error_ttl, result.error)
        sha256 = hashlib.sha256(result.body).hexdigest()
        kind, held, error = self.body(url, result)
        expires = now + (self._error_ttl if kind == "unavailable" else ttl)
        return self._record(url, kind, held, result.status, sha256, now, expires, error)

    def body(self, url: str, result: FetchResult) -> tuple[Kind, P | None, str | None]:
        """What a body that came (a 2xx) says: its kind, what it holds (kind ok), and why it is
        missing or unavailable."""
        raise NotImplementedError
