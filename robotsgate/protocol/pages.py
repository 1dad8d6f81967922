"""Page-level robots signals: META robots, X-Robots-Tag and section tags (seeds 002 and 004).

robots.txt says what may be fetched; these say what may be indexed and which links may be
followed. Pure: bytes, header values and a "now" in, a frozen reading out. HTML is read with the
standard library's parser (never regular expressions), at most the first MAX_PAGE_BYTES of it.

Readings combine by the seeds' rule: "the most restrictive interpretation will be made, always
erring on the side of not indexing or not following". No directive lifts another: `index`,
`follow` and `all` are the defaults and change nothing.
"""

import codecs
import contextlib
import email.message
import email.utils
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape
from html.parser import HTMLParser
from typing import Literal

# Only this much of a page is read (and stripped); the rest passes through unread.
MAX_PAGE_BYTES = 2 * 1024 * 1024
# Where a <meta charset> is looked for when the Content-Type header names none.
CHARSET_SCAN_BYTES = 8192
# Section tags nested deeper than this are ignored (with a warning): a hostile page must not make
# the reading quadratic.
MAX_SECTION_DEPTH = 64
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# Directives the seeds define, as flags.
_FLAGS = frozenset({"index", "noindex", "follow", "nofollow", "all", "none", "noarchive",
                    "nocache", "nosnippet"})
# Google's further directives: not enforced, but carried in the normalised X-Robots-Tag so that
# nothing the origin said for this agent is lost.
_CARRIED_FLAGS = frozenset({"noimageindex", "notranslate", "indexifembedded",
                            "nositelinkssearchbox"})
_CARRIED_VALUES = frozenset({"max-snippet", "max-image-preview", "max-video-preview"})
_VALUED = _CARRIED_VALUES | {"unavailable_after"}
_DIRECTIVES = _FLAGS | _CARRIED_FLAGS | _VALUED
# A name in a User-Agent header, or before the ':' of an agent-prefixed X-Robots-Tag. Digits are
# allowed: META names are not held to robots.txt's product-token characters ("360Spider").
# (Regular expressions over header values, never over HTML.)
_AGENT_NAME = re.compile(r"[A-Za-z0-9_-]+")
# Elements that may stand in the head; any other start tag means the body has begun.
_HEAD_TAGS = frozenset({"html", "head", "title", "meta", "link", "base", "script", "style",
                        "noscript", "template"})
_RAW_TEXT = frozenset({"script", "style"})
_LINK_TAGS = frozenset({"a", "area"})
_URL_SPACE = " \t\n\r\f"
# HTML: these labels mean windows-1252; UTF-7 is refused (it hides markup from filters).
_WINDOWS_1252 = frozenset({"ascii", "us-ascii", "iso-8859-1", "iso8859-1", "iso_8859-1",
                           "latin1", "latin-1", "l1", "cp819", "ibm819", "ansi_x3.4-1968",
                           "windows-1252", "x-cp1252", "cp1252"})
_REFUSED = frozenset({"utf-7", "utf7", "unicode-1-1-utf-7", "csunicode11utf7"})
_NO_BOM = {"utf-16": "utf-16-le", "utf-32": "utf-32-le"}
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


@dataclass(frozen=True, slots=True)
class PageWarning:
    line: int | None  # line of the page; None for a header
    message: str

    def __str__(self) -> str:
        return self.message if self.line is None else f"line {self.line}: {self.message}"


@dataclass(frozen=True, slots=True)
class HtmlText:
    """A page decoded for reading: its first MAX_PAGE_BYTES as text, in its declared charset."""

    text: str
    charset: str  # the Python codec it was decoded with
    bom: bytes  # a byte-order mark that preceded the text (kept when the page is rewritten)
    consumed: int  # bytes of the body that `text` holds (the BOM included)
    truncated: bool  # the body was longer than MAX_PAGE_BYTES: the rest was not read
    warnings: tuple[PageWarning, ...] = ()


