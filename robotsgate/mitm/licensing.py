"""RSL licences that an answer names: its `Link` header field, or its page's `<link
rel="license" type="application/rsl+xml">` (robotsgate.pages.license_links); or that its page
holds: `<script type="application/rsl+xml">` in the head, the licence embedded.

The licences robots.txt names were judged at the request (robotsgate.decision.gate). An answer may
name more, for itself: they are judged here, by the same service (robotsgate.licensing.licenses:
fetched as the proxy, kept, failing closed), for the purposes the bot declared, and the answer
withheld when they refuse it, as a usage preference withholds one (robotsgate.mitm.usage): 403
license-prohibited or license-required, 503 license-unavailable, audited with the origin's
status. The Link header is judged at the headers: a body mitmproxy streams, or may stream once
it has begun, is cut off when refused. A page's `<link>` and embedded licences are judged once
its body is in (a streamed body is not read: its Link header is what counts), the embedded ones
read with the same limits and judgement as a fetched document
(robotsgate.licensing.licenses.embedded), without a fetch.

Only a bot that declared purposes waits for any of this; for the others each hook returns at
its first test.
"""

import logging
import time
from collections.abc import Awaitable

import ada_url
from mitmproxy import http

from robotsgate.audit.records import Event
from robotsgate.decision.verdict import Verdict
from robotsgate.escape import escaped
from robotsgate.licensing.judging import (
    REASONS,
    LicenseDocument,
    LicenseRefusal,
    license_answer,
)
from robotsgate.licensing.licenses import Licensing, embedded, linked
from robotsgate.licensing.tokens import LicenseToken
from robotsgate.mitm.again import Added
from robotsgate.mitm.answers import AuditUnwritable, answer
from robotsgate.mitm.flow import state
from robotsgate.mitm.runtime import Runtime
from robotsgate.mitm.usage import may_stream_late, origin_answer
from robotsgate.outcomes import Reason
from robotsgate.pages.license_links import rsl_links
from robotsgate.protocol.rsl import License, LicenseSource

logger = logging.getLogger(__name__)


def _presented(flow: http.HTTPFlow) -> bool:
    verdict = state(flow).verdict
    return verdict is not None and verdict.license_token is not None


# The licence the proxy presents (robotsgate.decision.request writes it): taken off a request
# sent again, which is decided afresh and may get another licence, or none.
ADDED = Added(frozenset((b"authorization",)), _presented)


