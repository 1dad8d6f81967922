"""One pass of the standard library's HTML parser over a decoded page (never regular expressions).

It finds what the reading needs -- META robots (and META for the agent's own names) in the head,
`<base href>`, links, and the section tags of seed 004 (`<!-- robots content="..." -->` ...
`<!-- /robots -->`) -- and, in strip mode, the edits that remove the text of noindex sections and
the hrefs of links in nofollow sections.
"""

from dataclasses import dataclass, field
from html import escape
from html.parser import HTMLParser
from typing import Literal

from robotsgate.pages.directives import Reading, read_directives
from robotsgate.pages.signals import Link, PageWarning, Section

# Section tags nested deeper than this are ignored (with a warning): a hostile page must not make
# the reading quadratic.
MAX_SECTION_DEPTH = 64
# Elements that may stand in the head; any other start tag means the body has begun.
HEAD_TAGS = frozenset({"html", "head", "title", "meta", "link", "base", "script", "style",
                       "noscript", "template"})
_RAW_TEXT = frozenset({"script", "style"})
# W3C TDM Reservation Protocol: <meta name="tdm-reservation" content="1"> reserves text and data
# mining rights (EU DSM Directive, Article 4).
TDM_RESERVATION = "tdm-reservation"
_LINK_TAGS = frozenset({"a", "area"})
_URL_SPACE = " \t\n\r\f"


class StopParsing(Exception):
    """Ends a parse early (the parser has no other way to stop)."""


@dataclass(slots=True)
class _Open:
    """A section tag not yet closed."""

    line: int
    noindex: bool  # effective: its own and those of the sections around it
    nofollow: bool
    text: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


Mode = Literal["head", "full", "strip"]


class PageParser(HTMLParser):
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
        except StopParsing:
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
                raise StopParsing

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._event()
        if tag == "body" or tag not in HEAD_TAGS:
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
        if name != "robots" and name != TDM_RESERVATION and name not in self.agents:
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
        own = Reading()
        if content is None:
            self.warnings.append(PageWarning(line, "section tag without content=: no effect"))
        else:
            read_directives(content, own, self.warnings, "section tag", line)
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
