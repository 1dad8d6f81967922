"""Per-host politeness shared by a fleet: the Pacer's schedule, kept in Redis.

Each host has one hash, `{prefix}pace:{tag}:{host}` (its group's tag, below), with `next`
(earliest start of the next request), `paused_until` and `failures` (pushbacks without
Retry-After, for the backoff). A slot is claimed in one Lua script, atomically, on Redis's own
clock (TIME), so the proxies' clocks do not matter:

    slot = max(now, next, paused_until); next = slot + interval; refused if slot - now > max_wait

The waits it returns are seconds from that moment; each proxy sleeps them on its own clock.

Hot path: a host with no interval of its own and nothing scheduled (the common case) costs no
Redis round trip. The script says when a host is idle, the proxy remembers that, and forgets it
as soon as a notice on `{prefix}pace` says the host became busy or paused somewhere in the fleet.
Idle knowledge is trusted only while the notice channel is subscribed (see fleet.Fleet).

Losing Redis's memory (restarted empty, FLUSHDB, a failover to a replica that lagged) must not
lose the schedule: the next request would get "now", however recently the last one left. So an
epoch key says the schedule is whole. When it is missing, whoever notices first (a reservation,
or a proxy's watcher on reconnecting) sets it to "regrouping until now + `regroup`" and says so
on the channel; every proxy then re-asserts the latest start and pause it knows of each host
(what its own reservations were told, on Redis's clock), merged so that the later wins, and
reservations wait for the regrouping to end before they are decided.

Hosts are spread over BUCKETS groups, each with its own epoch, `{prefix}epoch:{tag}`, whose
literal braces make `tag` a Redis Cluster hash tag: a host's hash and its group's epoch live in
one hash slot, so that one script can read both on a cluster, and a failover that loses a
node's memory loses the epoch of exactly the groups whose hosts it held. The tags are chosen
to fall in evenly spaced ranges of the cluster's hash slots, so that every node of a cluster
holds some groups (asking all groups' epochs asks every node). On a single Redis the groups
change nothing but the keys' names.
"""

import asyncio
import secrets
import time
import zlib
from collections.abc import Awaitable, Callable

from cachetools import LRUCache
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from robotsgate.state.pacing import NoSlot, Slot
from robotsgate.state.redis_clock import FENCE, Client, RedisClock

BUCKETS = 16


def _tags() -> tuple[str, ...]:
    """One hash tag per group, the i-th in the i-th sixteenth of the hash slots (the same in
    every proxy: computed, not configured)."""
    width = REDIS_CLUSTER_HASH_SLOTS // BUCKETS
    tags = []
    for bucket in range(BUCKETS):
        n = 0
        while key_slot(f"{{p{bucket}.{n}}}".encode()) // width != bucket:
            n += 1
        tags.append(f"p{bucket}.{n}")
    return tuple(tags)


TAGS = _tags()


def bucket_of(host: str) -> int:
    """The group of a host (crc32: the same in every proxy, unlike hash())."""
    return zlib.crc32(host.encode()) % BUCKETS

# Whether the group's schedule is whole; `epoch_key`, `group` (its number), ARGV[2] regroup
# seconds, ARGV[3] the channel.
# Sets `regrouping` to the seconds to wait before anything is decided, or nil.
EPOCH = """
local regrouping = nil
local epoch = redis.call('GET', epoch_key)
if not epoch then
  redis.call('SET', epoch_key, string.format('%.6f', now + tonumber(ARGV[2])))
  redis.call('PUBLISH', ARGV[3], 'regroup ' .. group)
  regrouping = tonumber(ARGV[2])
elseif tonumber(epoch) > now then
  regrouping = tonumber(epoch) - now
end
"""