@dataclass(frozen=True, slots=True)
class Link:
    """A link (`<a href>`, `<area href>`) as written on the page."""

    href: str
    line: int
    nofollow: bool  # inside a nofollow section (the page's own nofollow is not counted here)


@dataclass(frozen=True, slots=True)
class Section:
    """One `<!-- robots content="..." -->` ... `<!-- /robots -->` section."""

    line: int
    end_line: int | None  # None: never closed, so it runs to the end of the page
    noindex: bool  # its own directives and those of the sections around it
    nofollow: bool
    text: str  # its text, not counting nested sections', whitespace collapsed
    links: tuple[str, ...]  # hrefs directly inside it, not counting nested sections'


@dataclass(frozen=True, slots=True)
class PageSignals:
    """What a page says robots may do with it, for one agent."""

    noindex: bool
    nofollow: bool  # the whole page: none of its links may be followed
    noarchive: bool
    nosnippet: bool
    unavailable_after: float | None  # the earliest date given (epoch seconds)
    x_robots_tag: str  # the normalised reading, e.g. "noindex, nofollow"; "all" when unrestricted
    carried: tuple[str, ...] = ()  # directives read but not enforced, e.g. "max-snippet:20"
    base: str | None = None  # <base href> of the head: links are relative to it
    links: tuple[Link, ...] = ()
    sections: tuple[Section, ...] = ()
    links_read: bool = True  # False: only the head was read (links and sections were not)
    # A cheap test: False means there is no section tag on the page (True may be a false alarm).
    may_have_sections: bool = False
    charset: str = "utf-8"
    truncated: bool = False
    warnings: tuple[PageWarning, ...] = ()

    @property
    def all_links(self) -> tuple[str, ...]:
        """Every link of the page, each once, in page order."""
        return tuple(dict.fromkeys(link.href for link in self.links))

    @property
    def nofollow_links(self) -> tuple[str, ...]:
        """The links inside nofollow sections (a link also found elsewhere is still one)."""
        return tuple(dict.fromkeys(link.href for link in self.links if link.nofollow))


def is_html(content_type: str | None) -> bool:
    """Whether a Content-Type is one this module reads (text/html, application/xhtml+xml)."""
    if not content_type:
        return False
    return content_type.partition(";")[0].strip().lower() in HTML_TYPES


@functools.lru_cache(maxsize=256)  # asked for every page a bot fetches, with one header
def agent_tokens(user_agent: str | None) -> frozenset[str]:
    """The product tokens of a User-Agent header, lower-cased: the META names that apply to it."""
    return frozenset(token.lower() for token in _AGENT_NAME.findall(user_agent or ""))


# Every signal a page can carry names "robots" (META robots, section tags) or one of the agent's
# names (its own META); a character reference could spell either, so "&#" counts too.
_WIDE_CHARSET = re.compile(r"utf-?(?:16|32)", re.IGNORECASE)
NO_SIGNALS = PageSignals(noindex=False, nofollow=False, noarchive=False, nosnippet=False,
                         unavailable_after=None, x_robots_tag="all", links_read=False)


def can_have_signals(body: bytes, content_type: str | None, agents: Iterable[str]) -> bool:
    """False when the page's own bytes cannot hold a robots signal for these agents.

    One byte search instead of a decode and a parse: most pages say nothing to robots. Only
    for ASCII-compatible bytes: a page in UTF-16 or UTF-32 (by its byte-order mark or its
    Content-Type) is always read in full. X-Robots-Tag headers are not looked at here.
    """
    if body.startswith((b"\xff\xfe", b"\xfe\xff")) or \
            (content_type and _WIDE_CHARSET.search(content_type)):
        return True
    # Lower-casing once and plain substring tests is many times faster than one
    # case-insensitive regular expression, which gets no fast scan for its literals.
    lowered = body.lower()
    if b"robots" in lowered or b"&#" in lowered:
        return True
    for agent in agents:
        if agent and agent.isascii() and agent.lower().encode("ascii") in lowered:
            return True
    return False


