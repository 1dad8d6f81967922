"""A page read as a browser reads it: one HTML5 parse (lexbor, through selectolax), then a walk.

The HTML standard's tree construction decides what is in the head (a META between </head> and
<body> is moved into it), which attribute counts (the first of two with one name), what is a
comment (`<!-->`, `--!>`) and what is text (`<title>`, `<script>` up to `</script/>`). From the
tree: META robots (and META for the agent's own names) in the head, the first `<base href>`,
links, and the section tags some crawlers read (Spiderline's `<!-- robots content="..." -->` ...
`<!-- /robots -->`) in tree order.

Scripting. With scripting off (most bots) `<noscript><img></noscript>` in the head ends the head,
and a later META lands in the body; with scripting on (a headless browser) it stays in the head.
A robots directive only ever restricts, so the reading takes both: a META in the head either
way counts (the second parse, scripting on, only happens for a head that holds a <noscript>).

The tree has no source positions: lines (in warnings, links and sections) are found by looking
for each node's source text forward from the previous one, and are as good as that search.
"""

from bisect import bisect_right
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser, LexborNode

from robotsgate.pages.directives import Directives, read_directives
from robotsgate.pages.license_links import is_rsl_link, is_rsl_type
from robotsgate.pages.signals import Link, PageWarning, Section

# Section tags nested deeper than this are ignored (with a warning): a hostile page must not make
# the reading quadratic.
MAX_SECTION_DEPTH = 64
# W3C TDM Reservation Protocol: <meta name="tdm-reservation" content="1"> reserves text and data
# mining rights (EU DSM Directive, Article 4).
TDM_RESERVATION = "tdm-reservation"
TDM_POLICY = "tdm-policy"  # TDMRep: where the terms of a reservation are
_LINK_TAGS = frozenset({"a", "area"})
_NOT_TEXT = frozenset({"script", "style"})
_URL_SPACE = " \t\n\r\f"


@dataclass(frozen=True, slots=True)
class Meta:
    line: int
    name: str  # lower-cased
    content: str | None


@dataclass(frozen=True, slots=True)
class TreeReading:
    metas: tuple[Meta, ...]  # ours, in the head
    base: str | None  # the first <base href> of the document
    links: tuple[Link, ...]  # none when only the head was read
    sections: tuple[Section, ...]
    saw_section_tag: bool  # head only: the page may have section tags (False: it has none)
    warnings: tuple[PageWarning, ...]
    licenses: tuple[str, ...] = ()  # <link rel="license" type="application/rsl+xml"> hrefs
    inline_licenses: tuple[str, ...] = ()  # <script type="application/rsl+xml"> texts


def parse(text: str, *, scripting: bool = False) -> LexborHTMLParser:
    """The page's tree. Text a charset could not decode (kept as lone surrogates) is given to
    the parser as the bytes it was, which it reads as U+FFFD, as a browser does."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass")
    return LexborHTMLParser(data, scripting=scripting)


# The head of a page is read from so much of it first (characters): most heads are shorter, and
# parsing a 2 MiB page whole costs some 40 ms.
HEAD_PREFIXES = (8 * 1024, 128 * 1024)
_COMMENT_OPENINGS = ("<!--", "<!", "</")


def read_tree(text: str, agents: frozenset[str], *, links: bool) -> TreeReading:
    """The page's META, base, and (with `links`) its links and sections. Without `links`, only
    the head is read, and saw_section_tag only says whether the page may have section tags
    (False: it has none)."""
    if links:
        tree = parse(text)
        walk = _Walk(text, links)
        walk.run(tree)
        saw_section_tag = walk.saw_section_tag
    else:
        tree = _head_tree(text)
        walk = _Walk(text, links)
        saw_section_tag = may_have_section_tags(text)
    warnings: list[PageWarning] = []
    metas = _metas(text, tree, agents, warnings)
    base_node = tree.css_first("base[href]")
    base = None
    if base_node is not None:
        href = base_node.attrs.get("href")
        base = None if href is None else _clean_url(href)
    warnings.extend(walk.warnings)
    return TreeReading(tuple(metas), base, tuple(walk.links),
                       tuple(sorted(walk.sections, key=lambda section: section.line)),
                       saw_section_tag, tuple(warnings), _licenses(tree),
                       _inline_licenses(tree))


def _licenses(tree: LexborHTMLParser) -> tuple[str, ...]:
    """The hrefs of the head's links to RSL licences (license_links), in page order, each once:
    `license` is no body-ok relation, so a link in the body is not the page's."""
    found: dict[str, None] = {}
    for node in tree.css("link[rel][href]"):
        attrs = node.attrs
        href = attrs.get("href")
        if href is not None and is_rsl_link(attrs.get("rel"), attrs.get("type")) and \
                _in_head(node):
            found[_clean_url(href)] = None
    return tuple(found)


