"""The request decision: every request is decided as soon as its headers are in.

That is before mitmproxy opens a connection for it, and before any of its body is read, let
alone streamed (stream_large_bodies streams a body as soon as requestheaders returns). The
flow is read into `Facts`, the exchange policy (robotsgate.decision) decides, and its plan is
applied: the proxy's own answer, or the request rewritten as it leaves (the origin's canonical
authority, the fields never forwarded removed), its politeness slot noted for the turn it takes
as it leaves (robotsgate.mitm.turns). Whatever goes
wrong on the way fails closed: 503, never forwarded.
"""

import dataclasses
import logging
import secrets
from collections.abc import Awaitable

from mitmproxy import ctx, http
from mitmproxy.proxy.mode_specs import TunMode

from robotsgate import outcomes
from robotsgate.decision.names import captured
from robotsgate.decision.plan import Answer, Forward, Record
from robotsgate.decision.request import Facts
from robotsgate.mitm.answers import (
    AuditUnwritable,
    Recorder,
    answer,
    explain_proxy_auth,
    fail_closed,
    retry_after,
)
from robotsgate.mitm.flow import forget, state
from robotsgate.mitm.headers import drop_upgrade, rebuilt, unfold
from robotsgate.mitm.runtime import Runtime
from robotsgate.outcomes import Reason
from robotsgate.protocol.hosts import canonical_host
from robotsgate.state.fleet import SharedStateUnavailable

logger = logging.getLogger(__name__)


