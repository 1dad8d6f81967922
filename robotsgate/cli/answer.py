"""`robotsgate check`'s look at the answer: what the proxy decides once the origin has answered.

For a bot with declared purposes, the answer itself may withhold the page: its Content-Usage,
its tdm-reservation (with the origin's tdmrep.json, in TDMRep's order), noai, and the RSL
licences it names (Link, `<link>`) or holds (`<script type="application/rsl+xml">`). So check
asks the origin for the URL as the proxy would forward it (GET, the bot's User-Agent, no
redirect followed) and judges the answer with the proxy's own code: robotsgate.decision.stated for
the usage, robotsgate.pages for the page, robotsgate.licensing.licenses for the licences, in the
order the proxy's parts run (usage first, then licences).
"""

import time
from dataclasses import dataclass

import ada_url
import httpx

from robotsgate.decision.purposes import Purposes, UsageRefusal
from robotsgate.decision.stated import Stated, answer_usage, no_ai_of
from robotsgate.decision.verdict import Verdict
from robotsgate.licensing.judging import LicenseRefusal
from robotsgate.licensing.licenses import Licensing, embedded, linked
from robotsgate.licensing.tokens import LicenseToken
from robotsgate.outcomes import Reason
from robotsgate.pages import PageConfig, Pages
from robotsgate.pages.charset import MAX_PAGE_BYTES
from robotsgate.pages.directives import agent_names
from robotsgate.pages.license_links import page_licenses, rsl_links
from robotsgate.pages.signals import NO_SIGNALS, PageSignals
from robotsgate.protocol.usage import Usage


@dataclass(frozen=True, slots=True)
class Answered:
    """The origin's answer, and what the proxy makes of it."""

    status: int | None  # the origin's status; None: no answer (error says why)
    usage: Usage  # X-Robotsgate-Usage, as the proxy would send it
    refusal: UsageRefusal | None = None
    license_refusal: LicenseRefusal | None = None
    error: str | None = None

    @property
    def reason(self) -> Reason | None:
        """The proxy's reason for withholding the answer; None: forwarded."""
        if self.refusal is not None:
            return Reason.USAGE_PREFERENCE
        if self.license_refusal is not None:
            kind = self.license_refusal.kind
            return Reason.LICENSE_UNAVAILABLE if kind == "unavailable" else \
                Reason.LICENSE_PROHIBITED if kind == "prohibited" else Reason.LICENSE_REQUIRED
        return None


async def judge_answer(url: str, verdict: Verdict, purposes: Purposes, *, agent: str | None,
                       user_agent: str | None, licensing: Licensing | None,
                       client: httpx.AsyncClient) -> Answered:
    """The origin's answer to a GET of `url`, judged as the proxy judges it."""
    headers = {"User-Agent": user_agent} if user_agent else {}
    try:
        async with client.stream("GET", url, headers=headers) as response:
            raw = b""
            async for chunk in response.aiter_raw():
                raw += chunk
                if len(raw) > MAX_PAGE_BYTES:
                    break
            fields = tuple(response.headers.raw)
            status = response.status_code
    except httpx.HTTPError as exc:
        return Answered(None, verdict.usage, error=f"{type(exc).__name__}: {exc}")
    stated = Stated.of(fields)
    signals = _page(url, status, fields, raw, agent, user_agent)
    names = agent_names(agent, user_agent)
    usage, refusal = answer_usage(
        verdict.usage, stated, purposes, tdm_file=verdict.tdm,
        tdm_meta=signals.tdm_reservation, meta_policy=signals.tdm_policy,
        no_ai_header=no_ai_of(stated.robots_tags, names), no_ai_meta=signals.no_ai)
    if refusal is not None or licensing is None or not purposes:
        return Answered(status, usage, refusal)
    # As robotsgate.mitm.licensing judges them: the Link header's at the answer's headers, then
    # the page's <link>s with its embedded licences; each list capped as the proxy caps it.
    site = verdict.robots_url.removesuffix("/robots.txt")
    named, unread = linked((ada_url.join_url(url, reference) for name, value in fields
                            if name.lower() == b"link"
                            for reference in rsl_links(value.decode("latin-1"))), "link-header")
    found = await licensing.judge(named, [url], purposes, site=site, unread=unread)
    if not isinstance(found, LicenseRefusal):
        now = time.time()
        named, unread = linked(page_licenses(signals, url), "html-link")
        found = await licensing.judge(
            named, [url], purposes, site=site, unread=unread,
            given=tuple(embedded(url, xml, now) for xml in signals.inline_licenses))
    if isinstance(found, LicenseToken):
        found = None
    return Answered(status, usage, None, found)


def _page(url: str, status: int, fields: tuple[tuple[bytes, bytes], ...], raw: bytes,
          agent: str | None, user_agent: str | None) -> PageSignals:
    def header(name: bytes) -> str | None:
        return next((value.decode("latin-1") for key, value in fields if key.lower() == name),
                    None)

    content_type = header(b"content-type")
    if not Pages.reads("GET", status, content_type):
        return NO_SIGNALS
    pages = Pages(PageConfig(enforce_nofollow=False), time.time, time.monotonic)
    robots_tags = [value.decode("utf-8", "surrogateescape") for key, value in fields
                   if key.lower() == b"x-robots-tag"]
    return pages.annotate(url=url, method="GET", status=status, agent=agent,
                          user_agent=user_agent, content_type=content_type,
                          x_robots_tag=robots_tags, raw=raw,
                          content_encoding=header(b"content-encoding")).signals
