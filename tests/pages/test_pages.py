"""Page-level signals: META robots and its combinations (seed 002), X-Robots-Tag, unavailable_after,
section tags with the seed 004 example, charsets, the byte cap and strip mode."""

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robotsgate.pages import (
    MAX_PAGE_BYTES,
    MAX_SECTION_DEPTH,
    HtmlText,
    PageSignals,
    agent_tokens,
    decode_html,
    is_html,
    read_page,
    strip_page,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC).timestamp()

# Seed 004, "Excluding/Including Sections of a Page", exactly as the seed gives it.
SEED_004 = b"""<HTML>
<BODY>
This text will be indexed.
<A HREF="foo.html"> this link will be followed </A>
<!-- robots content="none" -->
This text will NOT be indexed.
<A HREF="bar.html"> this link will NOT be followed </A>
<!-- /robots -->
<!-- robots content="noindex" -->
This text will NOT be indexed.
<A HREF="bar1.html"> this link WILL be followed </A>
<!-- /robots -->
<!-- robots content="nofollow" -->
This text WILL be indexed.
<A HREF="bar1.html"> this link will NOT be followed </A>
<!-- /robots -->
la la la
</BODY>
</HTML>
"""


def page(head: str = "", body: str = "") -> bytes:
    return f"<html><head>{head}</head><body>{body}</body></html>".encode()


def meta(content: str, name: str = "robots") -> bytes:
    return page(f'<meta name="{name}" content="{content}"><title>t</title>', '<a href="/x">x</a>')


def read(body: bytes, **kwargs: object) -> PageSignals:
    kwargs.setdefault("now", NOW)
    return read_page(body, **kwargs)  # type: ignore[arg-type]


def warned(signals: PageSignals, fragment: str) -> bool:
    return any(fragment in str(w) for w in signals.warnings)


# -- META robots: every combination (seed 002) -----------------------------------------------------


@pytest.mark.parametrize(("content", "noindex", "nofollow", "normal"), [
    # Seed 002: "the following examples show all the possible combinations".
    ("index,follow", False, False, "all"),
    ("noindex,follow", True, False, "noindex"),
    ("index,nofollow", False, True, "nofollow"),
    ("noindex,nofollow", True, True, "noindex, nofollow"),
    # ... and the shorthands: ALL = INDEX,FOLLOW; NONE = NOINDEX,NOFOLLOW.
    ("all", False, False, "all"),
    ("none", True, True, "noindex, nofollow"),
    ("index", False, False, "all"),
    ("follow", False, False, "all"),
    ("noindex", True, False, "noindex"),
    ("nofollow", False, True, "nofollow"),
    ("", False, False, "all"),  # the defaults are INDEX,FOLLOW
    # Case-insensitive values, spaces around commas.
    ("NOINDEX,NOFOLLOW", True, True, "noindex, nofollow"),
    ("NoIndex , Follow", True, False, "noindex"),
    ("ALL", False, False, "all"),
    ("NONE", True, True, "noindex, nofollow"),
    # Contradictions: the most restrictive reading wins (seed 004); nothing lifts a restriction.
    ("index, noindex", True, False, "noindex"),
    ("all, none", True, True, "noindex, nofollow"),
    ("nofollow, follow", False, True, "nofollow"),
    ("noarchive", False, False, "noarchive"),
    ("nosnippet, NOARCHIVE", False, False, "noarchive, nosnippet"),
])
def test_meta_robots_combinations(content: str, noindex: bool, nofollow: bool,
                                  normal: str) -> None:
    signals = read(meta(content))
    assert (signals.noindex, signals.nofollow) == (noindex, nofollow)
    assert signals.x_robots_tag == normal


def test_meta_name_and_attribute_names_are_case_insensitive() -> None:
    signals = read(b'<HTML><HEAD><META NAME="ROBOTS" CONTENT="NOINDEX, NOFOLLOW"></HEAD></HTML>')
    assert signals.noindex and signals.nofollow
    assert read(page('<meta name=" Robots " content=none>')).nofollow


def test_several_meta_tags_combine_most_restrictively() -> None:
    signals = read(page('<meta name="robots" content="index,follow">'
                        '<meta name="robots" content="noindex">'))
    assert signals.noindex and not signals.nofollow


def test_the_seed_002_head_example() -> None:
    head = ('<meta name="robots" content="none">\n<meta name="description" content="This page '
            '....">\n<title>...</title>')
    signals = read(page(head))
    assert signals.noindex and signals.nofollow and signals.warnings == ()


