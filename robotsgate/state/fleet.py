"""Fleet mode: the proxies of a fleet share robots.txt and politeness through one Redis.

`Fleet` owns a proxy's Redis connection and knows whether Redis is reachable. A background task
keeps the notice channel subscribed (see redis_pacing.py) and is also what notices Redis coming
back: it retries every `retry_interval` seconds while Redis is down. While it is down,
`robots_redis_fallback` decides: `closed` refuses every request (SharedStateUnavailable, which the
addon answers 503) and `local` uses this proxy's in-memory store and pacer, with loud logging,
until Redis answers again.

In `local`, a paced request's turn is not taken on this proxy's word alone at once: the other
proxies' requests the fleet had scheduled may leave at any moment, and only Redis knows when.
For the first `grace` seconds of an outage (the confirmation timeout: longer than a restart or
a failover takes) a paced request waits for Redis to answer again and takes the fleet's turn
then; only after that does each proxy pace its hosts alone.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from typing import Any

import redis
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.maint_notifications import MaintNotificationsConfig

from robotsgate.rules_cache import RulesCache
from robotsgate.state.departures import CONFIRM_TIMEOUT
from robotsgate.state.fleet_views import Down, FleetDepartures, FleetPacer, FleetStore
from robotsgate.state.pacing import Pacer
from robotsgate.state.redis_clock import Abandoned, Client, RedisClock
from robotsgate.state.redis_departures import RedisDepartures
from robotsgate.state.redis_pacing import SLACK, RedisPacer
from robotsgate.state.redis_store import RedisStore
from robotsgate.state.redis_url import Fallback, is_cluster, redacted
from robotsgate.state.store import MemoryStore

# The name it has always logged under: operators' log filters keep working.
logger = logging.getLogger("robotsgate.fleet")

# What "Redis is unreachable" looks like; anything else is a bug and fails closed as one. A
# Redis Cluster node answering for slots it does not serve counts: it is not usable here either
# (the watcher then says why, see Unsupported). So does a cluster with a slot that no node
# serves for now (a primary failed and its replica is not promoted yet), and one whose client
# reaches no node at all.
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError, AskError, ClusterDownError,
               ClusterError, SlotNotCoveredError, TryAgainError, RedisClusterException)
_STILL_DOWN_EVERY = 30.0  # seconds between the reminders that Redis is still unreachable
_SYNC_EVERY = 30.0  # seconds between measurements of Redis's clock (clocks drift slowly)


class QueuedPool(BlockingConnectionPool):
    """A proxy's connections to its Redis, and its queue for them.

    A burst wants more commands in flight than there are connections: the others wait their
    turn. The wait is the proxy's own, not Redis's failure, so it is not timed (redis-py's
    BlockingConnectionPool gives up after its `timeout` with "No connection available", which
    read as Redis being unreachable): a command's time starts when it is sent, and the
    socket's timeout is what says that Redis does not answer. Nothing here holds a
    connection while it waits for another (redis_clock.RedisClock.run measures first), so the
    queue always moves. Once the fleet has found Redis unreachable, the commands still
    waiting give up at once (`abandon`), instead of each waiting its turn to time out.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(timeout=None, **kwargs)
        self._generation = 0  # abandonments so far: a waiter gives up when it changes

    async def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        generation = self._generation
        async with self._condition:
            await self._condition.wait_for(
                lambda: self._generation != generation or self.can_get_connection())
            if self._generation != generation:
                raise Abandoned("Redis was found unreachable while this command waited")
            connection = self.get_available_connection()  # type: ignore[no-untyped-call]
        try:
            await self.ensure_connection(connection)
        except BaseException:
            await self.release(connection)
            raise
        return connection

    async def abandon(self) -> None:
        """The commands waiting for a connection now give up (Abandoned)."""
        async with self._condition:
            self._generation += 1
            self._condition.notify_all()


def connection_pool(url: str, max_connections: int, timeout: float) -> QueuedPool:
    """Connections that are never trusted stale, and a queue for them (QueuedPool).

    A pooled connection may have been closed by a Redis that restarted since: a command that
    fails on one with a connection error is sent once more, on a fresh connection, before it
    counts as Redis being unreachable. A timeout is never sent again: Redis may still run it
    (it was slow, not gone), and it is evidence enough. redis-py's own check for connections
    closed under it is skipped while "maintenance notifications" are on (their default with
    RESP3), even against a Redis that sends none: they are off here.
    """
    return QueuedPool.from_url(url, **_connections(max_connections, timeout))


