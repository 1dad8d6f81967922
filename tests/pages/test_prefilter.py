"""The byte check (robotsgate.pages.prefilter) against the reading it spares: a page it passes
over must read as saying nothing, by the HTML parser itself, whatever its markup does."""

import codecs

from hypothesis import given, settings
from hypothesis import strategies as st

from robotsgate.pages import can_have_signals, read_page
from robotsgate.pages.charset import page_codec
from robotsgate.pages.prefilter import _SEARCHED_WHOLE, _declares_transparent, _tags, _transparent

NOW = 1_700_000_000.0

# Markup that carries a signal, markup that only looks like it, and the pieces the HTML
# tokenizer reads a start tag's end from (quotes, '>', '=', '/', white space), to be put together
# in every order.
FRAGMENTS = [
    "<html>", "<head>", "</head>", "<body>", "</body>", "<title>", "</title>", "<script>",
    "</script>", "<noscript>", "</noscript>", "<p>", '<a href="/x">x</a>', "text ",
    '<meta charset="utf-8">', '<meta name="description" content="a page">',
    '<meta name="robots" content="noindex">', '<META NAME="ROBOTS" CONTENT="NOFOLLOW">',
    '<meta name=foobot content=none>', '<meta name="foo_bot" content="noindex">',
    '<meta name="foo&lowbar;bot" content="noindex">', '<meta name="foo&UnderBar;bot" content=none>',
    '<meta name="&#114;obots" content="noindex">', '<meta name="&#x52;OBOTS" content="noarchive">',
    '<meta name="tdm-reservation" content="1">', '<meta name="tdm-policy" content="https://x/p">',
    '<meta name="tdm-reservation" content="0">',
    '<meta name="robots" content="noai">',
    '<link rel="license" type="application/rsl+xml" href="/l.xml">',
    '<link rel=license type="application/rsl&plus;xml" href=/l2.xml>',
    '<script type="application/rsl+xml"><rsl xmlns="https://rslstandard.org/rsl"/></script>',
    "<script type=application/rsl&plus;xml>", '<script type="application/rsl&#43;xml">',
    '<script src="/app.js"></script>', "<script ",
    '<meta title="a>b" name="foobot" content="noindex">',
    "<meta title='a>b' name=foobot content=none>",
    "<meta a\"b='c\">",
    "x' name=foobot content=noindex>", "<meta ", "<link ", "<meta/", '<meta name=x content="',
    '"', "'", ">", "=", " ", "/", "\n", "name=foobot ", "content=noindex>", "rel=license ",
    "type=application/rsl+xml href=/l3>", '<!-- robots content="nofollow" -->',
    "<!-- /robots -->", "<! robots content=noindex>", "</ robots>",
    "<!--\u3000robots content=noindex-->", "<!-- a comment -->", "<!--", "-->",
    '<!-- <meta x=" -->', '<meta a="q>" name=foobot content=noindex>',
    "compatible ", "robots ", "robots.txt ", "&#39;", "&amp;", "foobot ", "Bot",
]
pages = st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join)
AGENTS = [(), ("foobot",), ("foo_bot",), ("otherbot",), ("foobot", "compatible")]


def quiet(body: bytes, content_type: str, agents: tuple[str, ...]) -> bool:
    """Whether the whole reading of the page (links and sections too) finds nothing."""
    signals = read_page(body, now=NOW, content_type=content_type, agents=agents)
    return (signals.noindex, signals.nofollow, signals.noarchive, signals.nosnippet,
            signals.unavailable_after, signals.x_robots_tag, signals.sections,
            signals.tdm_reservation, signals.tdm_policy, signals.no_ai, signals.licenses,
            signals.inline_licenses) == \
        (False, False, False, False, None, "all", (), None, None, (), (), ())


@settings(max_examples=3000, deadline=None)
@given(pages, st.sampled_from(AGENTS))
def test_a_page_passed_over_says_nothing(page: str, agents: tuple[str, ...]) -> None:
    body = page.encode()
    if not can_have_signals(body, "text/html", agents):
        assert quiet(body, "text/html", agents), page


