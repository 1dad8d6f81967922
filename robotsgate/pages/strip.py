"""Strip mode: a page without the text of its noindex sections and the hrefs of the links in its
nofollow sections, written back byte for byte otherwise.

Two readings work together. The HTML5 tree (robotsgate.pages.tree) decides what is in a
section; it has no source positions. The tokenizer pass (robotsgate.pages.parser) finds where in
the source each edit goes. Its edits are then checked against the tree: the edited page, parsed
again, must have the same sections, no words left in noindex sections, no link left in nofollow
sections, and the same links and text everywhere else. When the two disagree (the tokenizer reads
some hostile markup differently), the page is stripped through the tree instead and serialised
again: correct, but with the serialiser's markup rather than the page's own.
"""

from robotsgate.pages.charset import HtmlText, decode_html
from robotsgate.pages.parser import StripEdits
from robotsgate.pages.tree import StripView, strip_tree, strip_view


def strip_page(body: bytes, html: HtmlText | None = None, *,
               content_type: str | None = None) -> bytes | None:
    """The page without the text of its noindex sections and the hrefs of the links in its
    nofollow sections (the <a> elements and their text stay); None when nothing changes.

    Only the first MAX_PAGE_BYTES are rewritten; the rest is appended as it was. Markup, scripts
    and styles inside noindex sections are kept: only text goes. Whole-page directives remove
    nothing (they travel in X-Robots-Tag). Raises ValueError for a page that cannot be stripped
    (none is known).
    """
    html = html or decode_html(body, content_type)
    want = strip_view(html.text)
    if not want.noindex_words and not want.nofollow_links:
        return None
    encoded = _edited(html, want)
    if encoded is None:
        # Characters the charset lacks (U+FFFD for undecodable bytes) as character references.
        encoded = _through_tree(html.text, want).encode(html.charset, "xmlcharrefreplace")
    return html.bom + encoded + body[html.consumed:]


def _through_tree(text: str, want: StripView) -> str:
    """The page stripped through its tree. A serialised tree reads back as the same tree except
    for markup no serialiser can write back (a <plaintext> foster-parented out of a table): then
    the result is stripped again, and it must at least hold nothing strip mode removes."""
    stripped = strip_tree(text)
    for _ in range(3):
        got = strip_view(stripped)
        if agrees(want, got):
            return stripped
        if _safe(want, got):
            return stripped
        stripped = strip_tree(stripped)
    raise ValueError("the page cannot be stripped: not stripped")


def _safe(want: StripView, got: StripView) -> bool:
    return (not got.noindex_words and got.nofollow_links == 0 and
            len(got.sections) >= len(want.sections))


def _edited(html: HtmlText, want: StripView) -> bytes | None:
    """The page with the tokenizer's edits, when the tree agrees with the result; else None."""
    parser = StripEdits(html.text)
    # A cut page is not closed: what the parser held back at the cut passes through as it was.
    parser.run(close=not html.truncated)
    parts: list[str] = []
    done = 0
    for start, end, replacement in parser.edits:
        parts.append(html.text[done:start])
        parts.append(replacement)
        done = end
    parts.append(html.text[done:])
    text = "".join(parts)
    if not agrees(want, strip_view(text)):
        return None
    try:
        return text.encode(html.charset, "surrogateescape")
    except UnicodeEncodeError:
        return None


def agrees(want: StripView, got: StripView) -> bool:
    """Whether `got`, the view of a stripped page, is what the view of the page says strip
    mode must leave: nothing less stripped, nothing else changed."""
    return (got.sections == want.sections and not got.noindex_words and
            got.nofollow_links == 0 and got.kept_links == want.kept_links and
            got.kept_text == want.kept_text)
