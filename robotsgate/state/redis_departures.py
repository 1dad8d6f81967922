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
one more script makes `left` at least that time and clears `pending` if it is still this one. A
departure always counts, pending or not (one that came after the wait for it gave up, one sent
while Redis was away and reported once it is back). The time is sent as an age (seconds since
it left, on the proxy's clock), so the proxies' clocks do not matter, and the moment Redis runs
the script is never earlier than the real one: every error makes the next wait longer, not
shorter. No departure is later than Redis's now: a clock stepping back, or a bad notice, cannot
hold a host.

The notices also carry the time, and each proxy remembers the latest per host: a turn claims at
least that, so that Redis losing its memory (a restart, a flush, a failover) loses no departure
that any proxy heard of. A request released but not yet confirmed when the memory went is lost
with it; but turns take part in the schedule's regrouping (redis_pacing.py): nothing goes while
the host's group regroups, and that request's departure, reported meanwhile, is heard by all.

Two round trips per paced request (the turn and the departure), more while another proxy's
request is pending (a turn asks again when it hears of it, or every second meanwhile);
unpaced requests never get here.
"""

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable

from cachetools import LRUCache

from robotsgate.state.redis_clock import FENCE, Client, RedisClock
from robotsgate.state.redis_pacing import EPOCH, RedisPacer, bucket_of

# KEYS[1] host hash, KEYS[2] its group's epoch (redis_pacing.py). ARGV: deadline (fence),
# regroup, channel (as EPOCH reads them), interval, flow id, confirm_timeout, keep, the latest
# departure this proxy heard of (Redis's clock, 0 if none), the host's group.
# Returns {0, 0} to go now (marked pending), {1, wait} to wait that long and ask again, {2, at
# most} while another request is pending. The transitions politeness.turn_wait and released.
#
# While the group regroups (Redis lost its memory), nothing goes: a request in flight when the
# memory went has its departure reported meanwhile, and every proxy hears of it. A departure is
# never later than now: a clock that stepped back, or a bad notice, cannot hold a host.
_TURN = FENCE + "local epoch_key = KEYS[2]\nlocal group = ARGV[9]\n" + EPOCH + """
if regrouping then
  return {1, string.format('%.6f', regrouping)}
end
local interval = tonumber(ARGV[4])
local keep = math.ceil((interval + tonumber(ARGV[6]) + tonumber(ARGV[7])) * 1000)
local function kept()
  if redis.call('PTTL', KEYS[1]) < keep then
    redis.call('PEXPIRE', KEYS[1], keep)
  end
end
local state = redis.call('HMGET', KEYS[1], 'left', 'pending', 'pending_at')
local stored = tonumber(state[1]) or 0
local left = math.min(math.max(stored, tonumber(ARGV[8]) or 0), now)
local pending = state[2]
if pending and pending ~= ARGV[5] then
  local expires = (tonumber(state[3]) or 0) + tonumber(ARGV[6])
  if now < expires then
    return {2, string.format('%.6f', expires - now)}
  end
  -- Never confirmed: it counts as having left when the wait for it gave up.
  left = math.max(left, math.min(expires, now))
  redis.call('HDEL', KEYS[1], 'pending', 'pending_at')
end
if left ~= stored then
  redis.call('HSET', KEYS[1], 'left', string.format('%.6f', left))
  kept()
end
local wait = left + interval - now
if wait > 0 then
  return {1, string.format('%.6f', wait)}
end
redis.call('HSET', KEYS[1], 'pending', ARGV[5], 'pending_at', string.format('%.6f', now))
kept()
return {0, '0'}
"""

# KEYS[1] host hash. ARGV: flow id, age (seconds since it left), channel, host, keep. The
# transition politeness.departed.
# Not fenced: run late, it only makes `left` later than the truth, never earlier. A departure
# counts whether or not its request is the pending one (it may have been taken over after its
# confirmation timed out, or been sent while Redis was away): every real departure is kept.
_LEFT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'left', 'pending')
local left = math.max(tonumber(state[1]) or 0, now - math.max(tonumber(ARGV[2]), 0))
redis.call('HSET', KEYS[1], 'left', string.format('%.6f', left))
if state[2] == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'pending', 'pending_at')
end
local keep = math.ceil(tonumber(ARGV[5]) * 1000)
if redis.call('PTTL', KEYS[1]) < keep then
  redis.call('PEXPIRE', KEYS[1], keep)
end
redis.call('PUBLISH', ARGV[3], 'left ' .. ARGV[4] .. ' ' .. string.format('%.6f', left))
return string.format('%.6f', left)
"""

_GO, _WAIT, _PENDING = 0, 1, 2
# While another proxy's request is pending, ask again at least this often: its notice may be
# lost (its report failed, or this proxy's subscription is being renewed). Seldom while the
# channel is subscribed: the notice is what wakes a waiter then.
_POLL = 0.25
_POLL_LISTENING = 1.0


class RedisDepartures:
    def __init__(self, client: Client, pacer: RedisPacer, *, redis_clock: RedisClock,
                 confirm_timeout: float, max_hosts: int,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        """`pacer`: the fleet's schedule, whose hashes, epochs and channel the turns share."""
        self._pacer = pacer
        self._redis_clock = redis_clock
        self._confirm_timeout = confirm_timeout
        self._sleep = sleep
        self._turn = client.register_script(_TURN)
        self._left = client.register_script(_LEFT)
        # host -> the latest departure heard of (Redis's clock), from notices and answers.
        self._heard: LRUCache[str, float] = LRUCache(maxsize=max_hosts)
        # host -> set when a departure to it is heard of, one per turn waiting on the host.
        self._waiting: dict[str, list[asyncio.Event]] = {}
        self.round_trips = 0

    async def take(self, host: str, interval: float, flow: str) -> None:
        """Return when `host`'s previous request, from any proxy, has left and `interval` has
        passed since; this request is then the pending one."""
        pacer = self._pacer
        group = bucket_of(host)
        keys = [pacer.key(host), pacer.epoch_key(group)]
        heard = asyncio.Event()
        waiting = self._waiting.setdefault(host, [])
        waiting.append(heard)  # listening before asking: what is heard meanwhile counts
        try:
            while True:
                heard.clear()
                self.round_trips += 1
                kind, seconds = await self._redis_clock.run(
                    self._turn, keys,
                    [repr(pacer.regroup), pacer.channel, repr(interval), flow,
                     repr(self._confirm_timeout), repr(pacer.keep), repr(self.heard(host)),
                     str(group)])
                if kind == _GO:
                    return
                if kind == _WAIT:
                    await self._sleep(float(seconds))
                else:
                    poll = _POLL_LISTENING if pacer.is_listening else _POLL
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(heard.wait(), min(float(seconds), poll))
        finally:
            waiting.remove(heard)
            if not waiting:
                self._waiting.pop(host, None)

    async def left(self, host: str, flow: str, age: float) -> None:
        """The request `flow` left `age` seconds ago."""
        self.round_trips += 1
        at = await self._left(keys=[self._pacer.key(host)],
                              args=[flow, repr(max(age, 0.0)), self._pacer.channel, host,
                                    repr(self._pacer.keep)])
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
