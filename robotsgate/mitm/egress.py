"""Connections to origins go to the address that was decided, named as the origin decided.

Every connection mitmproxy opens to an origin passes `server_connect` first, whatever opened it
(a request, a CONNECT with the eager strategy, a WebSocket, a retry): its host is resolved and
classified here (robotsgate.egress.resolver, robotsgate.egress.policy) and the connection is made to
exactly that address, never to what the name resolves to a moment later; a refused address
fails the connection. mitmproxy's own guard against connecting to itself compares host names
only ("127.1", "LOCALHOST" and this machine's other addresses pass it); here the address is
what counts.

mitmproxy dials `server.address`, and also compares it to reuse connections and derives a
tunnel's request host from it, so the classified address is put there just for the dial and
the name is put back as soon as the connection is made (or failed).

Upstream TLS names the decided host, whatever server name the client sent (`tls_start_server`
runs before mitmproxy's own, which would take the client's): a front that routes by server name
serves the host whose robots.txt decided.

The proxy's own listening sockets are learnt once it runs (robotsgate.mitm.runtime), so that no
request is sent to them by any name or address.
"""

import logging
from typing import Any

from mitmproxy import ctx
from mitmproxy.proxy.mode_specs import ProxyMode, ReverseMode, UpstreamMode

from robotsgate.egress.policy import Refused
from robotsgate.egress.resolver import Unresolved
from robotsgate.mitm import compat
from robotsgate.mitm.runtime import NotConfigured, Runtime
from robotsgate.protocol.hosts import canonical_host

logger = logging.getLogger(__name__)


class Egress:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._named: dict[str, tuple[str, int]] = {}  # connection id -> address as mitmproxy had it

    async def server_connect(self, data: Any) -> None:
        server = data.server
        if server.error or server.address is None or _operators(server.address):
            return
        try:
            resolver = self.runtime.live.services.resolver
        except NotConfigured:
            server.error = "robotsgate is not configured yet"
            return
        host, port = server.address[0], server.address[1]
        answer = await resolver.resolve(canonical_host(host), port)
        if isinstance(answer, Refused):
            # The decision refuses these first; this is the connection no decision made (a
            # name that changed its mind, an addon's own request).
            logger.warning("robotsgate: refused to connect to %s for %s: not reachable "
                           "through this proxy", answer.describe(), host)
            server.error = f"robotsgate: {answer.describe()} is not reachable through this proxy"
            return
        if isinstance(answer, Unresolved):
            server.error = answer.error
            return
        self._named[server.id] = server.address
        server.address = (answer, port)

    def server_connected(self, data: Any) -> None:
        self._named_again(data.server)

    def server_connect_error(self, data: Any) -> None:
        self._named_again(data.server)

    def _named_again(self, server: Any) -> None:
        named = self._named.pop(server.id, None)
        if named is not None:
            compat.rename(server, named)

    def tls_start_server(self, data: Any) -> None:
        conn = data.conn
        if conn.address is not None and not _operators(conn.address):
            conn.sni = canonical_host(str(conn.address[0]))


def _operators(address: tuple[str, int]) -> bool:
    """Whether `address` is one the operator named in mitmproxy's modes (an upstream proxy,
    a reverse proxy's target): dialled as configured."""
    for spec in ctx.options.mode:
        try:
            mode = ProxyMode.parse(spec)
        except ValueError:
            continue
        if isinstance(mode, UpstreamMode | ReverseMode) and \
                tuple(mode.address) == tuple(address[:2]):
            return True
    return False
