"""The one driver of politeness: what the gate and the mitmproxy layer call, and nothing else.

A paced request meets politeness three times, all through this object:

1. when it is decided, the gate reserves the next start in its host's schedule (`pacing`,
   handed to the gate as it is: every request is decided, and a layer in between would cost
   each of them), or refuses it because that start is too far away;
2. as it leaves, it waits for that start and then for its turn (`turn`): until the previous
   request to its host has really left and the interval has passed since; in a fleet, the
   fleet's turn as well (departures.py);
3. what happens to it is reported: its connection ready (`connected`), its answer or its error
   (`settled`), an origin's 429/503 (`pushback`) or an ordinary answer (`recovered`).

Below it, the schedule (a `Pacing`: this process's Pacer, or a fleet's) and the turns
(Departures) apply the transitions of politeness.py, in memory or in Redis's program
(redis_politeness.py). Time is the monotonic clock, injected with the sleep.
"""

from collections.abc import Awaitable, Callable

from robotsgate.state.departures import Departures
from robotsgate.state.pacing import Pacing


class Politeness:
    def __init__(self, pacing: Pacing, departures: Departures, *,
                 monotonic: Callable[[], float],
                 sleep: Callable[[float], Awaitable[None]]) -> None:
        self.pacing = pacing
        self.departures = departures
        self._monotonic = monotonic
        self._sleep = sleep

    # -- what the origin said --------------------------------------------------------------------

    # Plain functions handing back the schedule's own coroutines: every answer reports here,
    # and a coroutine of this object's around each would cost every one of them.
    def pushback(self, host: str, retry_after: float | None) -> Awaitable[float]:
        """The origin said 429 or 503: the host is paused for every bot. The pause, seconds."""
        return self.pacing.pushback(host, retry_after)

    def recovered(self, host: str) -> Awaitable[None] | None:
        """An ordinary answer: the backoff starts from the beginning again. None when there is
        none to end (nearly every answer): no coroutine for it."""
        pacing = self.pacing
        return pacing.recovered(host) if pacing.backing_off(host) else None

    # -- as it leaves ---------------------------------------------------------------------------

    async def turn(self, host: str, start: float, interval: float, flow: str, *, tls: bool,
                   client: str | None = None, at_once: Callable[[], bool] | None = None
                   ) -> None:
        """Return when the request `flow` may leave: at `start` (the monotonic clock: its
        reserved slot) at the earliest and, when its host is paced (`interval` > 0), once the
        previous request to it has left and `interval` has passed since. From then on the
        request counts as released, until `connected` or `settled` says it left.
        `at_once()`: whether it leaves as soon as it is released (on a connection already
        open), asked at the last moment; in a fleet, its turn and its departure are then one
        round trip to Redis, or none when its slot was now (redis_departures.py)."""
        wait = start - self._monotonic()
        if wait > 0:
            await self._sleep(wait)
        if interval > 0:
            async with self.departures.turn(host, interval, flow, tls=tls, client=client,
                                            at_once=at_once):
                pass

    # -- what is learnt afterwards --------------------------------------------------------------

    def connected(self, host: str, *, tls: bool, client: str | None = None) -> None:
        """A connection to `host`, opened for `client`, is ready to carry its request."""
        self.departures.connected(host, tls=tls, client=client)

    def settled(self, host: str, flow: str, *, queued: bool = False) -> None:
        """The request `flow` was answered or failed (`queued`: it may have waited behind
        others on a multiplexed connection)."""
        self.departures.settled(host, flow, queued=queued)
