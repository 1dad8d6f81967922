"""When a fleet's paced requests really leave: spacing as the origin sees it, across proxies.

Within one proxy, departures.py holds a paced request until the previous one to its host has
really left and a whole interval has passed since. In a fleet the previous request may have
left from another proxy: the shared schedule (redis_pacing.py) spaced their releases, but if
that proxy was busy and its request left 30 ms after its release, the origin sees the next one
30 ms early. So the fleet takes its turns in Redis too, in the host's schedule hash:

- `left`: when the host's last confirmed request left (on Redis's clock), or, for one that
  leaves as it is released, the latest it may leave;
- `pending`, `pending_at`: the request released and not yet confirmed, and when;
- `turn_by`, `left_before`: the request whose departure `left` records in advance, and what
  `left` was before it (to give the turn back if it is not used, and nothing built on it).

A request's turn (after its own proxy's) is one fenced run of the fleet's politeness program
(redis_politeness.py, its `turn` transition): if another request is pending, wait for its
confirmation (a `left HOST TIME` notice on the fleet's channel, or at most `confirm_timeout`
after its release); then wait until `left` + interval; then mark itself pending. When its proxy
learns it left (departures.py: its connection, its answer or its error), one more run (`left`)
makes `left` at least that time and clears `pending` if it is still this one. A
departure always counts, pending or not (one that came after the wait for it gave up, one sent
while Redis was away and reported once it is back). The time is sent as an age (seconds since
it left, on the proxy's clock), so the proxies' clocks do not matter, and the moment Redis runs
the script is never earlier than the real one: every error makes the next wait longer, not
shorter. No departure is later than Redis's now (plus the slack, below): a clock stepping back,
or a bad notice, cannot hold a host.

A request that leaves as it is released (on a connection already open: mitm/turns.py says so
at the last moment) needs no report: its departure is known when its turn is given. Its turn
is then given for when it comes (`left` + interval, now or later: the proxy sleeps until then,
without asking again), and its departure recorded as `slack` after that. Its proxy releases it
within half the slack of that moment, measured from when it sent the command (Redis ran it no
earlier), or takes the turn again, giving this one back: so the real departure is never later
than the one recorded, and nothing has to confirm it. The other half is for what happens after
the release, as for any request found leaving at once. And when its reservation (the gate's,
redis_pacing.py) found its slot now and its host's turn free, the reservation took the turn:
then there is no round trip here at all.

So, per paced request: one round trip when its slot is now and it leaves on an open connection
(its reservation); two when it waits for its slot (its reservation, then its turn with its
departure); three when it opens a connection (its reservation, its turn, its departure), as
its departure is known only once the connection is ready. Its reservation and its turn cannot
be one when it waits: the reservation is made when the request arrives (the gate must answer
429 at once if the slot is too far), and the turn depends on when the previous request really
left, which is not known yet. More round trips while another proxy's request is pending (a
turn asks again when it hears of it, or every second meanwhile); unpaced requests never get
here.

The notices also carry the time, and each proxy remembers the latest per host: a turn claims at
least that, so that Redis losing its memory (a restart, a flush, a failover) loses no departure
that any proxy heard of. A departure recorded in advance is not published (that would cost a
message to every proxy for each request); its proxy remembers it, and puts it back into the
host's schedule if Redis loses it (redis_pacing.py, `reassert`: the next start an interval after
it). A request released but not yet confirmed when the memory went is lost with it; but turns
take part in the schedule's regrouping (redis_pacing.py): nothing goes while the host's group
regroups, and that request's departure, reported meanwhile, is heard by all.
"""

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable

from cachetools import LRUCache

from robotsgate.state.redis_pacing import RedisPacer, bucket_of

_GO, _WAIT, _PENDING = 0, 1, 2
# While another proxy's request is pending, ask again at least this often: its notice may be
# lost (its report failed, or this proxy's subscription is being renewed). Seldom while the
# channel is subscribed: the notice is what wakes a waiter then.
_POLL = 0.25
_POLL_LISTENING = 1.0
# Seconds a proxy that missed a turn given for leaving at once takes its turns to be confirmed
# instead (three round trips a request, not four with a miss each).
_BUSY_FOR = 2.0