# Licences embedded in one page that are read: each is parsed for every request it judges.
MAX_INLINE = 8


def _inline_licenses(tree: LexborHTMLParser) -> tuple[str, ...]:
    """The texts of the head's `<script type="application/rsl+xml">` elements (RSL: a licence
    embedded in the page), in page order, each once, at most MAX_INLINE: read from the head,
    as the page's `<link>`s are. A script's text is raw text: what the parser gives is the XML
    as written."""
    found: dict[str, None] = {}
    for node in tree.css("script[type]"):
        if is_rsl_type(node.attrs.get("type")) and _in_head(node):
            found[node.text(deep=True)] = None
            if len(found) == MAX_INLINE:
                break
    return tuple(found)


def _head_tree(text: str) -> LexborHTMLParser:
    """A tree whose head is the page's: of the first HEAD_PREFIXES characters when the body has
    begun in them (once the parser is in the body, nothing goes into the head any more), else
    of the whole page."""
    for size in HEAD_PREFIXES:
        if len(text) <= size:
            break
        # Cut after a '>': a prefix that ends in '<' or '</' would end in text, which begins a
        # body that the page itself may not have begun there.
        cut = text.rfind(">", 0, size) + 1
        if cut == 0:
            continue
        tree = parse(text[:cut])
        body = tree.body
        # The parser makes an empty body at the end of its input: only a body with something in
        # it shows that the page's own body had begun. Unless a <noscript> in the head began it:
        # with scripting on, the head would go on.
        if body is not None and body.child is not None and \
                tree.css_first("head noscript") is None:
            return tree
    return parse(text)


def may_have_section_tags(text: str) -> bool:
    """False when no comment of the page can be a section tag: one found in the source text
    without parsing (a comment's data, stripped, begins with "robots" or "/robots"; comments
    open with "<!--", "<!" or "</"). True may be a false alarm."""
    lowered = text.lower()
    found = lowered.find("robots")
    # lexbor reads a page ending in "<!" or "<!-" as ending in a comment that holds the text
    # before it (the standard: an empty one). It is the last node, so it changes no reading,
    # but it is a comment all the same.
    if found >= 0 and lowered.endswith(("<!", "<!-")):
        return True
    while found >= 0:
        at = found
        while at > 0 and lowered[at - 1].isspace():
            at -= 1
        if lowered.endswith(_COMMENT_OPENINGS, 0, at):
            return True
        if at > 0 and lowered[at - 1] == "/":  # "<!-- /robots"
            at -= 1
            while at > 0 and lowered[at - 1].isspace():
                at -= 1
            if lowered.endswith(_COMMENT_OPENINGS, 0, at):
                return True
        found = lowered.find("robots", found + 1)
    return False


@dataclass(frozen=True, slots=True)
class StripView:
    """What strip mode must do, as the tree sees it, and what it must leave."""

    sections: tuple[tuple[bool, bool], ...]  # (noindex, nofollow) of each section, in order
    kept_links: tuple[str, ...]  # hrefs outside nofollow sections, in order
    nofollow_links: int  # links inside nofollow sections
    noindex_words: bool  # whether noindex sections hold any text but white space
    kept_text: str  # the text outside noindex sections, white space collapsed


def strip_view(text: str) -> StripView:
    """The tree's view of a page for strip mode (robotsgate.pages.strip checks edits by it)."""
    walk = _Walk(text, True, for_strip=True)
    walk.run(parse(text))
    return StripView(
        tuple((section.noindex, section.nofollow) for section in walk.sections),
        tuple(link.href for link in walk.links if not link.nofollow),
        sum(link.nofollow for link in walk.links),
        any((node.text_content or "").strip() for node in walk.noindex_text),
        " ".join("".join(walk.kept).split()))


