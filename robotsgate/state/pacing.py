"""Per-host politeness: start-to-start spacing and pushback pauses.

One schedule per host name, shared by every bot behind the proxy and by http and https alike.
A request reserves its slot when it arrives (slot = max(now, next, paused_until);
next = slot + interval: the transitions of politeness.py), so waiting requests are served in
arrival order and the reservation itself never waits: the caller sleeps until its slot. The
clock is injected.

(Visit-time windows are read from robots.txt alone: robotsgate.protocol.extensions.)
"""

from collections.abc import Callable
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Protocol

from cachetools import LRUCache

from robotsgate.state import politeness
from robotsgate.state.politeness import NoSlot, Schedule, Slot

__all__ = ["NoSlot", "Pacer", "Pacing", "Slot", "parse_retry_after"]


class Pacing(Protocol):
    """A per-host schedule: this process's own (Pacer) or one shared by a fleet (RedisPacer).

    Async because a shared schedule lives elsewhere; the in-memory one never awaits anything.
    """

    async def reserve(self, host: str, interval: float, *, max_wait: float | None = None
                      ) -> Slot | NoSlot:
        """The next start for `host`; refused when it is more than `max_wait` away (the
        pacer's own limit unless given)."""

    async def pushback(self, host: str, retry_after: float | None) -> float: ...

    async def recovered(self, host: str) -> None: ...

    def backing_off(self, host: str) -> bool:
        """Whether `host` may have a backoff for `recovered` to end (a 429 or 503 seen): asked
        of every answer, without I/O, so that an ordinary one costs nothing more."""


_FREE = Slot(0.0, False)


class Pacer:
    """The Pacing interface in this process's memory: the transitions of politeness.py on one
    Schedule per host (the least recently used forgotten past max_hosts)."""

    def __init__(self, clock: Callable[[], float], *, max_wait: float, max_hosts: int,
                 backoff_base: float = 1.0, backoff_cap: float = 300.0) -> None:
        self._clock = clock
        self.max_wait = max_wait
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._hosts: LRUCache[str, Schedule] = LRUCache(maxsize=max_hosts)

    async def reserve(self, host: str, interval: float, *, max_wait: float | None = None
                      ) -> Slot | NoSlot:
        """Claim the next start time for `host`, or refuse when it is more than max_wait away."""
        schedule = self._hosts.get(host)
        if schedule is None:
            if interval <= 0:
                return _FREE  # nothing to remember: the common, unpaced case
            schedule = _NEW
        schedule, slot = politeness.reserve(schedule, self._clock(), interval,
                                            self.max_wait if max_wait is None else max_wait)
        if isinstance(slot, Slot):
            self._hosts[host] = schedule
        return slot

    async def pushback(self, host: str, retry_after: float | None) -> float:
        """The origin said 429 or 503: pause the host for all bots. Returns the pause, seconds."""
        schedule, pause = politeness.pushback(self._hosts.get(host, _NEW), self._clock(),
                                              retry_after, base=self._backoff_base,
                                              cap=self._backoff_cap)
        self._hosts[host] = schedule
        return pause

    async def recovered(self, host: str) -> None:
        """An ordinary answer from the origin: the backoff starts from the beginning again."""
        schedule = self._hosts.get(host)
        if schedule is not None and schedule.failures:
            self._hosts[host] = politeness.recovered(schedule)

    def backing_off(self, host: str) -> bool:
        schedule = self._hosts.get(host)
        return schedule is not None and schedule.failures > 0

    def follow(self, host: str, next_in: float, paused_for: float = 0.0) -> None:
        """Adopt a schedule decided elsewhere (a fleet's), to carry on from it if need be."""
        self._hosts[host] = politeness.follow(self._hosts.get(host, _NEW), self._clock(),
                                              next_in, paused_for)

    def pending(self) -> list[tuple[str, float, float]]:
        """Hosts with a start or a pause still ahead: (host, seconds to next, seconds paused)."""
        now = self._clock()
        ahead = []
        for host, schedule in list(self._hosts.items()):
            pending = politeness.pending_in(schedule, now)
            if pending is not None:
                ahead.append((host, *pending))
        return ahead


_NEW = Schedule()


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Retry-After as seconds from `now`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)