class RedisDepartures:
    def __init__(self, pacer: RedisPacer, *, confirm_timeout: float, max_hosts: int,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        """`pacer`: the fleet's schedule, whose hashes, epochs, channel and program (its Redis
        and Redis's clock) the turns share."""
        self._pacer = pacer
        self._confirm_timeout = confirm_timeout
        self._sleep = sleep
        self._monotonic = monotonic
        # host -> the latest departure heard of (Redis's clock), from notices and answers.
        self._heard: LRUCache[str, float] = LRUCache(maxsize=max_hosts)
        # host -> set when a departure to it is heard of, one per turn waiting on the host.
        self._waiting: dict[str, list[asyncio.Event]] = {}
        # flow -> by when (monotonic) it must leave for the departure recorded with its turn
        # to hold: no report is needed then.
        self._recorded: LRUCache[str, float] = LRUCache(maxsize=max_hosts)
        self.round_trips = 0

    async def take(self, host: str, interval: float, flow: str,
                   at_once: Callable[[], bool] | None = None) -> None:
        """Return when `host`'s previous request, from any proxy, has left and `interval` has
        passed since; this request is then the pending one, or, when `at_once()` says it
        leaves as it is released, its departure is recorded (see the module's docstring)."""
        pacer = self._pacer
        slack = pacer.slack
        taken = pacer.taken(host)
        if taken is not None:
            if at_once is not None and at_once() and self._in_time(flow, host, taken[1]):
                return  # its reservation took the turn: no round trip at all
            give_back = taken[0]  # it cannot leave on it: given back with the next ask
        else:
            give_back = ""
        missed = False
        group = bucket_of(host)
        keys = [pacer.key(host), pacer.epoch_key(group)]
        heard = asyncio.Event()
        waiting = self._waiting.setdefault(host, [])
        waiting.append(heard)  # listening before asking: what is heard meanwhile counts
        try:
            while True:
                heard.clear()
                self.round_trips += 1
                # Once it missed a turn given for leaving at once (this proxy too busy to
                # release it in time), it takes its turn as a request to be confirmed: that
                # needs no timing, and the busy proxy makes progress.
                leaving = at_once is not None and not missed and not self.busy() and \
                    at_once()
                kind, seconds, *at = await pacer.program.fenced(
                    "turn", keys,
                    [repr(pacer.regroup), pacer.channel, repr(interval), flow,
                     repr(self._confirm_timeout), repr(pacer.keep), repr(self.heard(host)),
                     str(group), repr(slack), give_back, "1" if leaving else "0"])
                give_back = ""
                if kind == _GO:
                    if not leaving:
                        return
                    # Its turn comes `seconds` after Redis gave it (no earlier here, where the
                    # answer came later), its departure recorded as by the slack after that.
                    if float(seconds) > 0:
                        await self._sleep(float(seconds))
                    if at_once is not None and at_once() and \
                            self._in_time(flow, host, float(at[0])):
                        self._heard_of(host, float(at[0]))
                        pacer.learn(host, float(at[0]) + interval)
                        return
                    give_back = flow  # it cannot leave on it in time: taken again
                    missed = True
                    # A proxy that missed one is likely to miss the next (it is busy): for a
                    # while, its requests take their turns to be confirmed, as before.
                    pacer.busy_until = self._monotonic() + _BUSY_FOR
                elif kind == _WAIT:
                    await self._sleep(float(seconds))
                else:
                    poll = _POLL_LISTENING if pacer.is_listening else _POLL
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(heard.wait(), min(float(seconds), poll))
        finally:
            waiting.remove(heard)
            if not waiting:
                self._waiting.pop(host, None)

    def busy(self) -> bool:
        """Whether this proxy recently missed a turn given for leaving at once."""
        return self._monotonic() < self._pacer.busy_until

    def _in_time(self, flow: str, host: str, recorded: float) -> bool:
        """Whether a request whose departure was recorded as `recorded` (Redis's clock: its
        turn plus the slack) is released early enough: by half the slack before that, however
        wrong this proxy's reading of Redis's clock may be. Then it is released now, and needs
        no report; the other half is for what comes after its release (mitmproxy writing
        it)."""
        clock = self._pacer.clock_of(host)
        if clock is None:
            return False
        offset, error = clock
        latest = recorded - self._pacer.slack / 2 - offset - error  # on this proxy's clock
        if self._monotonic() > latest:
            return False
        self._recorded[flow] = latest + self._pacer.slack / 2  # a departure by then is covered
        return True

    def recorded(self, flow: str, at: float) -> bool:
        """Whether the departure of `flow` at `at` (monotonic) was recorded with its turn
        already: no report is needed."""
        bound = self._recorded.pop(flow, None)
        return bound is not None and at <= bound

    async def left(self, host: str, flow: str, age: float) -> None:
        """The request `flow` left `age` seconds ago."""
        self.round_trips += 1
        at = await self._pacer.program.run(
            "left", [self._pacer.key(host)],
            [flow, repr(max(age, 0.0)), self._pacer.channel, host, repr(self._pacer.keep)])
        self._heard_of(host, float(at))

    def heard(self, host: str) -> float:
        """The latest departure to `host` this proxy heard of (Redis's clock; 0: none)."""
        return self._heard.get(host, 0.0)

    def notice(self, text: str) -> None:
        """'HOST TIME' from a `left` notice (any proxy's, this one's too)."""
        host, _, at = text.rpartition(" ")
        with contextlib.suppress(ValueError):
            self._heard_of(host, float(at))

    def _heard_of(self, host: str, at: float) -> None:
        if not math.isfinite(at):
            return  # not a time anything could have left at
        if at > self._heard.get(host, 0.0):
            self._heard[host] = at
        for event in self._waiting.get(host, ()):
            event.set()
