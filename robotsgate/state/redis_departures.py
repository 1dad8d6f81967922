"""When a fleet's paced requests really leave: spacing as the origin sees it, across proxies.

Within one proxy, departures.py holds a paced request until the previous one to its host has
really left and a whole interval has passed since. In a fleet the previous request may have
left from another proxy: the shared schedule (redis_pacing.py) spaced their releases, but if
that proxy was busy and its request left 30 ms after its release, the origin sees the next one
30 ms early. So the fleet takes its turns in Redis too, in the host's schedule hash:

- `left`: when the host's last confirmed request left (on Redis's clock);
- `pending`, `pending_at`: the request released and not yet confirmed, and when.

A request's turn (after its own proxy's) is one fenced script: if another request is pending,
wait for its confirmation (a `left HOST TIME` notice on the fleet's channel, or at most
`confirm_timeout` after its release); then wait until `left` + interval; then mark itself
pending. When its proxy learns it left (departures.py: its connection, its answer or its error),
one more script sets `left` and clears `pending`. The time is sent as an age (seconds since it
left, on the proxy's clock), so the proxies' clocks do not matter, and the moment Redis runs the
script is never earlier than the real one: every error makes the next wait longer, not shorter.

The notices also carry the time, and each proxy remembers the latest per host: a turn claims at
least that, so that Redis losing its memory (a restart, a flush, a failover) loses no departure
that any proxy heard of.

Two round trips per paced request (the turn, the departure); unpaced requests never get here.
"""

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from cachetools import LRUCache

from robotsgate.state.redis_clock import FENCE, Client, RedisClock

# KEYS[1] host hash. ARGV: deadline (fence), interval, flow id, confirm_timeout, keep, the
# latest departure this proxy heard of (Redis's clock, 0 if none).
# Returns {0, wait} to go after `wait` (0: now, and marked pending), {1, wait} to wait that long
# and ask again, {2, at most} while another request is pending.
_TURN = FENCE + """
local keep = math.ceil((tonumber(ARGV[2]) + tonumber(ARGV[4]) + tonumber(ARGV[5])) * 1000)
local function kept()
  if redis.call('PTTL', KEYS[1]) < keep then
    redis.call('PEXPIRE', KEYS[1], keep)
  end
end
local state = redis.call('HMGET', KEYS[1], 'left', 'pending', 'pending_at')
local stored = tonumber(state[1]) or 0
local left = math.max(stored, tonumber(ARGV[6]))
local pending = state[2]
if pending and pending ~= ARGV[3] then
  local expires = (tonumber(state[3]) or 0) + tonumber(ARGV[4])
  if now < expires then
    return {2, string.format('%.6f', expires - now)}
  end
  -- Never confirmed: it counts as having left when the wait for it gave up.
  left = math.max(left, expires)
  redis.call('HDEL', KEYS[1], 'pending', 'pending_at')
end
if left > stored then
  redis.call('HSET', KEYS[1], 'left', string.format('%.6f', left))
  kept()
end
local wait = left + tonumber(ARGV[2]) - now
if wait > 0 then
  return {1, string.format('%.6f', wait)}
end
redis.call('HSET', KEYS[1], 'pending', ARGV[3], 'pending_at', string.format('%.6f', now))
kept()
return {0, '0'}
"""

# KEYS[1] host hash. ARGV: flow id, age (seconds since it left), channel, host.
# Not fenced: run late, it only makes `left` later than the truth, never earlier.
_LEFT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'left', 'pending')
if state[2] ~= ARGV[1] then
  return false  -- not the pending one (taken over after its confirmation timed out)
end
local left = math.max(tonumber(state[1]) or 0, now - math.max(tonumber(ARGV[2]), 0))
redis.call('HSET', KEYS[1], 'left', string.format('%.6f', left))
redis.call('HDEL', KEYS[1], 'pending', 'pending_at')
redis.call('PUBLISH', ARGV[3], 'left ' .. ARGV[4] .. ' ' .. string.format('%.6f', left))
return string.format('%.6f', left)
"""

_GO, _WAIT, _PENDING = 0, 1, 2
# While another proxy's request is pending, ask again at least this often: its notice may be
# lost (a resubscription), and no one waits longer than that for it.
_POLL = 0.25


class RedisDepartures:
    def __init__(self, client: Client, *, key: Callable[[str], str], channel: str,
                 redis_clock: RedisClock, confirm_timeout: float, keep: float, max_hosts: int,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        """`key`: a host's schedule hash (RedisPacer.key); `channel`: the fleet's notices."""
        self._key = key
        self._channel = channel
        self._redis_clock = redis_clock
        self._confirm_timeout = confirm_timeout
        self._keep = keep
        self._sleep = sleep
        self._turn = client.register_script(_TURN)
        self._left = client.register_script(_LEFT)
        # host -> the latest departure heard of (Redis's clock), from notices and answers.
        self._heard: LRUCache[str, float] = LRUCache(maxsize=max_hosts)
        self._waiting: dict[str, asyncio.Event] = {}  # host -> set when a departure is heard
        self.round_trips = 0

    async def take(self, host: str, interval: float, flow: str) -> None:
        """Return when `host`'s previous request, from any proxy, has left and `interval` has
        passed since; this request is then the pending one."""
        key = self._key(host)
        try:
            while True:
                # Listening before asking: a departure heard while the script runs counts.
                heard = self._waiting[host] = asyncio.Event()
                self.round_trips += 1
                kind, seconds = await self._redis_clock.run(
                    self._turn, [key],
                    [repr(interval), flow, repr(self._confirm_timeout), repr(self._keep),
                     repr(self.heard(host))])
                if kind == _GO:
                    return
                if kind == _WAIT:
                    await self._sleep(float(seconds))
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(heard.wait(), min(float(seconds), _POLL))
        finally:
            # One waiter per host in a proxy (departures.py takes turns first).
            self._waiting.pop(host, None)

    async def left(self, host: str, flow: str, age: float) -> None:
        """The pending request `flow` left `age` seconds ago."""
        self.round_trips += 1
        at = await self._left(keys=[self._key(host)],
                              args=[flow, repr(max(age, 0.0)), self._channel, host])
        if at is not None:
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
        if at > self._heard.get(host, 0.0):
            self._heard[host] = at
        event = self._waiting.get(host)
        if event is not None:
            event.set()