# -- decoding -----------------------------------------------------------------------------------


def decode_html(body: bytes, content_type: str | None = None, *,
                max_bytes: int = MAX_PAGE_BYTES) -> HtmlText:
    """The first `max_bytes` of a page as text, in the charset it declares.

    A byte-order mark wins, then the Content-Type header's charset, then a <meta charset> (or
    http-equiv Content-Type) in the first CHARSET_SCAN_BYTES; with none of those, UTF-8 when the
    bytes are UTF-8, else windows-1252 (what browsers do). Never raises on content: bytes that do
    not decode are kept as lone surrogates, so that a rewritten page keeps them too.
    """
    warnings: list[PageWarning] = []
    bom, charset = b"", None
    for mark, name in _BOMS:
        if body.startswith(mark):
            bom, charset = mark, name
            break
    if charset is None:
        charset = _codec(_header_charset(content_type), "the Content-Type header", warnings)
    if charset is None:
        label = _meta_charset(body[:CHARSET_SCAN_BYTES])
        charset = _codec(label, "<meta charset>", warnings)
        if charset is not None and charset.startswith("utf-16"):
            charset = "utf-8"  # HTML: a page readable as ASCII to find this is not UTF-16
    truncated = len(body) > max_bytes
    raw = body[len(bom):max_bytes]
    if charset is None:
        try:
            return _decode(raw, "utf-8", "strict", bom, max_bytes, truncated, warnings)
        except UnicodeDecodeError:
            charset = "cp1252"
            warnings.append(PageWarning(None, "no charset declared and the page is not UTF-8: "
                                              "read as windows-1252"))
    try:
        return _decode(raw, charset, "surrogateescape", bom, max_bytes, truncated, warnings)
    except (UnicodeError, ValueError) as exc:  # a codec that will not read this page at all
        warnings.append(PageWarning(None, f"cannot read the page as {charset} ({exc}): read "
                                          f"as windows-1252"))
        return _decode(raw, "cp1252", "surrogateescape", bom, max_bytes, truncated, warnings)


def _decode(raw: bytes, charset: str, errors: str, bom: bytes, max_bytes: int, truncated: bool,
            warnings: list[PageWarning]) -> HtmlText:
    decoder = codecs.getincrementaldecoder(charset)(errors)
    # A cut page may end inside a character: the decoder keeps those bytes back.
    text = decoder.decode(raw, final=not truncated)
    pending = decoder.getstate()[0] if truncated else b""
    if truncated:
        warnings.append(PageWarning(None, f"only the first {max_bytes} bytes were read"))
    return HtmlText(text, charset, bom, len(bom) + len(raw) - len(pending), truncated,
                    tuple(warnings))


def _header_charset(content_type: str | None) -> str | None:
    if not content_type:
        return None
    message = email.message.Message()
    message["content-type"] = content_type
    try:
        charset = message.get_content_charset()
    except (ValueError, LookupError):
        return None
    return charset if isinstance(charset, str) and charset else None


def _codec(label: str | None, where: str, warnings: list[PageWarning]) -> str | None:
    if label is None:
        return None
    name = label.strip().strip("'\"").lower()
    if name in _WINDOWS_1252:
        return "cp1252"
    if name in _REFUSED:
        warnings.append(PageWarning(None, f"charset {label!r} in {where} refused"))
        return None
    try:
        codec = codecs.lookup(name).name
        b"a".decode(codec, "ignore")  # bytes-to-bytes codecs (base64, zlib...) are no charsets
    except (LookupError, UnicodeError, ValueError):
        warnings.append(PageWarning(None, f"unknown charset {label!r} in {where}"))
        return None
    # Without a byte-order mark (one would have been seen first), HTML reads these as LE.
    return _NO_BOM.get(codec, codec)


class _Stop(Exception):
    """Ends a parse early (the parser has no other way to stop)."""


