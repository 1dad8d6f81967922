"""Pages read as the HTML standard reads them: where a META belongs, which attribute counts, what
is a comment and what is text, the <noscript> pixel; links resolved as a browser resolves them;
strip mode checked against the tree."""

from datetime import UTC, datetime

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from robotsgate.pages import PageConfig, Pages, PageSignals, decode_html, read_page, strip_page
from robotsgate.pages.links import resolve
from robotsgate.pages.strip import agrees
from robotsgate.pages.tree import may_have_section_tags, read_tree, strip_view

NOW = datetime(2026, 1, 1, tzinfo=UTC).timestamp()


def read(text: str | bytes, **kwargs: object) -> PageSignals:
    body = text.encode() if isinstance(text, str) else text
    kwargs.setdefault("now", NOW)
    return read_page(body, **kwargs)  # type: ignore[arg-type]


# -- where a META is ------------------------------------------------------------------------------


def test_a_meta_between_head_and_body_is_in_the_head() -> None:
    signals = read('<html><head><title>t</title></head>\n<meta name="robots" '
                   'content="noindex, nofollow">\n<body><a href="/a">a</a></body></html>')
    assert (signals.noindex, signals.nofollow) == (True, True)
    assert signals.x_robots_tag == "noindex, nofollow"
    assert not any("outside the head" in str(w) for w in signals.warnings)


def test_a_meta_in_the_body_is_still_ignored_with_its_line() -> None:
    signals = read('<html><head></head><body>\n<p>x</p>\n<meta name="robots" content="noindex">')
    assert not signals.noindex
    assert [str(w) for w in signals.warnings] == ["line 3: META robots outside the head ignored"]


def test_the_first_of_two_attributes_counts() -> None:
    assert read('<head><meta name="robots" content="noindex" content="index">').noindex
    assert not read('<head><meta name="robots" content="index" content="noindex">').noindex
    # name= twice: the first names another agent, so this META is not for robots.
    assert not read('<head><meta name="otherbot" name="robots" content="noindex">').noindex


@pytest.mark.parametrize(("head", "noindex"), [
    # <!--> is a whole (empty) comment: the META after it is markup.
    ('<!--><meta name="robots" content="noindex"><!-- -->', True),
    # --!> ends a comment.
    ('<!-- a --!><meta name="robots" content="noindex"><!-- b -->', True),
    # </script/> ends a script.
    ('<script>var a;</script/><meta name="robots" content="noindex"><script>b</script>', True),
    # A <title> holds text: a META spelled in it is none.
    ('<title><meta name="robots" content="noindex"></title>', False),
    # So does a <textarea>, even in the head (it opens the body).
    ('<style>/* <meta name="robots" content="noindex"> */</style>', False),
])
def test_comments_and_raw_text_as_the_standard_reads_them(head: str, noindex: bool) -> None:
    assert read(f"<html><head>{head}</head><body>x</body></html>").noindex is noindex


def test_a_noscript_pixel_in_the_head_does_not_hide_a_later_meta() -> None:
    # Scripting off (most bots): the <img> ends the head and the META is in the body. Scripting
    # on (a headless browser): the META is in the head. Either way it counts.
    page = ('<html><head><noscript><img src="/pixel.gif"></noscript>\n'
            '<meta name="robots" content="noindex"></head><body>x</body></html>')
    signals = read(page)
    assert signals.noindex and signals.warnings == ()


def test_a_noscript_pixel_then_a_long_head_then_the_meta() -> None:
    style = "p { color: red }\n" * 20_000
    page = (f'<head><noscript><img src="/pixel.gif"></noscript><style>{style}</style>'
            f'<meta name="robots" content="nofollow"></head><body>x</body>')
    for links in (True, False):
        assert read(page, links=links).nofollow


def test_a_meta_inside_a_head_noscript_counts() -> None:
    # Scripting off reads it as a META of the head.
    assert read('<head><noscript><meta name="robots" content="nofollow"></noscript></head>'
                ).nofollow


def test_the_agents_meta_and_tdm_reservation_after_the_head_count() -> None:
    signals = read('<head></head><meta name="MyBot" content="noarchive">'
                   '<meta name="tdm-reservation" content="1"><body>', agents=["mybot"])
    assert signals.noarchive and signals.tdm_reserved