def test_other_meta_tags_are_not_robots_meta() -> None:
    signals = read(page('<meta name="description" content="noindex">'
                        '<meta http-equiv="refresh" content="nofollow">'))
    assert signals.x_robots_tag == "all"


def test_meta_without_content_is_warned_about() -> None:
    signals = read(page('<meta name="robots">'))
    assert signals.x_robots_tag == "all" and warned(signals, "without content")


def test_meta_outside_the_head_is_ignored_with_a_warning() -> None:
    # Seed 002: "All meta tags must be placed within the <head> section".
    body = page("<title>t</title>", '<p>hi</p><meta name="robots" content="noindex">')
    assert not read(body).noindex
    assert warned(read(body), "outside the head")
    assert not read(body, links=False).noindex  # the same reading from the head alone


def test_a_page_without_head_or_body_tags_reads_its_meta() -> None:
    assert read(b'<meta name="robots" content="noindex"><p>text</p>').noindex
    # ... until body content begins, as an HTML parser would have closed the head there.
    late = read(b'<title>t</title><p>text</p><meta name="robots" content="noindex">')
    assert not late.noindex and warned(late, "outside the head")


# -- agent-specific META ---------------------------------------------------------------------------


AGENT_PAGE = page('<meta name="robots" content="noarchive">'
                  '<meta name="MyBot" content="nofollow">'
                  '<meta name="otherbot" content="noindex">')


def test_agent_meta_applies_to_that_agent_only() -> None:
    mine = read(AGENT_PAGE, agents=["mybot"])
    assert mine.nofollow and not mine.noindex and mine.noarchive
    theirs = read(AGENT_PAGE, agents=["OtherBot"])
    assert theirs.noindex and not theirs.nofollow and theirs.noarchive
    nobody = read(AGENT_PAGE)
    assert (nobody.noindex, nobody.nofollow, nobody.noarchive) == (False, False, True)


def test_agent_meta_and_robots_meta_combine_most_restrictively() -> None:
    body = page('<meta name="robots" content="noindex"><meta name="mybot" content="index,follow">')
    assert read(body, agents=["mybot"]).noindex  # "index" for MyBot cannot lift robots' noindex


def test_agent_tokens_of_a_user_agent() -> None:
    tokens = agent_tokens("Mozilla/5.0 (compatible; MyBot/2.1; +http://example.com/bot)")
    assert tokens == {"mozilla", "compatible", "mybot"}  # no version, no words of the URL
    assert agent_tokens("360Spider") == {"360spider"} and agent_tokens("Bot/1 (2; x/3)") == \
        {"bot", "x"}
    assert "e2ebot" in agent_tokens("E2EBot/1.0")
    assert read(AGENT_PAGE, agents=tokens).nofollow
    assert agent_tokens(None) == frozenset()


# -- X-Robots-Tag ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("headers", "noindex", "nofollow"), [
    (["noindex"], True, False),
    (["NOINDEX, NOFOLLOW"], True, True),
    (["noindex", "nofollow"], True, True),  # repeated headers add up
    (["none"], True, True),
    (["all"], False, False),
    (["otherbot: nofollow"], False, False),  # for another agent
    (["mybot: nofollow"], False, True),
    (["MyBot: NoIndex, NoFollow"], True, True),
    (["otherbot: noindex", "mybot: nofollow"], False, True),
    (["noindex", "mybot: index, follow"], True, False),  # nothing lifts a restriction
])
def test_x_robots_tag_forms(headers: list[str], noindex: bool, nofollow: bool) -> None:
    signals = read(page(), x_robots_tag=headers, agents=["mybot"])
    assert (signals.noindex, signals.nofollow) == (noindex, nofollow)


def test_x_robots_tag_and_meta_combine() -> None:
    signals = read(meta("nofollow"), x_robots_tag=["noindex"])
    assert signals.x_robots_tag == "noindex, nofollow"


def test_x_robots_tag_needs_no_body() -> None:
    assert read(b"", x_robots_tag=["noindex, nofollow"]).x_robots_tag == "noindex, nofollow"


def test_unknown_directives_are_warned_about_and_google_extras_carried() -> None:
    signals = read(page(), x_robots_tag=["noindex, max-snippet: 20, noimageindex, frobnicate"])
    assert signals.x_robots_tag == "noindex, max-snippet:20, noimageindex"
    assert signals.carried == ("max-snippet:20", "noimageindex")
    assert warned(signals, "unknown directive 'frobnicate'")