class _CharsetParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.charset: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "meta":
            values = {name: value or "" for name, value in attrs}
            if values.get("charset", "").strip():
                self.charset = values["charset"].strip()
            elif values.get("http-equiv", "").strip().lower() == "content-type":
                self.charset = _header_charset(values.get("content"))
            if self.charset:
                raise _Stop
        elif tag == "body" or tag not in _HEAD_TAGS:
            raise _Stop

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            raise _Stop


def _meta_charset(prefix: bytes) -> str | None:
    parser = _CharsetParser()
    # latin-1 maps every byte to one character: ASCII markup reads the same in any
    # ASCII-compatible charset, which is all a <meta charset> can be written in.
    with contextlib.suppress(_Stop):
        parser.feed(prefix.decode("latin-1"))
    return parser.charset


# -- directives ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Reading:
    """Directives accumulated from every source that applies; only ever more restrictive."""

    noindex: bool = False
    nofollow: bool = False
    noarchive: bool = False
    nosnippet: bool = False
    unavailable_after: float | None = None
    carried: dict[str, None] = field(default_factory=dict)  # ordered set

    def flag(self, name: str) -> None:
        if name in ("noindex", "none"):
            self.noindex = True
        if name in ("nofollow", "none"):
            self.nofollow = True
        if name in ("noarchive", "nocache"):  # nocache: Bing's name for noarchive
            self.noarchive = True
        if name == "nosnippet":
            self.nosnippet = True
        if name in _CARRIED_FLAGS:
            self.carried[name] = None

    def until(self, when: float) -> None:
        if self.unavailable_after is None or when < self.unavailable_after:
            self.unavailable_after = when


def _read_directives(value: str, reading: _Reading, warnings: list[PageWarning],
                     where: str, line: int | None) -> None:
    """Read a comma-separated directive list (META content, X-Robots-Tag, section tag)."""
    pieces = value.split(",")
    i = 0
    while i < len(pieces):
        piece = pieces[i].strip()
        i += 1
        if not piece:
            continue
        name, colon, argument = piece.partition(":")
        name = name.strip().lower()
        if colon and name == "unavailable_after":
            when = _parse_date(argument)
            # Dates may hold commas ("Wed, 25 Jun 2010 15:00:00 GMT"): take the pieces that
            # follow until the date reads, as long as they are not directives themselves.
            j = i
            while when is None and j < len(pieces) and not _is_directive(pieces[j]):
                argument += "," + pieces[j]
                j += 1
                when = _parse_date(argument)
            if when is None:
                warnings.append(PageWarning(line, f"{where}: unavailable_after date not "
                                                  f"understood: {argument.strip()!r}"))
                continue
            i = j
            reading.until(when)
        elif colon and name in _CARRIED_VALUES:
            reading.carried[f"{name}:{''.join(argument.split()).lower()}"] = None
        elif not colon and name in _FLAGS | _CARRIED_FLAGS:
            reading.flag(name)
        elif not colon and len(words := name.split()) > 1 and \
                all(word in _FLAGS | _CARRIED_FLAGS for word in words):
            warnings.append(PageWarning(line, f"{where}: directives should be separated by "
                                              f"commas: {piece!r}"))
            for word in words:
                reading.flag(word)
        else:
            warnings.append(PageWarning(line, f"{where}: unknown directive {piece!r} ignored"))


def _is_directive(piece: str) -> bool:
    return piece.partition(":")[0].strip().lower() in _DIRECTIVES


def _parse_date(text: str) -> float | None:
    """RFC 822/1123/850 dates (with zone names such as PST) or ISO 8601; no zone means UTC."""
    text = text.strip()
    if not text:
        return None
    when = _rfc_date(text) or _rfc_date(text + " 00:00:00")  # "25 Jun 2010": its midnight
    if when is None:
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        return when.timestamp()
    except (OverflowError, ValueError, OSError):
        return None