def strip_tree(text: str) -> str:
    """The page stripped through its tree, serialised again: the text of noindex sections
    removed (its white space kept), the hrefs of links in nofollow sections removed. Correct by
    construction, but the markup is the serialiser's, not the page's own."""
    tree = parse(text)
    walk = _Walk(text, True, for_strip=True)
    walk.run(tree)
    for node in walk.nofollow_links:
        del node.attrs["href"]
    for node in walk.noindex_text:
        content = node.text_content or ""
        words = content.strip()
        if words:
            at = content.index(words)
            spaces = content[:at] + content[at + len(words):]
            if spaces:
                node.replace_with(spaces)
            else:
                node.decompose()
    html = tree.html or ""
    if tree.css_first("plaintext") is not None:
        # Everything after <plaintext> is its text, to the end of the page: end tags written
        # after it would be read back as text. They go when nothing else follows them.
        cut = html.rfind("</plaintext>")
        if _only_end_tags(html[cut:]):
            html = html[:cut]
    return html


def _only_end_tags(tail: str) -> bool:
    pieces = tail.split("<")
    return pieces[0] == "" and all(piece[:1] == "/" and piece[-1:] == ">" and
                                   piece[1:-1].isalnum() for piece in pieces[1:])


def _metas(text: str, tree: LexborHTMLParser, agents: frozenset[str],
           warnings: list[PageWarning]) -> list[Meta]:
    head, body = _our_metas(text, tree, agents)
    # A <noscript> in the head reads two ways: with scripting off it ends at the first tag it
    # cannot hold (and what follows may land in the body, or in a <title> that runs to the end),
    # with scripting on it is text up to </noscript>. Either way counts, so a head that holds
    # one is read the other way too, whatever the first reading found.
    if tree.css_first("head noscript") is not None:
        seen = {(meta.name, meta.content) for meta in head}
        again, _ = _our_metas(text, parse(text, scripting=True), agents)
        for meta in again:
            if (meta.name, meta.content) not in seen:
                seen.add((meta.name, meta.content))
                head.append(meta)
        body = [meta for meta in body if (meta.name, meta.content) not in seen]
    for meta in body:
        warnings.append(PageWarning(meta.line, f"META {meta.name} outside the head ignored"))
    return head


def _our_metas(text: str, tree: LexborHTMLParser,
               agents: frozenset[str]) -> tuple[list[Meta], list[Meta]]:
    """The META for robots, for the agent, tdm-reservation and tdm-policy: (in the head,
    elsewhere)."""
    head: list[Meta] = []
    body: list[Meta] = []
    where = _Lines(text)
    for node in tree.css("meta[name]"):
        attrs = node.attrs
        name = (attrs.get("name") or "").strip().lower()
        if name != "robots" and name != TDM_RESERVATION and name != TDM_POLICY and \
                name not in agents:
            continue
        content = attrs.get("content")
        meta = Meta(where.find("<meta", "<META", content or name), name, content)
        (head if _in_head(node) else body).append(meta)
    return head, body


def _in_head(node: LexborNode) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag == "head":
            return True
        parent = parent.parent
    return False


@dataclass(slots=True)
class _Open:
    """A section tag not yet closed."""

    line: int
    noindex: bool  # effective: its own and those of the sections around it
    nofollow: bool
    text: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