def _connections(max_connections: int, timeout: float) -> dict[str, Any]:
    """How connections to the fleet's Redis are made, a single node's (connection_pool) and a
    cluster's (connect) alike: retried once on a connection error, never on a timeout, with
    maintenance notifications off."""
    return {"max_connections": max_connections,
            "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
            "maint_notifications_config": MaintNotificationsConfig(enabled=False),
            "socket_connect_timeout": timeout, "socket_timeout": timeout}


class QueuedCluster(RedisCluster):
    """A Redis Cluster client whose commands queue for their turn, as QueuedPool's do.

    redis-py does not queue for a node's connection when all are busy: it fails at once
    (MaxConnectionsError), as if the node were gone. Here at most as many commands (or
    pipelines) are in flight as a node has connections (`max_connections`, for each node);
    the others wait, untimed. A command sent from within a turn (a pipeline's command retried
    alone after a redirection) takes no second one.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._turns = asyncio.Semaphore(kwargs.get("max_connections", 100))  # redis-py's default
        self._in_turn: ContextVar[bool] = ContextVar("in_turn", default=False)

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        if self._in_turn.get():
            yield
            return
        async with self._turns:
            token = self._in_turn.set(True)
            try:
                yield
            finally:
                self._in_turn.reset(token)

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        async with self.turn():
            return await super().execute_command(*args, **kwargs)

    def pipeline(self, transaction: Any | None = None, shard_hint: Any | None = None
                 ) -> ClusterPipeline:
        if shard_hint:
            raise RedisClusterException("shard_hint is deprecated in cluster mode")
        return _QueuedPipeline(self, transaction)  # type: ignore[abstract]


class _QueuedPipeline(ClusterPipeline):
    async def execute(self, raise_on_error: bool = True, allow_redirections: bool = True
                      ) -> list[Any]:
        client = self.cluster_client
        assert isinstance(client, QueuedCluster)
        async with client.turn():
            return await super().execute(raise_on_error, allow_redirections)


def connect(url: str, max_connections: int, timeout: float) -> Client:
    """A client for the Redis, or the Redis Cluster, at `url`.

    On a cluster, a command that fails for want of its node is not retried with backoff (redis-
    py's default, seconds of it): it fails, the fleet falls back at once, and its watcher tries
    every retry interval until the cluster has promoted a replica. Connection errors are
    retried once, after redis-py has asked the cluster again which node serves the slot.
    """
    if not is_cluster(url):
        return Redis.from_pool(connection_pool(url, max_connections, timeout))
    plain = url.replace("+cluster", "", 1)
    return QueuedCluster.from_url(plain, **_connections(max_connections, timeout))


class Unsupported(Exception):
    """The Redis at `robots_redis` is not what its URL says (a Redis Cluster node behind a
    redis:// URL)."""


class SharedStateUnavailable(Exception):
    """Redis is unreachable and the fallback is `closed`: refuse the request (503)."""


def check_kind(url: str, timeout: float = 1.0) -> None:
    """At start-up: a Redis that answers must be what the URL says it is (a Redis Cluster node
    for redis+cluster://, a plain Redis for the others), else ValueError saying what to write.
    One that does not answer is left to robots_redis_fallback, as it would be later."""
    client = redis.Redis.from_url(url.replace("+cluster", "", 1), socket_timeout=timeout,
                                  socket_connect_timeout=timeout)
    try:
        enabled = bool(client.info("cluster").get("cluster_enabled"))
    except (redis.RedisError, OSError):
        return
    finally:
        client.close()
    if enabled and not is_cluster(url):
        raise ValueError(f"{redacted(url)} is a Redis Cluster node: say so, as "
                         f"redis+cluster://host:port (any node of the cluster; rediss+cluster:// "
                         f"for TLS)")
    if is_cluster(url) and not enabled:
        raise ValueError(f"{redacted(url)} is not a Redis Cluster node (cluster mode is not "
                         f"enabled there): use redis://host:port/db for a single Redis")





class Fleet:
    """One proxy's view of the fleet's Redis: its store, its pacer, and whether it is reachable."""

    def __init__(self, url: str, *, prefix: str, fallback: Fallback, clock: Callable[[], float],
                 rules: RulesCache, local_store: MemoryStore, local_pacer: Pacer,
                 max_origins: int, max_wait: float, lock_ttl: float, retry_interval: float = 0.5,
                 timeout: float = 2.0, idle_ttl: float = 5.0, max_connections: int = 64,
                 monotonic: Callable[[], float] = time.monotonic, regroup: float = 2.0,
                 confirm_timeout: float = CONFIRM_TIMEOUT, grace: float | None = None,
                 slack: float = SLACK) -> None:
        """`confirm_timeout`: seconds a released request may go unconfirmed before it counts
        as having left (departures.py); `grace`: seconds of an outage that paced requests wait
        out in `local` (that timeout, unless given); `slack`: how far ahead a departure may be
        recorded with its turn (redis_departures.py)."""
        self.url = url
        self.fallback = fallback
        self.max_origins = max_origins
        self._retry_interval = retry_interval
        self.monotonic = monotonic
        self.cluster = is_cluster(url)
        self.client: Client = connect(url, max_connections, timeout)
        # Fenced commands must run within half the time this proxy waits for them (real time:
        # the sockets' timeouts do not follow an injected clock).
        self.redis_clock = RedisClock(self.client, fence=timeout / 2)
        # Bodies read from Redis are parsed through the same cache as this proxy's own.
        self.shared_store = RedisStore(self.client, prefix=prefix, clock=clock, rules=rules,
                                       max_origins=max_origins, lock_ttl=lock_ttl,
                                       redis_clock=self.redis_clock)
        self.shared_pacer = RedisPacer(self.client, prefix=prefix, max_wait=max_wait,
                                       max_hosts=max_origins, idle_ttl=idle_ttl,
                                       monotonic=monotonic, redis_clock=self.redis_clock,
                                       regroup=regroup, slack=slack)
        self.shared_departures = RedisDepartures(
            self.shared_pacer, confirm_timeout=confirm_timeout, max_hosts=max_origins,
            monotonic=monotonic)
        self.local_store = local_store
        self.local_pacer = local_pacer
        self.store = FleetStore(self)
        self.pacer = FleetPacer(self)
        self.departures = FleetDepartures(self)
        self.down = False
        self.confirm_timeout = confirm_timeout
        self.grace = confirm_timeout if grace is None else grace
        self._answering = asyncio.Event()  # set while Redis answers, for those who wait for it
        self._answering.set()
        self.outages = 0  # outages declared, for tests and benchmarks
        self._down_since = 0.0
        self._reminded = 0.0
        self._why = "no answer"  # the last failure, for the refusals' audit records
        self._said_cluster = False
        self._watcher: asyncio.Task[None] | None = None
        self._abandoning: set[asyncio.Task[None]] = set()

    # -- reachability ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start watching Redis (needs the running event loop; called on first use)."""
        if self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def failed(self, exc: BaseException) -> None:
        """A Redis command failed for want of Redis."""
        now = self.monotonic()
        if isinstance(exc, Abandoned):
            return  # the failure that made it give up was said already
        self._why = _why(exc)
        if not self.down:
            self.down = True
            self._answering.clear()
            self.outages += 1
            pool = getattr(self.client, "connection_pool", None)
            if isinstance(pool, QueuedPool):
                # What still waits for a connection would wait its turn only to time out.
                abandoning = asyncio.get_running_loop().create_task(pool.abandon())
                self._abandoning.add(abandoning)
                abandoning.add_done_callback(self._abandoning.discard)
            self._down_since = self._reminded = now
            # The Redis that answers next may be another machine (a failover): its clock too.
            self.redis_clock.forget()
            self.shared_pacer.listening(False)
            if self.fallback == "closed":
                logger.error(
                    "robotsgate: Redis at %s is unreachable (%s): answering 503 to every "
                    "request until it is back (robots_redis_fallback=closed)",
                    redacted(self.url), _why(exc))
            else:
                logger.error(
                    "robotsgate: Redis at %s is unreachable (%s): this proxy now keeps robots.txt "
                    "and politeness in its own memory; the fleet's politeness budget is NOT "
                    "shared until Redis is back (robots_redis_fallback=local)",
                    redacted(self.url), _why(exc))
        elif now - self._reminded >= _STILL_DOWN_EVERY:
            self._reminded = now
            logger.warning("robotsgate: Redis at %s still unreachable after %.0f s (%s); %s",
                           redacted(self.url), now - self._down_since, _why(exc),
                           "answering 503" if self.fallback == "closed" else
                           "using this proxy's own in-memory state")

    async def _back(self) -> None:
        """Redis answers: what this proxy could not tell it, it tells it now (the departures
        it missed, the fetch locks it may hold and the slots it may have claimed without using
        them)."""
        await self.shared_store.release_abandoned()
        await self.shared_pacer.release_abandoned()
        if self.down:
            self.down = False
            self._answering.set()
            self.departures.resend()
            logger.warning("robotsgate: Redis at %s is reachable again after %.1f s: robots.txt "
                           "and politeness are shared by the fleet again", redacted(self.url),
                           self.monotonic() - self._down_since)

    async def _watch(self) -> None:
        """Keep the notice channel subscribed; it also tells when Redis goes and comes back."""
        pacer = self.shared_pacer
        fresh = False  # whether the last attempt was on connections opened for it
        while True:
            pubsub = self.client.pubsub()
            try:
                if isinstance(self.client, RedisCluster):
                    # Which node serves what: the channel's subscription needs it first.
                    await self.client.initialize()
                await pubsub.subscribe(pacer.channel)
                await self.redis_clock.sync()  # also the evidence that commands get through
                await self._refuse_cluster()
                if await pacer.regrouping():
                    # Redis lost the schedule (restarted empty, say) while this proxy was away
                    # from it: put back what this proxy knows, before anything is decided.
                    await pacer.reassert()
                await self._hand_over()
                pacer.listening(True)
                await self._back()
                fresh = False
                synced = self.monotonic()
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True,
                                                       timeout=1.0)
                    if message is not None and message.get("type") == "message":
                        await self._notice(message["data"])
                    if self.down:
                        # A command failed while the channel stayed up: ask Redis directly
                        # (every group's epoch: on a cluster, every node).
                        await self.redis_clock.sync()
                        if await pacer.regrouping():
                            await pacer.reassert()
                        await self._hand_over()
                        pacer.listening(True)
                        await self._back()
                    elif abs(self.monotonic() - synced) >= _SYNC_EVERY:
                        synced = self.monotonic()
                        await self.redis_clock.sync()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # whatever it was, shared state cannot be trusted now
                pacer.listening(False)
                if isinstance(exc, RedisConnectionError) and not fresh and not self.down:
                    # The channel's connection was closed (a Redis restart, say): only a fresh
                    # one failing too says that Redis is gone. Try one at once.
                    fresh = True
                    continue
                self.failed(exc)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
            await asyncio.sleep(self._retry_interval)

    async def _notice(self, data: bytes) -> None:
        kind, _, rest = data.decode(errors="replace").partition(" ")
        if kind == "left":
            self.shared_departures.notice(rest)
        elif self.shared_pacer.notice(data) == "regroup":
            # Only the hosts of the group whose schedule Redis lost.
            await self.shared_pacer.reassert(rest)

    async def _refuse_cluster(self) -> None:
        """A cluster node behind a redis:// URL would answer MOVED for most keys: say what to
        write instead."""
        if self.cluster:
            return
        info = await self.client.info("cluster")
        if not info.get("cluster_enabled"):
            return
        if not self._said_cluster:
            self._said_cluster = True
            logger.error("robotsgate: Redis at %s is a Redis Cluster node: robots_redis must "
                         "say so, as redis+cluster://host:port (any node of the cluster; "
                         "rediss+cluster:// for TLS)", redacted(self.url))
        raise Unsupported("a Redis Cluster node behind a redis:// URL; use redis+cluster://")

    async def _hand_over(self) -> None:
        """Back from an outage in `local` mode: what this proxy scheduled alone joins Redis."""
        if not self.down or self.fallback != "local":
            return
        for host, next_in, paused_for in self.local_pacer.pending():
            await self.shared_pacer.adopt(host, next_in, paused_for)

    async def aclose(self) -> None:
        await self.departures.aclose()
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher
            self._watcher = None
        await self.client.aclose()

    async def answering(self) -> bool:
        """Wait, while the outage is younger than `grace`, for Redis to answer again: whether
        it does."""
        left = self._down_since + self.grace - self.monotonic()
        if not self.down:
            return True
        if left <= 0:
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._answering.wait(), left)
        return not self.down

    async def ask[T](self, call: Callable[[], Awaitable[T]]) -> "T | Down":
        """The one place where "Redis is unreachable" is told from everything else: what
        `call` answers on Redis, or DOWN when Redis is unreachable (known already, or found
        now: then said, see `failed`). Any other error is a bug, and goes up as one."""
        self.start()
        if self.down:
            return Down.DOWN
        try:
            return await call()
        except UNREACHABLE as exc:
            self.failed(exc)
            return Down.DOWN

    def refuse(self) -> SharedStateUnavailable:
        return SharedStateUnavailable(f"Redis at {redacted(self.url)} is unreachable "
                                      f"({self._why})")


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
