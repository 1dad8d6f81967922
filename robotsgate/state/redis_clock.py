"""Redis's clock (TIME) as this proxy sees it, and fences on it.

Every time the fleet shares is on Redis's clock, never a proxy's: proxies' clocks disagree (a
proxy an hour ahead must not make a copy look fresh for an hour to the others), Redis's is one.
The offset between Redis's TIME and this proxy's monotonic clock is measured with a round trip
(on first use, then each time the fleet's watcher asks), so that reading it costs nothing on the
hot path; its error is at most half a round trip.

A fence makes a write that arrives late harmless. A command that timed out here may still run
in Redis afterwards (Redis was paused, not gone): it would claim a fetch lock that nobody holds,
or a slot that nobody uses. Each such command carries a deadline on Redis's clock, shortly
before this proxy stops waiting for it; the script that runs it after that deadline changes
nothing and answers LATE, which reads here as the timeout it is.

The deadline is only as good as the measurement of Redis's clock: Redis answered TIME somewhere
within the round trip, so the offset may be wrong by half of it, either way. A measurement
taken while Redis was paused (its answer came when it resumed, seconds after the question)
would put the deadline seconds late, past the moment this proxy gives up. So every deadline is
taken as early as the measurement allows (half its round trip earlier); one that would then be
less than half the fence ahead is measured again first.

On a Redis Cluster each node has its own clock: a fence is measured on the clock of the node
that serves the script's keys (one more round trip the first time a node is used, and again
after a failover). Times the fleet keeps (robots.txt freshness) are on one node's clock (redis-
py's default node, where it sends TIME): nodes' clocks, unlike proxies', are an operator's to
keep in step.
"""

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError


class Abandoned(RedisConnectionError):
    """A command gave up waiting for a connection, unsent: the fleet had found Redis
    unreachable meanwhile (by another command's failure, which is the one said)."""


# What the fleet talks to: one Redis, or a Redis Cluster.
type Client = Redis | RedisCluster

# The Lua that a fenced script starts with: ARGV[1] is the deadline ('' for none), and `now`
# is Redis's time, in seconds.
FENCE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
if ARGV[1] ~= '' and now > tonumber(ARGV[1]) then
  return redis.error_reply('LATE the sender gave up on this command')
end
"""

# A measurement whose round trip took longer than this says too little to replace a better one.
_TRUSTED_RTT = 0.1


class RedisClock:
    def __init__(self, client: Client, *, fence: float = 1.0,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        """`fence`: seconds after sending within which a fenced command must run in Redis; less
        than the client's timeout, so that nothing it gave up on can still run."""
        self._redis = client
        self._fence = fence
        self._monotonic = monotonic
        self._offset: float | None = None
        self._rtt = math.inf
        self.generation = 0  # measurements taken: what was derived from an older one is stale
        # a cluster node's name -> its offset, and the round trip it was measured in
        self._nodes: dict[str, tuple[float, float]] = {}

    async def sync(self) -> None:
        """Measure the offset again (one round trip)."""
        before = self._monotonic()
        seconds, micros = await self._redis.time()  # on a cluster: its default node
        after = self._monotonic()
        rtt = after - before
        if self._offset is None or rtt <= max(_TRUSTED_RTT, self._rtt):
            # Even a poor measurement replaces none: the deadlines allow for its error.
            # Redis answered somewhere within the round trip: its middle is the best guess.
            self._offset = seconds + micros / 1e6 - (before + after) / 2
            self._rtt = rtt
            self.generation += 1

    async def now(self) -> float:
        """Redis's time now, in seconds since the epoch (a round trip only the first time)."""
        if self._offset is None:
            await self.sync()
        assert self._offset is not None
        return self._monotonic() + self._offset

    def known(self) -> bool:
        return self._offset is not None

    def estimate(self, key: str) -> tuple[float, float] | None:
        """(offset, error) of the clock that runs the scripts of `key` (on a cluster, its
        node's), as measured: Redis's time is this proxy's monotonic clock plus the offset,
        give or take the error (half the round trip it was measured in). None if it was not
        measured (or was forgotten since)."""
        if isinstance(self._redis, RedisCluster):
            node = self._redis.get_node_from_key(key)
            known = None if node is None else self._nodes.get(node.name)
        else:
            known = None if self._offset is None else (self._offset, self._rtt)
        return None if known is None else (known[0], known[1] / 2)

    async def deadline(self) -> str:
        """The fence for a command sent now: its ARGV[1], at the earliest Redis's time can be
        now plus the fence (the measurement's error allowed for)."""
        await self._measured()
        deadline = self._deadline()
        while deadline is None:  # forgotten meanwhile
            await self.sync()
            deadline = self._deadline()
        return deadline

    async def _measured(self) -> None:
        """The offset known, and good enough to fence with (a round trip when it is not)."""
        if self._offset is None or self._rtt / 2 > self._fence / 2:
            await self.sync()  # none yet, or too poor to fence with: try for a better one

    def _deadline(self) -> str | None:
        if self._offset is None:
            return None
        return repr(self._monotonic() + self._offset + self._fence - self._rtt / 2)

    async def run(self, script: "AsyncScript", keys: list[str], args: list[str]) -> Any:
        """Run a fenced script (ARGV[1] its deadline, then `args`).

        The deadline is taken once the command has a connection: a burst may wait for one
        (the pool's queue), and only from the moment it is sent does this proxy wait the
        socket's timeout for the answer. Redis's clock is measured before a connection is
        taken, never while one is held: the measurement needs a connection of its own, and
        commands each holding one while they wait for another would stop the queue.
        """
        if isinstance(self._redis, RedisCluster):
            deadline = await self._node_deadline(self._redis, keys[0])
            try:
                return await fenced(script(keys=keys, args=[deadline, *args]))
            except RedisTimeoutError:
                self.forget()
                raise
        while True:
            await self._measured()
            async with self._redis.client() as single:
                fence = self._deadline()
                if fence is None:
                    continue  # forgotten meanwhile: measured again, holding nothing
                try:
                    return await fenced(script(keys=keys, args=[fence, *args],
                                               client=single))
                except RedisTimeoutError:
                    # Late while this proxy still waited: Redis was slow, or its clock is
                    # not the one measured (another machine since a failover). Measure it
                    # again.
                    self.forget()
                    raise

    async def _node_deadline(self, cluster: RedisCluster, key: str) -> str:
        """The fence on the clock of the node that serves `key`."""
        await cluster.initialize()  # learns the slots' nodes once; nothing after that
        node: ClusterNode | None = cluster.get_node_from_key(key)
        assert node is not None
        known = self._nodes.get(node.name)
        if known is None or known[1] / 2 > self._fence / 2:
            before = self._monotonic()
            seconds, micros = await cluster.time(target_nodes=node)
            after = self._monotonic()
            measured = (seconds + micros / 1e6 - (before + after) / 2, after - before)
            if known is None or measured[1] < known[1]:
                known = self._nodes[node.name] = measured
        offset, rtt = known
        return repr(self._monotonic() + offset + self._fence - rtt / 2)

    def forget(self) -> None:
        """Redis may be another machine now (a restart elsewhere, a failover): measure anew."""
        self._nodes.clear()
        self._offset = None
        self._rtt = math.inf
        self.generation += 1


async def fenced[T](call: Awaitable[T]) -> T:
    """The answer of a fenced script; LATE (it ran after its deadline) raises a timeout."""
    try:
        return await call
    except ResponseError as exc:
        if str(exc).startswith("LATE"):
            raise RedisTimeoutError(f"Redis ran a command too late ({exc})") from None
        raise