def test_a_section_tag_before_the_html_element_is_read() -> None:
    signals = read('<!-- robots content="nofollow" --><html><body><a href="/in">in</a>'
                   '<!-- /robots --><a href="/out">out</a></body></html>')
    assert signals.nofollow_links == ("/in",)
    assert signals.all_links == ("/in", "/out")


def test_links_are_read_from_the_tree() -> None:
    signals = read('<body><a href=" sub\\t1\n">x</a><a href="#top">top</a><area href="/m">'
                   '<a>no href</a><textarea><a href="/not-a-link"></textarea>')
    assert signals.all_links == ("sub\\t1", "/m")


def test_lines_of_links_and_sections() -> None:
    signals = read('<body>\n<a href="/one">1</a>\n\n<!-- robots content="nofollow" -->\n'
                   '<a href="/two">2</a>\n<!-- /robots -->')
    assert [(link.href, link.line, link.nofollow) for link in signals.links] == [
        ("/one", 2, False), ("/two", 5, True)]
    [section] = signals.sections
    assert (section.line, section.end_line) == (4, 6)


def test_the_first_base_href_counts_even_in_the_body() -> None:
    assert read('<head><base target="x"><base href=" /b/\t"><base href="/c/">').base == "/b/"
    assert read('<body><base href="/late/"><a href="x">x</a>').base == "/late/"


# -- links resolved as a browser resolves them ---------------------------------------------------


@pytest.mark.parametrize(("base", "href", "charset", "expected"), [
    ("http://h/dir/page", "sub\\t1", "utf-8", "http://h/dir/sub/t1"),
    ("http://h/dir/page", " \tsu\nb?x=1 ", "utf-8", "http://h/dir/sub?x=1"),
    ("http://h/dir/page", "..\\up", "utf-8", "http://h/up"),
    ("http://h/dir/page", "?q=é", "cp1252", "http://h/dir/page?q=%E9"),
    ("http://h/dir/page", "?q=é", "utf-8", "http://h/dir/page?q=%C3%A9"),
    # The fragment is always UTF-8; a character the encoding lacks is "&#N;".
    ("http://h/", "/p?q=€ą#é", "cp1252", "http://h/p?q=%80%26%23261%3B#%C3%A9"),
    ("http://h/", "/p?q=é", "shift_jis", "http://h/p?q=%26%23233%3B"),
    ("http://h/", "/p?q=日本", "shift_jis", "http://h/p?q=%93%FA%96%7B"),
    # A UTF-16 page's URLs take UTF-8.
    ("http://h/", "/p?q=é", "utf-16-le", "http://h/p?q=%C3%A9"),
    # A "#" before the "?": there is no query to encode.
    ("http://h/", "/p#a?é", "cp1252", "http://h/p#a?%C3%A9"),
    ("http://h/", "//EXAMPLE.com:80/%7e/./a/../b", "utf-8", "http://example.com/%7e/b"),
    ("http://h/", "http://[::1", "utf-8", None),
])
def test_resolve(base: str, href: str, charset: str, expected: str | None) -> None:
    assert resolve(base, href, charset) == expected


def remembering() -> Pages:
    return Pages(PageConfig(), clock=lambda: NOW, timer=lambda: 0.0)


def annotate(pages: Pages, url: str, body: bytes, content_type: str) -> None:
    pages.annotate(url=url, method="GET", status=200, agent=None, user_agent="Bot/1.0",
                   content_type=content_type, x_robots_tag=[], raw=body)


def refused(pages: Pages, url: str, referer: str) -> bool:
    return pages.nofollow(url=url, referer=referer, agent=None, user_agent="Bot/1.0") is not None


def test_nofollow_memory_holds_what_the_bot_will_request() -> None:
    pages = remembering()
    page = "http://site.test/dir/page"
    body = ('<html><head><meta name="robots" content="nofollow"></head><body>'
            '<a href="sub\\t1">a</a><a href="search?q=é">b</a><a href="\tnew\nline">c</a>'
            '</body></html>').encode("cp1252")
    annotate(pages, page, body, "text/html; charset=windows-1252")
    assert refused(pages, "http://site.test/dir/sub/t1", page)
    assert refused(pages, "http://site.test/dir/search?q=%E9", page)
    assert refused(pages, "http://site.test/dir/newline", page)
    # What urllib would have made of them is not what a browser asks for.
    assert not refused(pages, "http://site.test/dir/search?q=%C3%A9", page)
    assert not refused(pages, "http://site.test/dir/sub%5Ct1", page)


