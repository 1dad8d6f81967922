"""Politeness toward one host, as pure transitions: the rules every engine applies.

A host's state is its `Schedule` (when the next request may start, how long it is paused, how
many pushbacks in a row came without a Retry-After) and its `Turn` (when its last request
really left, and which released request has not been confirmed yet). Time is a number of
seconds on one clock, given to every transition: nothing here reads a clock, sleeps or awaits.

The engines apply these transitions where their state lives: Pacer (pacing.py) and Departures
(departures.py) in this process's memory; one Lua program (redis_politeness.py: `reserve`,
`pushback`, `turn`, `left`, ...) in Redis, for a fleet, on Redis's clock, driven by RedisPacer
and RedisDepartures. The contract suites (tests/state/) hold every engine to the same answers;
tests/test_politeness.py holds these transitions to the invariants below.

Invariants, for any sequence of transitions with time never going back:

1. A request is never given a start earlier than `next` or `paused_until`:
   slot = max(now, next, paused_until).
2. Starts given to a host are spaced by at least the interval each was given with: `next` only
   moves forward, and reserving moves it to slot + interval.
3. A reservation more than `max_wait` away is refused and changes nothing.
4. A pause only ever lengthens: paused_until = max(paused_until, now + pause). A pause is the
   origin's Retry-After (at most 12 * `cap`: an hour by default) or, without one,
   base * 2^(failures - 1) (at most `cap`); an ordinary answer (`recovered`) starts the backoff
   from the beginning again.
5. A turn is given only once the previous request has left and a whole interval has passed
   since: wait = left + interval - now. While a released request is unconfirmed, no turn is
   given until it is confirmed or the wait for it has lasted `confirm_timeout`; then it counts
   as having left (in memory: when that wait gave up; in Redis, where no wait is seen: at its
   release plus `confirm_timeout`).
6. `left` only moves forward, and never past now: a late report of a departure makes the next
   request wait longer, never shorter. (In Redis, a request that leaves as it is released has
   its departure recorded with its turn, as the latest it may leave: at most a small slack
   past now. Its proxy releases it before then, or takes its turn again and gives this one
   back, which only undoes it while no other turn or departure came after it:
   redis_departures.py.)
"""

from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class Schedule:
    next: float = 0.0  # earliest start of the next request
    paused_until: float = 0.0
    failures: int = 0  # pushbacks in a row without Retry-After, for the backoff


@dataclass(frozen=True, slots=True)
class Slot:
    """A start `wait` seconds from now; `paused`: part of the wait is a pushback pause."""

    wait: float
    paused: bool


@dataclass(frozen=True, slots=True)
class NoSlot:
    """No start within max_wait: the earliest is `retry_after` seconds from now."""

    retry_after: float
    paused: bool


def reserve(schedule: Schedule, now: float, interval: float, max_wait: float
            ) -> tuple[Schedule, Slot | NoSlot]:
    """Invariants 1-3: the next start for a request kept `interval` apart from the next one."""
    slot = max(now, schedule.next, schedule.paused_until)
    paused = schedule.paused_until > now and schedule.paused_until >= schedule.next
    wait = slot - now
    if wait > max_wait:
        return schedule, NoSlot(wait, paused)
    return replace(schedule, next=slot + interval), Slot(wait, paused)


def pushback(schedule: Schedule, now: float, retry_after: float | None, *, base: float,
             cap: float) -> tuple[Schedule, float]:
    """Invariant 4: the origin said 429 or 503; the pause, in seconds."""
    failures = schedule.failures
    if retry_after is None:
        failures += 1
        pause = min(cap, base * 2 ** (failures - 1))
    else:
        pause = min(max(retry_after, 0.0), cap * 12)
    return Schedule(schedule.next, max(schedule.paused_until, now + pause), failures), pause


def recovered(schedule: Schedule) -> Schedule:
    """Invariant 4: an ordinary answer; the backoff starts from the beginning again."""
    return replace(schedule, failures=0) if schedule.failures else schedule


def follow(schedule: Schedule, now: float, next_in: float, paused_for: float) -> Schedule:
    """A schedule decided elsewhere (the fleet's), adopted so as to carry on from it: the
    later start and the longer pause win (invariants 2 and 4)."""
    return Schedule(max(schedule.next, now + next_in),
                    max(schedule.paused_until, now + paused_for), schedule.failures)


def pending_in(schedule: Schedule, now: float) -> tuple[float, float] | None:
    """(seconds to the next start, seconds paused) while either is ahead; None once both
    are past."""
    if schedule.next <= now and schedule.paused_until <= now:
        return None
    return max(0.0, schedule.next - now), max(0.0, schedule.paused_until - now)


@dataclass(frozen=True, slots=True)
class Turn:
    left: float = float("-inf")  # when the last confirmed request left
    pending: str | None = None  # the released request not confirmed yet
    released_at: float = 0.0


def turn_wait(turn: Turn, now: float, interval: float) -> float:
    """Invariant 5: seconds until a request may be released (0 or less: now), once no
    released request is pending."""
    return turn.left + interval - now


def released(turn: Turn, now: float, flow: str) -> Turn:
    """The request `flow` was released now: it is pending until confirmed."""
    return Turn(turn.left, flow, now)


def departed(turn: Turn, now: float, at: float) -> Turn:
    """Invariant 6: the pending request left at `at` (clamped to now); it is no longer
    pending."""
    return Turn(max(turn.left, min(at, now)), None, turn.released_at)