def test_directives_separated_by_spaces_are_read_with_a_warning() -> None:
    signals = read(meta("noindex nofollow"))
    assert signals.noindex and signals.nofollow and warned(signals, "separated by commas")


def test_bings_nocache_is_noarchive() -> None:
    assert read(meta("nocache")).noarchive


# -- unavailable_after -----------------------------------------------------------------------------


@pytest.mark.parametrize("date", [
    "25 Jun 2010 15:00:00 PST",  # RFC 822 with a zone name
    "Wednesday, 25-Jun-10 15:00:00 GMT",  # RFC 850: holds a comma
    "Fri, 25 Jun 2010 15:00:00 GMT",  # RFC 1123: holds a comma
    "25-Jun-2010 15:00:00 EST",  # Google's old example
    "2010-06-25",
    "2010-06-25T15:00:00Z",
    "25 Jun 2010",
])
def test_unavailable_after_a_past_date_means_noindex(date: str) -> None:
    signals = read(meta(f"unavailable_after: {date}, nofollow"))
    assert signals.noindex and signals.nofollow  # the directive after the date still counts
    assert signals.x_robots_tag == "noindex, nofollow"
    assert signals.warnings == ()


def test_unavailable_after_a_future_date_is_carried() -> None:
    signals = read(page(), x_robots_tag=["unavailable_after: Wed, 01 Jul 2026 12:00:00 GMT"])
    assert not signals.noindex
    assert signals.unavailable_after == datetime(2026, 7, 1, 12, tzinfo=UTC).timestamp()
    assert signals.x_robots_tag == "unavailable_after: 2026-07-01T12:00:00Z"


def test_unavailable_after_is_decided_by_the_given_now() -> None:
    body = meta("unavailable_after: 2026-07-01")
    assert not read(body, now=datetime(2026, 6, 30, tzinfo=UTC).timestamp()).noindex
    assert read(body, now=datetime(2026, 7, 2, tzinfo=UTC).timestamp()).noindex


def test_unavailable_after_the_earliest_date_wins() -> None:
    signals = read(meta("unavailable_after: 2027-01-01"),
                   x_robots_tag=["unavailable_after: 2026-03-01"])
    assert signals.unavailable_after == datetime(2026, 3, 1, tzinfo=UTC).timestamp()


def test_unavailable_after_is_not_an_agent_prefix() -> None:
    signals = read(page(), x_robots_tag=["unavailable_after: 25 Jun 2010 15:00:00 PST"])
    assert signals.noindex
    agent = read(page(), x_robots_tag=["mybot: unavailable_after: 2010-06-25"], agents=["mybot"])
    assert agent.noindex


def test_an_unreadable_date_is_warned_about_and_ignored() -> None:
    signals = read(meta("unavailable_after: someday, nofollow"))
    assert not signals.noindex and signals.nofollow
    assert warned(signals, "unavailable_after date not understood")


# -- section tags: the seed 004 example ------------------------------------------------------------


def test_seed_004_reading_of_each_section() -> None:
    signals = read(SEED_004)
    # No page-level signal: the page itself may be indexed and its links followed.
    assert (signals.noindex, signals.nofollow, signals.x_robots_tag) == (False, False, "all")
    none, noindex, nofollow = signals.sections
    assert (none.line, none.end_line, none.noindex, none.nofollow) == (5, 8, True, True)
    assert none.text == "This text will NOT be indexed. this link will NOT be followed"
    assert none.links == ("bar.html",)
    assert (noindex.line, noindex.noindex, noindex.nofollow) == (9, True, False)
    assert noindex.text == "This text will NOT be indexed. this link WILL be followed"
    assert (nofollow.line, nofollow.noindex, nofollow.nofollow) == (13, False, True)
    assert nofollow.text == "This text WILL be indexed. this link will NOT be followed"
    assert signals.warnings == ()


def test_seed_004_links() -> None:
    signals = read(SEED_004)
    assert [(link.href, link.line, link.nofollow) for link in signals.links] == [
        ("foo.html", 4, False), ("bar.html", 7, True), ("bar1.html", 11, False),
        ("bar1.html", 15, True)]
    assert signals.all_links == ("foo.html", "bar.html", "bar1.html")
    # bar1.html is followable from the noindex section but not from the nofollow one: a request
    # cannot say which anchor it came from, so the most restrictive reading counts it nofollow.
    assert signals.nofollow_links == ("bar.html", "bar1.html")