def test_a_base_href_is_resolved_in_the_pages_encoding_too() -> None:
    pages = remembering()
    page = "http://site.test/page"
    body = ('<head><base href="/b\\c/?x=é"></head><!-- robots content="nofollow" -->'
            '<a href="d">d</a><a href="?y=é">f</a><!-- /robots -->').encode("cp1252")
    annotate(pages, page, body, "text/html; charset=iso-8859-1")
    assert refused(pages, "http://site.test/b/c/d", page)
    assert refused(pages, "http://site.test/b/c/?y=%E9", page)


# -- strip mode: the tokenizer's edits, checked against the tree ----------------------------------


def test_strip_is_byte_for_byte_where_the_tokenizer_agrees() -> None:
    body = (b'<p>keep <!-- robots content="none" -->\n gone <b>gone too</b> '
            b'<a href="/x" class=c>link</a>\n<!-- /robots --> kept</p>')
    assert strip_page(body) == (b'<p>keep <!-- robots content="none" -->\n  <b></b> '
                                b'<a class="c"></a>\n<!-- /robots --> kept</p>')


@pytest.mark.parametrize("body", [
    # The tokenizer does not end the script at </script/>, nor the comment at <!--> or --!>;
    # the tree does: the page is stripped through the tree.
    b'<p><!-- robots content=noindex --><script>x</script/>secret<!-- /robots -->'
    b'<a href="/y">k</a>',
    b"<p><!--><!-- robots content=noindex -->secret<!-- /robots -->after",
    b"<p><!-- robots content=noindex -->x<!-- a --!> secret --><!-- /robots -->after",
])
def test_strip_falls_back_to_the_tree_where_the_tokenizer_disagrees(body: bytes) -> None:
    stripped = strip_page(body)
    assert stripped is not None and b"secret" not in stripped
    before, after = strip_view(body.decode()), strip_view(stripped.decode())
    assert agrees(before, after)
    assert after.kept_text == before.kept_text != ""


def test_strip_in_the_pages_charset_with_characters_it_lacks() -> None:
    body = b"<p>\xe9t\xe9 <!--><!-- robots content=noindex -->secret\xff<!-- /robots --> \x81"
    stripped = strip_page(body, content_type="text/html; charset=windows-1252")
    assert stripped is not None and b"secret" not in stripped
    assert stripped.startswith(b"<html><head></head><body><p>\xe9t\xe9 ")


PIECES = ['<!-- robots content="noindex" -->', '<!-- robots content="nofollow" -->',
          '<!-- robots content="none" -->', "<!-- /robots -->", "<!-->", "--!>", "-->", "<!--",
          "<script>", "</script/>", "</script>", "<title>", "</title>", "<textarea>", "<p>",
          "</p>", "<table>", "<td>", '<a href="/a">', '<a href="/b" href="/c">', "</a>",
          "words", " ", "\n", "&amp;", "é", "<", "<b>", "</b>", "<plaintext>", "<svg>", "</svg>"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=25))
@example(['<!-- robots content="noindex" -->', "<p>", '<a href="/a">', "<p>", "<textarea>",
          '<!-- robots content="noindex" -->'])
def test_strip_never_leaves_less_stripped_than_the_tree_says(pieces: list[str]) -> None:
    text = "".join(pieces)
    try:
        stripped = strip_page(text.encode())
    except ValueError:
        # Markup no serialiser writes back even stripped: the proxy refuses such a page
        # (tests/mitm/test_addon_usage.py: test_a_page_that_cannot_be_stripped_is_not_sent).
        return
    want = strip_view(text)
    if stripped is None:
        assert not want.noindex_words and want.nofollow_links == 0
        return
    got = strip_view(decode_html(stripped, "text/html; charset=utf-8").text)
    assert not got.noindex_words and got.nofollow_links == 0, (text, stripped)
    assert len(got.sections) >= len(want.sections)
    if writes_back(text):
        assert agrees(want, got), (text, stripped)


def writes_back(text: str) -> bool:
    """Whether the page's tree, serialised, reads back as the same tree. Not always so: a
    <plaintext> foster-parented out of a table, or lexbor putting a reconstructed <a> inside a
    <textarea>'s text. Strip mode must then still strip (above), but cannot keep all else."""
    once = strip_view(text)
    again = strip_view(LexborHTMLParser(text).html or "")
    return (once.sections, once.kept_links, once.kept_text) == \
        (again.sections, again.kept_links, again.kept_text)


