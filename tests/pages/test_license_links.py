"""Where a page names its RSL licence: the Link header field (RFC 8288) and `<link>` in the
head (robotsgate.pages.license_links)."""

import pytest

from robotsgate.pages import can_have_signals, read_page
from robotsgate.pages.license_links import link_values, page_licenses, rsl_links

RSL = 'rel="license"; type="application/rsl+xml"'


@pytest.mark.parametrize(("field", "found"), [
    # The form RSL 1.0 shows.
    (f'<https://example.com/license.xml>; {RSL}', ("https://example.com/license.xml",)),
    # Unquoted, upper case, rel among others, spaces where OWS and BWS allow them.
    ("</l.xml> ;REL = \"nofollow LICENSE\" ; type=Application/RSL+XML", ("/l.xml",)),
    # Several link-values; a comma inside the URI reference, and inside a quoted title.
    (f'</a>; rel="author", </x,y.xml>; title="a, b"; {RSL}', ("/x,y.xml",)),
    # A licence for people (no type, or another type) is no RSL document.
    ('</cc>; rel="license", </cc2>; rel="license"; type="text/html"', ()),
    # rel given twice: the first counts (RFC 8288 §3.3).
    ('</l.xml>; rel="author"; rel="license"; type="application/rsl+xml"', ()),
    # An escape in a quoted value is undone.
    ('</l.xml>; rel="lic\\ense"; type="application/rsl+xml"', ("/l.xml",)),
    # A broken link-value is skipped; the next one is read.
    (f'garbage; {RSL}, </l.xml>; {RSL}', ("/l.xml",)),
    (f'</a>; ="x"; {RSL}, </b.xml>; {RSL}', ("/b.xml",)),
    # Unterminated: nothing, and no exception.
    ('</l.xml; rel="license"', ()),
    ('</l.xml>; rel="license; type="application/rsl+xml"', ()),
    ("", ()),
])
def test_rsl_links_of_a_link_field(field: str, found: tuple[str, ...]) -> None:
    assert rsl_links(field) == found


def test_link_values_keeps_every_parameter_lower_cased() -> None:
    assert link_values('</a>; Rel=next; TITLE="x"') == [("/a", {"rel": "next", "title": "x"})]


def test_a_field_past_its_limit_is_not_read_past_it() -> None:
    field = f'</a>; title="{"x" * 9000}", </l.xml>; {RSL}'
    assert rsl_links(field) == ()


def page(head: str, body: str = "text") -> bytes:
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>".encode()


def test_a_pages_licence_link_is_read_from_its_head_and_resolved() -> None:
    signals = read_page(page('<base href="/lic/"><link rel="license" '
                             'type="application/rsl+xml" href="page.xml">'
                             '<link rel="license" href="https://creativecommons.org/x">'),
                        now=0, content_type="text/html", links=False)
    assert signals.licenses == ("page.xml",)
    assert page_licenses(signals, "https://example.com/a/b") == \
        ("https://example.com/lic/page.xml",)


def test_a_licence_link_in_the_body_is_not_the_pages() -> None:
    signals = read_page(page("<title>t</title>", '<p>x</p><link rel="license" '
                             'type="application/rsl+xml" href="/l.xml">'),
                        now=0, content_type="text/html", links=False)
    assert signals.licenses == ()


def test_a_page_that_only_names_a_licence_is_read_at_all() -> None:
    # The cheap first test (can_have_signals) must not skip a page whose one signal is this.
    signals = read_page(page('<link rel=license type=application/rsl+xml href=/l.xml>'),
                        now=0, content_type="text/html", links=False)
    assert signals.licenses == ("/l.xml",)
    assert can_have_signals(page('<link rel=license type=application/rsl+xml href=/l.xml>'),
                            "text/html", ())


INLINE_XML = """
<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/"><license><prohibits type="usage">ai-all</prohibits></license></content>
</rsl>
"""


def test_a_licence_embedded_in_the_head_is_read_as_written() -> None:
    # RSL's guide: a licence embedded in the page, `<script type="application/rsl+xml">`.
    # Its text is raw text: the XML as written, for the XML parser.
    xml = INLINE_XML.replace('url="/"', 'url="/a?b&amp;c"')
    page = (f'<html><head><script type=" Application/RSL+XML ">{xml}</script>'
            f'<script type="application/ld+json">{{}}</script></head>'
            f'<body><script type="application/rsl+xml">in the body</script></body></html>')
    signals = read_page(page.encode(), now=0.0)
    assert signals.inline_licenses == (xml,)  # the head's; not the body's, nor JSON-LD
    assert can_have_signals(page.encode(), "text/html", ())
    # A type spelled with a character reference (an attribute's are decoded) is still one,
    # and the byte check still sends the page to be read.
    spelled = page.replace("RSL+XML", "RSL&#43;XML").replace(
        '<script type="application/rsl+xml">in the body</script>', "")
    assert can_have_signals(spelled.encode(), "text/html", ())
    assert read_page(spelled.encode(), now=0.0).inline_licenses == (xml,)