def _rfc_date(text: str) -> datetime | None:
    try:
        return email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _read_header(value: str, agents: frozenset[str], reading: _Reading,
                 warnings: list[PageWarning]) -> None:
    """One X-Robots-Tag value: for every agent, or for one (`otherbot: nofollow`)."""
    head, colon, rest = value.partition(":")
    name = head.strip().lower()
    if colon and name not in _DIRECTIVES and _AGENT_NAME.fullmatch(name):
        if name in agents:
            _read_directives(rest, reading, warnings, f"X-Robots-Tag for {name}", None)
        return
    _read_directives(value, reading, warnings, "X-Robots-Tag", None)


def _normal_form(reading: _Reading, noindex: bool, now: float) -> str:
    parts = [name for name, on in (("noindex", noindex), ("nofollow", reading.nofollow),
                                   ("noarchive", reading.noarchive),
                                   ("nosnippet", reading.nosnippet)) if on]
    until = reading.unavailable_after
    if until is not None and until > now:
        stamp = datetime.fromtimestamp(until, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        parts.append(f"unavailable_after: {stamp}")
    parts.extend(reading.carried)
    return ", ".join(parts) or "all"


# -- the page -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Open:
    """A section tag not yet closed."""

    line: int
    noindex: bool  # effective: its own and those of the sections around it
    nofollow: bool
    text: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


Mode = Literal["head", "full", "strip"]


class _PageParser(HTMLParser):
    """One pass over a page. head: META and <base> only, stopping where the body begins. full:
    also section tags and links. strip: full, and the edits that remove noindex text and
    nofollow hrefs."""

    def __init__(self, text: str, agents: frozenset[str], mode: Mode) -> None:
        super().__init__(convert_charrefs=True)
        self.source = text
        self.agents = agents
        self.mode: Mode = mode
        self.in_head = True
        self.body_line: int | None = None  # where the body began: (line, column)
        self.body_column = 0
        self.metas: list[tuple[int, str, str | None]] = []  # (line, name, content)
        self.base: str | None = None
        self.links: list[Link] = []
        self.sections: list[Section] = []
        self.saw_section_tag = False
        self.warnings: list[PageWarning] = []
        self._open: list[_Open] = []
        self._ignored = 0  # section tags opened beyond MAX_SECTION_DEPTH
        self._raw: str | None = None  # inside <script> or <style>: not text
        self.edits: list[tuple[int, int, str]] = []  # (start, end, replacement), in order
        self._pending: int | None = None  # start of a text run to delete, ended by next event
        self._line_starts: list[int] | None = None

    # Every handler starts with _event(): the previous text run ends where this event starts.

    def _event(self) -> None:
        if self._pending is not None:
            start, end = self._pending, self._here()
            run = self.source[start:end]
            # The words go; the white space around them stays, and with it the page's layout.
            stripped = run.strip()
            self.edits.append((start, end, run[:run.index(stripped)] +
                               run[run.index(stripped) + len(stripped):]))
            self._pending = None

    def _here(self) -> int:
        line, column = self.getpos()
        return self.absolute(line, column)

    def absolute(self, line: int, column: int) -> int:
        if self._line_starts is None:
            starts = [0]
            found = self.source.find("\n")
            while found >= 0:
                starts.append(found + 1)
                found = self.source.find("\n", found + 1)
            self._line_starts = starts
        return self._line_starts[line - 1] + column

    def run(self, *, close: bool) -> None:
        try:
            self.feed(self.source)
            if close:
                self.close()
        except _Stop:
            return
        self._event()
        if self.mode != "head":
            for still in reversed(self._open):
                self.warnings.append(PageWarning(still.line, "section tag never closed: it "
                                                             "runs to the end of the page"))
                self._finish(still, None)

    def _body_begins(self) -> None:
        if self.in_head:
            self.in_head = False
            self.body_line, self.body_column = self.getpos()
            if self.mode == "head":
                raise _Stop

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._event()
        if tag == "body" or tag not in _HEAD_TAGS:
            self._body_begins()
        if tag == "meta":
            self._meta(attrs)
        elif tag == "base" and self.in_head and self.base is None:
            href = dict(attrs).get("href")
            if href is not None:
                self.base = _clean_url(href)
        elif tag in _RAW_TEXT:
            self._raw = tag
        elif tag in _LINK_TAGS and self.mode != "head":
            self._link(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        self._event()
        if tag == "head":
            self._body_begins()
        if tag == self._raw:
            self._raw = None

    def handle_data(self, data: str) -> None:
        self._event()
        if not self._open or self._raw is not None:
            return
        self._open[-1].text.append(data)
        if self.mode == "strip" and self._open[-1].noindex and data.strip():
            self._pending = self._here()

    def handle_comment(self, data: str) -> None:
        self._event()
        text = data.strip()
        lowered = text.lower()
        if lowered[:7] == "/robots" and (len(text) == 7 or text[7].isspace()):
            self.saw_section_tag = True
            if self.mode != "head":
                self._close_section()
        elif lowered[:6] == "robots" and (len(text) == 6 or text[6].isspace()):
            self.saw_section_tag = True
            if self.mode != "head":
                self._open_section(text)

    def handle_decl(self, decl: str) -> None:
        self._event()

    def handle_pi(self, data: str) -> None:
        self._event()

    def unknown_decl(self, data: str) -> None:
        self._event()

    def _meta(self, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        name = (values.get("name") or "").strip().lower()
        if name != "robots" and name not in self.agents:
            return
        line = self.getpos()[0]
        if not self.in_head:
            self.warnings.append(PageWarning(line, f"META {name} outside the head ignored"))
            return
        self.metas.append((line, name, values.get("content")))

    def _link(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if href is None:
            return
        href = _clean_url(href)
        nofollow = bool(self._open) and self._open[-1].nofollow
        # "#top" is a place in this page, not a link to another.
        if href and not href.startswith("#"):
            self.links.append(Link(href, self.getpos()[0], nofollow))
            if self._open:
                self._open[-1].links.append(href)
        if self.mode == "strip" and nofollow:
            raw = self.get_starttag_text() or ""
            start = self._here()
            kept = "".join(f" {name}" if value is None else f' {name}="{escape(value)}"'
                           for name, value in attrs if name != "href")
            end = "/>" if raw.endswith("/>") else ">"
            self.edits.append((start, start + len(raw), f"<{tag}{kept}{end}"))

    def _open_section(self, text: str) -> None:
        line = self.getpos()[0]
        if len(self._open) >= MAX_SECTION_DEPTH:
            self._ignored += 1
            self.warnings.append(PageWarning(line, f"section tags nested deeper than "
                                                   f"{MAX_SECTION_DEPTH} ignored"))
            return
        content = _comment_attributes(text).get("content")
        own = _Reading()
        if content is None:
            self.warnings.append(PageWarning(line, "section tag without content=: no effect"))
        else:
            _read_directives(content, own, self.warnings, "section tag", line)
            if own.noarchive or own.nosnippet or own.unavailable_after or own.carried:
                self.warnings.append(PageWarning(line, f"section tag: only noindex, nofollow "
                                                       f"and none apply to a section: "
                                                       f"{content!r}"))
        outer = self._open[-1] if self._open else None
        if outer is not None:
            self.warnings.append(PageWarning(line, f"section tag nested in the section of line "
                                                   f"{outer.line}: both apply"))
        self._open.append(_Open(line, own.noindex or bool(outer and outer.noindex),
                                own.nofollow or bool(outer and outer.nofollow)))

    def _close_section(self) -> None:
        line = self.getpos()[0]
        if self._ignored:
            self._ignored -= 1
        elif not self._open:
            self.warnings.append(PageWarning(line, "<!-- /robots --> without an open section "
                                                   "tag ignored"))
        else:
            self._finish(self._open.pop(), line)

    def _finish(self, section: _Open, end_line: int | None) -> None:
        self.sections.append(Section(section.line, end_line, section.noindex, section.nofollow,
                                     " ".join("".join(section.text).split()),
                                     tuple(section.links)))


class _AttributeParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.attributes: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self.attributes:
            self.attributes = dict(attrs)


def _comment_attributes(text: str) -> dict[str, str | None]:
    """`robots content="none"` read as the attributes of a tag, by the HTML parser itself."""
    parser = _AttributeParser()
    parser.feed(f"<{text}>")
    parser.close()
    return parser.attributes


def _clean_url(value: str) -> str:
    # What a browser does to an attribute before reading it as a URL.
    return value.strip(_URL_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")


def read_page(page: bytes | HtmlText, *, now: float, content_type: str | None = None,
              x_robots_tag: Sequence[str] = (), agents: Iterable[str] = (),
              links: bool = True) -> PageSignals:
    """What a page and its X-Robots-Tag headers say, for an agent.

    `agents` are the names the agent answers to (agent_tokens() of its User-Agent, or the one
    product token it obeys robots.txt as): `<meta name="robots">` always applies, `<meta
    name="<token>">` and `X-Robots-Tag: <token>: ...` only for those. `now` (epoch seconds)
    decides whether an unavailable_after date has passed. META is read in the head only (seed
    002: "All meta tags must be placed within the <head>"). With `links=False` only the head is
    read: no links, no sections (a cheap first look; `may_have_sections` says whether a full
    read could find any). Never raises on content.
    """
    html = page if isinstance(page, HtmlText) else decode_html(page, content_type)
    names = frozenset(agent.lower() for agent in agents)
    warnings = list(html.warnings)
    reading = _Reading()
    for value in x_robots_tag:
        _read_header(value, names, reading, warnings)
    parser = _PageParser(html.text, names, "full" if links else "head")
    parser.run(close=True)
    for line, name, content in parser.metas:
        if content is None:
            warnings.append(PageWarning(line, f"META {name} without content ignored"))
        else:
            _read_directives(content, reading, warnings, f"META {name}", line)
    warnings.extend(parser.warnings)
    noindex = reading.noindex or (reading.unavailable_after is not None and
                                  reading.unavailable_after <= now)
    if parser.body_line is None:
        rest = ""
    else:
        rest = html.text[parser.absolute(parser.body_line, parser.body_column):]
    return PageSignals(
        noindex=noindex, nofollow=reading.nofollow, noarchive=reading.noarchive,
        nosnippet=reading.nosnippet, unavailable_after=reading.unavailable_after,
        x_robots_tag=_normal_form(reading, noindex, now), carried=tuple(reading.carried),
        base=parser.base, links=tuple(parser.links),
        sections=tuple(sorted(parser.sections, key=lambda section: section.line)),
        links_read=links, may_have_sections=parser.saw_section_tag or "robots" in rest.lower(),
        charset=html.charset, truncated=html.truncated, warnings=tuple(warnings))


def strip_page(body: bytes, html: HtmlText | None = None, *,
               content_type: str | None = None) -> bytes | None:
    """The page without the text of its noindex sections and the hrefs of the links in its
    nofollow sections (the <a> elements and their text stay); None when nothing changes.

    Only the first MAX_PAGE_BYTES are rewritten; the rest is appended as it was. Markup, scripts
    and styles inside noindex sections are kept: only text goes. Whole-page directives remove
    nothing (they travel in X-Robots-Tag). None too when the page cannot be written back in its
    charset.
    """
    html = html or decode_html(body, content_type)
    parser = _PageParser(html.text, frozenset(), "strip")
    # A cut page is not closed: what the parser held back at the cut passes through as it was.
    parser.run(close=not html.truncated)
    if not parser.edits:
        return None
    parts: list[str] = []
    done = 0
    for start, end, replacement in parser.edits:
        parts.append(html.text[done:start])
        parts.append(replacement)
        done = end
    parts.append(html.text[done:])
    try:
        encoded = "".join(parts).encode(html.charset, "surrogateescape")
    except UnicodeEncodeError:
        return None
    return html.bom + encoded + body[html.consumed:]