@settings(max_examples=500, deadline=None)
@given(pages, st.sampled_from(["shift_jis", "gbk", "big5", "hz", "euc-jp", "windows-1252"]))
def test_pages_in_other_charsets_too(page: str, charset: str) -> None:
    body = page.encode(charset, "replace")
    content_type = f"text/html; charset={charset}"
    if not can_have_signals(body, content_type, ("foobot",)):
        assert quiet(body, content_type, ("foobot",)), page


def test_what_only_a_reference_spells_is_found() -> None:
    # Named references for ASCII characters: &plus; in a licence's type, &lowbar; (and
    # &UnderBar;) and &period; in an agent's name; "fj" as &fjlig;.
    for page, agents in [
        (b'<link rel="license" type="application/rsl&plus;xml" href="/l.xml">', ()),
        (b'<meta name="my&lowbar;bot" content="noindex">', ("my_bot",)),
        (b'<meta name="my&UnderBar;bot" content="noindex">', ("my_bot",)),
        (b'<meta name="fjbot" content="noindex">', ("fjbot",)),
        (b'<meta name="&fjlig;bot" content="noindex">', ("fjbot",)),
        (b'<meta name="r&#111;bots" content="noindex">', ()),
    ]:
        assert not quiet(page, "text/html", agents), page
        assert can_have_signals(page, "text/html", agents), page


def test_words_in_the_text_send_no_page_to_the_parser() -> None:
    # Each of these made the page's whole reading run before: an agent's name in the text
    # ("compatible" of most bots' User-Agent), a character reference, "robots" in prose.
    page = (b"<html><head><meta charset=utf-8><title>t</title>"
            b'<link rel="stylesheet" href="/s.css"></head><body><p>compatible with '
            b"robots.txt &#39;and&#39; more, foobot</p></body></html>")
    assert quiet(page, "text/html", ("foobot", "compatible"))
    assert not can_have_signals(page, "text/html", ("foobot", "compatible"))


def test_a_tag_ends_where_the_tokenizer_ends_it() -> None:
    # The first quote is part of an attribute's name, the single quotes hold a value with '>'
    # in it: the tag goes on to name=foobot.
    page = b"<head><meta a\"b='c\"> x' name=foobot content=noindex></head>"
    assert not quiet(page, "text/html", ("foobot",))
    assert can_have_signals(page, "text/html", ("foobot",))
    assert _tags(page) == page[11:-7]
    # A '>' inside quotes does not end it either.
    page = b'<meta title="a>b" name="foobot" content="noindex">'
    assert not quiet(page, "text/html", ("foobot",))
    assert can_have_signals(page, "text/html", ("foobot",))
    # What only looks like a tag (in a comment) runs into a real one: each is read as its own.
    page = b'<head><!-- <meta x=" --><meta a="q>" name=foobot content=noindex></head>'
    assert not quiet(page, "text/html", ("foobot",))
    assert can_have_signals(page, "text/html", ("foobot",))
    # A tag whose quote never closes: the page is read.
    assert _tags(b'<meta name="foobot content=noindex>') is None
    assert can_have_signals(b'<p><meta name="foobot content=noindex>', "text/html", ())
    # Not a META: <metadata>, <linkx>.
    assert _tags(b"<metadata name=foobot><linkx>") == b""


def test_a_section_after_white_space_of_any_kind() -> None:
    for space in ("\u3000", "\u00a0", "\x1c", "\n"):
        page = f"<p>x</p><!--{space}robots content=noindex-->t<!-- /robots -->".encode()
        assert not quiet(page, "text/html", ())
        assert can_have_signals(page, "text/html", ())


def test_a_charset_whose_second_bytes_are_ascii_is_searched_whole() -> None:
    # In Shift_JIS the ideographic space is 0x81 0x40: its second byte is "@", not white space,
    # to anyone reading the bytes; the text holds a section tag.
    page = '<meta charset="shift_jis"><p>x</p><!--\u3000robots content=noindex-->t'
    body = page.encode("shift_jis")
    assert not quiet(body, "text/html", ())
    assert can_have_signals(body, "text/html", ())
    # Declared in an http-equiv Content-Type spelled with a character reference.
    page = ('<meta http-equiv="content-type" content="text/html; &#99;harset=shift_jis">'
            "<p>x</p><!--\u3000robots content=noindex-->t")
    body = page.encode("shift_jis")
    assert page_codec(body, "text/html") == "shift_jis"
    assert not quiet(body, "text/html", ())
    assert can_have_signals(body, "text/html", ())