class Decide:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def requestheaders(self, flow: http.HTTPFlow) -> Awaitable[None]:
        if flow.is_replay == "request":
            # Sent again: decided again, as it is now, without what the parts wrote on it.
            self.runtime.resends.take_off(flow)
            forget(flow)
        return self._decide_once(flow)  # its own coroutine, awaited by mitmproxy

    def request(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        # Every flow passes requestheaders first; this only catches one that did not (a flow
        # replayed by another addon, say), so that nothing leaves undecided. A plain function:
        # the decided (nearly all) cost no coroutine.
        if state(flow).decided == _THIS_PROCESS:
            return None
        return self._decide_once(flow)

    async def _decide_once(self, flow: http.HTTPFlow) -> None:
        # A flow read back from a file says it was decided, by another process: not here.
        known = state(flow)
        if known.decided != _THIS_PROCESS and flow.response is None and \
                flow.error is None and flow.live:
            known.decided = _THIS_PROCESS
            try:
                await self._decide(flow)
            except AuditUnwritable:
                # robots_audit_failure=closed: nothing passes (or is blocked) unrecorded.
                answer(flow, Reason.AUDIT_UNAVAILABLE, outcomes.text(Reason.AUDIT_UNAVAILABLE),
                       retry_after(60))
            except SharedStateUnavailable as exc:
                # robots_redis_fallback=closed; the outage itself is logged once, by the fleet.
                self._fail(flow, Reason.REDIS_UNAVAILABLE, str(exc))
            except Exception as exc:
                logger.exception("robotsgate: internal error deciding %s",
                                 flow.request.pretty_url)
                self._fail(flow, Reason.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        if flow.response is not None:
            # The proxy answers: the body is read and dropped, never streamed to the origin.
            flow.request.stream = False
            if flow.response.status_code == 407:
                explain_proxy_auth(flow, getattr(ctx.options, "proxyauth", ""))  # bare page

    def _fail(self, flow: http.HTTPFlow, reason: Reason, error: str | None = None) -> None:
        fail_closed(flow, self.runtime.recorder_of(flow), reason, error)

    async def _decide(self, flow: http.HTTPFlow) -> None:
        runtime = self.runtime
        live = runtime.of(flow)
        recorder = live.recorder
        facts = facts_of(flow)
        plan = await live.exchange.decide(facts)
        who = plan.who
        known = state(flow)
        known.identity, known.user_agent, known.identified = who.identity, who.user_agent, True
        if who.purposes:
            known.purposes = who.purposes
        if facts.connected is not None and isinstance(plan, Answer):
            # Captured: its record names the host it was decided for, not the address.
            flow.request.data.host = canonical_host(facts.host)
        _write(recorder, flow, plan.records)
        if isinstance(plan, Answer):
            answer(flow, plan.reason, plan.text, dict(plan.headers), plan.verdict)
            return
        _apply(flow, plan)
        verdict = plan.verdict
        known.host = plan.origin.host
        known.verdict = verdict  # for the response (robotsgate.mitm.usage, ...)
        if not plan.refused:
            runtime.metrics.forwarded(verdict.reason, verdict.wait)
        else:
            known.refused = True  # nothing is paid for it (robotsgate.mitm.payments)
        known.delay_ms = round(verdict.wait * 1000)
        if verdict.wait > 0 or verdict.interval > 0:
            # Held until its slot and its turn, as it leaves: robotsgate.mitm.turns.
            known.paced = (runtime.clocks.monotonic() + verdict.wait, verdict.interval)


# What marks a flow decided by this process (a flow read back from a file names another).
_THIS_PROCESS = secrets.token_hex(8)
# The versions whose requests carry no Host line and no framing headers: Request.is_http2 or
# is_http3, in one test of the request's own bytes (each property is a call).
_MULTIPLEXED = frozenset((b"HTTP/2.0", b"HTTP/3"))


def facts_of(flow: http.HTTPFlow) -> Facts:
    """What the exchange policy decides on, read from the flow."""
    data = flow.request.data
    auth = flow.metadata.get("proxyauth")
    client = flow.client_conn
    peer = client.peername
    scheme = data.scheme.decode("utf-8", "surrogateescape")  # as Request.scheme decodes it
    facts = Facts(
        scheme, data.host, data.port, data.method, data.path, data.authority,
        data.headers.fields, http2=data.http_version in _MULTIPLEXED,
        # The server name the client sent when it opened the TLS connection this request came
        # in on, inside its tunnel (an https request; not the name of a TLS connection to the
        # proxy itself, which carries http requests).
        server_name=(client.sni or None) if client.tls and scheme == "https" else None,
        client=peer[0] if peer else None,
        user=auth[0] if isinstance(auth, tuple) and auth else None)
    if isinstance(client.proxy_mode, TunMode):
        # A captured bot's (robotsgate run --capture): where it connected, and the host it
        # named there. Where it connected is its connection's own address (the destination
        # TUN mode took it from), not the request's host: a request sent again (a copy,
        # robotsgate.mitm.again) keeps the connection's, but its host is the name decided.
        if client.sockname:
            facts = dataclasses.replace(facts, host=str(client.sockname[0]))
        return captured(facts)
    return facts


def _write(recorder: Recorder, flow: http.HTTPFlow, records: tuple[Record, ...]) -> None:
    for record in records:
        recorder.flow(flow, record.event, record.reason, record.status, record.verdict,
                      page=record.page, error=record.error)


def _apply(flow: http.HTTPFlow, plan: Forward) -> None:
    """The request as it leaves: what names and frames it is written from the plan."""
    data = flow.request.data
    origin = plan.origin
    authority = origin.authority.encode("ascii")
    data.host = origin.host
    http2 = data.http_version in _MULTIPLEXED
    if data.authority or http2:
        # An absolute target (inside a tunnel, or to an upstream proxy) or :authority names the
        # origin once more, canonically; an HTTP/2 request without one gets it.
        data.authority = authority
    headers = data.headers
    if plan.unfold:
        unfold(headers)  # obs-fold: one reading for every server (RFC 9112 §5.2)
    if plan.drop_upgrade:
        drop_upgrade(headers)
    if not plan.host_written or plan.drop or plan.drop_range or plan.connection is not None:
        headers.fields = rebuilt(headers.fields, host=None if http2 else authority,
                                 drop=plan.drop, drop_range=plan.drop_range,
                                 connection=plan.connection)
    token = plan.verdict.license_token
    if token is not None:
        # The licence the site's licence server issued, in place of whatever the bot sent as
        # its Authorization: the proxy's credential, for this origin only.
        headers.fields = (*(field for field in headers.fields
                            if field[0].lower() != b"authorization"),
                          (b"Authorization", token.header.encode("ascii")))
