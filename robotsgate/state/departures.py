"""When paced requests really leave: spacing as the origin sees it.

The pacer hands out start times, and a request is released at its start time. But a released
request leaves the proxy later: mitmproxy still has to open a connection (and shake hands for
TLS), and under load the event loop gets to that late. Had the first request of a burst left
27 ms after its release and the next one on time, the origin would have seen them 27 ms closer
than it asked.

So each paced host takes turns here, in order: a request waits until the one before it has
really left and a whole interval has passed since then, and only then is released. "Really
left" is the moment mitmproxy had a connection ready to write it on: the end of the hook that
released it when the connection was already open, or the connection's `server_connected`
(`tls_established_server` for https) when one had to be opened. Which of the two it was is only
known later, so a request waiting for its turn waits until the one before it is confirmed: by
its connection, by its response, or by its error. A request whose confirmation never comes is
taken as having left when the wait for it gave up (`confirm_timeout`).

In a fleet the previous request may have left from another proxy: after its turn here, a
request takes the fleet's (`shared`, redis_departures.py), and each departure confirmed here is
reported there.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from cachetools import LRUCache

from robotsgate.state import politeness
from robotsgate.state.politeness import Turn


@dataclass(slots=True)
class _Host:
    turns: asyncio.Lock = field(default_factory=asyncio.Lock)  # first come, first served
    # when the last request left, which one is pending (politeness.py)
    turn: Turn = field(default_factory=Turn)
    pending: "asyncio.Future[None] | None" = None  # set once the pending one is confirmed
    tls: bool = False  # confirmed by tls_established_server, not server_connected
    client: str | None = None  # the client connection it came on: only its connections count


# Seconds a released request may go unconfirmed before it counts as having left.
CONFIRM_TIMEOUT = 10.0


class SharedTurns(Protocol):
    """Turns taken across a fleet (fleet.FleetDepartures)."""

    async def take(self, host: str, interval: float, flow: str,
                   at_once: Callable[[], bool] | None = None) -> None:
        """Return once the previous request to `host` from any proxy has left, and `interval`
        has passed since. `at_once()`: whether the request leaves as it is released (on a
        connection already open), asked at the last moment: its departure can then be
        recorded with its turn."""

    def left(self, host: str, flow: str, at: float) -> None:
        """The request `flow` left at `at` (the monotonic clock)."""


class Departures:
    def __init__(self, monotonic: Callable[[], float],
                 sleep: Callable[[float], Awaitable[None]], *, max_hosts: int,
                 confirm_timeout: float = CONFIRM_TIMEOUT,
                 shared: SharedTurns | None = None) -> None:
        self._monotonic = monotonic
        self._shared = shared
        self._sleep = sleep
        self._confirm_timeout = confirm_timeout
        self._hosts: LRUCache[str, _Host] = LRUCache(maxsize=max_hosts)

    @contextlib.asynccontextmanager
    async def turn(self, host: str, interval: float, flow: str, *, tls: bool,
                   client: str | None = None, at_once: Callable[[], bool] | None = None
                   ) -> AsyncIterator[None]:
        """Hold the caller until the previous request to `host` has left and `interval` has
        passed since; on leaving the block, the caller's request counts as released.
        `at_once()`: whether it leaves as it is released (see SharedTurns.take)."""
        state = self._hosts.get(host)
        if state is None:
            state = self._hosts[host] = _Host()
        async with state.turns:
            if state.pending is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(state.pending), self._confirm_timeout)
                except TimeoutError:
                    self._confirm(host, state, self._monotonic())  # counted as gone now
            wait = politeness.turn_wait(state.turn, self._monotonic(), interval)
            if wait > 0:
                await self._sleep(wait)
            if self._shared is not None:
                await self._shared.take(host, interval, flow, at_once)
            yield
            state.pending = asyncio.get_running_loop().create_future()
            state.turn = politeness.released(state.turn, self._monotonic(), flow)
            state.tls, state.client = tls, client

    def connected(self, host: str, *, tls: bool, client: str | None = None) -> None:
        """A connection to `host`, opened for `client` (the client connection the released
        request came on), is ready to carry it (TCP for http, the TLS handshake done for
        https): it leaves now. Another client's connection to the host (a tunnel opened
        eagerly, say) says nothing about this request."""
        state = self._hosts.get(host)
        if state is not None and state.pending is not None and state.tls == tls and \
                state.client == client:
            self._confirm(host, state, self._monotonic())

    def settled(self, host: str, flow: str, *, queued: bool = False) -> None:
        """The released request was answered or failed. With no connection opened for it, it
        left on an open one when it was released; or, `queued` behind other requests on that
        connection (an HTTP/2 origin's stream limit), at the latest now."""
        state = self._hosts.get(host)
        if state is not None and state.pending is not None and state.turn.pending == flow:
            self._confirm(host, state, self._monotonic() if queued else state.turn.released_at)

    def _confirm(self, host: str, state: _Host, left: float) -> None:
        flow = state.turn.pending
        state.turn = politeness.departed(state.turn, self._monotonic(), left)
        if self._shared is not None and flow is not None:
            self._shared.left(host, flow, min(left, self._monotonic()))
        pending, state.pending = state.pending, None
        if pending is not None and not pending.done():
            pending.set_result(None)
