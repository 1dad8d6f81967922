"""Web Bot Auth: a request is signed as it leaves, once every field the proxy writes is final.

After the decision has written the canonical authority and dropped what never leaves, and after
the request's politeness turn (its signature is made for the second it goes), the signer adds
Signature-Agent, Signature-Input and Signature (robotsgate.httpsig). A request whose body
may stream goes as its headers are decided, and is signed then; any other one at its request
hook, the last before mitmproxy sends it. A bot that signed its request itself keeps its own
signature. Only https requests are signed: a signature covers the authority, not the scheme,
and one sent in the clear could be replayed over https while it is good.
"""

from mitmproxy import http

from robotsgate.mitm import keys
from robotsgate.mitm.runtime import Runtime
from robotsgate.mitm.turns import streams_now


class Sign:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        live = self.runtime.of(flow) if keys.HOST in flow.metadata else None
        if live is not None and live.signer is not None and \
                streams_now(flow, live.stream_bodies):
            self._sign(flow)  # its headers may go before its request hook, its body following

    def request(self, flow: http.HTTPFlow) -> None:
        self._sign(flow)

    def _sign(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None or keys.HOST not in flow.metadata or \
                keys.SIGNED in flow.metadata:
            return  # answered by the proxy, never decided to leave, or signed already
        signer = self.runtime.of(flow).signer
        if signer is None:
            return
        flow.metadata[keys.SIGNED] = False
        request = flow.request
        if request.scheme != "https":
            return  # a signature sent in the clear could be replayed over https for its life
        headers = request.data.headers
        if not signer.signs(lambda: _tokens(flow), headers.fields):
            return
        flow.metadata[keys.SIGNED] = True  # the fields are the proxy's (a replay drops them)
        # The authority as it leaves: the decision wrote it canonically in both places.
        authority = request.data.authority.decode("ascii") if request.data.authority else \
            request.headers.get("host", "")
        headers.fields = (*headers.fields,
                          *signer.fields(authority.lower(), self.runtime.clocks.clock()))


def _tokens(flow: http.HTTPFlow) -> tuple[str, ...]:
    """The bot's product token as robots_agents, a proxy-auth user or robots_agent named it:
    a User-Agent, which any client may write, names no bot to sign for."""
    identity = keys.private(flow).get(keys.IDENTITY)
    return (identity.token,) if identity is not None and identity.token and \
        identity.source != "user-agent" else ()
