"""Page-level robots signals: META robots, X-Robots-Tag and section tags.

robots.txt says what may be fetched; these say what may be indexed and which links may be
followed. Pure: bytes, header values and a "now" in, a frozen reading out. This module puts the
others together: which responses are pages and the reading of a page for one agent (the byte
check that spares most pages that reading is robotsgate.pages.prefilter).
"""

from collections.abc import Iterable, Sequence

from robotsgate.pages.charset import HtmlText, decode_html
from robotsgate.pages.directives import Directives, normal_form, read_directives, read_header
from robotsgate.pages.signals import PageSignals, PageWarning
from robotsgate.pages.tree import TDM_POLICY, TDM_RESERVATION, read_tree

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


def is_html(content_type: str | None) -> bool:
    """Whether a Content-Type is one this package reads (text/html, application/xhtml+xml)."""
    if not content_type:
        return False
    return content_type.partition(";")[0].strip().lower() in HTML_TYPES


def read_page(page: bytes | HtmlText, *, now: float, content_type: str | None = None,
              x_robots_tag: Sequence[str] = (), agents: Iterable[str] = (),
              links: bool = True) -> PageSignals:
    """What a page and its X-Robots-Tag headers say, for an agent.

    `agents` are the names the agent answers to (agent_tokens() of its User-Agent, or the one
    product token it obeys robots.txt as): `<meta name="robots">` always applies, `<meta
    name="<token>">` and `X-Robots-Tag: <token>: ...` only for those. `now` (epoch seconds)
    decides whether an unavailable_after date has passed. META is read in the head only (as the
    University of Cambridge's guide puts it, "All meta tags must be placed within the
    <head>"). With `links=False` only the head is read: no links, no sections (a cheap first
    look; `may_have_sections` says whether a full read could find any). Never raises on
    content.
    """
    html = page if isinstance(page, HtmlText) else decode_html(page, content_type)
    names = frozenset(agent.lower() for agent in agents)
    warnings = list(html.warnings)
    reading = Directives()
    for value in x_robots_tag:
        read_header(value, names, reading, warnings)
    said_by_header = set(reading.no_ai)
    page_tree = read_tree(html.text, names, links=links)
    tdm_reservation: str | None = None
    tdm_policy = None
    for meta in page_tree.metas:
        if meta.name == TDM_RESERVATION:
            # TDMRep: "1" reserves the rights, "0" does not, and either is a statement (a "0"
            # supersedes a header's "1": robotsgate.protocol.usage.tdm_decided); anything else
            # says nothing. Of two META that disagree, the reservation counts.
            value = (meta.content or "").strip()
            if value == "1" or (value == "0" and tdm_reservation is None):
                tdm_reservation = value
            continue
        if meta.name == TDM_POLICY:
            tdm_policy = tdm_policy or (meta.content or "").strip() or None
            continue
        if meta.content is None:
            warnings.append(PageWarning(meta.line, f"META {meta.name} without content ignored"))
        else:
            read_directives(meta.content, reading, warnings, f"META {meta.name}", meta.line)
    warnings.extend(page_tree.warnings)
    noindex = reading.noindex or (reading.unavailable_after is not None and
                                  reading.unavailable_after <= now)
    return PageSignals(
        noindex=noindex, nofollow=reading.nofollow, noarchive=reading.noarchive,
        nosnippet=reading.nosnippet, unavailable_after=reading.unavailable_after,
        x_robots_tag=normal_form(reading, noindex, now), carried=tuple(reading.carried),
        base=page_tree.base, links=page_tree.links, sections=page_tree.sections,
        links_read=links, may_have_sections=page_tree.saw_section_tag,
        tdm_reservation=tdm_reservation,
        tdm_policy=tdm_policy if tdm_reservation == "1" else None,
        no_ai=tuple(name for name in reading.no_ai if name not in said_by_header),
        licenses=page_tree.licenses, inline_licenses=page_tree.inline_licenses,
        charset=html.charset, truncated=html.truncated,
        warnings=tuple(warnings))
