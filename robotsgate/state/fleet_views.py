"""What the gate and the turns see of a fleet: its store, its schedule and its turns, each on
Redis while Redis answers and on the fallback while it does not (fleet.Fleet.ask tells the two
apart, in one place).

While Redis is unreachable, `closed` refuses (SharedStateUnavailable) and `local` carries on
with this proxy's memory, which shadows the fleet's schedule meanwhile so as to carry on from it.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import TYPE_CHECKING

from cachetools import LRUCache

from robotsgate.state.pacing import NoSlot, Slot
from robotsgate.state.store import MemoryStore, RobotsEntry

if TYPE_CHECKING:
    from robotsgate.state.fleet import Fleet

logger = logging.getLogger("robotsgate.fleet")

_UNSENT_PER_HOST = 8  # departures kept per host while Redis cannot be told of them


class Down(Enum):
    """What Fleet.ask answers while Redis is unreachable."""

    DOWN = "down"


class FleetStore:
    """The Store the gate sees: Redis while it answers, then whatever the fallback says."""

    def __init__(self, fleet: "Fleet") -> None:
        self._fleet = fleet

    async def get(self, origin: str) -> RobotsEntry | None:
        fleet = self._fleet
        found = await fleet.ask(lambda: fleet.shared_store.get(origin))
        if found is not Down.DOWN:
            return found
        # What this proxy had from Redis carries on: no refetch just because Redis went away.
        return await self._local().get(origin) or fleet.shared_store.mirrored(origin)

    async def put(self, origin: str, entry: RobotsEntry) -> None:
        fleet = self._fleet
        if await fleet.ask(lambda: fleet.shared_store.put(origin, entry)) is Down.DOWN:
            await self._local().put(origin, entry)

    async def refresh(self, origin: str, stale: RobotsEntry | None,
                      fetch: Callable[[], Awaitable[RobotsEntry]]) -> RobotsEntry:
        fleet = self._fleet
        entry = await fleet.ask(lambda: fleet.shared_store.refresh(origin, stale, fetch))
        if entry is not Down.DOWN:
            return entry
        return await self._local().refresh(origin, stale, fetch)

    def _local(self) -> MemoryStore:
        if self._fleet.fallback == "closed":
            raise self._fleet.refuse()
        return self._fleet.local_store


class FleetPacer:
    """The Pacing the gate sees: Redis's schedule while it answers, then the fallback's."""

    def __init__(self, fleet: "Fleet") -> None:
        self._fleet = fleet

    async def reserve(self, host: str, interval: float, *, max_wait: float | None = None
                      ) -> Slot | NoSlot:
        fleet = self._fleet
        slot = await fleet.ask(lambda: fleet.shared_pacer.reserve(host, interval,
                                                                  max_wait=max_wait))
        if slot is not Down.DOWN:
            if fleet.fallback == "local" and isinstance(slot, Slot) and \
                    (interval > 0 or slot.wait > 0):
                # Shadow the fleet's schedule, to carry on from it if Redis goes away.
                fleet.local_pacer.follow(host, slot.wait + interval,
                                         slot.wait if slot.paused else 0.0)
            return slot
        if fleet.fallback == "closed":
            raise fleet.refuse()
        return await fleet.local_pacer.reserve(host, interval, max_wait=max_wait)

    async def pushback(self, host: str, retry_after: float | None) -> float:
        # Never refused: the origin's answer is already on its way to the bot; while Redis is
        # down the pause is remembered here at least.
        fleet = self._fleet
        pause = await fleet.ask(lambda: fleet.shared_pacer.pushback(host, retry_after))
        if pause is Down.DOWN:
            return await fleet.local_pacer.pushback(host, retry_after)
        if fleet.fallback == "local":
            fleet.local_pacer.follow(host, 0.0, pause)
        return pause

    def backing_off(self, host: str) -> bool:
        fleet = self._fleet
        return fleet.shared_pacer.backing_off(host) or fleet.local_pacer.backing_off(host)

    async def recovered(self, host: str) -> None:
        fleet = self._fleet
        if await fleet.ask(lambda: fleet.shared_pacer.recovered(host)) is Down.DOWN:
            await fleet.local_pacer.recovered(host)


class FleetDepartures:
    """Turns taken across the fleet while Redis answers (see redis_departures.py); meanwhile,
    this proxy's own turns alone (`local`, once the outage is older than its grace), or none
    at all (`closed`: refused)."""

    def __init__(self, fleet: "Fleet") -> None:
        self._fleet = fleet
        self._reports: set[asyncio.Task[None]] = set()
        # host -> {flow: when it left}: departures Redis could not be told of, told when it is
        # back (a few per host: the requests another outage could have left marked as leaving).
        self._unsent: LRUCache[str, dict[str, float]] = LRUCache(maxsize=fleet.max_origins)

    async def take(self, host: str, interval: float, flow: str,
                   at_once: Callable[[], bool] | None = None) -> None:
        fleet = self._fleet
        while True:
            asked = not fleet.down
            taken = await fleet.ask(
                lambda: fleet.shared_departures.take(host, interval, flow, at_once))
            if taken is not Down.DOWN:
                return
            if asked:
                # Redis may have marked it as leaving before the answer was lost: once Redis
                # is back it hears that it left now (refused, or sent on this proxy's turn).
                self._keep(host, flow, fleet.monotonic())
            if fleet.fallback == "closed":
                raise fleet.refuse()
            if not await fleet.answering():
                return  # a long outage: this proxy's own turns alone

    def left(self, host: str, flow: str, at: float) -> None:
        # Called from mitmproxy's connection and response hooks: the report goes on in the
        # background (until Redis has it, the other proxies wait for it).
        if self._fleet.shared_departures.recorded(flow, at):
            return  # recorded with its turn, as leaving by then (redis_departures.py)
        if self._fleet.down:
            self._keep(host, flow, at)
            return
        report = asyncio.get_running_loop().create_task(self._left(host, flow, at))
        self._reports.add(report)
        report.add_done_callback(self._reports.discard)

    def resend(self) -> None:
        """Redis is back: the departures it could not be told of. Each only ever makes a
        departure later there; a request marked as leaving just before Redis went away would
        otherwise hold its host for the whole confirmation timeout."""
        unsent = list(self._unsent.items())
        self._unsent.clear()
        for host, flows in unsent:
            for flow, at in flows.items():
                self.left(host, flow, at)

    async def aclose(self) -> None:
        """Shutting down: the reports under way, briefly, then no more."""
        if self._reports:
            await asyncio.wait(list(self._reports), timeout=1.0)
        for report in list(self._reports):
            report.cancel()

    def _keep(self, host: str, flow: str, at: float) -> None:
        flows = self._unsent.get(host)
        if flows is None:
            flows = self._unsent[host] = {}
        flows[flow] = max(at, flows.get(flow, at))
        if len(flows) > _UNSENT_PER_HOST:
            del flows[min(flows, key=flows.__getitem__)]  # the earliest departure matters least

    async def _left(self, host: str, flow: str, at: float) -> None:
        fleet = self._fleet
        try:
            # The age is taken as the report is sent: a late report is never an early departure.
            told = await fleet.ask(
                lambda: fleet.shared_departures.left(host, flow, fleet.monotonic() - at))
        except Exception:
            logger.exception("robotsgate: could not tell the fleet that a request to %s left; "
                             "its next request waits up to %.0f s", host,
                             fleet.confirm_timeout)
            return
        if told is Down.DOWN:
            self._keep(host, flow, at)
