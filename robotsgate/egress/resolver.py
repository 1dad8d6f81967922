"""Destinations resolved once, classified, and dialled at the address classified.

The request decision asks `dial(host, port)` before anything else is done for a request, and
the proxy's connection to the origin is then made to exactly that address (robotsgate.mitm.egress
rewrites the address mitmproxy dials; the robots.txt fetcher's network backend asks here too).
Answers are kept for `ttl` seconds, so the decision and the connection see the same address
however the name's DNS records change between them (DNS rebinding).

Whether an address is one of this machine's own is asked of the kernel: a socket can be bound
to an address only when it is local. No interface list to keep up to date, no dependency.
"""

import asyncio
import contextlib
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from cachetools import LRUCache

from robotsgate.egress.addresses import address_of
from robotsgate.egress.policy import EgressPolicy, Refused
from robotsgate.protocol.memo import keep

Lookup = Callable[[str, int], Awaitable[list[str]]]

_REMEMBERED = 4096  # names (and addresses) whose answer is kept


async def system_lookup(host: str, port: int) -> list[str]:
    """The host's addresses, in the order getaddrinfo(3) prefers them."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in seen:
            seen.append(address)
    return seen


def is_local(address: str) -> bool:
    """Whether `address` is one of this machine's own (the kernel lets a socket bind to it)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((address, 0))
        return True
    return False


@dataclass(frozen=True, slots=True)
class Unresolved:
    """The name did not resolve: there is no address to decide on or to dial."""

    error: str


class Resolver:
    """Resolves and classifies destinations for one configuration (robots_egress_*)."""

    def __init__(self, policy: EgressPolicy, *, lookup: Lookup = system_lookup,
                 local: Callable[[str], bool] = is_local, ttl: float = 60.0,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self._lookup = lookup
        self._local = local
        self._ttl = ttl
        self._timer = timer
        # (host, port) -> (answer, until when it holds): asked for every request, so a plain
        # dict (a TTLCache expires entries on every read), emptied when full.
        self._answers: dict[tuple[str, int], tuple[str | Refused, float]] = {}
        self._locals: LRUCache[str, bool] = LRUCache(_REMEMBERED)
        self._pending: dict[tuple[str, int], asyncio.Future[str | Refused | Unresolved]] = {}

    def set_policy(self, policy: EgressPolicy) -> None:
        """A new policy (the proxy's own sockets are known once it listens): answers given
        under the old one are forgotten."""
        self.policy = policy
        self._answers.clear()

    async def dial(self, host: str, port: int) -> str | Refused | None:
        """The address to dial for `host`:`port`; Refused when none of its addresses may be
        dialled; None when the name does not resolve."""
        known = self._answers.get((host, port))
        if known is not None and known[1] > self._timer():
            return known[0]
        answer = await self.resolve(host, port)
        return None if isinstance(answer, Unresolved) else answer

    async def resolve(self, host: str, port: int) -> str | Refused | Unresolved:
        key = (host, port)
        known = self._answers.get(key)
        if known is not None and known[1] > self._timer():
            return known[0]
        if address_of(host) is not None:  # an IP literal: nothing to look up
            return self._keep(key, self._classify([host], port))
        task = self._pending.get(key)
        if task is None:  # one lookup per name, however many requests wait for it
            task = self._pending[key] = asyncio.ensure_future(self._resolve(host, port))
            task.add_done_callback(lambda _: self._pending.pop(key, None))
        # shield: a client that goes away must not cancel the lookup the others wait for.
        return await asyncio.shield(task)

    async def _resolve(self, host: str, port: int) -> str | Refused | Unresolved:
        try:
            addresses = await self._lookup(host, port)
        except (OSError, UnicodeError) as exc:
            # Not kept: the next request asks again (the fetch of robots.txt, which fails the
            # same way, is what is remembered, for robots_error_ttl).
            return Unresolved(f"DNS lookup of {host} failed: "
                              f"{getattr(exc, 'strerror', None) or exc}")
        if not addresses:
            return Unresolved(f"DNS lookup of {host} gave no address")
        return self._keep((host, port), self._classify(addresses, port))

    def _keep(self, key: tuple[str, int], answer: str | Refused) -> str | Refused:
        keep(self._answers, _REMEMBERED, key, (answer, self._timer() + self._ttl))
        return answer

    def _classify(self, addresses: list[str], port: int) -> str | Refused:
        """The first address that may be dialled, or why the first of them may not."""
        first: Refused | None = None
        for address in addresses:
            refused = self.policy.refusal(address, port, local=self.local)
            if refused is None:
                return address
            first = first or refused
        assert first is not None
        return first

    def local(self, address: str) -> bool:
        known = self._locals.get(address)
        if known is None:
            known = self._locals[address] = self._local(address)
        return known
