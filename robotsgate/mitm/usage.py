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
  status kept. A body that mitmproxy streams (stream_large_bodies) is judged on its headers,
  and cut off (the connection is killed) when refused, since its headers cannot be taken back
  once the body flows.
"""

import logging

from mitmproxy import http

from robotsgate.audit import Event
from robotsgate.gate import Verdict
from robotsgate.mitm import keys
from robotsgate.mitm.answers import AuditUnwritable, answer_usage
from robotsgate.mitm.runtime import Runtime
from robotsgate.outcomes import Reason
from robotsgate.protocol.usage import (
    CATEGORIES,
    Source,
    Usage,
    combine,
    read_statement,
    tdm_reservation,
)
from robotsgate.purposes import NONE as NO_PURPOSES
from robotsgate.purposes import Purposes, UsageRefusal, refused

logger = logging.getLogger(__name__)

HEADER = "X-Robotsgate-Usage"
_CATEGORIES = frozenset(CATEGORIES)


class UsageCheck:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        """Only a body mitmproxy will stream is judged here, on its headers: it leaves as it
        comes, so this is the last moment to refuse it or to say what it may be used for."""
        response = flow.response
        if response is None or not response.stream or not self._judged(flow, response):
            return
        usage, refusal = self._usage(flow, response, tdm_meta=False)
        if refusal is None:
            _say(response, usage)
            return
        verdict: Verdict = flow.metadata[keys.VERDICT]
        if self.runtime.settings.monitor:
            if verdict.usage_refusal is None:
                self._record(flow, verdict, refusal, response.status_code)
            _say(response, usage)
            return
        self._record(flow, verdict, refusal, response.status_code)
        flow.kill()  # a refusal: the body must not reach the bot

    def response(self, flow: http.HTTPFlow) -> None:
        response = flow.response
        if response is None or response.stream or not self._judged(flow, response):
            return
        usage, refusal = self._usage(flow, response,
                                     tdm_meta=bool(flow.metadata.get(keys.TDM_RESERVED)))
        if refusal is None:
            _say(response, usage)
            return
        status = response.status_code
        verdict: Verdict = flow.metadata[keys.VERDICT]
        if self.runtime.settings.monitor:
            if verdict.usage_refusal is None:  # else recorded as would-block at the request
                self._record(flow, verdict, refusal, status)
            _say(response, usage)
            return
        self._record(flow, verdict, refusal, status)
        answer_usage(flow, refusal, agent=verdict.agent, robots_url=verdict.robots_url,
                     verdict=verdict, withheld=status)

    def _judged(self, flow: http.HTTPFlow, response: http.Response) -> bool:
        """Whether the response is the origin's answer to a decided request."""
        if flow.metadata.get(keys.ANSWERED) or flow.error is not None or \
                response.status_code == 101 or keys.VERDICT not in flow.metadata:
            return False
        if HEADER in response.headers:
            del response.headers[HEADER]  # the origin cannot speak for robotsgate
        return True

    def _usage(self, flow: http.HTTPFlow, response: http.Response, *, tdm_meta: bool
               ) -> tuple[Usage, UsageRefusal | None]:
        purposes: Purposes = flow.metadata.get(keys.PURPOSES, NO_PURPOSES)
        verdict: Verdict = flow.metadata[keys.VERDICT]
        said = [verdict.usage]
        headers = response.headers
        stated = headers.get_all("content-usage")
        if stated:
            # Field lines of one field combine into one list (RFC 9110 §5.3).
            said.append(read_statement(Source.HEADER, ", ".join(stated)).usage())
        if any(value.strip() == "1" for value in headers.get_all("tdm-reservation")):
            said.append(tdm_reservation(header=True).usage())
        if tdm_meta:
            said.append(tdm_reservation(header=False).usage())
        usage = combine(*said).only(_CATEGORIES | purposes)
        unknown_refused = self.runtime.settings.usage_unknown == "refuse"
        return usage, refused(usage, purposes, unknown_refused=unknown_refused)

    def _record(self, flow: http.HTTPFlow, verdict: Verdict, refusal: UsageRefusal,
                origin_status: int) -> None:
        recorder = self.runtime.recorder
        if recorder is None:
            return
        event: Event = "would-block" if self.runtime.settings.monitor else "block"
        try:
            recorder.flow(flow, event, Reason.USAGE_PREFERENCE, 403, verdict, refusal=refusal,
                          origin_status=origin_status)
        except AuditUnwritable:
            # robots_audit_failure=closed: withheld all the same, since unrecorded is worse
            # than refused.
            logger.error("robotsgate: a usage refusal of %s could not be recorded",
                         flow.request.pretty_url)


def _say(response: http.Response, usage: Usage) -> None:
    if usage:
        response.headers[HEADER] = usage.render()
