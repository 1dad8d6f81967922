"""Web Bot Auth: a request is signed as it leaves, once every field the proxy writes is final;
and sent once more, signed as asked, when its origin answers that it wants a signature.

After the decision has written the canonical authority and dropped what never leaves, and after
the request's politeness turn (its signature is made for the second it goes), the signer adds
Signature-Agent, Signature-Input and Signature (robotsgate.signing.messages). A request whose body
may stream goes as its headers are decided, and is signed then; any other one at its request
hook, the last before mitmproxy sends it. Only https requests are signed: a signature covers
the authority, not the scheme, and one sent in the clear could be replayed over https while it
is good.

A bot that signed its request itself keeps its own signature; the audit log says so (event
signature, reason bot-signed). A bot configured to sign only when asked (robots_signing_asked)
leaves unsigned; when an origin answers 401 or 403 with Accept-Signature, the request is sent
once more (mitmproxy's own replay: decided, paced, dialled and audited afresh, like any other),
signed as the origin asked, and the bot gets that answer. The same for a signed request whose
origin asks for more than it carried (a nonce, @method, ...). Never twice, never a request the
bot signed, nor one whose body streamed past the proxy.
"""

import logging
from collections.abc import Awaitable

from mitmproxy import http

from robotsgate import outcomes
from robotsgate.mitm.again import Added
from robotsgate.mitm.answers import AuditUnwritable, answer, fail_closed, retry_after
from robotsgate.mitm.flow import state
from robotsgate.mitm.runtime import Runtime
from robotsgate.mitm.turns import streams_now
from robotsgate.outcomes import Reason
from robotsgate.signing import messages
from robotsgate.signing.messages import Message, Signer, Wanted

logger = logging.getLogger(__name__)


# What the signer writes: taken off a request sent again, which is signed afresh (or not).
ADDED = Added(frozenset((b"signature", b"signature-input", b"signature-agent")),
              lambda flow: state(flow).signed is True)


class Sign:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.resends = runtime.resends  # a copy sent because its origin asked for a signature
        self.resends.declare(ADDED)      # has what it asked for as its note (Wanted)

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        live = self.runtime.of(flow) if state(flow).host is not None else None
        if live is not None and live.signer is not None and \
                streams_now(flow, live.stream_bodies):
            self._sign(flow)  # its headers may go before its request hook, its body following

    def request(self, flow: http.HTTPFlow) -> None:
        self._sign(flow)

    def _sign(self, flow: http.HTTPFlow) -> None:
        known = state(flow)
        if flow.response is not None or known.host is None or known.signed is not None:
            return  # answered by the proxy, never decided to leave, or signed already
        signer = self.runtime.of(flow).signer
        if signer is None:
            return
        known.signed = False
        try:
            self._signed(flow, signer)
        except AuditUnwritable:
            answer(flow, Reason.AUDIT_UNAVAILABLE, outcomes.text(Reason.AUDIT_UNAVAILABLE),
                   retry_after(60))
        except Exception as exc:
            logger.exception("robotsgate: internal error signing %s", flow.request.pretty_url)
            fail_closed(flow, self.runtime.recorder_of(flow), Reason.INTERNAL_ERROR,
                        f"{type(exc).__name__}: {exc}")

    def _signed(self, flow: http.HTTPFlow, signer: Signer) -> None:
        request = flow.request
        if request.scheme != "https":
            return  # a signature sent in the clear could be replayed over https for its life
        mode = signer.mode(lambda: _tokens(flow))
        if mode is None:
            return
        headers = request.data.headers
        if messages.bot_signed(headers.fields):
            self.runtime.of(flow).recorder.flow(
                flow, "signature", Reason.BOT_SIGNED, None,
                state(flow).verdict,
                signature=request.headers.get("signature-input"))
            return
        wanted = self.resends.note(flow, Wanted)
        now = self.runtime.clocks.clock()
        if wanted is not None:
            fields = signer.answer(wanted, _message(flow), now)
        elif mode == "always":
            fields = signer.fields(_authority(flow), now)
        else:
            return  # signed only when an origin asks
        if fields is None:
            return
        state(flow).signed = True  # the fields are the proxy's (a copy has them taken off)
        headers.fields = (*headers.fields, *fields)

    def response(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        wanted = self._asked(flow)
        return None if wanted is None else self._send_again(flow, wanted)

    def _asked(self, flow: http.HTTPFlow) -> Wanted | None:
        """What the origin asked to be signed, when its answer is one to send the request
        again for: a 401 or 403 with Accept-Signature, to a request the proxy signs for (or
        signed with less than was asked), that the resend policy allows (robotsgate.mitm.again:
        sent once, held whole both ways)."""
        response = flow.response
        if response is None or response.status_code not in (401, 403) or \
                state(flow).host is None or \
                "accept-signature" not in response.headers or not self.resends.may_send(flow):
            return None
        signer = self.runtime.of(flow).signer
        request = flow.request
        if signer is None or request.scheme != "https":
            return None
        signed = state(flow).signed is True
        if not signed and (messages.bot_signed(request.data.headers.fields) or
                           signer.mode(lambda: _tokens(flow)) is None):
            return None  # the bot's own signature (its business), or a bot that never signs
        wanted = messages.wanted(response.headers["accept-signature"])
        if wanted is None or (signed and wanted.met_by_default()) or \
                signer.answer(wanted, _message(flow), 0.0) is None:
            return None  # unreadable, carried already, or not a request's to give
        return wanted

    async def _send_again(self, flow: http.HTTPFlow, wanted: Wanted) -> None:
        first = flow.response
        assert first is not None
        again, trouble = await self.resends.send(flow, wanted)
        self.runtime.of(flow).recorder.flow(
            flow, "signature", Reason.SIGNATURE_ASKED, None,
            state(flow).verdict, origin_status=first.status_code,
            signature=again.request.headers.get("signature-input"),
            error=None if trouble is None else
            f"sent again, it got no answer ({trouble}): the bot got the first")


def _authority(flow: http.HTTPFlow) -> str:
    # The authority as it leaves: the decision wrote it canonically in both places.
    data = flow.request.data
    return (data.authority.decode("ascii") if data.authority else
            flow.request.headers.get("host", "")).lower()


def _message(flow: http.HTTPFlow) -> Message:
    request = flow.request
    return Message(request.method, request.scheme, _authority(flow), request.path,
                   request.data.headers.fields)


def _tokens(flow: http.HTTPFlow) -> tuple[str, ...]:
    """The bot's product token as robots_agents, a proxy-auth user or robots_agent named it:
    a User-Agent, which any client may write, names no bot to sign for."""
    identity = state(flow).identity
    return (identity.token,) if identity is not None and identity.token and \
        identity.source != "user-agent" else ()