class _Walk:
    """The tree in document order: section tags, the text and links inside them, all links."""

    def __init__(self, text: str, links: bool, *, for_strip: bool = False) -> None:
        self.read_links = links
        self.for_strip = for_strip
        # for_strip: the text nodes of noindex sections, the links of nofollow ones, and the
        # text outside noindex sections (what strip mode must keep).
        self.noindex_text: list[LexborNode] = []
        self.nofollow_links: list[LexborNode] = []
        self.kept: list[str] = []
        self.where = _Lines(text)
        self.links: list[Link] = []
        self.sections: list[Section] = []
        self.saw_section_tag = False
        self.warnings: list[PageWarning] = []
        self._open: list[_Open] = []
        self._ignored = 0  # section tags opened beyond MAX_SECTION_DEPTH

    def run(self, tree: LexborHTMLParser) -> None:
        # From the document: comments before <html> and after it are outside the root element.
        root = tree.root
        if root is None:
            return
        root = root.parent or root
        if not self.read_links:
            # Only whether there are section tags: comments, no text.
            for node in root.traverse(include_text=False):
                if node.is_comment_node and _section_tag(node.comment_content or ""):
                    self.saw_section_tag = True
                    return
            return
        for node in root.traverse(include_text=True):
            if node.is_text_node:
                if self._open or self.for_strip:
                    parent = node.parent
                    if parent is None or parent.tag not in _NOT_TEXT:
                        self._text(node)
            elif node.is_comment_node:
                self._comment(node.comment_content or "")
            elif node.tag in _LINK_TAGS:
                self._link(node)
        for still in reversed(self._open):
            self.warnings.append(PageWarning(still.line, "section tag never closed: it runs "
                                                         "to the end of the page"))
            self._finish(still, None)

    def _text(self, node: LexborNode) -> None:
        text = node.text_content or ""
        if self._open:
            self._open[-1].text.append(text)
        if self.for_strip:
            if self._open and self._open[-1].noindex:
                self.noindex_text.append(node)
            else:
                self.kept.append(text)

    def _comment(self, data: str) -> None:
        kind = _section_tag(data)
        if kind is None:
            return
        self.saw_section_tag = True
        line = self.where.find(data)
        if kind == "close":
            self._close_section(line)
        else:
            self._open_section(data.strip(), line)

    def _link(self, node: LexborNode) -> None:
        raw = node.attrs.get("href")
        if raw is None:
            return
        href = _clean_url(raw)
        # "#top" is a place in this page, not a link to another.
        if not href or href.startswith("#"):
            return
        nofollow = bool(self._open) and self._open[-1].nofollow
        if nofollow and self.for_strip:
            self.nofollow_links.append(node)
        self.links.append(Link(href, self.where.find(raw), nofollow))
        if self._open:
            self._open[-1].links.append(href)

    def _open_section(self, text: str, line: int) -> None:
        if len(self._open) >= MAX_SECTION_DEPTH:
            self._ignored += 1
            self.warnings.append(PageWarning(line, f"section tags nested deeper than "
                                                   f"{MAX_SECTION_DEPTH} ignored"))
            return
        content = comment_attributes(text).get("content")
        own = Directives()
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

    def _close_section(self, line: int) -> None:
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


def _section_tag(data: str) -> str | None:
    """"open" for `robots ...`, "close" for `/robots`, None for any other comment."""
    text = data.strip()
    lowered = text[:8].lower()
    if lowered[:7] == "/robots" and (len(text) == 7 or text[7].isspace()):
        return "close"
    if lowered[:6] == "robots" and (len(text) == 6 or text[6].isspace()):
        return "open"
    return None


def comment_attributes(text: str) -> dict[str, str | None]:
    """`robots content="none"` read as the attributes of a tag, by the HTML parser itself (so
    the first of two attributes with one name counts, as on any tag)."""
    node = LexborHTMLParser(f"<{text}>".encode("utf-8", "surrogatepass")).css_first("robots")
    return {} if node is None else dict(node.attributes)


def _clean_url(value: str) -> str:
    # What a URL parser does to an attribute before reading it (the rest: pages.links).
    return value.strip(_URL_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")


class _Lines:
    """Line numbers for nodes met in source order: each is looked for from where the previous
    one was found; one not found is given the previous one's line."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.cursor = 0
        self._starts: list[int] | None = None

    def find(self, *needles: str) -> int:
        """The line of the nearest of `needles` from the cursor."""
        nearest = -1
        for needle in needles:
            found = self.text.find(needle, self.cursor) if needle else -1
            if found >= 0 and (nearest < 0 or found < nearest):
                nearest = found
        if nearest < 0:
            return self._line(max(0, self.cursor - 1))
        self.cursor = nearest + 1
        return self._line(nearest)

    def _line(self, offset: int) -> int:
        if self._starts is None:
            self._starts = line_starts(self.text)
        return bisect_right(self._starts, offset)


def line_starts(text: str) -> list[int]:
    """The offset where each line of text starts (the first is 0): found once, when a line
    number is first asked for, since most pages are read without one."""
    starts = [0]
    found = text.find("\n")
    while found >= 0:
        starts.append(found + 1)
        found = text.find("\n", found + 1)
    return starts
