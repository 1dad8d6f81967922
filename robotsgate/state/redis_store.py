"""robots.txt entries in Redis, shared by a fleet of proxies, fetched once for the whole fleet.

Keys, all under the configured prefix, the origin between literal braces: a Redis Cluster hash
tag, so that an origin's entry and its lock live in one hash slot (on one node of a cluster):

  {prefix}robots:{origin}  hash: the entry's metadata and the body its rules came from. It lives
                           `keep_stale` seconds past the entry's expiry: a stale copy is still the
                           "last good copy" (RFC 9309 §2.3.1.4) while the origin is in trouble.
  {prefix}fetch:{origin}   the fetch lock: a random token with a lease about as long as the fetch
                           it guards, renewed while the fetch runs. Its holder fetches and
                           publishes; the others poll for the result, and take the lock over when
                           it expires without one (the holder died: that costs one lease at most).
                           Taking it is fenced (redis_clock.py): a request to take it that Redis
                           runs after its sender gave up changes nothing, so no lock is left that
                           nobody holds. And a lock this proxy may hold without using it (its
                           request to take it got no answer, or its release none) is released
                           as soon as Redis answers again (`release_abandoned`), rather than
                           left to hold the others for its lease.

An entry's times (when it was fetched, when it expires) are kept on Redis's clock, and read back
on the reader's: proxies' clocks disagree, and a copy written by a proxy an hour ahead must not
look fresh for an hour to the others. Each proxy translates with the difference between its own
clock and Redis's, measured (redis_clock.py) to the millisecond.

Bodies are parsed back through the rules cache, so identical bodies share one RobotsTxt.
Each proxy also keeps a short-lived local mirror of what it read, so that a cached robots.txt
costs no Redis round trip on the hot path.
"""

import asyncio
import hashlib
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from cachetools import LRUCache
from redis.exceptions import RedisError
from redis.typing import EncodableT

from robotsgate.rules_cache import RulesCache
from robotsgate.state.redis_clock import FENCE, Abandoned, Client, RedisClock
from robotsgate.state.store import EntryKind, RobotsEntry

_KINDS: dict[bytes, EntryKind] = {b"ok": "ok", b"missing": "missing",
                                  b"unreachable": "unreachable"}

# Deletes the lock only if it is still ours: after expiry it may be someone else's.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

