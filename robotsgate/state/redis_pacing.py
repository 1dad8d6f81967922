"""Per-host politeness shared by a fleet: the Pacer's schedule, kept in Redis.

Each host has one hash, `{prefix}pace:{tag}:{host}` (its group's tag, below), with `next`
(earliest start of the next request), `paused_until` and `failures` (pushbacks without
Retry-After, for the backoff). A slot is claimed in one run of the fleet's politeness program
(redis_politeness.py, its `reserve` transition), atomically, on Redis's own clock (TIME), so
the proxies' clocks do not matter:

    slot = max(now, next, paused_until); next = slot + interval; refused if slot - now > max_wait

The waits it returns are seconds from that moment; each proxy sleeps them on its own clock.

Hot path: a host with no interval of its own and nothing scheduled (the common case) costs no
Redis round trip. The script says when a host is idle, the proxy remembers that, and forgets it
as soon as a notice on `{prefix}pace` says the host became busy or paused somewhere in the fleet.
Idle knowledge is trusted only while the notice channel is subscribed (see fleet.Fleet). The
host's hash keeps until when some proxy may trust it idle (`idle_until`): a host that gets a
schedule is said busy only then, so that a paced request to a host nobody asked unpaced costs
no notice (a message to every proxy of the fleet).

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
from robotsgate.state.redis_clock import Abandoned, Client, RedisClock
from robotsgate.state.redis_politeness import Program

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

# Seconds a departure recorded in advance may precede the real one: a request that leaves as
# it is released (on a connection already open) has its departure recorded with its turn, as
# at most this far ahead, and is sent within half of it or takes its turn again.
SLACK = 0.05

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
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 slack: float = SLACK) -> None:
        """`regroup`: seconds that reservations wait, after Redis lost the schedule, for every
        proxy to re-assert what it knew (more than the fleet's retry interval); `slack`: the
        most a departure recorded in advance may precede the real one (redis_departures.py)."""
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
        self.program = Program(client, self._redis_clock)  # the turns' too (redis_departures)
        # host -> the id of a reservation whose answer never came: undone once Redis answers.
        self._abandoned: LRUCache[str, str] = LRUCache(maxsize=max_hosts)
        self._idle: LRUCache[str, float] = LRUCache(maxsize=max_hosts)  # host -> trusted until
        self._backing_off: LRUCache[str, bool] = LRUCache(maxsize=max_hosts)
        self._listening = False
        self._notices = 0  # notices (and subscription changes) seen, to detect races
        self.round_trips = 0  # scripts run, for tests and benchmarks
        self.slack = slack
        # Until when (monotonic) this proxy takes no turn with a reservation: it missed one
        # lately (redis_departures.py).
        self.busy_until = 0.0
        # host -> (reservation id, the departure recorded with it, on Redis's clock): a turn
        # taken with a slot that was now, for the request's turn to take up
        # (redis_departures.py).
        self._taken: LRUCache[str, tuple[str, float]] = LRUCache(maxsize=max_hosts)

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
            regrouping = max(regrouping, float(await self.program.run(
                "regrouping", [key], [repr(self._regroup), self.channel, str(group)])))
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
                await self.program.run("reassert", [self.key(host)],
                                       [repr(nxt), repr(paused_until), repr(self._keep),
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
            sent = self._monotonic()
            try:
                wait_s, paused, idle, refused, regrouping, nxt, paused_until, taken = \
                    await self.program.fenced(
                        "reserve", [self.key(host), self.epoch_key(group)],
                        [repr(self._regroup), self.channel, repr(max(interval, 0.0)),
                         repr(float(limit)), host, repr(self._keep), str(group), reservation,
                         "" if sent < self.busy_until else repr(self.slack),
                         repr(self._idle_ttl)])
            except Abandoned:
                raise  # never sent
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
        if taken:
            # Its slot was now: its departure recorded as the slack after it.
            self._taken[host] = (reservation, float(nxt) - interval + self.slack)
            # Its departure, recorded at most the slack from now, is a schedule too: the next
            # start is an interval after it.
            nxt = float(nxt) + self.slack
        self._learn(host, float(nxt), float(paused_until))  # to put back if Redis loses it
        wait = float(wait_s)
        if refused:
            return NoSlot(wait, bool(paused))
        return Slot(wait, bool(paused))

    def taken(self, host: str) -> tuple[str, float] | None:
        """The turn taken for `host` with its last slot, if no request has taken it up yet:
        (the reservation's id, the departure recorded with it, on Redis's clock)."""
        return self._taken.pop(host, None)

    def clock_of(self, host: str) -> tuple[float, float] | None:
        """(offset, error) of Redis's clock where `host`'s state is (RedisClock.estimate)."""
        return self._redis_clock.estimate(self.key(host))

    def learn(self, host: str, nxt: float) -> None:
        """A start no earlier than `nxt` (Redis's clock), to put back if Redis loses it."""
        self._learn(host, nxt, 0.0)

    async def pushback(self, host: str, retry_after: float | None) -> float:
        self._idle.pop(host, None)
        self._backing_off[host] = True
        self.round_trips += 1
        pause, paused_until = await self.program.run(
            "pushback", [self.key(host)],
            ["" if retry_after is None else repr(float(retry_after)),
             repr(self._backoff_base), repr(self._backoff_cap), self.channel, host,
             repr(self._keep)])
        self._learn(host, 0.0, float(paused_until))
        return float(pause)

    def backing_off(self, host: str) -> bool:
        return host in self._backing_off

    async def recovered(self, host: str) -> None:
        # Only hosts known to have backed off somewhere: every ordinary answer would otherwise
        # cost a round trip.
        if self._backing_off.pop(host, None):
            self.round_trips += 1
            await self.program.run("recovered", [self.key(host)], [])

    async def release_abandoned(self) -> int:
        """Give back the slots claimed for reservations whose answer never came (and that no
        later reservation built on): how many were."""
        released = 0
        for host, reservation in list(self._abandoned.items()):
            self.round_trips += 1
            released += int(await self.program.run("unreserve", [self.key(host)],
                                                   [reservation]))
            self._abandoned.pop(host, None)
        return released

    async def adopt(self, host: str, next_in: float, paused_for: float) -> None:
        """Merge a schedule kept elsewhere into the shared one (the later start, the longer
        pause win), so that no host sees two requests closer than asked across the switch."""
        self._idle.pop(host, None)
        self.round_trips += 1
        await self.program.run("adopt", [self.key(host)],
                               [repr(next_in), repr(paused_for), repr(self._keep)])
