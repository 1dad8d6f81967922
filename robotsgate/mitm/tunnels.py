"""Connections and upgrades: whatever mitmproxy chose to speak on a connection, either each
request on it is decided, or the connection is refused and audited.

HTTP (1, 2, 3, WebSocket) and TLS layers lead to decided requests or to another choice of layer.
The others carry bytes robotsgate cannot decide: raw TCP (mitmproxy falls back to it for bytes
that do not look like HTTP at first sight, such as a request line written in two parts or after
an empty line), UDP, DNS, raw QUIC. Raw TCP in a tunnel is read as HTTP instead (mitmproxy's own
choice with rawtcp off), so every request in it is decided and anything else gets mitmproxy's
400. The rest is refused; a connection that ignore_hosts or allow_hosts pass through unseen is
let through only inside a CONNECT, decided on its host (http_connect). An origin switching
protocols to anything but WebSocket is cut before the 101 reaches the client.
"""

import contextlib
import logging

from mitmproxy import ctx, http
from mitmproxy.proxy import layer
from mitmproxy.proxy.layers import DNSLayer, HttpLayer, RawQuicLayer, TCPLayer, UDPLayer
from mitmproxy.proxy.layers.http import HTTPMode
from mitmproxy.proxy.mode_specs import TunMode

from robotsgate import outcomes
from robotsgate.audit.records import Event
from robotsgate.egress.policy import Refused
from robotsgate.mitm import compat
from robotsgate.mitm.answers import (
    AuditUnwritable,
    Recorder,
    answer,
    explain_proxy_auth,
    peer,
    retry_after,
)
from robotsgate.mitm.flow import state
from robotsgate.mitm.runtime import NotConfigured, Runtime
from robotsgate.origin import Origin
from robotsgate.outcomes import Reason
from robotsgate.state.fleet import SharedStateUnavailable

logger = logging.getLogger(__name__)

# Layers that carry bytes robotsgate cannot decide request by request.
_UNDECIDABLE = (TCPLayer, UDPLayer, DNSLayer, RawQuicLayer)


