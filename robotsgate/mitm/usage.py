"""AI usage preferences on responses: what the content may be used for, for the bot that asked.

robots.txt's Content-Usage and Content-Signal rules were read at the request (the gate refuses
there what robots.txt alone disallows for every purpose), and the origin's tdmrep.json rule for
the path looked up (robotsgate.licensing.tdmrep). The response adds its own statements: the
Content-Usage header field, TDMRep's tdm-reservation header and META (read by PageReader; TDMRep's
own order decides between its three sources), and noai. How they are joined is
robotsgate.decision.stated's, which `robotsgate check` uses too. They give:

- `X-Robotsgate-Usage` on every forwarded response: the effective preferences for this agent, in
  the vocabulary's syntax (`train-ai=n, search=y`), absent when nothing is known. The origin's
  own header of that name is always removed: only robotsgate speaks for robotsgate.
- when the bot declared purposes and every one is disallowed (or unknown, with
  robots_usage_unknown=refuse), the origin's answer is withheld: 403, audited with the origin's
  status kept. A body that mitmproxy streams (stream_large_bodies), or may stream once it has
  begun (its length unknown), is judged on its headers, and cut off (the connection is killed)
  when refused, since its headers cannot be taken back once the body flows. Any other body is
  judged once it is in, with what its page says.
"""

import logging

from mitmproxy import http

from robotsgate.audit.records import Event
from robotsgate.decision.purposes import NONE as NO_PURPOSES
from robotsgate.decision.purposes import Purposes, UsageRefusal
from robotsgate.decision.stated import MAX_PREFERENCE, Stated, no_ai_of
from robotsgate.decision.stated import answer_usage as judged_usage
from robotsgate.decision.verdict import Verdict
from robotsgate.mitm.answers import AuditUnwritable, answer_usage
from robotsgate.mitm.flow import FlowState, state
from robotsgate.mitm.pages import page_agent, page_user_agent
from robotsgate.mitm.runtime import Runtime
from robotsgate.outcomes import Reason
from robotsgate.pages.directives import agent_names
from robotsgate.protocol.usage import NO_USAGE, Usage

logger = logging.getLogger(__name__)

HEADER = "X-Robotsgate-Usage"
__all__ = ["HEADER", "MAX_PREFERENCE", "UsageCheck", "may_stream_late", "origin_answer"]