# KEYS[1] the lock. ARGV: deadline, token, lease (ms). 1: ours (taken now, or already ours: a
# request sent again after its answer was lost), 0: someone else's.
_ACQUIRE = FENCE + """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[2] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
if holder then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""

# KEYS[1] the lock. ARGV: deadline, token, lease (ms). 0: it is not ours any more.
_RENEW = FENCE + """
if redis.call('GET', KEYS[1]) == ARGV[2] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 0
"""

class RedisStore:
    """The Store interface on Redis (redis-py's asyncio client)."""

    def __init__(self, client: Client, *, prefix: str, clock: Callable[[], float],
                 rules: RulesCache, max_origins: int, lock_ttl: float,
                 keep_stale: float = 86_400.0, mirror_ttl: float = 30.0,
                 poll_cap: float = 0.25, redis_clock: RedisClock | None = None) -> None:
        """`lock_ttl`: the fetch lock's lease, seconds (renewed every third of it while the
        fetch runs): how long a dead holder keeps the others waiting, at most."""
        self._redis = client
        self._prefix = prefix
        self._clock = clock
        self._rules = rules
        self._lock_ms = max(1, round(lock_ttl * 1000))
        self._redis_clock = RedisClock(client) if redis_clock is None else redis_clock
        self._skew = 0.0  # Redis's clock minus this proxy's, seconds
        self._skew_of = -1  # the measurement of Redis's clock it was derived from
        self._keep_stale = keep_stale
        # How long a proxy trusts its mirror without asking Redis, at most: bounds how long it
        # can miss a change another proxy made (an operator deleting a key, say).
        self._mirror_ttl = mirror_ttl
        self._poll_cap = poll_cap
        self._mirror: LRUCache[str, tuple[RobotsEntry, float]] = LRUCache(maxsize=max_origins)
        self._reading: dict[str, asyncio.Future[RobotsEntry | None]] = {}
        self._release = client.register_script(_RELEASE)
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self.fetches_waited = 0  # refreshes answered by another proxy's fetch, for tests/metrics
        # lock -> token: locks this proxy may hold and does not use, to release once Redis
        # answers again (a few at most: one per origin asked for while Redis was away).
        self._abandoned: LRUCache[str, str] = LRUCache(maxsize=max_origins)

    def key(self, origin: str) -> str:
        return f"{self._prefix}robots:{{{origin}}}"

    def lock_key(self, origin: str) -> str:
        return f"{self._prefix}fetch:{{{origin}}}"

    async def get(self, origin: str) -> RobotsEntry | None:
        now = self._clock()
        mirrored = self._mirror.get(origin)
        if mirrored is not None:
            entry, since = mirrored
            # A fresh entry is not refetched by anyone before it expires: no need to ask Redis.
            if entry.expires_at > now and now - since < self._mirror_ttl:
                return entry
        # Many requests for an origin nobody has read yet: one HGETALL for all of them.
        reading = self._reading.get(origin)
        if reading is None:
            reading = asyncio.ensure_future(self._read(origin))
            self._reading[origin] = reading
            reading.add_done_callback(lambda done: self._read_done(origin, done))
        return await asyncio.shield(reading)

    def _read_done(self, origin: str, done: "asyncio.Future[RobotsEntry | None]") -> None:
        self._reading.pop(origin, None)
        if not done.cancelled():
            done.exception()  # its waiters have it; if they all went away, nobody need log it

    def mirrored(self, origin: str) -> RobotsEntry | None:
        """What this proxy last read or wrote for the origin, however old (no Redis call)."""
        mirrored = self._mirror.get(origin)
        return mirrored[0] if mirrored is not None else None

    async def put(self, origin: str, entry: RobotsEntry) -> None:
        skew = await self.skew()
        now = self._clock()
        key = self.key(origin)
        ttl_ms = max(1, round((entry.expires_at - now + self._keep_stale) * 1000))
        async with self._redis.pipeline(transaction=True) as pipe:
            # One MULTI: a reader never sees the fields of two entries mixed.
            pipe.delete(key)
            pipe.hset(key, mapping=_encode(entry, skew))
            pipe.pexpire(key, ttl_ms)
            await pipe.execute()
        self._mirror[origin] = (entry, now)

    async def refresh(self, origin: str, stale: RobotsEntry | None,
                      fetch: Callable[[], Awaitable[RobotsEntry]]) -> RobotsEntry:
        """One fetch per origin across every proxy on this Redis."""
        lock = self.lock_key(origin)
        token = secrets.token_hex(16)
        while True:
            try:
                taken = await self._take(lock, token)
            except Abandoned:
                raise  # never sent
            except BaseException:
                # No answer: Redis may have taken it for this proxy all the same.
                self._abandoned[lock] = token
                raise
            if taken:
                keeping = asyncio.ensure_future(self._keep(lock, token))
                try:
                    # Someone may have published between our read and our lock.
                    current = await self._read(origin)
                    if current is not None and _newer(current, stale):
                        return current
                    return await fetch()
                finally:
                    keeping.cancel()
                    # The result stands either way; a lock not released is, once Redis answers.
                    try:
                        await self._release(keys=[lock], args=[token])
                    except (RedisError, OSError):
                        self._abandoned[lock] = token
            entry = await self._await_holder(origin, lock, stale)
            if entry is not None:
                self.fetches_waited += 1
                return entry
            # The lock went away without a new entry: its holder failed or died. Take over.

    async def release_abandoned(self) -> int:
        """Release the locks this proxy may hold without using them (Redis did not answer
        when it asked for them, or when it let them go): how many it still held."""
        released = 0
        for lock, token in list(self._abandoned.items()):
            released += int(await self._release(keys=[lock], args=[token]))
            self._abandoned.pop(lock, None)
        return released

    async def _take(self, lock: str, token: str) -> bool:
        return bool(await self._redis_clock.run(self._acquire, [lock],
                                                [token, str(self._lock_ms)]))

    async def _keep(self, lock: str, token: str) -> None:
        """Renew the lease while the fetch runs; a holder that dies stops renewing it."""
        while True:
            await asyncio.sleep(self._lock_ms / 3000)
            try:
                if not await self._redis_clock.run(self._renew, [lock],
                                                   [token, str(self._lock_ms)]):
                    return  # lapsed (Redis lost it, or was away): the fetch goes on regardless
            except (RedisError, OSError):
                continue  # the next renewal may get through before the lease runs out

    async def _await_holder(self, origin: str, lock: str,
                            stale: RobotsEntry | None) -> RobotsEntry | None:
        """The entry another proxy publishes, or None once its lock is gone without one."""
        delay = 0.005
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, self._poll_cap)
            skew = await self.skew()
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.hgetall(self.key(origin))
                pipe.exists(lock)
                fields, locked = await pipe.execute()
            entry = self._decode(fields, skew)
            if entry is not None and _newer(entry, stale):
                self._remember(origin, entry, self._clock())
                return entry
            if not locked:
                return None

    async def skew(self) -> float:
        """Redis's clock minus this proxy's, to the millisecond: constant between two
        measurements of Redis's clock, so that an entry reads back the same each time."""
        redis_now = await self._redis_clock.now()
        if self._skew_of != self._redis_clock.generation:
            self._skew_of = self._redis_clock.generation
            self._skew = round(redis_now - self._clock(), 3)
        return self._skew

    async def _read(self, origin: str) -> RobotsEntry | None:
        skew = await self.skew()
        entry = self._decode(await self._redis.hgetall(self.key(origin)), skew)
        self._remember(origin, entry, self._clock())
        return entry

    def _remember(self, origin: str, entry: RobotsEntry | None, now: float) -> None:
        if entry is None:
            self._mirror.pop(origin, None)
        else:
            self._mirror[origin] = (entry, now)

    def _decode(self, fields: Mapping[Any, Any], skew: float) -> RobotsEntry | None:
        """An entry from its hash, its times on this proxy's clock; None when there is none (or
        it is not one of ours)."""
        kind = _KINDS.get(fields.get(b"kind", b""))
        try:
            robots_url = fields[b"robots_url"].decode()
            fetched_at = float(fields[b"fetched_at"]) - skew
            expires_at = float(fields[b"expires_at"]) - skew
        except (KeyError, ValueError, UnicodeDecodeError):
            kind = None
        if kind is None:
            return None  # garbage under our key is treated as no entry: it is fetched anew
        body = fields.get(b"body", b"")
        sha = _text(fields.get(b"sha256"))
        status = fields.get(b"status")
        robots = None
        if kind != "unreachable":
            # "missing" entries have no sha256: their empty body parses to "allow all".
            robots = self._rules.parse(sha or hashlib.sha256(body).hexdigest(), body)
        return RobotsEntry(kind, robots_url, robots, int(status) if status else None, sha,
                           fetched_at, expires_at, _text(fields.get(b"error")), body)


