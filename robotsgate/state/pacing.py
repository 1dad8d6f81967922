"""Per-host politeness: start-to-start spacing and pushback pauses.

One schedule per host name, shared by every bot behind the proxy and by http and https alike.
A request reserves its slot when it arrives (slot = max(now, next, paused_until);
next = slot + interval), so waiting requests are served in arrival order and the reservation
itself never waits: the caller sleeps until its slot. The clock is injected.

(Visit-time windows are read from robots.txt alone: robotsgate.protocol.extensions.)
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Protocol

from cachetools import LRUCache


@dataclass(frozen=True, slots=True)
class Slot:
    wait: float  # seconds to wait before forwarding
    paused: bool  # part of the wait is a pushback pause


@dataclass(frozen=True, slots=True)
class NoSlot:
    retry_after: float  # seconds
    paused: bool


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


@dataclass(slots=True)
class _Host:
    next: float = 0.0  # earliest start of the next request
    paused_until: float = 0.0
    failures: int = 0  # consecutive pushbacks without Retry-After, for the backoff


class Pacer:
    def __init__(self, clock: Callable[[], float], *, max_wait: float, max_hosts: int,
                 backoff_base: float = 1.0, backoff_cap: float = 300.0) -> None:
        self._clock = clock
        self.max_wait = max_wait
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._hosts: LRUCache[str, _Host] = LRUCache(maxsize=max_hosts)

    async def reserve(self, host: str, interval: float, *, max_wait: float | None = None
                      ) -> Slot | NoSlot:
        """Claim the next start time for `host`, or refuse when it is more than max_wait away."""
        now = self._clock()
        state = self._hosts.get(host)
        if state is None:
            if interval <= 0:
                return Slot(0.0, False)  # nothing to remember: the common, unpaced case
            state = self._hosts.setdefault(host, _Host())
        start = max(now, state.next, state.paused_until)
        paused = state.paused_until > now and state.paused_until >= state.next
        wait = start - now
        if wait > (self.max_wait if max_wait is None else max_wait):
            return NoSlot(wait, paused)
        state.next = start + interval
        return Slot(wait, paused)

    async def pushback(self, host: str, retry_after: float | None) -> float:
        """The origin said 429 or 503: pause the host for all bots. Returns the pause, seconds."""
        now = self._clock()
        state = self._hosts.setdefault(host, _Host())
        pause: float
        if retry_after is None:
            state.failures += 1
            pause = min(self._backoff_cap, self._backoff_base * 2 ** (state.failures - 1))
        else:
            pause = min(max(retry_after, 0.0), self._backoff_cap * 12)  # at most an hour
        state.paused_until = max(state.paused_until, now + pause)
        return pause

    async def recovered(self, host: str) -> None:
        """An ordinary answer from the origin: the backoff starts from the beginning again."""
        state = self._hosts.get(host)
        if state is not None:
            state.failures = 0

    def follow(self, host: str, next_in: float, paused_for: float = 0.0) -> None:
        """Adopt a schedule decided elsewhere (a fleet's), to carry on from it if need be."""
        now = self._clock()
        state = self._hosts.setdefault(host, _Host())
        state.next = max(state.next, now + next_in)
        state.paused_until = max(state.paused_until, now + paused_for)

    def pending(self) -> list[tuple[str, float, float]]:
        """Hosts with a start or a pause still ahead: (host, seconds to next, seconds paused)."""
        now = self._clock()
        return [(host, max(0.0, s.next - now), max(0.0, s.paused_until - now))
                for host, s in list(self._hosts.items())
                if s.next > now or s.paused_until > now]


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
