"""The request decision: every request is decided as soon as its headers are in.

That is before mitmproxy opens a connection for it, and before any of its body is read, let
alone streamed (stream_large_bodies streams a body as soon as requestheaders returns). In order:
the request must be one robotsgate can decide (robotsgate.mitm.framing), name its real target,
come from an identifiable bot when that is required, not follow a link a page said not to
follow, and be allowed by the target's robots.txt (robotsgate.gate), which also says how long
to hold it. Whatever goes wrong on the way fails closed: 503, never forwarded.
"""

import logging
from collections.abc import Awaitable
from dataclasses import replace

from mitmproxy import http
from mitmproxy.net.http.url import hostport

from robotsgate import outcomes
from robotsgate.gate import Request, Verdict
from robotsgate.identity import Identity, is_product
from robotsgate.mitm import keys
from robotsgate.mitm.answers import (
    AuditUnwritable,
    Recorder,
    answer,
    answer_usage,
    fail_closed,
    fetch_error,
    retry_after,
)
from robotsgate.mitm.framing import malformed, misdirected
from robotsgate.mitm.headers import RequestHeaders, unfold
from robotsgate.mitm.runtime import Runtime
from robotsgate.origin import Origin
from robotsgate.outcomes import Reason
from robotsgate.state.fleet import SharedStateUnavailable

logger = logging.getLogger(__name__)
_ORIGINS_REMEMBERED = 4096


