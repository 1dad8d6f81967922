"""Page-level robots signals in the proxy: annotate, remember nofollow links, refuse them.

Every HTML response is read for its agent (robotsgate.pages.read) and gets one normalised
X-Robots-Tag. The links a bot may not follow from a page -- all of them when the page is nofollow,
those of its nofollow sections otherwise -- are remembered per agent and page, bounded and for a
limited time, so that a later request naming that page in its Referer and asking for one of
those links can be refused. No mitmproxy types here: the addon turns flows into calls.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from cachetools import TTLCache

from robotsgate.origin import Origin
from robotsgate.pages.charset import MAX_PAGE_BYTES, HtmlText, decode_html
from robotsgate.pages.content import Undecodable, decoded_prefix
from robotsgate.pages.directives import agent_names
from robotsgate.pages.links import resolve
from robotsgate.pages.prefilter import can_have_signals
from robotsgate.pages.read import is_html, read_page
from robotsgate.pages.signals import NO_SIGNALS, PageSignals
from robotsgate.pages.strip import strip_page
from robotsgate.protocol import product_tokens
from robotsgate.protocol.urls import normalize, url_parts

logger = logging.getLogger(__name__)

# "page": the page itself is nofollow (META robots or X-Robots-Tag); "section": the link is in
# a nofollow section of it.
Why = Literal["page", "section"]


@dataclass(frozen=True, slots=True)
class PageConfig:
    enforce_nofollow: bool = True
    strip: bool = False
    memory_size: int = 200_000  # links remembered, over all pages (a page counts at least 1)
    memory_ttl: int = 86_400  # seconds a page's nofollow links are remembered


@dataclass(frozen=True, slots=True)
class Annotated:
    """What the proxy does to an HTML response."""

    x_robots_tag: str  # the one X-Robots-Tag the bot gets
    body: bytes | None  # the stripped page; None: the body goes through unchanged
    signals: PageSignals
    # Why the body could not be read (robotsgate.pages.content.Undecodable): the signals are its
    # headers' alone, and the page goes as it came, its headers untouched.
    unread: str | None = None


@dataclass(frozen=True, slots=True)
class Remembered:
    why: Why
    # Normal-form URLs of the links that may not be followed. None: every URL asked for with
    # this page as Referer (robots.txt excepted): the page is nofollow but was too long to read
    # all its links, or had more links than the memory holds.
    links: frozenset[str] | None


@dataclass(frozen=True, slots=True)
class Nofollow:
    """Why a request is a link the bot may not follow."""

    page: str  # the Referer, as sent
    why: Why


_QUIET = Annotated(NO_SIGNALS.x_robots_tag, None, NO_SIGNALS)  # a page that says nothing
# A page whose body was not read: no text, and whatever it holds past nothing is unknown.
_UNREAD = HtmlText("", "utf-8", b"", 0, truncated=True)


def _url_of(url: str | Callable[[], str]) -> str:
    return url if isinstance(url, str) else url()


def url_key(url: str) -> str | None:
    """A URL in the gate's normal form: Origin.key (scheme and host lower-cased, IDN in punycode,
    default port dropped) and the path and query percent-encoding-normalised, without the
    fragment. None for anything but http(s) URLs."""
    parts = url_parts(url)
    if parts is None or parts[0] not in ("http", "https"):
        return None
    scheme, host, port, path = parts
    return Origin.of(scheme, host, port).key + normalize(path)


_KEY_TOKENS = 16  # product tokens of a User-Agent that name a bot in the memory, at most


def agent_key(agent: str | None, user_agent: str | None) -> str:
    """Who the memory is for: the configured product token, or else the product tokens the
    User-Agent names (RedBot/1.0 and RedBot/1.1 are one bot, as robots.txt reads them)."""
    if agent:
        return agent.lower()
    return " ".join(sorted(product_tokens(user_agent or ""))[:_KEY_TOKENS])


class Pages:
    """One instance per proxy configuration; owns the nofollow memory."""

    def __init__(self, config: PageConfig, clock: Callable[[], float],
                 timer: Callable[[], float]) -> None:
        self.config = config
        self._clock = clock  # wall clock: unavailable_after dates
        # The memory's TTL runs on the monotonic timer; its size counts links, not pages.
        self._memory: TTLCache[tuple[str, str], Remembered] = TTLCache(
            maxsize=config.memory_size, ttl=config.memory_ttl, timer=timer,
            getsizeof=_size)
        # Whether anything was ever remembered: the memory's own len() is a chain of Python
        # calls, asked of every page that says nothing, and nearly always 0.
        self._remembered = False

    @staticmethod
    def reads(method: str, status: int, content_type: str | None) -> bool:
        """Whether a response is a page to read: HTML (text/html, application/xhtml+xml) with a
        body. A HEAD, 204 or 304 has none, and is left alone: a 304's headers would replace
        those the bot keeps with its cached copy."""
        return method != "HEAD" and status >= 200 and status not in (204, 304) and \
            is_html(content_type)

    def annotate(self, *, url: str | Callable[[], str], method: str, status: int,
                 agent: str | None, user_agent: str | None, content_type: str | None,
                 x_robots_tag: list[str], raw: bytes,
                 content_encoding: str | None = None) -> Annotated:
        """Read an HTML response for the agent; remember what it may not follow.

        `raw` is the body as it came (Content-Encoding not undone): no more than MAX_PAGE_BYTES
        of it is ever decompressed. `url` may be a function that returns it: most pages say
        nothing to robots, and then it is not needed. A body that cannot be decoded (a coding
        robotsgate does not undo) is not read: what its X-Robots-Tag says is remembered, and
        the result says why (`unread`).
        """
        names = agent_names(agent, user_agent)
        # A 206 is part of a page, chosen by the bot (Range): it must not replace what the whole
        # page said.
        remember = self.config.enforce_nofollow and method == "GET" and 200 <= status < 300 \
            and status != 206
        try:
            # One byte more than is read tells a page that is longer from one that is not.
            body = decoded_prefix(raw, content_encoding, MAX_PAGE_BYTES + 1)
        except Undecodable as exc:
            # As a page too long to read: its header is known, its links are not (a nofollow
            # page then forbids them all). Nothing is forgotten: its META may say nofollow.
            signals = read_page(_UNREAD, now=self._clock(), x_robots_tag=x_robots_tag,
                                agents=names, links=False)
            if remember and signals.nofollow:
                self._remember(agent_key(agent, user_agent), _url_of(url), signals)
            return Annotated(signals.x_robots_tag, None, signals, unread=str(exc))
        if not x_robots_tag and not can_have_signals(body, content_type, names):
            if remember and self._remembered:  # a page once nofollow may be no longer
                self._remember(agent_key(agent, user_agent), _url_of(url), NO_SIGNALS)
            return _QUIET
        page = _url_of(url)
        html = decode_html(body, content_type)
        now = self._clock()
        # The head first: most pages need nothing more, and a full read costs about 0.25 s a MiB.
        signals = read_page(html, now=now, x_robots_tag=x_robots_tag, agents=names, links=False)
        if (remember and (signals.nofollow or signals.may_have_sections)) or \
                (self.config.strip and signals.may_have_sections):
            signals = read_page(html, now=now, x_robots_tag=x_robots_tag, agents=names)
        if remember:
            self._remember(agent_key(agent, user_agent), page, signals)
        stripped = None
        if self.config.strip and any(s.noindex or s.nofollow for s in signals.sections):
            if body is raw or not html.truncated:
                # ValueError for the rare page that cannot be stripped (hostile markup the
                # serialiser cannot write back): the caller must not send it unstripped.
                stripped = strip_page(body, html)
            else:
                # The rest of a long compressed page would have to be decompressed to be put
                # back: that is what a compression bomb counts on. It goes as it came.
                logger.warning("robotsgate: %s is longer than %d bytes once decompressed: not "
                               "stripped", page, MAX_PAGE_BYTES)
        return Annotated(signals.x_robots_tag, stripped, signals)

    def _remember(self, who: str, url: str, signals: PageSignals) -> None:
        page = url_key(url)
        if page is None:
            return
        key = (who, page)
        why: Why
        if signals.nofollow:
            why, hrefs = "page", signals.all_links
        elif signals.nofollow_links:
            why, hrefs = "section", signals.nofollow_links
        else:
            self._memory.pop(key, None)  # not (or no longer) nofollow
            return
        # As the bot's client resolves them: the WHATWG URL standard, the page's encoding for
        # the query; a <base href> that is no URL is ignored.
        base = (resolve(url, signals.base, signals.charset) if signals.base else None) or url
        links = frozenset(filter(None, (_key(resolve(base, href, signals.charset))
                                        for href in hrefs)))
        # Links past the part read are unknown: a nofollow page that long forbids them all.
        entry = Remembered(why, None if why == "page" and signals.truncated else links)
        self._remembered = True
        try:
            self._memory[key] = entry
        except ValueError:  # more links than the whole memory: err on the side of not following
            self._memory[key] = Remembered(why, None)

    def nofollow(self, *, url: str, referer: str | None, agent: str | None,
                 user_agent: str | None) -> Nofollow | None:
        """Whether a request follows a link its Referer page says not to follow."""
        if not self.config.enforce_nofollow or not referer:
            return None
        page = url_key(referer)
        if page is None:
            return None
        entry = self._memory.get((agent_key(agent, user_agent), page))
        if entry is None:
            return None
        target = url_key(url)
        if target is None:
            return None
        if entry.links is None:
            if urlsplit(target).path == "/robots.txt":  # robots.txt itself is always allowed
                return None
        elif target not in entry.links:
            return None
        return Nofollow(referer, entry.why)

    def __len__(self) -> int:
        """Pages remembered."""
        return len(self._memory)


def _size(entry: Remembered) -> int:
    return 1 if entry.links is None else max(1, len(entry.links))


def _key(url: str | None) -> str | None:
    return None if url is None else url_key(url)