def test_seed_004_meta_and_sections_together() -> None:
    head = b'<HEAD><META NAME="ROBOTS" CONTENT="NOFOLLOW"></HEAD>'
    body = SEED_004.replace(b"<BODY>", head + b"<BODY>")
    signals = read(body)
    assert signals.nofollow and len(signals.sections) == 3


def test_seed_004_stripped() -> None:
    stripped = strip_page(SEED_004)
    assert stripped is not None
    text = stripped.decode()
    assert "This text will NOT be indexed." not in text
    assert "this link will NOT be followed </A>" in text  # nofollow section: text stays
    assert "This text WILL be indexed." in text and "la la la" in text
    assert 'HREF="foo.html"' in text  # outside every section: untouched
    assert 'HREF="bar1.html"' in text  # the noindex section's link is followed
    assert "bar.html" not in text  # the none section: its link went with its text
    assert text.count("bar1.html") == 1  # the nofollow section's href is gone, the <a> stays
    assert text.count("<a>") == 2 and text.count("</A>") == 4
    # The markup is all still there, so the page reads the same apart from what was removed.
    again = read(stripped)
    assert [s.text for s in again.sections] == ["", "", "This text WILL be indexed. this link "
                                                        "will NOT be followed"]
    assert again.nofollow_links == ()


def test_a_page_without_sections_is_not_rewritten() -> None:
    assert strip_page(page("<title>x</title>", '<a href="/a">a</a> text')) is None
    assert strip_page(page("", "<!-- robots content=index -->x<!-- /robots -->")) is None


# -- section tags: forms, nesting, balance ---------------------------------------------------------


@pytest.mark.parametrize("tag", [
    '<!-- robots content="nofollow" -->',
    "<!-- robots content=nofollow -->",
    "<!-- ROBOTS CONTENT='NOFOLLOW' -->",
    '<!--robots content="noindex,nofollow"-->',
    '<!--\n robots\n content = "none"\n-->',
])
def test_section_tag_forms(tag: str) -> None:
    signals = read(page("", f'{tag}<a href="/in">in</a><!-- /robots --><a href="/out">o</a>'))
    assert signals.nofollow_links == ("/in",)
    assert signals.all_links == ("/in", "/out")


def test_other_comments_are_not_section_tags() -> None:
    signals = read(page("", '<!-- robotsfoo content="nofollow" --><a href="/a">a</a>'
                            '<!-- the robots content="nofollow" -->'))
    assert signals.sections == () and signals.nofollow_links == ()


def test_section_directives_that_change_nothing() -> None:
    signals = read(page("", "<!-- robots content=all -->x<a href=/a>a</a><!-- /robots -->"))
    [section] = signals.sections
    assert not section.noindex and not section.nofollow and signals.nofollow_links == ()


def test_a_section_without_content_is_warned_about() -> None:
    signals = read(page("", "<!-- robots -->x<!-- /robots -->"))
    assert warned(signals, "without content=")


def test_page_directives_in_a_section_are_warned_about() -> None:
    signals = read(page("", "<!-- robots content=noarchive -->x<!-- /robots -->"))
    assert warned(signals, "only noindex, nofollow and none apply to a section")


def test_a_close_without_an_open_is_ignored_with_a_warning() -> None:
    signals = read(page("", '<!-- /robots --><a href="/a">a</a>'))
    assert signals.sections == () and signals.nofollow_links == ()
    assert warned(signals, "without an open section tag")


def test_an_unclosed_section_runs_to_the_end_of_the_page() -> None:
    signals = read(page("", '<a href="/before">b</a><!-- robots content="nofollow" -->'
                            '<a href="/after">a</a><p><a href="/last">l</a></p>'))
    assert signals.nofollow_links == ("/after", "/last")
    [section] = signals.sections
    assert section.end_line is None and warned(signals, "never closed")


def test_nested_sections_both_apply_and_are_warned_about() -> None:
    body = page("", '<!-- robots content="noindex" -->outer\n'
                    '<!-- robots content="nofollow" -->inner <a href="/in">i</a>\n'
                    '<!-- /robots -->\nouter again <a href="/outer">o</a>\n<!-- /robots -->'
                    '<a href="/free">f</a>')
    signals = read(body)
    outer, inner = signals.sections
    assert (outer.noindex, outer.nofollow, outer.text) == (True, False, "outer outer again o")
    assert (inner.noindex, inner.nofollow, inner.text) == (True, True, "inner i")
    assert signals.nofollow_links == ("/in",)  # the inner section closed before /outer
    assert warned(signals, "nested in the section of line 1")
    stripped = strip_page(body)
    assert stripped is not None
    assert b"outer\n" not in stripped and b"outer again" not in stripped
    assert b"inner" not in stripped
    assert b'href="/outer"' in stripped and b'href="/free"' in stripped
    assert b"/in" not in stripped


