"""Web Bot Auth: a request is signed as it leaves, once every field the proxy writes is final.

After the decision has written the canonical authority and dropped what never leaves, and after
the request's politeness turn (its signature is made for the second it goes), the signer adds
Signature-Agent, Signature-Input and Signature (robotsgate.httpsig). A request whose body
streams goes as its headers are decided, and is signed then; any other one at its request hook,
the last before mitmproxy sends it. A bot that signed its request itself keeps its own
signature.
"""

from mitmproxy import http

from robotsgate.mitm import keys
from robotsgate.mitm.runtime import Runtime
from robotsgate.protocol import product_tokens


class Sign:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if flow.request.stream:
            self._sign(flow)  # it leaves now, its body following

    def request(self, flow: http.HTTPFlow) -> None:
        self._sign(flow)

    def _sign(self, flow: http.HTTPFlow) -> None:
        if flow.response is not None or keys.HOST not in flow.metadata or \
                keys.SIGNED in flow.metadata:
            return  # answered by the proxy, never decided to leave, or signed already
        signer = self.runtime.of(flow).signer
        if signer is None:
            return
        flow.metadata[keys.SIGNED] = True
        request = flow.request
        headers = request.data.headers
        if not signer.signs(lambda: _tokens(flow), headers.fields):
            return
        # The authority as it leaves: the decision wrote it canonically in both places.
        authority = request.data.authority.decode("ascii") if request.data.authority else \
            request.headers.get("host", "")
        headers.fields = (*headers.fields,
                          *signer.fields(authority.lower(), self.runtime.clocks.clock()))


def _tokens(flow: http.HTTPFlow) -> frozenset[str]:
    """The bot's product token as the decision knew it, else its User-Agent's."""
    identity = keys.private(flow).get(keys.IDENTITY)
    if identity is not None and identity.token:
        return frozenset((identity.token,))
    return product_tokens(flow.request.headers.get("user-agent", ""))