def _encode(entry: RobotsEntry, skew: float) -> dict[EncodableT, EncodableT]:
    fields: dict[EncodableT, EncodableT] = {
        "kind": entry.kind, "robots_url": entry.robots_url,
        # On Redis's clock; repr: floats come back bit for bit.
        "fetched_at": repr(entry.fetched_at + skew), "expires_at": repr(entry.expires_at + skew),
        "body": entry.body}
    if entry.status is not None:
        fields["status"] = str(entry.status)
    if entry.sha256 is not None:
        fields["sha256"] = entry.sha256
    if entry.error is not None:
        fields["error"] = entry.error
    return fields


def _text(value: bytes | None) -> str | None:
    return value.decode(errors="replace") if value is not None else None


# Seconds within which two readings of one entry's times are the same time: each reader
# translates them from Redis's clock with its own measurement of it.
_SAME_TIME = 0.5


def _newer(entry: RobotsEntry, stale: RobotsEntry | None) -> bool:
    """Whether `entry` was published after `stale` was read (an already expired one counts)."""
    if stale is None:
        return True
    return (entry.kind, entry.sha256) != (stale.kind, stale.sha256) or \
        abs(entry.fetched_at - stale.fetched_at) > _SAME_TIME or \
        abs(entry.expires_at - stale.expires_at) > _SAME_TIME
