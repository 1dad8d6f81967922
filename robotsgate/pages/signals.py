"""What a page says to robots, as values: the reading of a page, its links, sections and warnings.

Every other module of the package produces or consumes these; none of them does any reading.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PageWarning:
    line: int | None  # line of the page; None for a header
    message: str

    def __str__(self) -> str:
        return self.message if self.line is None else f"line {self.line}: {self.message}"


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
    # <meta name="tdm-reservation" content="1"> in the head: text and data mining rights reserved
    # (read as train-ai=n and ai-input=n: robotsgate.mitm.usage); "0": not reserved (a
    # statement too: it supersedes a tdm-reservation header); None: no such META.
    tdm_reservation: str | None = None
    tdm_policy: str | None = None  # <meta name="tdm-policy" content="URL">, with a reservation
    # noai, noimageai said by the page's META for this agent (and not already by its
    # X-Robots-Tag, which robotsgate.mitm.usage reads at the headers): read as train-ai=n.
    no_ai: tuple[str, ...] = ()
    # <link rel="license" type="application/rsl+xml" href> in the head, as written: where the
    # page says its RSL licence is (robotsgate.licensing.licenses judges it for the bot's purposes).
    licenses: tuple[str, ...] = ()
    # <script type="application/rsl+xml"> in the head: RSL licences embedded in the page, their
    # XML as written (robotsgate.licensing.licenses reads and judges them as it does linked ones).
    inline_licenses: tuple[str, ...] = ()
    charset: str = "utf-8"
    truncated: bool = False
    warnings: tuple[PageWarning, ...] = ()

    @property
    def tdm_reserved(self) -> bool:
        """Whether the page's META reserves text and data mining rights."""
        return self.tdm_reservation == "1"

    @property
    def all_links(self) -> tuple[str, ...]:
        """Every link of the page, each once, in page order."""
        return tuple(dict.fromkeys(link.href for link in self.links))

    @property
    def nofollow_links(self) -> tuple[str, ...]:
        """The links inside nofollow sections (a link also found elsewhere is still one)."""
        return tuple(dict.fromkeys(link.href for link in self.links if link.nofollow))


# The reading of a page that says nothing to robots (nothing restricted, nothing read).
NO_SIGNALS = PageSignals(noindex=False, nofollow=False, noarchive=False, nosnippet=False,
                         unavailable_after=None, x_robots_tag="all", links_read=False)
