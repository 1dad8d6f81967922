"""robots.txt entries behind one small interface, so that a shared backend can replace memory.

The store keeps entries past their freshness: a stale copy is still the "last good copy" that
RFC 9309 §2.3.1.4 lets us use while the origin's robots.txt is unreachable. Freshness is the
gate's business; the store only bounds how many origins it remembers.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from cachetools import LRUCache

from robotsgate.protocol import RobotsTxt
from robotsgate.rules_cache import RulesCache

# ok: parsed rules; missing: no robots.txt (4xx) -- no restrictions; unreachable: complete
# disallow (5xx, 429, network trouble) with no good copy to fall back on.
EntryKind = Literal["ok", "missing", "unreachable"]


@dataclass(frozen=True, slots=True)
class RobotsEntry:
    """What is known about one origin's robots.txt."""

    kind: EntryKind
    robots_url: str
    robots: RobotsTxt | None  # None when kind == "unreachable" (or kept by body in a store)
    status: int | None  # the HTTP status of the fetch that produced the rules
    sha256: str | None  # of the body the rules were parsed from
    fetched_at: float  # wall-clock seconds when those rules were fetched
    expires_at: float  # wall-clock seconds; after this the entry is refreshed before use
    error: str | None = None  # the last fetch's trouble, when the rules are a stale copy
    body: bytes = b""

    @property
    def usable(self) -> bool:
        """Whether it holds rules (possibly a stale copy), as opposed to "disallow all"."""
        return self.kind != "unreachable"

    @property
    def trouble(self) -> str:
        """Why the robots.txt could not be had, in words."""
        return self.error or (f"HTTP {self.status}" if self.status else "no answer")


class Store(Protocol):
    async def get(self, origin: str) -> RobotsEntry | None: ...

    async def put(self, origin: str, entry: RobotsEntry) -> None: ...

    async def refresh(self, origin: str, stale: RobotsEntry | None,
                      fetch: Callable[[], Awaitable[RobotsEntry]]) -> RobotsEntry:
        """Run `fetch` (which fetches and puts) once for everyone sharing this store.

        `stale` is what the caller found (expired, or None): a shared store hands back an entry
        that someone else published since, instead of fetching again.
        """
        ...


# Origins whose whole entry, rules included, is kept at hand: the ones requests are going to now.
HOT_ORIGINS = 1024


class MemoryStore:
    """The default store: a bounded LRU map of origins, in this process.

    With a rules cache, an entry's rules are not kept with it: only its body and hash, and the
    rules come back through the cache (bounded on its own) when the entry is read. Parsed rules
    cost several times their body, and a proxy may remember a hundred thousand origins while it
    is busy with a few. Without one, entries are kept whole.
    """

    def __init__(self, max_origins: int, rules: RulesCache | None = None) -> None:
        self._entries: LRUCache[str, RobotsEntry] = LRUCache(maxsize=max_origins)
        self._hot: LRUCache[str, RobotsEntry] = LRUCache(maxsize=min(HOT_ORIGINS, max_origins))
        self._rules = rules

    async def get(self, origin: str) -> RobotsEntry | None:
        entry = self._hot.get(origin)
        if entry is not None:
            return entry
        entry = self._entries.get(origin)
        if entry is not None and entry.robots is None and entry.kind != "unreachable" and \
                self._rules is not None and entry.sha256 is not None:
            entry = replace(entry, robots=self._rules.parse(entry.sha256, entry.body))
            self._hot[origin] = entry
        return entry

    async def put(self, origin: str, entry: RobotsEntry) -> None:
        self._hot.pop(origin, None)
        if self._rules is not None and entry.kind != "unreachable" and entry.sha256 is not None:
            self._hot[origin] = entry
            entry = replace(entry, robots=None)  # the body is enough to have them back
        self._entries[origin] = entry

    async def refresh(self, origin: str, stale: RobotsEntry | None,
                      fetch: Callable[[], Awaitable[RobotsEntry]]) -> RobotsEntry:
        # One process: the caller's own in-flight map already makes this the only fetch.
        return await fetch()

    def __len__(self) -> int:
        return len(self._entries)