# KEYS[1] host hash, KEYS[2] epoch. ARGV: deadline (the fence, see redis_clock.py: a slot
# claimed after its sender gave up would be a slot nobody uses, and delay every request after
# it), regroup, channel, interval, max_wait, host, keep (seconds the hash outlives its last use,
# so the backoff counter is remembered between pauses), the host's group, the reservation's id
# (kept with the `next` it replaced, so that a reservation whose answer was lost can be undone).
# Returns {wait, paused, idle, refused, regrouping, next, paused_until} (times on Redis's clock).
# The transition politeness.reserve, on Redis's clock (the contract suite holds them equal).
_RESERVE = FENCE + "local epoch_key = KEYS[2]\nlocal group = ARGV[8]\n" + EPOCH + """
if regrouping then
  return {string.format('%.6f', regrouping), 0, 0, 0, 1, '0', '0'}
end
local interval = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'next', 'paused_until')
local nxt = tonumber(state[1]) or 0
local paused_until = tonumber(state[2]) or 0
if nxt <= now and paused_until <= now then
  if interval <= 0 then
    return {'0', 0, 1, 0, 0, '0', '0'}
  end
  redis.call('PUBLISH', ARGV[3], 'busy ' .. ARGV[6])
end
local slot = math.max(now, nxt, paused_until)
local paused = 0
if paused_until > now and paused_until >= nxt then
  paused = 1
end
local wait = slot - now
if wait > tonumber(ARGV[5]) then
  return {string.format('%.6f', wait), paused, 0, 1, 0, string.format('%.6f', nxt),
          string.format('%.6f', paused_until)}
end
redis.call('HSET', KEYS[1], 'next', string.format('%.6f', slot + interval), 'by', ARGV[9],
           'before', string.format('%.6f', nxt))
local last = math.max(slot + interval, paused_until)
redis.call('PEXPIRE', KEYS[1], math.ceil((last - now + tonumber(ARGV[7])) * 1000))
return {string.format('%.6f', wait), paused, 0, 0, 0, string.format('%.6f', slot + interval),
        string.format('%.6f', paused_until)}
"""

# KEYS[1] a group's epoch. ARGV: deadline ('': none), regroup, channel, the group. Seconds the
# regrouping lasts yet.
_REGROUPING = FENCE + "local epoch_key = KEYS[1]\nlocal group = ARGV[4]\n" + EPOCH + """
return string.format('%.6f', regrouping or 0)
"""

# KEYS[1] host hash. ARGV: a reservation's id. The slot it claimed is given back, when no other
# reservation (nor a re-assertion) came after it: its proxy never heard of it.
_UNRESERVE = """
local state = redis.call('HMGET', KEYS[1], 'by', 'before')
if state[1] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'next', state[2])
redis.call('HDEL', KEYS[1], 'by', 'before')
return 1
"""

# KEYS[1] host hash. ARGV: next, paused_until (on Redis's clock), keep, channel, host. What one
# proxy knew of a host's schedule, re-asserted after Redis lost it: the later wins.
_REASSERT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'next', 'paused_until')
local nxt = math.max(tonumber(state[1]) or 0, tonumber(ARGV[1]))
local paused_until = math.max(tonumber(state[2]) or 0, tonumber(ARGV[2]))
if math.max(nxt, paused_until) <= now then
  return 0
end
redis.call('HSET', KEYS[1], 'next', string.format('%.6f', nxt),
           'paused_until', string.format('%.6f', paused_until))
redis.call('HDEL', KEYS[1], 'by', 'before')
redis.call('PEXPIRE', KEYS[1],
           math.ceil((math.max(nxt, paused_until) - now + tonumber(ARGV[3])) * 1000))
redis.call('PUBLISH', ARGV[4], 'busy ' .. ARGV[5])
return 1
"""

# KEYS[1] host hash. ARGV: retry_after seconds ('' when the origin sent none), backoff base,
# backoff cap, channel, host, keep. The transition politeness.pushback.
_PUSHBACK = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local pause
if ARGV[1] == '' then
  local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
  pause = math.min(tonumber(ARGV[3]), tonumber(ARGV[2]) * 2 ^ (failures - 1))
else
  pause = math.min(math.max(tonumber(ARGV[1]), 0), tonumber(ARGV[3]) * 12)
end
local state = redis.call('HMGET', KEYS[1], 'next', 'paused_until')
local paused_until = math.max(tonumber(state[2]) or 0, now + pause)
redis.call('HSET', KEYS[1], 'paused_until', string.format('%.6f', paused_until))
local last = math.max(tonumber(state[1]) or 0, paused_until)
redis.call('PEXPIRE', KEYS[1], math.ceil((last - now + tonumber(ARGV[6])) * 1000))
redis.call('PUBLISH', ARGV[4], 'pause ' .. ARGV[5])
return {string.format('%.6f', pause), string.format('%.6f', paused_until)}
"""