class LicenseCheck:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.resends = runtime.resends  # a copy sent with a new licence has the refused one
        self.resends.declare(ADDED)      # as its note (LicenseToken)

    def responseheaders(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        # A plain function: an answer to a bot without purposes, or without a Link header that
        # names an RSL licence, costs no coroutine.
        response = flow.response
        if response is None or not state(flow).purposes:
            return None
        urls = _linked(flow, response)
        return self._headers(flow, urls) if urls else None

    def response(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        known = state(flow)
        if not known.purposes:
            return None
        response = flow.response
        if response is not None and response.status_code == 401:
            token = self._refused_token(flow, response)
            if token is not None:
                return self._again_licensed(flow, token)
        if known.license_refusal is None and not known.license_links and \
                not known.license_inline:
            return None
        return self._body(flow)

    def _refused_token(self, flow: http.HTTPFlow, response: http.Response
                       ) -> LicenseToken | None:
        """The licence the request carried, when the origin's 401 says it would not take it
        (`WWW-Authenticate: License error="..."`), and the resend policy allows sending it
        again (robotsgate.mitm.again: once, held whole both ways)."""
        verdict = state(flow).verdict
        token = verdict.license_token if verdict is not None else None
        if token is None or not self.resends.may_send(flow):
            return None
        asked = response.headers.get_all("www-authenticate")
        return token if any(value.lstrip().lower().startswith("license") for value in asked) \
            else None

    async def _again_licensed(self, flow: http.HTTPFlow, token: LicenseToken) -> None:
        """Once: the token forgotten, the request sent again with a fresh one (decided afresh,
        so a licence server that now refuses refuses it), and both noted in the audit log."""
        live = self.runtime.of(flow)
        if live.services.licensing is not None:
            live.services.licensing.forget(token)
        first = flow.response
        assert first is not None
        said = first.headers.get("www-authenticate", "")
        _, trouble = await self.resends.send(flow, token)
        try:
            live.recorder.flow(
                flow, "license", Reason.LICENSE_REFUSED, None,
                state(flow).verdict, origin_status=first.status_code,
                error=f"the origin refused the licence ({escaped(said[:200])}); "
                      + ("sent again with a new one" if trouble is None else
                         f"sent again, it got no answer ({trouble}): the bot got the first"))
        except AuditUnwritable:
            logger.error("robotsgate: a licence sent again for %s could not be recorded",
                         flow.request.pretty_url)

    async def _headers(self, flow: http.HTTPFlow, urls: tuple[str, ...]) -> None:
        response = flow.response
        live = self.runtime.of(flow)
        licensing = live.services.licensing
        if response is None or licensing is None or not origin_answer(flow, response):
            return
        refusal = await self._judge(flow, licensing, urls, "link-header")
        if refusal is None:
            return
        state(flow).license_refusal = refusal
        if live.settings.monitor:
            self._record(flow, refusal, response.status_code)
        elif response.stream or may_stream_late(response, live.stream_bodies):
            self._record(flow, refusal, response.status_code)
            flow.kill()  # a refusal: the body must not reach the bot
        # Otherwise withheld at `response`, once the body is in: an answer that says why.

    async def _body(self, flow: http.HTTPFlow) -> None:
        response = flow.response
        live = self.runtime.of(flow)
        licensing = live.services.licensing
        if response is None or response.stream or licensing is None or \
                not origin_answer(flow, response):
            return
        known = state(flow)
        refusal = known.license_refusal
        if refusal is None:
            linked, inline = tuple(known.license_links), known.license_inline
            now = time.time()
            refusal = await self._judge(
                flow, licensing, linked, "html-link",
                tuple(embedded(flow.request.url, xml, now) for xml in inline))
            if refusal is None:
                return
        status = response.status_code
        self._record(flow, refusal, status)
        if live.settings.monitor:
            return
        verdict = _verdict(flow)
        text, headers = license_answer(refusal, agent=verdict.agent,
                                       robots_url=verdict.robots_url, withheld=status)
        if refusal.kind == "unavailable":
            headers["Retry-After"] = str(licensing.error_ttl)
        answer(flow, REASONS[refusal.kind], text, headers, verdict)

    async def _judge(self, flow: http.HTTPFlow, licensing: Licensing, urls: tuple[str, ...],
                     source: LicenseSource,
                     given: tuple[tuple[License, LicenseDocument], ...] = ()
                     ) -> LicenseRefusal | None:
        purposes = state(flow).purposes
        assert purposes is not None  # only a bot that declared purposes is judged
        named, unread = linked(urls, source)
        verdict = _verdict(flow)
        found = await licensing.judge(named, [flow.request.url], purposes,
                                      site=verdict.robots_url.removesuffix("/robots.txt"),
                                      unread=unread, given=given)
        # A licence its server would issue: the request has been answered already, so there
        # is nothing left to present it with, and nothing to refuse.
        return None if isinstance(found, LicenseToken) else found

    def _record(self, flow: http.HTTPFlow, refusal: LicenseRefusal, origin_status: int) -> None:
        """Once per answer: on its headers, or on its body."""
        known = state(flow)
        if known.license_recorded:
            return
        known.license_recorded = True
        live = self.runtime.of(flow)
        # Never "block": the request did reach the origin; its answer is what is withheld.
        event: Event = "would-block" if live.settings.monitor else "withheld"
        verdict = _verdict(flow)
        reason = REASONS[refusal.kind]
        try:
            live.recorder.flow(flow, event, reason, 503 if refusal.kind == "unavailable" else 403,
                               verdict, origin_status=origin_status, licensed=refusal)
        except AuditUnwritable:
            # robots_audit_failure=closed: withheld all the same, since unrecorded is worse
            # than refused.
            logger.error("robotsgate: a licence refusal of %s could not be recorded",
                         flow.request.pretty_url)


def _linked(flow: http.HTTPFlow, response: http.Response) -> tuple[str, ...]:
    """The RSL licences the answer's Link header fields name, resolved against the request's
    URL (their context, RFC 8288 §3.2)."""
    found: dict[str, None] = {}
    base = flow.request.url
    for name, value in response.headers.fields:
        # A length and a cheap test first: most answers have no Link naming an RSL licence.
        if len(name) != 4 or name.lower() != b"link" or b"rsl" not in value.lower():
            continue
        for reference in rsl_links(value.decode("latin-1")):
            try:
                found[ada_url.join_url(base, reference)] = None
            except ValueError:
                continue  # no URL: nothing to fetch
    return tuple(found)


def _verdict(flow: http.HTTPFlow) -> Verdict:
    """The verdict of a flow that left (invariant 4 of robotsgate/mitm/flow.py)."""
    verdict = state(flow).verdict
    assert verdict is not None
    return verdict
