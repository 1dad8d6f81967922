"""AI usage preferences on responses: what the content may be used for, for the bot that asked.

robots.txt's Content-Usage and Content-Signal rules were read at the request (the gate refuses
there what robots.txt alone disallows for every purpose). The response adds its own statements:
the Content-Usage header field and TDM reservation (the `tdm-reservation: 1` header, or
`<meta name="tdm-reservation" content="1">` read by PageReader), which counts as train-ai=n and
ai-input=n. Combined most-restrictive first, they give:

- `X-Robotsgate-Usage` on every forwarded response: the effective preferences for this agent, in
  the vocabulary's syntax (`train-ai=n, search=y`), absent when nothing is known. The origin's
  own header of that name is always removed: only robotsgate speaks for robotsgate.
- when the bot declared purposes and every one is disallowed (or unknown, with
  robots_usage_unknown=refuse), the origin's answer is withheld: 403, audited with the origin's
  status kept. A body that mitmproxy streams (stream_large_bodies), or may stream once it has
  begun (its length unknown), is judged on its headers, and cut off (the connection is killed)
  when refused, since its headers cannot be taken back once the body flows.

Each Content-Usage field line is read on its own and the lines combined most restrictive first
(joined into one Dictionary, a later `train-ai=y` would override an earlier `n`); a line longer
than MAX_PREFERENCE is not parsed.
"""

import logging
from dataclasses import dataclass

from mitmproxy import http

from robotsgate.audit import Event
from robotsgate.gate import Verdict
from robotsgate.mitm import keys
from robotsgate.mitm.answers import AuditUnwritable, answer_usage
from robotsgate.mitm.pages import page_agent, page_user_agent
from robotsgate.mitm.runtime import Runtime
from robotsgate.outcomes import Reason
from robotsgate.pages.directives import Directives, agent_names, read_header
from robotsgate.protocol.usage import (
    CATEGORIES,
    NO_USAGE,
    Source,
    Usage,
    combine,
    no_ai,
    read_statement,
    tdm_reservation,
)
from robotsgate.purposes import NONE as NO_PURPOSES
from robotsgate.purposes import Purposes, UsageRefusal, refused

logger = logging.getLogger(__name__)

HEADER = "X-Robotsgate-Usage"
MAX_PREFERENCE = 8192  # characters of one Content-Usage field line that are read
_CATEGORIES = frozenset(CATEGORIES)


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
        stated = _Stated.of(response)
        private = keys.private(flow)
        private[keys.USAGE_STATED] = stated
        usage, refusal = self._usage(flow, stated, tdm_meta=False)
        private[keys.USAGE_JUDGED] = refusal
        _say(flow, usage)
        if refusal is None:
            return
        verdict: Verdict = private[keys.VERDICT]
        if self.runtime.of(flow).settings.monitor:
            self._record(flow, verdict, refusal, response.status_code)
            return
        if response.stream or may_stream_late(response, self.runtime.of(flow).stream_bodies):
            self._record(flow, verdict, refusal, response.status_code)
            flow.kill()  # a refusal: the body must not reach the bot
        # Otherwise withheld at `response`, once the body is in: a 403 that says why.

    def response(self, flow: http.HTTPFlow) -> None:
        response = flow.response
        if response is None or response.stream or not origin_answer(flow, response):
            return
        tdm_meta = bool(flow.metadata.get(keys.TDM_RESERVED))
        no_ai_meta: tuple[str, ...] = flow.metadata.get(keys.NO_AI, ())
        private = keys.private(flow)
        if keys.USAGE_JUDGED in private and not tdm_meta and not no_ai_meta:
            # Nothing said since the headers (the usual case): their judgement stands, and
            # X-Robotsgate-Usage is set already.
            refusal = private[keys.USAGE_JUDGED]
            if refusal is None:
                return
            usage = None
        else:
            stated = private.get(keys.USAGE_STATED) or _Stated.of(response)
            usage, refusal = self._usage(flow, stated, tdm_meta=tdm_meta, no_ai_meta=no_ai_meta)
            if refusal is None:
                _say(flow, usage)
                return
        status = response.status_code
        verdict: Verdict = private[keys.VERDICT]
        self._record(flow, verdict, refusal, status)
        if self.runtime.of(flow).settings.monitor:
            if usage is not None:
                _say(flow, usage)
            return
        answer_usage(flow, refusal, agent=verdict.agent, robots_url=verdict.robots_url,
                     verdict=verdict, withheld=status)

    def _usage(self, flow: http.HTTPFlow, stated: "_Stated", *, tdm_meta: bool,
               no_ai_meta: tuple[str, ...] = ()) -> tuple[Usage, UsageRefusal | None]:
        private = keys.private(flow)
        purposes: Purposes = private.get(keys.PURPOSES, NO_PURPOSES)
        verdict: Verdict = private[keys.VERDICT]
        if not (purposes or verdict.usage or stated.lines or stated.tdm or tdm_meta or
                stated.robots_tags or no_ai_meta):
            return NO_USAGE, None  # nothing known, nothing declared: most answers
        said = [verdict.usage]
        for line in stated.lines:
            # Each field line on its own, most restrictive first: joined into one Dictionary
            # (RFC 9110 §5.3), a later "train-ai=y" would override an earlier "n", and one
            # unreadable line would make every other unknown. A line past the limit is not
            # parsed (it says nothing): its cost would be the whole proxy's.
            if len(line) <= MAX_PREFERENCE:
                said.append(read_statement(Source.HEADER, line).usage())
        if stated.tdm:
            said.append(tdm_reservation(header=True).usage())
        if tdm_meta:
            said.append(tdm_reservation(header=False).usage())
        image = stated.image
        if stated.robots_tags:
            said += [no_ai(name, header=True).usage()
                     for name in self._no_ai(flow, stated.robots_tags)
                     if image or name == "noai"]
        said += [no_ai(name, header=False).usage() for name in no_ai_meta
                 if image or name == "noai"]
        usage = combine(*said).only(_CATEGORIES | purposes)
        unknown_refused = self.runtime.of(flow).settings.usage_unknown == "refuse"
        return usage, refused(usage, purposes, unknown_refused=unknown_refused)

    def _no_ai(self, flow: http.HTTPFlow, lines: tuple[bytes, ...]) -> tuple[str, ...]:
        """noai, noimageai as the answer's X-Robots-Tag says them for this agent (for every
        agent, or `mybot: noai` for the names it answers to, as PageReader reads them)."""
        names = agent_names(page_agent(flow, self.runtime.of(flow)), page_user_agent(flow))
        reading = Directives()
        for line in lines:
            read_header(line.decode("utf-8", "surrogateescape"), names, reading, [])
        return tuple(reading.no_ai)

    def _record(self, flow: http.HTTPFlow, verdict: Verdict, refusal: UsageRefusal,
                origin_status: int) -> None:
        """Once per request: refused at the request (monitor mode forwards it), or on the
        answer's headers, or on its body."""
        recorder = self.runtime.of(flow).recorder
        if verdict.usage_refusal is not None or \
                flow.metadata.get(keys.USAGE_RECORDED):
            return
        flow.metadata[keys.USAGE_RECORDED] = True
        # Never "block": the request did reach the origin; its answer is what is withheld.
        event: Event = "would-block" if self.runtime.of(flow).settings.monitor else "withheld"
        stated = keys.private(flow).get(keys.USAGE_STATED)
        source = refusal.statement.source if refusal.statement is not None else None
        policy = None
        if source is Source.TDM_HEADER:
            policy = stated.tdm_policy if stated is not None else None
        elif source is Source.TDM_META:
            policy = flow.metadata.get(keys.TDM_POLICY)
        try:
            recorder.flow(flow, event, Reason.USAGE_PREFERENCE, 403, verdict, refusal=refusal,
                          origin_status=origin_status, tdm_policy=policy)
        except AuditUnwritable:
            # robots_audit_failure=closed: withheld all the same, since unrecorded is worse
            # than refused.
            logger.error("robotsgate: a usage refusal of %s could not be recorded",
                         flow.request.pretty_url)


