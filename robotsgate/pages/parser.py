"""The page as source text: one pass of the standard library's tokenizer (html.parser), which
knows where in the source each piece of markup is -- the HTML5 tree (robotsgate.pages.tree) does
not. Strip mode takes its edits from here (the text runs of noindex sections, the start tags of
links in nofollow sections) and checks the result against the tree (robotsgate.pages.strip).
"""

from html import escape
from html.parser import HTMLParser

from robotsgate.pages.directives import Directives, read_directives
from robotsgate.pages.tree import MAX_SECTION_DEPTH, comment_attributes, line_starts

# Elements that may stand in the head; any other start tag means the body has begun (the
# <meta charset> look-up of robotsgate.pages.charset stops there).
HEAD_TAGS = frozenset({"html", "head", "title", "meta", "link", "base", "script", "style",
                       "noscript", "template"})
_RAW_TEXT = frozenset({"script", "style"})
_LINK_TAGS = frozenset({"a", "area"})


class StopParsing(Exception):
    """Ends a parse early (the parser has no other way to stop)."""


class StripEdits(HTMLParser):
    """The edits that remove the text of noindex sections and the hrefs of links in nofollow
    sections: `edits`, (start, end, replacement) in source order."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.source = text
        self.edits: list[tuple[int, int, str]] = []
        self._open: list[tuple[bool, bool]] = []  # (noindex, nofollow), effective
        self._ignored = 0  # section tags opened beyond MAX_SECTION_DEPTH
        self._raw: str | None = None  # inside <script> or <style>: not text
        self._pending: int | None = None  # start of a text run to delete, ended by next event
        self._line_starts: list[int] | None = None

    def run(self, *, close: bool) -> None:
        self.feed(self.source)
        if close:
            self.close()
        self._event()

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
        if self._line_starts is None:
            self._line_starts = line_starts(self.source)
        return self._line_starts[line - 1] + column

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._event()
        if tag in _RAW_TEXT:
            self._raw = tag
        elif tag in _LINK_TAGS and self._open and self._open[-1][1]:
            self._unlink(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        self._event()
        if tag == self._raw:
            self._raw = None

    def handle_data(self, data: str) -> None:
        self._event()
        if self._open and self._raw is None and self._open[-1][0] and data.strip():
            self._pending = self._here()

    def handle_comment(self, data: str) -> None:
        self._event()
        text = data.strip()
        lowered = text.lower()
        if lowered[:7] == "/robots" and (len(text) == 7 or text[7].isspace()):
            if self._ignored:
                self._ignored -= 1
            elif self._open:
                self._open.pop()
        elif lowered[:6] == "robots" and (len(text) == 6 or text[6].isspace()):
            if len(self._open) >= MAX_SECTION_DEPTH:
                self._ignored += 1
                return
            content = comment_attributes(text).get("content")
            own = Directives()
            if content is not None:
                read_directives(content, own, [], "section tag", None)
            outer = self._open[-1] if self._open else (False, False)
            self._open.append((own.noindex or outer[0], own.nofollow or outer[1]))

    def handle_decl(self, decl: str) -> None:
        self._event()

    def handle_pi(self, data: str) -> None:
        self._event()

    def unknown_decl(self, data: str) -> None:
        self._event()

    def _unlink(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if all(name != "href" for name, _ in attrs):
            return
        raw = self.get_starttag_text() or ""
        start = self._here()
        kept = "".join(f" {name}" if value is None else f' {name}="{escape(value)}"'
                       for name, value in attrs if name != "href")
        end = "/>" if raw.endswith("/>") else ">"
        self.edits.append((start, start + len(raw), f"<{tag}{kept}{end}"))
