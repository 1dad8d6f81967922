"""Captured traffic (robotsgate run --capture): a bot's connections brought to the proxy by
mitmproxy's TUN mode, the bot knowing nothing of any proxy.

Its requests are decided as any others (robotsgate.mitm.decision reads the address the bot
connected to into the facts: the host its Host or server name names must be at that address,
robotsgate.decision.names.connected_to). What is not a request:

- DNS (UDP, to any address, port 53): answered by the proxy's own resolver under the egress
  policy, with the address the proxy would dial for the name (so that the request that follows
  is at that address); a name whose addresses are all refused gets REFUSED, one that does not
  resolve NXDOMAIN, a question that is not A or AAAA NOTIMP. Each query is an audit record.
- Any other UDP (QUIC to port 443 above all: the client falls back to TCP, as browsers do when
  QUIC is blocked): closed at once, and audited (reason protocol), as robotsgate.mitm.tunnels
  refuses what it cannot decide.
"""

import contextlib
import ipaddress
import logging

from mitmproxy import dns
from mitmproxy.net.dns import classes, op_codes, response_codes, types
from mitmproxy.proxy import layer
from mitmproxy.proxy.layers import DNSLayer
from mitmproxy.proxy.mode_specs import TunMode

from robotsgate.audit.records import Event
from robotsgate.egress.policy import Refused
from robotsgate.egress.resolver import Unresolved
from robotsgate.mitm import compat
from robotsgate.mitm.answers import AuditUnwritable, peer
from robotsgate.mitm.runtime import NotConfigured, Runtime
from robotsgate.mitm.tunnels import refuse_connection
from robotsgate.outcomes import Reason
from robotsgate.protocol.hosts import canonical_host

logger = logging.getLogger(__name__)

# The ports a name's address is classified for (robots_egress_allow may name a port): the
# address a captured bot will connect to for the web.
_WEB_PORTS = (443, 80)


def captured(client: object) -> bool:
    """Whether a client connection came through TUN mode: a captured bot's."""
    return isinstance(getattr(client, "proxy_mode", None), TunMode)


class Capture:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def next_layer(self, nextlayer: layer.NextLayer) -> None:
        """A captured bot's UDP: DNS is answered (dns_request), anything else refused."""
        context = nextlayer.context
        if context.client.transport_protocol != "udp" or not captured(context.client):
            return
        compat.choose_layer(nextlayer)
        if isinstance(nextlayer.layer, DNSLayer):
            return
        refuse_connection(self.runtime, nextlayer, "quic" if context.server.address and
                          context.server.address[1] == 443 else "udp")

    async def dns_request(self, flow: dns.DNSFlow) -> None:
        if not captured(flow.client_conn) or flow.response is not None:
            return
        try:
            await self._answer(flow)
        finally:
            if flow.response is None:
                # A fault of the proxy's (the hook raised): mitmproxy would relay the question
                # to the server the bot chose. Answered here, as no other answer is.
                flow.response = flow.request.fail(response_codes.SERVFAIL)

    async def _answer(self, flow: dns.DNSFlow) -> None:
        request = flow.request
        question = request.question
        try:
            live = self.runtime.live
        except NotConfigured:
            flow.response = request.fail(response_codes.SERVFAIL)
            return
        if question is None or not request.query or request.op_code != op_codes.QUERY or \
                question.class_ != classes.IN or \
                question.type not in (types.A, types.AAAA):
            flow.response = request.fail(response_codes.NOTIMP)
            self._record(flow, "block", Reason.PROTOCOL, question, error="only A and AAAA "
                         "questions are answered")
            return
        name = canonical_host(question.name)
        answer: str | Refused | Unresolved = Unresolved("no port")
        for port in _WEB_PORTS:
            answer = await live.services.resolver.resolve(name, port)
            if isinstance(answer, str):
                break
        if isinstance(answer, Refused):
            flow.response = request.fail(response_codes.REFUSED)
            self._record(flow, "block", Reason.DESTINATION, question, error=answer.describe())
            return
        if isinstance(answer, Unresolved):
            flow.response = request.fail(response_codes.NXDOMAIN)
            self._record(flow, "dns", Reason.RESOLVED, question, error=answer.error)
            return
        address = ipaddress.ip_address(answer)
        records = []
        if question.type == types.A and address.version == 4:
            records.append(dns.ResourceRecord.A(question.name, address))
        elif question.type == types.AAAA and address.version == 6:
            records.append(dns.ResourceRecord.AAAA(question.name, address))
        # The other family gets no address: the bot connects to the one it may reach.
        flow.response = request.succeed(records)
        self._record(flow, "dns", Reason.RESOLVED, question, answered=answer)

    def _record(self, flow: dns.DNSFlow, event: Event, reason: Reason,
                question: dns.Question | None, *, error: str | None = None,
                answered: str | None = None) -> None:
        live = self.runtime.live
        kind = types.to_str(question.type) if question is not None else "?"
        name = question.name if question is not None else ""
        with contextlib.suppress(AuditUnwritable):  # answered (or refused) either way
            live.recorder.query(live.agents, live.settings.agent or None,
                                flow.client_conn.peername, event, f"dns://{name}/{kind}",
                                reason, error=error, answered=answered)
        if event == "block":
            logger.info("robotsgate: refused a DNS query for %s from %s: %s", name,
                        peer(flow.client_conn.peername), error)