def test_nesting_deeper_than_the_limit_is_ignored_and_stays_balanced() -> None:
    depth = MAX_SECTION_DEPTH + 5
    body = page("", "<!-- robots content=nofollow -->" * depth + '<a href="/deep">d</a>'
                + "<!-- /robots -->" * depth + '<a href="/free">f</a>')
    signals = read(body)
    assert len(signals.sections) == MAX_SECTION_DEPTH
    assert signals.nofollow_links == ("/deep",)
    assert warned(signals, f"nested deeper than {MAX_SECTION_DEPTH}")
    assert not warned(signals, "without an open section tag")


# -- links -----------------------------------------------------------------------------------------


def test_links_and_base() -> None:
    body = page('<base href=" /root/ ">',
                '<a href="  a.html\n">a</a><a href="#top">top</a><a name="x">x</a>'
                '<map><area href="map.html"></map><a href="">self</a>'
                '<link href="style.css"><img src="i.png">')
    signals = read(body)
    assert signals.base == "/root/"
    assert signals.all_links == ("a.html", "map.html")


def test_links_are_not_read_from_the_head_alone() -> None:
    signals = read(meta("nofollow"), links=False)
    assert signals.nofollow and not signals.links_read and signals.all_links == ()
    assert read(meta("nofollow")).all_links == ("/x",)


def test_may_have_sections_is_a_cheap_test_with_no_false_negatives() -> None:
    assert not read(meta("nofollow"), links=False).may_have_sections
    assert read(SEED_004, links=False).may_have_sections
    assert read(page("", "<!-- ROBOTS content=none -->"), links=False).may_have_sections


# -- charsets --------------------------------------------------------------------------------------


def test_the_content_type_charset_is_used() -> None:
    body = '<a href="/café">é</a><!-- robots content=nofollow --><a href="/naïve">n</a>'
    signals = read(page("", body).decode().encode("iso-8859-1"),
                   content_type="text/html; charset=ISO-8859-1")
    assert signals.charset == "cp1252"  # what HTML means by ISO-8859-1
    assert signals.all_links == ("/café", "/naïve") and signals.nofollow_links == ("/naïve",)


def test_a_meta_charset_is_used() -> None:
    for head in ('<meta charset="shift_jis">',
                 '<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'):
        body = page(head, '<a href="/日本">x</a>').decode().encode("shift_jis")
        signals = read(body, content_type="text/html")
        assert signals.charset == "shift_jis" and signals.all_links == ("/日本",)


def test_the_header_charset_wins_over_meta_and_a_bom_over_both() -> None:
    body = page('<meta charset="shift_jis">', '<a href="/é">x</a>').decode()
    assert read(body.encode("utf-8"), content_type="text/html; charset=utf-8").all_links == ("/é",)
    bom = b"\xff\xfe" + body.encode("utf-16-le")
    signals = read(bom, content_type="text/html; charset=iso-8859-1")
    assert signals.charset == "utf-16-le" and signals.all_links == ("/é",)


def test_without_a_charset_utf8_else_windows_1252() -> None:
    utf8 = read(page("", '<a href="/é">x</a>'))
    assert utf8.charset == "utf-8" and utf8.all_links == ("/é",) and utf8.warnings == ()
    legacy = read(page("", '<a href="/€">x</a>').decode().encode("cp1252"))
    assert legacy.charset == "cp1252" and legacy.all_links == ("/€",)
    assert warned(legacy, "not UTF-8")


@pytest.mark.parametrize("label", ["x-no-such-charset", "base64", "utf-7"])
def test_an_unusable_charset_falls_back_with_a_warning(label: str) -> None:
    signals = read(page("", '<a href="/é">x</a>'), content_type=f"text/html; charset={label}")
    assert signals.charset == "utf-8" and signals.all_links == ("/é",)
    assert warned(signals, label)


def test_bytes_that_do_not_decode_survive_a_rewrite() -> None:
    body = page("", "<!-- robots content=noindex -->gone<!-- /robots -->\xe9 kept").decode()
    raw = body.encode("utf-8").replace("\xe9".encode(), b"\xe9")  # invalid UTF-8 byte
    stripped = strip_page(raw, content_type="text/html; charset=utf-8")
    assert stripped == raw.replace(b"gone", b"")


