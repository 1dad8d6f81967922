"""Paced requests wait for their slot and take their turn at the last moment before they leave.

One await (robotsgate.state.driver, `Politeness.turn`): until the slot the request was given
when it was decided, then until the previous request to its host really left and the interval
has passed since, which is known only from the connection events and the first byte of the
answer: these hooks report them.
"""

import logging
from collections.abc import Awaitable
from typing import Any

from mitmproxy import http

from robotsgate.mitm import compat
from robotsgate.mitm.answers import fail_closed
from robotsgate.mitm.flow import state
from robotsgate.mitm.runtime import Runtime
from robotsgate.origin import Origin
from robotsgate.outcomes import Reason
from robotsgate.protocol.memo import keep
from robotsgate.state.fleet import SharedStateUnavailable

logger = logging.getLogger(__name__)

_HOSTS_REMEMBERED = 4096
_MULTIPLEXED = (b"h2", b"h3")


class Turns:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._hosts: dict[str, str] = {}

    # Plain functions that hand mitmproxy a coroutine only for a paced request: most requests
    # are not, and cost no coroutine here.
    def requestheaders(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        if state(flow).paced is not None and flow.response is None and \
                self._streams_now(flow):
            return self._take_turn(flow, streamed=True)
        return None

    def request(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        if state(flow).paced is not None and flow.response is None:
            return self._take_turn(flow)
        return None

    async def _take_turn(self, flow: http.HTTPFlow, *, streamed: bool = False) -> None:
        known = state(flow)
        paced, host = known.paced, known.host
        known.paced = None
        if paced is None or host is None:
            return
        start, interval = paced
        held = self.runtime.held  # what the status line says is waiting
        held.arrive(host)
        try:
            politeness = self.runtime.of(flow).services.politeness
            try:
                await politeness.turn(host, start, interval, flow.id,
                                      tls=flow.request.scheme == "https",
                                      client=flow.client_conn.id,
                                      at_once=lambda: _goes_on_open_connection(flow))
            finally:
                held.leave(host)
            if streamed:
                # Its turn is taken before its body: it leaves now, the body following as it
                # comes. Were mitmproxy to buffer a small body first, the bot would choose
                # when the request really left, after it had been counted as gone.
                flow.request.stream = True
            if interval > 0 and _goes_on_open_connection(flow):
                politeness.settled(host, flow.id)  # it leaves now: no need to wait for its answer
        except SharedStateUnavailable as exc:
            # The fleet's Redis went away between the request's slot and its turn, and
            # robots_redis_fallback is closed.
            self._refuse(flow, Reason.REDIS_UNAVAILABLE, str(exc))
        except Exception as exc:
            logger.exception("robotsgate: internal error pacing %s", flow.request.pretty_url)
            self._refuse(flow, Reason.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")

    def _refuse(self, flow: http.HTTPFlow, reason: Reason, error: str) -> None:
        fail_closed(flow, self.runtime.recorder_of(flow), reason, error)
        flow.request.stream = False  # read and dropped, never streamed to the origin

    def _streams_now(self, flow: http.HTTPFlow) -> bool:
        return streams_now(flow, self.runtime.of(flow).stream_bodies)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        host = state(flow).host
        if host is not None:
            # On an HTTP/2 or HTTP/3 connection the stream may have been queued behind others
            # (the origin's limit of concurrent streams): it left by now, maybe not before.
            self.runtime.of(flow).services.politeness.settled(
                host, flow.id, queued=flow.server_conn.alpn in _MULTIPLEXED)

    def error(self, flow: http.HTTPFlow) -> None:
        self.responseheaders(flow)

    def server_connected(self, data: Any) -> None:
        self._connected(data.server.address, data.client.id, tls=False)

    def tls_established_server(self, data: Any) -> None:
        self._connected(data.context.server.address, data.context.client.id, tls=True)

    def _connected(self, address: tuple[str, int] | None, client: str, *, tls: bool) -> None:
        # A connection has no flow to pin a configuration: the one in force (a request
        # released under the one before a reconfigure is confirmed by its answer instead).
        if address is not None:
            self.runtime.live.services.politeness.connected(self._host(address[0]), tls=tls,
                                                            client=client)

    def _host(self, address: str) -> str:
        """The host as the pacer knows it (Origin.of's canonical form), remembered."""
        host = self._hosts.get(address)
        if host is None:
            host = keep(self._hosts, _HOSTS_REMEMBERED, address,
                        Origin.of("http", address, 80).host)
        return host


def streams_now(flow: http.HTTPFlow, stream_bodies: bool) -> bool:
    """Whether mitmproxy may send this request before its request hook: a body that is
    streamed (stream_large_bodies) goes as soon as the headers are decided, or as soon as it
    grows past the limit, with no hook in between."""
    if flow.request.stream:
        return True
    if not stream_bodies:
        return False
    if flow.request.is_http2 or flow.request.is_http3:
        return True  # no header has to say whether a body follows (RFC 9113 §8.1.1)
    headers = flow.request.headers
    return "transfer-encoding" in headers or headers.get("content-length", "0") != "0"


def _goes_on_open_connection(flow: http.HTTPFlow) -> bool:
    """Whether mitmproxy writes this request at once, on a connection that is already open: the
    one an HTTPS tunnel opened when its CONNECT came (mitmproxy's default eager strategy). Such a
    request leaves as it is released, which would otherwise be known only from its answer, and
    the next request to the host would wait for that answer. Anything that could make mitmproxy
    open another connection instead (another address inside the tunnel, a TLS mismatch, HTTP/2
    to an HTTP/1 server) does not count: that connection's own event will say when it left. Nor
    does an HTTP/2 or HTTP/3 connection to the origin: mitmproxy queues a stream there while the
    origin's limit of concurrent streams is reached, to leave whenever one ends."""
    server, request = flow.server_conn, flow.request
    if not server.connected or not compat.reuses(server, request) or \
            (server.tls and not server.tls_established):
        return False
    if server.alpn in _MULTIPLEXED:
        return False
    return flow.client_conn.alpn != b"h2"  # HTTP/2 to HTTP/1: maybe a connection of its own