class Decide:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._origins: dict[tuple[str, str, int], Origin] = {}

    async def requestheaders(self, flow: http.HTTPFlow) -> None:
        await self._decide_once(flow)
        if flow.response is not None:
            # The proxy answers: the body is read and dropped, never streamed to the origin.
            flow.request.stream = False

    def request(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        # Every flow passes requestheaders first; this only catches one that did not (a flow
        # replayed by another addon, say), so that nothing leaves undecided. A plain function:
        # the decided (nearly all) cost no coroutine.
        if flow.metadata.get(keys.DECIDED):
            return None
        return self._decide_once(flow)

    async def _decide_once(self, flow: http.HTTPFlow) -> None:
        if flow.metadata.get(keys.DECIDED) or flow.response is not None or \
                flow.error is not None or not flow.live:
            return
        flow.metadata[keys.DECIDED] = True
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
            logger.exception("robotsgate: internal error deciding %s", flow.request.pretty_url)
            self._fail(flow, Reason.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")

    def _fail(self, flow: http.HTTPFlow, reason: Reason, error: str | None = None) -> None:
        fail_closed(flow, self.runtime.recorder, reason, error)

    async def _decide(self, flow: http.HTTPFlow) -> None:
        runtime, settings, recorder = self.runtime, self.runtime.settings, self.runtime.recorder
        assert recorder is not None
        req = flow.request
        seen = RequestHeaders.of(req.headers.fields)
        identity = runtime.identify(flow)
        if seen.folded:
            unfold(req.headers)  # obs-fold: one reading for every server (RFC 9112 §5.2)
        refusal = malformed(req, seen, lenient=runtime.lenient)
        if refusal is not None:
            status = outcomes.OUTCOMES[refusal.reason].status
            if settings.monitor:
                recorder.flow(flow, "would-block", refusal.reason, status, None)
            else:
                recorder.flow(flow, "block", refusal.reason, status, None)
                answer(flow, refusal.reason, refusal.text)
                return
        refusal = misdirected(req, seen.host)
        if refusal is not None:
            recorder.flow(flow, "block", refusal.reason, 400, None)
            answer(flow, refusal.reason, refusal.text)
            return
        if self._refuse_unidentified(flow, recorder, identity, seen.user_agent) or \
                self._refuse_nofollow(flow, recorder, identity, seen.user_agent, seen.referer):
            return
        if not (seen.host and seen.host.strip()) and not (req.is_http2 or req.is_http3):
            # No Host (or an empty one): the origin would serve its default site, not the one
            # decided. The request goes out naming its target.
            req.headers["Host"] = hostport(req.scheme, req.host, req.port)
        origin = self._origin(req.scheme, req.host, req.port)
        flow.metadata[keys.HOST] = origin.host
        flow.metadata[keys.USER_AGENT] = seen.user_agent
        assert runtime.services is not None
        gate = runtime.services.gate
        purposes = runtime.purposes_of(flow, identity, seen.user_agent)
        if (purposes or settings.strip) and ("range" in req.headers or "if-range" in req.headers):
            # Strip mode and a page's TDM reservation need the whole page: a bot asking for it
            # in pieces (Range) would get each piece unread, and could join them.
            req.headers.pop("range", None)
            req.headers.pop("if-range", None)
        verdict = await gate.check(Request(origin, req.path, seen.user_agent, identity.token,
                                           purposes))
        if verdict.action == "forward":
            await self._forward(flow, verdict)
            return
        status = verdict.status or 503
        if settings.monitor:
            recorder.flow(flow, "would-block", verdict.reason, status, verdict)
            # Forwarded all the same, so it takes its turn in the host's schedule like any other.
            wait, interval = await gate.pace_regardless(origin, verdict)
            await self._forward(flow, replace(verdict, action="forward", wait=wait,
                                              interval=interval), record=False)
            return
        recorder.flow(flow, "block", verdict.reason, status, verdict)
        if verdict.usage_refusal is not None:
            answer_usage(flow, verdict.usage_refusal, agent=verdict.agent,
                         robots_url=verdict.robots_url, verdict=verdict)
            return
        if verdict.action == "block":
            _answer_disallowed(flow, verdict)
            return
        answer(flow, verdict.reason, outcomes.text(
            verdict.reason, robots_url=verdict.robots_url, retry_after=verdict.retry_after,
            asked=f"{verdict.asked_delay or 0:g}",
            error=fetch_error(verdict.entry) if verdict.entry else None),
            retry_after(verdict.retry_after or 60), verdict)

    def _refuse_unidentified(self, flow: http.HTTPFlow, recorder: Recorder, identity: Identity,
                             user_agent: str | None) -> bool:
        """robots_require_agent: 407 when nothing says which bot this is."""
        if not self.runtime.settings.require_agent or identity.token is not None or \
                is_product(user_agent or ""):
            return False
        recorder.flow(flow, "block", Reason.UNIDENTIFIED, 407, None)
        answer(flow, Reason.UNIDENTIFIED, outcomes.text(Reason.UNIDENTIFIED),
               {"Proxy-Authenticate": 'Basic realm="robotsgate"'})
        return True

    def _refuse_nofollow(self, flow: http.HTTPFlow, recorder: Recorder, identity: Identity,
                         user_agent: str | None, referer: str | None) -> bool:
        """403 for a link that the page named in the Referer says not to follow."""
        pages = self.runtime.pages
        if pages is None or not referer:
            return False  # no Referer, no page to have been told about: the common case
        found = pages.nofollow(url=flow.request.url, referer=referer, agent=identity.token,
                               user_agent=user_agent)
        if found is None:
            return False
        if self.runtime.settings.monitor:
            recorder.flow(flow, "would-block", Reason.NOFOLLOW, 403, None, page=found.page)
            return False
        recorder.flow(flow, "block", Reason.NOFOLLOW, 403, None, page=found.page)
        where = ("is nofollow for this agent (META robots or X-Robots-Tag)" if found.why == "page"
                 else "has this link in a nofollow section")
        answer(flow, Reason.NOFOLLOW, outcomes.text(Reason.NOFOLLOW, page=found.page,
                                                    where=where),
               {"X-Robotsgate-Page": found.page})
        return True

    def _origin(self, scheme: str, host: str, port: int) -> Origin:
        """Origin.of, remembered: a bot asks the same few origins again and again."""
        where = (scheme, host, port)
        origin = self._origins.get(where)
        if origin is None:
            if len(self._origins) >= _ORIGINS_REMEMBERED:
                self._origins.clear()  # endless distinct origins: start over
            origin = self._origins[where] = Origin.of(scheme, host, port)
        return origin

    async def _forward(self, flow: http.HTTPFlow, verdict: Verdict, *, record: bool = True
                       ) -> None:
        runtime = self.runtime
        flow.metadata[keys.VERDICT] = verdict  # for the response (robotsgate.mitm.usage)
        if record:
            runtime.metrics.forwarded(verdict.reason, verdict.wait)
        if record and (verdict.wait > 0 or verdict.asked_delay is not None):
            assert runtime.recorder is not None
            runtime.recorder.flow(flow, "delay", verdict.reason, None, verdict)
        if verdict.wait > 0:
            await runtime.clocks.sleep(verdict.wait)
        flow.metadata[keys.DELAY_MS] = round(verdict.wait * 1000)
        if verdict.interval > 0:
            flow.metadata[keys.PACED] = verdict.interval  # its turn: robotsgate.mitm.turns


def _answer_disallowed(flow: http.HTTPFlow, verdict: Verdict) -> None:
    decision = verdict.decision
    assert decision is not None and decision.rule is not None
    rule = decision.rule
    answer(flow, Reason.DISALLOWED, outcomes.text(
        Reason.DISALLOWED, explain=decision.explain(), robots_url=verdict.robots_url,
        agent=verdict.agent),
        {"X-Robotsgate-Rule": rule.text, "X-Robotsgate-Line": str(rule.line)}, verdict)