SECTION_PIECES = ["<!--", "<!", "</", "<?", " ", "\n", "\u3000", "/", "-", "robots", "ROBOTS",
                  ">", "-->", " content=nofollow", "<p>", "<script>", "</script>", "x"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(SECTION_PIECES), max_size=14))
def test_the_source_scan_finds_every_section_tag_the_tree_has(pieces: list[str]) -> None:
    text = "".join(pieces)
    if read_tree(text, frozenset(), links=True).saw_section_tag:
        assert may_have_section_tags(text)


def test_the_head_of_a_long_page_is_read_from_its_beginning() -> None:
    rows = "".join(f"<p>row {i}</p>\n" for i in range(20_000))
    late = read(f'<head><title>t</title></head><body>{rows}<meta name="robots" '
                f'content="noindex">')
    assert not late.noindex
    # A head longer than the part read first: the whole page is parsed.
    long_head = f"<head><title>{'t' * 100_000}</title>\n<meta name=robots content=noindex>"
    for links in (True, False):
        assert read(long_head, links=links).noindex
    assert read(long_head + "<body><!-- robots content=x -->", links=False).may_have_sections
    assert not read(long_head + "<body><p>robots</p>", links=False).may_have_sections


@pytest.mark.parametrize("shift", range(-3, 4))
@pytest.mark.parametrize("prefix", [8192, 131072])
def test_a_long_head_is_read_whole_wherever_a_prefix_ends(prefix: int, shift: int) -> None:
    # The head is first parsed from a prefix of the page; a prefix that ends on the '<' of the
    # robots META must not pass for a page whose body has begun.
    head = "<!doctype html><html><head><title>t</title>"
    pad = '<link rel="preload" href="/x.css">'
    while len(head) + len(pad) < prefix - 1 + shift:
        head += pad
    head += " " * (prefix - 1 + shift - len(head))
    text = head + ('<meta name="robots" content="noindex, nofollow"></head>'
                   "<body><p>hello</p></body></html>")
    signals = read_page(text.encode(), now=0, content_type="text/html; charset=utf-8",
                        links=False)
    assert signals.noindex and signals.nofollow, text[prefix - 4 + shift:prefix + 4 + shift]


SIGNALLING = ('<html><head><meta name="tdm-reservation" content="1">'
              '<meta name="robots" content="noindex"></head><body>x</body></html>')


@pytest.mark.parametrize(("content_type", "body"), [
    ("text/html; charset=utf_16", SIGNALLING.encode("utf-16-le")),
    ("text/html; charset=u16", SIGNALLING.encode("utf-16-le")),
    ("text/html; charset=UTF_32", SIGNALLING.encode("utf-32-le")),
    ("text/html; charset=cp500", SIGNALLING.encode("cp500")),
    ("text/html; charset=iso-2022-jp",
     SIGNALLING.replace("tdm-reservation", "tdm-reser\x1b(Bvation")
     .replace('"robots"', '"rob\x1b(Bots"').encode("latin-1")),
])
def test_the_byte_check_never_skips_a_page_it_cannot_see_into(content_type: str,
                                                              body: bytes) -> None:
    # Each charset label spells a charset whose bytes do not hold "robots" as ASCII does (or,
    # ISO-2022, may break it with an escape): the page must be read, and its signals found.
    signals = remembering().annotate(url="http://a.example/", method="GET", status=200,
                               agent="crawler", user_agent=None, content_type=content_type,
                               x_robots_tag=[], raw=body).signals
    assert signals.noindex and signals.tdm_reserved


def test_noai_and_noimageai_of_the_meta_for_this_agent_and_tdm_policy() -> None:
    signals = read('<head><meta name="robots" content="noindex, noai">'
                   '<meta name="OtherBot" content="noimageai">'
                   '<meta name="MyBot" content="noimageai">'
                   '<meta name="tdm-reservation" content="1">'
                   '<meta name="tdm-policy" content="https://example.com/p.json"></head>',
                   agents=["mybot"], x_robots_tag=["noimageai"])
    # What the headers said is judged with the headers: only the page's own here.
    assert signals.no_ai == ("noai",)
    assert signals.x_robots_tag == "noindex, noimageai, noai"
    assert signals.tdm_reserved and signals.tdm_policy == "https://example.com/p.json"
    # A policy without a reservation says nothing.
    assert read('<head><meta name="tdm-policy" content="https://example.com/p.json">'
                '</head>').tdm_policy is None