def searchable(codec: str) -> bool:
    """Whether a byte search for an ASCII name finds every one the codec's text holds: between
    two ASCII letters, no one or two bytes vanish (they are adjacent in the text only when they
    are in the bytes), and an ASCII character of the text is one of the ASCII bytes it was
    decoded from, in their order (none made from other bytes)."""
    try:
        if bytes(range(0x80)).decode(codec, "surrogateescape") != bytes(range(0x80)).decode():
            return False
    except (UnicodeError, ValueError):
        return False
    for between in [bytes((a,)) for a in range(256)] + \
            [bytes((a, b)) for a in range(256) for b in range(256)]:
        left, right = [mark for mark in b"qzjx" if mark not in between][:2]
        raw = bytes((left,)) + between + bytes((right,))
        try:
            text = raw.decode(codec, "surrogateescape")
        except (UnicodeError, ValueError):
            return False
        if chr(left) + chr(right) in text:
            return False
        ascii_bytes = iter(byte for byte in raw if byte < 0x80)
        if not all(ord(char) in ascii_bytes for char in text if char < "\x80"):
            return False
    return True


def test_the_charsets_searched_whole_can_be() -> None:
    for name in sorted(_SEARCHED_WHOLE):
        assert codecs.lookup(name).name == name
        assert not _transparent(name), name  # else its structure would be read
        assert searchable(name), name
    # What such a search would miss, and which are read instead.
    for name in ("hz", "utf-7", "iso2022_jp", "cp037"):
        assert not searchable(codecs.lookup(name).name), name
        assert codecs.lookup(name).name not in _SEARCHED_WHOLE


def test_hz_is_read() -> None:
    # HZ drops "~" and a line break: these bytes read as <meta name="robots" ...>.
    body = b'<meta name="rob~\nots" content="noindex"><p>x'
    assert not quiet(body, "text/html; charset=hz-gb-2312", ())
    assert can_have_signals(body, "text/html; charset=hz-gb-2312", ())


def test_which_codecs_read_as_their_bytes() -> None:
    transparent = ["utf-8", "cp1252", "iso8859-2", "koi8-r", "euc_jp", "euc_kr", "gb2312"]
    not_transparent = ["shift_jis", "cp932", "gbk", "gb18030", "big5", "hz", "johab", "utf-7",
                       "iso2022_jp", "cp037"]
    assert all(_transparent(codecs.lookup(name).name) for name in transparent)
    assert not any(_transparent(codecs.lookup(name).name) for name in not_transparent)


LABELS = st.sampled_from(["utf-8", "UTF-8", "shift_jis", "shift jis", "gbk", "hz-gb-2312",
                          "windows-1252", "nonsense", "sh&#105;ft_jis", "big5", "utf-16"])
PREFIXES = st.lists(st.one_of(
    st.builds("<meta charset={}>".format, LABELS),
    st.builds("<meta charset=\"{}\">".format, LABELS),
    st.builds("<meta charset = '{}'>".format, LABELS),
    st.builds("<meta x=charset={} charset={}>".format, LABELS, LABELS),
    st.builds('<meta http-equiv=content-type content="text/html; charset={}">'.format, LABELS),
    st.sampled_from(["<head>", "<title>t</title>", "<p>", "<!-- charset=gbk -->", " "])),
    max_size=6).map("".join)


@settings(max_examples=1000, deadline=None)
@given(PREFIXES)
def test_the_charset_short_cut_agrees_with_the_scan(page: str) -> None:
    body = page.encode()
    if _declares_transparent(body.lower(), "text/html"):
        codec = page_codec(body, "text/html")
        assert codec is None or _transparent(codec), (page, codec)


def test_a_page_declared_in_a_charset_that_does_not_write_ascii_is_read() -> None:
    # The declaration is found in ASCII bytes; the page after it is EBCDIC, which no ASCII byte
    # search can see into: a section tag in it.
    body = b'<meta charset="cp037">' + \
        '<p><!-- robots content="noindex" -->secret<!-- /robots -->'.encode("cp037")
    assert page_codec(body, "text/html") == "cp037"
    assert not quiet(body, "text/html", ())
    assert can_have_signals(body, "text/html", ())
