"""The byte search that spares most pages a decode and a parse must never hide a signal."""

from hypothesis import given, settings
from hypothesis import strategies as st

from robotsgate.pages import can_have_signals, read_page

NOW = 1_700_000_000.0

FRAGMENTS = [
    "<html>", "<head>", "</head>", "<body>", "</body>", "<title>t</title>", "text ", "<p>",
    '<a href="/x">x</a>', '<meta name="description" content="a page">',
    '<meta name="robots" content="noindex">', '<META NAME="ROBOTS" CONTENT="NOFOLLOW">',
    '<meta name="FooBot" content="none">', '<meta name="&#114;obots" content="noindex">',
    '<meta name="&#x72;obots" content="nofollow">', "<!-- robots content=\"nofollow\" -->",
    "<!-- /robots -->", "<!-- a comment -->", "rob", "ots", "&amp;", "&#39;", "Bot",
]
pages = st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(pages, st.sampled_from([(), ("foobot",), ("otherbot",)]))
def test_a_page_the_search_passes_over_has_no_signal(page: str, agents: tuple[str, ...]) -> None:
    body = page.encode()
    if can_have_signals(body, "text/html", agents):
        return
    signals = read_page(body, now=NOW, content_type="text/html", agents=agents)
    assert (signals.noindex, signals.nofollow, signals.sections) == (False, False, ())
    assert signals.x_robots_tag == "all"


def test_signals_are_found():
    for page, agents in [
        (b'<meta name="robots" content="noindex">', ()),
        (b'<META name="Robots" content="nofollow">', ()),
        (b'<meta name="FooBot" content="none">', ("foobot",)),
        (b'<meta name="&#114;obots" content="noindex">', ()),
        (b"<!-- ROBOTS content=none -->x<!-- /robots -->", ()),
    ]:
        assert can_have_signals(page, "text/html", agents), page


def test_a_plain_page_needs_no_parse():
    page = b"<html><head><title>Hello</title></head><body><a href='/a'>a</a></body></html>"
    assert not can_have_signals(page, "text/html; charset=utf-8", ("foobot", "mozilla"))
    # Another bot's META says nothing to this one.
    assert not can_have_signals(b'<meta name="otherbot" content="none">', "text/html",
                                ("foobot",))


def test_wide_charsets_are_always_read():
    page = '<meta name="robots" content="noindex">'
    for body, content_type in [(b"\xff\xfe" + page.encode("utf-16-le"), "text/html"),
                               (page.encode("utf-16-le"), "text/html; charset=UTF-16LE"),
                               (page.encode("utf-32"), "text/html; charset=utf-32")]:
        assert can_have_signals(body, content_type, ())
