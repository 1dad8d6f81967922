"""Page-level signals on responses: every HTML page gets one normalised X-Robots-Tag for the
agent, its nofollow links are remembered (the request decision refuses them), and with
robots_strip its noindex text and nofollow hrefs are removed (robotsgate.pages)."""

import contextlib
import logging

from mitmproxy import http

from robotsgate import outcomes
from robotsgate.mitm.answers import AuditUnwritable, answer, retry_after
from robotsgate.mitm.flow import state
from robotsgate.mitm.headers import ResponseHeaders, set_headers
from robotsgate.mitm.runtime import Live, Runtime
from robotsgate.outcomes import Reason
from robotsgate.pages.license_links import page_licenses

logger = logging.getLogger(__name__)


class PageReader:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def response(self, flow: http.HTTPFlow) -> None:
        """Trouble here never breaks a response: it goes through as it came, and the trouble is
        logged."""
        response, req = flow.response, flow.request
        if response is None or flow.error is not None or state(flow).answered:
            return
        status = response.status_code
        if status == 101:
            return
        live = self.runtime.of(flow)
        pages = live.pages
        seen = ResponseHeaders.of(response.headers.fields)
        if not pages.reads(req.method, status, seen.content_type):
            return
        try:
            raw = response.raw_content
            if raw is None:
                return  # streamed (stream_large_bodies): already on its way to the bot
            result = pages.annotate(
                url=lambda: req.url, method=req.method, status=status,
                agent=page_agent(flow, live), user_agent=page_user_agent(flow),
                content_type=seen.content_type, x_robots_tag=seen.x_robots_tag, raw=raw,
                content_encoding=seen.content_encoding)
        except Exception as exc:
            if _must_read(flow, live):
                logger.exception("robotsgate: could not read the page signals of %s; "
                                 "answered 503", req.pretty_url)
                self._fail(flow, Reason.INTERNAL_ERROR,
                           f"the page could not be read: {type(exc).__name__}: {exc}")
                return
            logger.exception("robotsgate: could not read the page signals of %s; passed on "
                             "unchanged", req.pretty_url)
            return
        if result.unread is not None:
            # A coding robotsgate does not undo: what the origin sent, not a fault of the
            # proxy's. Its X-Robots-Tag was read (nofollow remembered); its headers go as the
            # origin wrote them, as a streamed page's do.
            if _must_read(flow, live):
                self._fail(flow, Reason.CONTENT_CODING, result.unread)
                return
            logger.warning("robotsgate: %s not read (%s): passed on unchanged", req.pretty_url,
                           result.unread)
            return
        known = state(flow)
        if result.signals.tdm_reservation is not None:
            # "1" or "0", for robotsgate.mitm.usage: either supersedes the header's.
            known.tdm_meta = result.signals.tdm_reservation
        if result.signals.tdm_policy:
            known.tdm_policy = result.signals.tdm_policy  # for the audit
        if result.signals.no_ai:
            known.no_ai = result.signals.no_ai  # for robotsgate.mitm.usage
        if (result.signals.licenses or result.signals.inline_licenses) and known.purposes:
            # For robotsgate.mitm.licensing: judged for the bot's purposes.
            if result.signals.licenses:
                known.license_links = page_licenses(result.signals, req.url)
            if result.signals.inline_licenses:
                known.license_inline = result.signals.inline_licenses
        # The origin's own X-Robots-Tag headers are replaced: the one value carries everything
        # they said for this agent, together with the page's META and nothing for other agents.
        set_headers(response.headers, [(b"X-Robots-Tag", result.x_robots_tag.encode(
            "utf-8", "surrogateescape"))], replace=bool(seen.x_robots_tag))
        if result.body is not None:
            response.content = result.body

    def _fail(self, flow: http.HTTPFlow, reason: Reason, error: str) -> None:
        status = flow.response.status_code if flow.response else None
        outcome = outcomes.OUTCOMES[reason]
        text = outcomes.text(reason, error=error, why="robots_strip" if
                             self.runtime.of(flow).settings.strip else "the bot's purposes")
        answer(flow, reason, text, retry_after(outcome.retry_after))
        with contextlib.suppress(AuditUnwritable):  # already failing closed
            self.runtime.of(flow).recorder.flow(
                flow, "withheld", reason, outcome.status,
                state(flow).verdict, error=error, origin_status=status)


def _must_read(flow: http.HTTPFlow, live: Live) -> bool:
    """Strip mode, or a bot whose purposes a TDM reservation in this page may refuse: a page
    whose reading is not known is not sent (fail closed)."""
    return live.settings.strip or bool(state(flow).purposes)


def page_agent(flow: http.HTTPFlow, live: Live) -> str | None:
    """The product token a page's signals are read for: the one the request was decided for,
    or robots_agent's."""
    identity = state(flow).identity
    return identity.token if identity else live.settings.agent or None


def page_user_agent(flow: http.HTTPFlow) -> str | None:
    """The request's User-Agent as it was decided on."""
    known = state(flow)
    if known.identified:
        return known.user_agent
    return flow.request.headers.get("user-agent")