@dataclass(frozen=True, slots=True)
class _Stated:
    """What an answer's headers state about its use, read in one pass over its raw fields
    (Headers.get_all() lower-cases every name, once per name asked for)."""

    lines: tuple[bytes, ...]  # Content-Usage field lines
    tdm: bool  # tdm-reservation: 1
    robots_tags: tuple[bytes, ...] = ()  # X-Robots-Tag lines that may say noai or noimageai
    image: bool = False  # an image (Content-Type image/...): noimageai speaks of it
    tdm_policy: str | None = None  # TDMRep's tdm-policy: the URL of the rights holder's terms

    @classmethod
    def of(cls, response: http.Response) -> "_Stated":
        fields = response.headers.fields
        names = b"\n".join([name for name, _ in fields]).lower()
        # `find`, not `in`: `bytes in bytes` makes and drops a TypeError before it searches.
        if max(map(names.find, _STATING)) < 0:
            return _NOTHING_STATED  # nearly every answer: one look at its names, no loop
        lines: list[bytes] = []
        robots_tags: list[bytes] = []
        tdm = ours = image = False
        policy = None
        for name, value in fields:
            size = len(name)  # a length first: most names are none of these
            if size == 13 and name.lower() == b"content-usage":
                lines.append(value)
            elif size == 15 and name.lower() == b"tdm-reservation":
                tdm = tdm or value.strip() == b"1"
            elif size == 18 and name.lower() == b"x-robotsgate-usage":
                ours = True
            elif size == 12 and name.lower() == b"x-robots-tag":
                lowered = value.lower()
                if lowered.find(b"noai") >= 0 or lowered.find(b"noimageai") >= 0:
                    robots_tags.append(value)
            elif size == 12 and name.lower() == b"content-type":
                image = value.lstrip().lower().startswith(b"image/")
            elif size == 10 and name.lower() == b"tdm-policy" and policy is None:
                policy = value.decode("utf-8", "surrogateescape").strip()
        if ours:
            del response.headers[HEADER]  # the origin cannot speak for robotsgate
        return cls(tuple(lines), tdm, tuple(robots_tags), image, policy)


# The names _Stated reads for (Content-Type alone says nothing), or within another name's: then
# the fields are read one by one.
_STATING = (b"content-usage", b"tdm-", b"x-robotsgate-usage", b"x-robots-tag")
_NOTHING_STATED = _Stated((), False)


def origin_answer(flow: http.HTTPFlow, response: http.Response) -> bool:
    """Whether the response is the origin's answer to a decided request."""
    return not (flow.metadata.get(keys.ANSWERED) or flow.error is not None or
                response.status_code == 101 or keys.VERDICT not in keys.private(flow))


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