class UsageCheck:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        """Every answer is judged on its headers first. A body mitmproxy streams leaves with
        them (one it streams already, or one of unknown length that outgrows
        stream_large_bodies later): this is the last moment to refuse it or to say what it may
        be used for. What the page itself says (TDM META) is added at `response`, when the body
        is read whole."""
        response = flow.response
        if response is None or not origin_answer(flow, response):
            return
        stated = Stated.of(response.headers.fields)
        if stated.ours:
            del response.headers[HEADER]  # the origin cannot speak for robotsgate
        known = state(flow)
        known.usage_stated = stated
        usage, refusal = self._usage(flow, stated)
        known.usage_judged, known.usage_refusal = True, refusal
        _say(flow, usage)
        if refusal is None:
            return
        live = self.runtime.of(flow)
        if response.stream or may_stream_late(response, live.stream_bodies):
            self._record(flow, _verdict(known), refusal, response.status_code)
            if not live.settings.monitor:
                flow.kill()  # a refusal: the body must not reach the bot
        # Otherwise decided at `response`, once the body is in (the page's META may yet
        # supersede the header's tdm-reservation): a 403 that says why.

    def response(self, flow: http.HTTPFlow) -> None:
        response = flow.response
        if response is None or response.stream or not origin_answer(flow, response):
            return
        known = state(flow)
        tdm_meta, no_ai_meta = known.tdm_meta, known.no_ai
        if known.usage_judged and not tdm_meta and not no_ai_meta:
            # Nothing said since the headers (the usual case): their judgement stands, and
            # X-Robotsgate-Usage is set already.
            refusal = known.usage_refusal
            if refusal is None:
                return
            usage = None
        else:
            stated = known.usage_stated or _stated(response)
            usage, refusal = self._usage(flow, stated, tdm_meta=tdm_meta, no_ai_meta=no_ai_meta)
            if refusal is None:
                _say(flow, usage)
                return
        status = response.status_code
        verdict = _verdict(known)
        self._record(flow, verdict, refusal, status)
        if self.runtime.of(flow).settings.monitor:
            if usage is not None:
                _say(flow, usage)
            return
        answer_usage(flow, refusal, agent=verdict.agent, robots_url=verdict.robots_url,
                     verdict=verdict, withheld=status)

    def _usage(self, flow: http.HTTPFlow, stated: Stated, *, tdm_meta: str | None = None,
               no_ai_meta: tuple[str, ...] = ()) -> tuple[Usage, UsageRefusal | None]:
        known = state(flow)
        purposes: Purposes = known.purposes or NO_PURPOSES
        verdict = _verdict(known)
        if not (purposes or verdict.usage or verdict.tdm or stated.lines or stated.tdm or
                stated.robots_tags or tdm_meta or no_ai_meta):
            return NO_USAGE, None  # nothing known, nothing declared: most answers
        live = self.runtime.of(flow)
        no_ai_header: tuple[str, ...] = ()
        if stated.robots_tags:
            names = agent_names(page_agent(flow, live), page_user_agent(flow))
            no_ai_header = no_ai_of(stated.robots_tags, names)
        return judged_usage(
            verdict.usage, stated, purposes, tdm_file=verdict.tdm, tdm_meta=tdm_meta,
            meta_policy=known.tdm_policy, no_ai_header=no_ai_header,
            no_ai_meta=no_ai_meta, unknown_refused=live.settings.usage_unknown == "refuse")

    def _record(self, flow: http.HTTPFlow, verdict: Verdict, refusal: UsageRefusal,
                origin_status: int) -> None:
        """Once per request: refused at the request (monitor mode forwards it), or on the
        answer's headers, or on its body."""
        recorder = self.runtime.of(flow).recorder
        known = state(flow)
        if verdict.usage_refusal is not None or known.usage_recorded:
            return
        known.usage_recorded = True
        # Never "block": the request did reach the origin; its answer is what is withheld.
        event: Event = "would-block" if self.runtime.of(flow).settings.monitor else "withheld"
        # A TDMRep statement carries its tdm-policy: the rights holder's terms.
        policy = refusal.statement.policy if refusal.statement is not None else None
        try:
            recorder.flow(flow, event, Reason.USAGE_PREFERENCE, 403, verdict, refusal=refusal,
                          origin_status=origin_status, tdm_policy=policy)
        except AuditUnwritable:
            # robots_audit_failure=closed: withheld all the same, since unrecorded is worse
            # than refused.
            logger.error("robotsgate: a usage refusal of %s could not be recorded",
                         flow.request.pretty_url)


def _stated(response: http.Response) -> Stated:
    """What the answer's headers state of its use (robotsgate.decision.stated); an
    X-Robotsgate-Usage of the origin's own removed: only robotsgate speaks for robotsgate."""
    stated = Stated.of(response.headers.fields)
    if stated.ours:
        del response.headers[HEADER]
    return stated


def origin_answer(flow: http.HTTPFlow, response: http.Response) -> bool:
    """Whether the response is the origin's answer to a decided request."""
    known = state(flow)
    return not (known.answered or flow.error is not None or
                response.status_code == 101 or known.verdict is None)


def may_stream_late(response: http.Response, stream_bodies: bool) -> bool:
    """Whether mitmproxy may switch this body to streaming once it has begun (a body of unknown
    length, with stream_large_bodies set): its headers would then leave before `response`."""
    return stream_bodies and "content-length" not in response.headers


def _say(flow: http.HTTPFlow, usage: Usage) -> None:
    """X-Robotsgate-Usage, except on a 304 (its headers would replace those of the copy the bot
    keeps, which said it for the whole body) and on answers without a body to judge (HEAD,
    204): what the page itself says is not known there."""
    response = flow.response
    assert response is not None
    if usage and flow.request.method != "HEAD" and response.status_code not in (204, 304):
        response.headers[HEADER] = usage.render()


def _verdict(known: FlowState) -> Verdict:
    """The verdict of a flow that left (origin_answer said so: invariant 4 of mitm/flow.py)."""
    verdict = known.verdict
    assert verdict is not None
    return verdict