# KEYS[1] host hash. ARGV: seconds to the next start, seconds paused, keep. A schedule kept
# elsewhere meanwhile (a proxy's own, while Redis was down) joins the shared one: later wins.
_ADOPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'next', 'paused_until')
local nxt = math.max(tonumber(state[1]) or 0, now + tonumber(ARGV[1]))
local paused_until = math.max(tonumber(state[2]) or 0, now + tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'next', string.format('%.6f', nxt),
           'paused_until', string.format('%.6f', paused_until))
redis.call('HDEL', KEYS[1], 'by', 'before')
redis.call('PEXPIRE', KEYS[1],
           math.ceil((math.max(nxt, paused_until) - now + tonumber(ARGV[3])) * 1000))
return 1
"""

_FREE = Slot(0.0, False)
# A wait limit that no schedule reaches, for reservations that must not be refused: Lua's
# tonumber() does not read Python's "inf".
_NEVER_REFUSED = 1e9


class RedisPacer:
    """The Pacing interface on Redis: one schedule per host for every proxy of a fleet."""

    def __init__(self, client: Client, *, prefix: str, max_wait: float, max_hosts: int,
                 backoff_base: float = 1.0, backoff_cap: float = 300.0, idle_ttl: float = 5.0,
                 keep: float = 3600.0, monotonic: Callable[[], float] = time.monotonic,
                 redis_clock: RedisClock | None = None, regroup: float = 2.0,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        """`regroup`: seconds that reservations wait, after Redis lost the schedule, for every
        proxy to re-assert what it knew (more than the fleet's retry interval)."""
        self._redis = client
        self._redis_clock = RedisClock(client) if redis_clock is None else redis_clock
        self._prefix = prefix
        self.max_wait = max_wait
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        # Idle knowledge also expires by itself, in case a notice was lost on the way.
        self._idle_ttl = idle_ttl
        self._keep = keep
        self._monotonic = monotonic
        self._regroup = regroup
        self._sleep = sleep
        # host -> (next, paused_until) on Redis's clock: the latest this proxy was told.
        self._known: LRUCache[str, tuple[float, float]] = LRUCache(maxsize=max_hosts)
        self._reserve = client.register_script(_RESERVE)
        self._regrouping = client.register_script(_REGROUPING)
        self._reassert = client.register_script(_REASSERT)
        self._pushback = client.register_script(_PUSHBACK)
        self._adopt = client.register_script(_ADOPT)
        self._unreserve = client.register_script(_UNRESERVE)
        # host -> the id of a reservation whose answer never came: undone once Redis answers.
        self._abandoned: LRUCache[str, str] = LRUCache(maxsize=max_hosts)
        self._idle: LRUCache[str, float] = LRUCache(maxsize=max_hosts)  # host -> trusted until
        self._backing_off: LRUCache[str, bool] = LRUCache(maxsize=max_hosts)
        self._listening = False
        self._notices = 0  # notices (and subscription changes) seen, to detect races
        self.round_trips = 0  # scripts run, for tests and benchmarks

    @property
    def regroup(self) -> float:
        """Seconds a regrouping lasts (see the module's docstring)."""
        return self._regroup

    @property
    def keep(self) -> float:
        """Seconds a host's hash outlives its last use."""
        return self._keep

    @property
    def channel(self) -> str:
        return f"{self._prefix}pace"

    def key(self, host: str) -> str:
        return f"{self._prefix}pace:{{{TAGS[bucket_of(host)]}}}:{host}"

    # -- notices from the fleet (called by the Fleet that owns the subscription) ------------

    def listening(self, on: bool) -> None:
        """The notice channel was (re)subscribed, or lost: what was idle may not be any more."""
        self._listening = on
        self._notices += 1
        self._idle.clear()

    @property
    def is_listening(self) -> bool:
        return self._listening

    def notice(self, message: bytes) -> str:
        """'busy HOST', 'pause HOST' or 'regroup GROUP', from any proxy of the fleet (this one
        too): its kind. On 'regroup' the caller re-asserts (`reassert(group)`)."""
        kind, _, host = message.decode(errors="replace").partition(" ")
        self._notices += 1
        if kind == "regroup":
            self._idle.clear()
        self._idle.pop(host, None)
        if kind == "pause":
            self._backing_off[host] = True
        return kind

    def epoch_key(self, group: int) -> str:
        return f"{self._prefix}epoch:{{{TAGS[group]}}}"

    @property
    def epoch_keys(self) -> list[str]:
        return [self.epoch_key(group) for group in range(BUCKETS)]

    async def regrouping(self) -> float:
        """Seconds the fleet is still regrouping (0: the schedule is whole); starts a
        regrouping of each group whose epoch Redis lost. One round trip per group (on a cluster,
        they reach every node: evidence that all of them answer)."""
        regrouping = 0.0
        for group, key in enumerate(self.epoch_keys):
            regrouping = max(regrouping, float(await self._regrouping(
                keys=[key], args=["", repr(self._regroup), self.channel, str(group)])))
        return regrouping

    async def reassert(self, group: str = "*") -> None:
        """Redis lost a group's schedule ("*": any): put back what this proxy knows of it
        (later wins)."""
        now = await self._redis_clock.now()
        for host, (nxt, paused_until) in list(self._known.items()):
            if group not in ("*", str(bucket_of(host))):
                continue
            if max(nxt, paused_until) > now:
                self.round_trips += 1
                await self._reassert(keys=[self.key(host)],
                                     args=[repr(nxt), repr(paused_until), repr(self._keep),
                                           self.channel, host])

    def _learn(self, host: str, nxt: float, paused_until: float) -> None:
        known = self._known.get(host)
        if known is not None:
            nxt, paused_until = max(nxt, known[0]), max(paused_until, known[1])
        self._known[host] = (nxt, paused_until)

    # -- the Pacing interface ----------------------------------------------------------------

    async def reserve(self, host: str, interval: float, *, max_wait: float | None = None
                      ) -> Slot | NoSlot:
        limit = self.max_wait if max_wait is None else min(max_wait, _NEVER_REFUSED)
        if interval <= 0 and self._listening:
            until = self._idle.get(host)
            if until is not None and until > self._monotonic():
                return _FREE
        while True:
            seen = self._notices
            self.round_trips += 1
            group = bucket_of(host)
            reservation = secrets.token_hex(8)
            try:
                wait_s, paused, idle, refused, regrouping, nxt, paused_until = \
                    await self._redis_clock.run(
                        self._reserve, [self.key(host), self.epoch_key(group)],
                        [repr(self._regroup), self.channel, repr(max(interval, 0.0)),
                         repr(float(limit)), host, repr(self._keep), str(group), reservation])
            except BaseException:
                # No answer: Redis may have claimed the slot all the same.
                self._abandoned[host] = reservation
                raise
            if not regrouping:
                break
            # Nothing is decided until every proxy has put back what it knew.
            await self.reassert(str(group))
            await self._sleep(float(wait_s))
        if idle:
            # Only if no notice came in while the script ran: it might have been about this
            # host, and handled before this answer arrived.
            if self._listening and seen == self._notices:
                self._idle[host] = self._monotonic() + self._idle_ttl
            return _FREE
        self._idle.pop(host, None)
        self._learn(host, float(nxt), float(paused_until))  # to put back if Redis loses it
        wait = float(wait_s)
        if refused:
            return NoSlot(wait, bool(paused))
        return Slot(wait, bool(paused))

    async def pushback(self, host: str, retry_after: float | None) -> float:
        self._idle.pop(host, None)
        self._backing_off[host] = True
        self.round_trips += 1
        pause, paused_until = await self._pushback(
            keys=[self.key(host)],
            args=["" if retry_after is None else repr(float(retry_after)),
                  repr(self._backoff_base), repr(self._backoff_cap), self.channel, host,
                  repr(self._keep)])
        self._learn(host, 0.0, float(paused_until))
        return float(pause)

    async def recovered(self, host: str) -> None:
        # Only hosts known to have backed off somewhere: every ordinary answer would otherwise
        # cost a round trip.
        if self._backing_off.pop(host, None):
            self.round_trips += 1
            await self._redis.hdel(self.key(host), "failures")

    async def release_abandoned(self) -> int:
        """Give back the slots claimed for reservations whose answer never came (and that no
        later reservation built on): how many were."""
        released = 0
        for host, reservation in list(self._abandoned.items()):
            self.round_trips += 1
            released += int(await self._unreserve(keys=[self.key(host)], args=[reservation]))
            self._abandoned.pop(host, None)
        return released

    async def adopt(self, host: str, next_in: float, paused_for: float) -> None:
        """Merge a schedule kept elsewhere into the shared one (the later start, the longer
        pause win), so that no host sees two requests closer than asked across the switch."""
        self._idle.pop(host, None)
        self.round_trips += 1
        await self._adopt(keys=[self.key(host)],
                          args=[repr(next_in), repr(paused_for), repr(self._keep)])