class Tunnels:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def http_connect(self, flow: http.HTTPFlow) -> None:
        """Every tunnel goes to one canonical host, at an address bots may reach; and with
        ignore_hosts/allow_hosts set, every tunnel is decided now, on its host alone.

        The CONNECT target is written in its canonical form (mitmproxy opens the tunnel's
        connection to it, and names the requests inside after it) and dialled only at an
        address the egress policy allows. mitmproxy decides to pass a connection through unseen
        by its CONNECT target, but also by the address it connects to and by the TLS server
        name the client sends later -- none of which is known yet. So when any host may go
        unseen, every CONNECT is decided on its host; without those options every request
        inside a tunnel is decided on its own.
        """
        if flow.response is not None:
            explain_proxy_auth(flow, getattr(ctx.options, "proxyauth", ""))  # mitmproxy's 407
            return
        req = flow.request
        try:
            live = self.runtime.of(flow)
            services, recorder = live.services, live.recorder
            identity = state(flow).identity = live.identify(flow)
            scheme = "http" if req.port == 80 else "https"
            origin = Origin.of(scheme, req.host, req.port)
            if "%" in origin.host:
                self._refuse(flow, recorder, Reason.DESTINATION, where=origin.host,
                             why="an IPv6 zone id names an interface of the proxy's machine")
                return
            dial = await services.resolver.dial(origin.host, origin.port)
            if isinstance(dial, Refused):
                self._refuse(flow, recorder, Reason.DESTINATION, where=dial.where,
                             why=dial.why, error=dial.describe())
                return
            req.data.host = origin.host  # the tunnel's connection, and its requests' host
            opts = ctx.options
            if not (opts.ignore_hosts or opts.allow_hosts):
                return
            verdict = await services.gate.check_host(origin, req.headers.get("user-agent"),
                                                    identity.token)
            if verdict.action == "forward":
                if compat.not_intercepted(req.host, req.port):
                    recorder.flow(flow, "tunnel", Reason.NOT_INTERCEPTED, None, verdict)
                return
            status = verdict.status or 503
            if live.settings.monitor:
                recorder.flow(flow, "would-block", verdict.reason, status, verdict)
                return
            recorder.flow(flow, "block", verdict.reason, status, verdict)
            answer(flow, verdict.reason, outcomes.text(
                verdict.reason, tunnel=True, host=req.host, robots_url=verdict.robots_url,
                error=verdict.entry.trouble if verdict.entry else None),
                   retry_after(verdict.retry_after), verdict)
        except Exception as exc:
            reason = Reason.REDIS_UNAVAILABLE if isinstance(exc, SharedStateUnavailable) \
                else Reason.INTERNAL_ERROR
            if reason is Reason.INTERNAL_ERROR:
                logger.exception("robotsgate: internal error deciding CONNECT %s", req.host)
            outcome = outcomes.OUTCOMES[reason]
            answer(flow, reason, outcomes.text(reason, tunnel=True),
                   retry_after(outcome.retry_after))
            error = str(exc) if reason is Reason.REDIS_UNAVAILABLE \
                else f"{type(exc).__name__}: {exc}"
            failing = self.runtime.recorder_of(flow)
            if failing is not None:
                with contextlib.suppress(AuditUnwritable):  # already failing closed
                    failing.flow(flow, "block", reason, outcome.status, None, error=error)

    def _refuse(self, flow: http.HTTPFlow, recorder: Recorder, reason: Reason, *,
                error: str | None = None, **fields: str) -> None:
        """A CONNECT refused whatever the mode: nothing robotsgate decides could go there."""
        status = outcomes.OUTCOMES[reason].status
        with contextlib.suppress(AuditUnwritable):  # refused either way
            recorder.flow(flow, "block", reason, status, None, error=error)
        answer(flow, reason, outcomes.text(reason, tunnel=True, **fields))

    def next_layer(self, nextlayer: layer.NextLayer) -> None:
        compat.choose_layer(nextlayer)
        chosen = nextlayer.layer
        if chosen is None:
            return
        context = nextlayer.context
        nested = _undecidable_below(chosen)
        if nested is not None:  # a stack chosen whole (reverse:tls://, reverse:tcp:// + TLS)
            self._refuse_connection(nextlayer, nested)
            return
        if not isinstance(chosen, _UNDECIDABLE):
            return
        if isinstance(chosen, DNSLayer) and isinstance(context.client.proxy_mode, TunMode):
            return  # a captured bot's DNS: answered by robotsgate.mitm.capture
        address = context.server.address
        if compat.in_proxy_tunnel(context) and address is not None and \
                compat.ignored(nextlayer) and compat.not_intercepted(address[0], address[1]):
            return  # decided at the CONNECT, on its host, and recorded there (http_connect)
        if isinstance(chosen, TCPLayer) and address is not None and \
                context.client.transport_protocol == "tcp":
            # Raw TCP, or a passthrough mitmproxy chose by something else than the CONNECT
            # target (a Host header, a server name, the address it resolved): read as HTTP.
            nextlayer.layer = HttpLayer(context, HTTPMode.transparent)
            return
        self._refuse_connection(nextlayer, chosen)

    def _refuse_connection(self, nextlayer: layer.NextLayer, chosen: layer.Layer) -> None:
        kind = {TCPLayer: "tcp", UDPLayer: "udp", DNSLayer: "dns"}.get(type(chosen), "quic")
        refuse_connection(self.runtime, nextlayer, kind)

    def response(self, flow: http.HTTPFlow) -> None:
        """An origin switching protocols to anything but WebSocket (an upgrade it was never
        offered, or one mitmproxy will not read): mitmproxy would relay the connection as a
        raw pipe from then on. The connection is closed instead, before the 101 reaches the
        client."""
        if flow.response is None or flow.response.status_code != 101 or \
                flow.websocket is not None or state(flow).answered:
            return
        live = self.runtime.of(flow)
        recorder = live.recorder
        if live.settings.monitor:
            recorder.flow(flow, "would-block", Reason.UPGRADE, 101, None)
            return
        # Not "block": the request itself was decided and did reach the origin.
        recorder.flow(flow, "cut", Reason.UPGRADE, 502, None)
        flow.kill()


def refuse_connection(runtime: Runtime, nextlayer: layer.NextLayer, kind: str) -> None:
    """A connection that carries nothing robotsgate can decide (`kind`: tcp, udp, dns, quic):
    closed as it starts, and audited (in monitor mode, audited and let be)."""
    context = nextlayer.context
    address = context.server.address
    target = peer(address) if address else "unknown"
    try:
        live = runtime.live
    except NotConfigured:
        nextlayer.layer = compat.closing(context)  # nothing to record it with: refused all
        return
    monitor = live.settings.monitor
    event: Event = "would-block" if monitor else "block"
    with contextlib.suppress(AuditUnwritable):  # refused either way
        live.recorder.connection(live.agents, live.settings.agent or None,
                                 context.client.peername, event, f"{kind}://{target}",
                                 kind.upper())
    if monitor:
        return
    logger.info("robotsgate: refused a %s connection to %s from %s: it carries nothing "
                "robotsgate can decide", kind, target, peer(context.client.peername))
    nextlayer.layer = compat.closing(context)


def _undecidable_below(chosen: layer.Layer) -> layer.Layer | None:
    """An undecidable layer under the chosen one, when mitmproxy chose a whole stack at once."""
    for below in compat.layers_below(chosen):
        if isinstance(below, _UNDECIDABLE):
            return below
    return None