def test_is_html() -> None:
    assert is_html("text/html") and is_html("Text/HTML; charset=utf-8")
    assert is_html("application/xhtml+xml")
    assert not is_html("text/plain") and not is_html(None) and not is_html("")
    assert not is_html("application/json; text/html")


# -- the byte cap ----------------------------------------------------------------------------------


def test_only_the_first_two_mib_are_read() -> None:
    assert MAX_PAGE_BYTES == 2 * 1024 * 1024
    filler = "<p>" + "x" * 1000 + "</p>\n"
    head = '<!-- robots content="nofollow" --><a href="/early">e</a>'
    body = page("", head + filler * 2200 + '<a href="/late">l</a>')
    assert len(body) > MAX_PAGE_BYTES
    signals = read(body)
    assert signals.truncated and warned(signals, f"only the first {MAX_PAGE_BYTES} bytes")
    assert signals.all_links == ("/early",)


def test_a_cut_inside_a_character_keeps_it_for_the_rest() -> None:
    body = "<p>ab</p>é<!-- robots content=noindex -->gone".encode()
    cut = body.index("é".encode()) + 1  # between the two bytes of é
    html = decode_html(body, "text/html; charset=utf-8", max_bytes=cut)
    assert html.truncated and html.text == "<p>ab</p>" and html.consumed == cut - 1
    full = decode_html(body, "text/html; charset=utf-8")
    assert not full.truncated and full.consumed == len(body)


def test_strip_rewrites_the_part_read_and_keeps_the_rest_byte_for_byte() -> None:
    body = (b"<!-- robots content=noindex -->secret<p>more secret</p><!-- /robots --><p>tail "
            b"<!-- robots content=noindex -->not read<!-- /robots -->")
    cut = body.index(b"<p>tail") + 5  # inside the word "tail"
    html = decode_html(body, "text/html", max_bytes=cut)
    stripped = strip_page(body, html)
    assert stripped is not None
    assert b"secret" not in stripped
    assert stripped.endswith(b"<p>tail <!-- robots content=noindex -->not read<!-- /robots -->")


def test_strip_keeps_scripts_and_rewrites_attributes_faithfully() -> None:
    body = page("", '<!-- robots content="none" --><script>var s = "code";</script>'
                    '<a class="x" href="/a" title="&quot;q&quot; &amp; more" data-x>words</a>'
                    "<!-- /robots -->")
    stripped = strip_page(body)
    assert stripped is not None
    assert b'<script>var s = "code";</script>' in stripped
    assert b'<a class="x" title="&quot;q&quot; &amp; more" data-x></a>' in stripped


def test_html_text_is_a_value() -> None:
    html = decode_html(page())
    assert isinstance(html, HtmlText)
    with pytest.raises(AttributeError):
        html.text = "x"  # type: ignore[misc]


# -- never raises ----------------------------------------------------------------------------------

FRAGMENTS = ["<!-- robots content=none -->", "<!-- /robots -->", "<!-- robots", "-->", "<a href=",
             '"/x">', "<meta name=robots content=", "noindex", "<head>", "</head>", "<body>",
             "<base href=", "<script>", "</script>", "&amp;", "&", "<", ">", "é", "\x00", "\ud800",
             "unavailable_after: ", ",", "<area href=/m>", "<![CDATA[", "<?pi?>", "<!DOCTYPE x>"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=40),
       st.sampled_from([None, "text/html", "text/html; charset=shift_jis",
                        "text/html; charset=utf-16"]),
       st.lists(st.sampled_from(["noindex", "mybot: none", "unavailable_after: x, y", ":",
                                 "a:b:c", ""]), max_size=3))
def test_reading_and_stripping_never_raise(parts: list[str], content_type: str | None,
                                           headers: list[str]) -> None:
    body = "".join(parts).encode("utf-8", "surrogatepass")
    signals = read_page(body, now=NOW, content_type=content_type, x_robots_tag=headers,
                        agents=["mybot"])
    assert signals.x_robots_tag
    head = read_page(body, now=NOW, content_type=content_type, x_robots_tag=headers,
                     agents=["mybot"], links=False)
    assert (head.noindex, head.nofollow) == (signals.noindex, signals.nofollow)
    if signals.sections:
        assert head.may_have_sections
    stripped = strip_page(body, content_type=content_type)
    assert stripped is None or isinstance(stripped, bytes)
