"""RSL licence documents (Really Simple Licensing 1.0, https://rslstandard.org/rsl), read by
robotsgate.protocol.rsl: the examples of the specification and its guides first, then hostile
input, which <content> applies to a URL, what each usage token covers, and how licences
combine.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robotsgate.protocol.rsl import (
    NAMESPACE,
    USAGE_PURPOSES,
    Condition,
    RslDocument,
    Terms,
    covers,
)
from robotsgate.protocol.rsl_parse import MAX_BYTES, MAX_CONTENTS, MAX_DEPTH, MAX_ELEMENTS, read_rsl
from robotsgate.protocol.rsl_rulings import Grant, evaluate, prohibited
from robotsgate.protocol.usage import PreferenceValue

SITE = "https://example.com"
LICENSE_URL = f"{SITE}/license.xml"
PURPOSES = ("train-ai", "search", "ai-input")


def rsl(*contents: str) -> bytes:
    return f'<rsl xmlns="{NAMESPACE}">{"".join(contents)}</rsl>'.encode()


def content(url: str, *licenses: str, server: str | None = None) -> str:
    attribute = "" if server is None else f' server="{server}"'
    return f'<content url="{url}"{attribute}>{"".join(licenses)}</content>'


def license_(*, permits: str | None = None, prohibits: str | None = None,
             extra: str = "") -> str:
    parts = []
    if permits is not None:
        parts.append(f'<permits type="usage">{permits}</permits>')
    if prohibits is not None:
        parts.append(f'<prohibits type="usage">{prohibits}</prohibits>')
    return f"<license>{''.join(parts)}{extra}</license>"


def terms_of(body: bytes, url: str = f"{SITE}/page") -> Terms:
    terms = read_rsl(body, LICENSE_URL).terms(url)
    assert terms is not None
    return terms


def answers(terms: Terms, *purposes: str) -> dict[str, Grant]:
    return {finding.purpose: finding.answer for finding in evaluate(terms, purposes)}


P, X, N, U = Grant.PERMITTED, Grant.PROHIBITED, Grant.NOT_GRANTED, Grant.UNSTATED


def unreadable(document: RslDocument, *words: str) -> None:
    """No terms at all, and a problem that says why."""
    assert document.contents == ()
    assert document.terms(f"{SITE}/") is None
    assert document.problems
    text = " ".join(document.problems)
    for word in words:
        assert word in text, text


# -- the specification's and the guides' own examples -----------------------------------------

# rslstandard.org/guide/web-crawlers (the Crawler Authorization Protocol, draft of 2025-09-10):
# "Below is an RSL license file specifying that crawlers must first obtain a free license and
# associated <license_token> from the RSL license server at https://api.rslcollective.org".
CRAWLING_LICENSE = b"""<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/" server="https://api.rslcollective.org">
    <license>
      <permits type="usage">all</permits>
    </license>
  </content>
</rsl>"""


def test_the_crawling_licence_permits_every_use_once_a_licence_is_obtained() -> None:
    document = read_rsl(CRAWLING_LICENSE, LICENSE_URL)
    assert document.problems == ()
    terms = terms_of(CRAWLING_LICENSE, f"{SITE}/data")
    # "If this attribute is present, clients must obtain a license for this asset, even if the
    # license is free" (spec, <content server>): a fact for the caller, not a refusal here.
    assert terms.servers == ("https://api.rslcollective.org",)
    (only,) = terms.contents
    assert (only.index, only.line, only.url) == (1, 2, "/")
    (lic,) = only.licenses
    assert (lic.index, lic.line, lic.permits, lic.prohibits) == (1, 3, ("all",), ())
    assert lic.payments == ("free",)  # no <payment>: free
    assert answers(terms, *PURPOSES, "some-operator-purpose") == dict.fromkeys(
        (*PURPOSES, "some-operator-purpose"), P)


# The earlier version of the same guide: the usage token is `tdm`, which RSL 1.0 does not have.
EARLIER_CRAWLING_LICENSE = b"""<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/" server="https://rslcollective.org/api">
    <license>
      <permits type="usage">tdm</permits>
    </license>
  </content>
</rsl>"""


def test_a_token_outside_the_vocabulary_speaks_only_of_a_purpose_of_its_name() -> None:
    document = read_rsl(EARLIER_CRAWLING_LICENSE, LICENSE_URL)
    assert len(document.problems) == 1
    assert "line 4" in document.problems[0] and "'tdm'" in document.problems[0]
    terms = terms_of(EARLIER_CRAWLING_LICENSE)
    assert answers(terms, *PURPOSES, "tdm") == {"train-ai": N, "search": N, "ai-input": N,
                                                "tdm": P}


# The specification's example of a site-wide ban on AI uses, as a third-party page quotes it
# (sourceUrl https://rslstandard.org/rsl): "a compact XML example for prohibiting AI use across
# a site".
NO_AI = b"""<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/">
    <license>
      <prohibits type="usage">ai-all</prohibits>
    </license>
  </content>
</rsl>"""


def test_the_site_wide_ai_ban_prohibits_ai_uses_and_leaves_search() -> None:
    terms = terms_of(NO_AI, f"{SITE}/any/page?x=1")
    findings = {finding.purpose: finding for finding in evaluate(terms, (*PURPOSES, "ai-index"))}
    assert {p: f.answer for p, f in findings.items()} == {
        "train-ai": X, "ai-input": X, "ai-index": X, "search": P}
    evidence = findings["train-ai"].evidence
    assert (evidence.element, evidence.token, evidence.license and evidence.license.line) == (
        "prohibits", "ai-all", 3)
    assert evidence.cite() == ('<content url="/"> #1 (line 2), <license> #1 (line 3): '
                               '<prohibits type="usage"> ai-all')
    assert findings["search"].evidence.cite().endswith('no <permits type="usage">')
    assert [f.purpose for f in prohibited(terms, PURPOSES)] == ["ai-input", "train-ai"]


# rslstandard.org/guide/file-embedding: the licence embedded in an EPUB's OPF metadata (the
# <rsl:rsl> element, with the prefix the example declares on <package>).
EPUB_LICENSE = b"""<rsl:rsl xmlns:rsl="https://rslstandard.org/rsl">
      <rsl:content url="https://press.stripe.com/scaling-people.aes"
                   server="https://rslcollective.org/api">
        <rsl:license>
          <rsl:permits type="usage">train-ai</rsl:permits>
          <rsl:payment type="royalty">
            <rsl:standard>https://rslcollective.org/license</rsl:standard>
          </rsl:payment>
        </rsl:license>
      </rsl:content>
    </rsl:rsl>"""


def test_the_embedded_epub_licence_names_one_file_by_its_full_url() -> None:
    document = read_rsl(EPUB_LICENSE, LICENSE_URL)
    # train-ai is the AI-preference vocabulary's word, not RSL's (ai-train): said, and read
    # for the purpose of that very name.
    assert [p for p in document.problems if "'train-ai'" in p]
    terms = document.terms("https://press.stripe.com/scaling-people.aes")
    assert terms is not None
    assert terms.servers == ("https://rslcollective.org/api",)
    assert terms.content.licenses[0].payments == ("royalty",)
    assert answers(terms, "train-ai", "search") == {"train-ai": P, "search": N}
    # A full URL names one origin and its path: nothing else.
    assert document.terms("https://press.stripe.com/other.aes") is None
    assert document.terms("https://example.com/scaling-people.aes") is None
    assert document.terms("/scaling-people.aes") is None  # a path alone: no origin to match


# rslstandard.org/guide/file-format: "RSL feeds must declare the RSL namespace on the root <rss>
# element and use the rsl: prefix to reference RSL elements (e.g., <rsl:content>)."
FEED = b"""<rss xmlns:rsl="https://rslstandard.org/rsl" version="2.0">
  <channel>
    <title>Example</title>
    <rsl:content url="/">
      <rsl:license><rsl:permits type="usage">search</rsl:permits></rsl:license>
    </rsl:content>
    <item>
      <title>An article</title>
      <link>https://example.com/articles/1</link>
      <rsl:content url="https://example.com/articles/1">
        <rsl:license><rsl:prohibits type="usage">ai-train</rsl:prohibits></rsl:license>
      </rsl:content>
    </item>
  </channel>
</rss>"""


def test_a_feed_is_read_for_the_rsl_contents_of_its_channel_and_items() -> None:
    document = read_rsl(FEED, f"{SITE}/feed.xml")
    assert document.feed and document.problems == ()
    assert [c.url for c in document.contents] == ["/", "https://example.com/articles/1"]
    article = document.terms(f"{SITE}/articles/1")
    assert article is not None
    # The item's licence lists no usage it permits: it grants all it does not prohibit.
    assert answers(article, *PURPOSES) == {"train-ai": X, "search": P, "ai-input": P}
    home = document.terms(f"{SITE}/")
    assert home is not None and answers(home, *PURPOSES) == {
        "train-ai": N, "search": P, "ai-input": N}


def test_a_feed_without_rsl_contents_has_no_terms() -> None:
    unreadable(read_rsl(b'<rss version="2.0"><channel><item/></channel></rss>', LICENSE_URL),
               "no <rsl:content>")


def test_the_spec_url_example_is_a_path_prefix() -> None:
    # "a path on the server (e.g., /content/images/) that follows the URL-matching rules of the
    # Robots Exclusion Protocol (RFC 9309)" (spec, <content url>).
    document = read_rsl(rsl(content("/content/images/", license_(permits="search"))),
                        LICENSE_URL)
    assert document.terms(f"{SITE}/content/images/cat.png") is not None
    assert document.terms(f"{SITE}/content/images") is None
    assert document.terms(f"{SITE}/content/") is None


# -- hostile input ------------------------------------------------------------------------------

BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE rsl [\n<!ENTITY lol "lol">\n'
    + b"".join(b'<!ENTITY lol%d "%s">\n' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
               for i in range(1, 10))
    + b']>\n<rsl xmlns="https://rslstandard.org/rsl"><content url="&lol9;">'
      b'<license><permits type="usage">all</permits></license></content></rsl>')


def test_a_billion_laughs_is_refused_at_its_doctype() -> None:
    unreadable(read_rsl(BILLION_LAUGHS, LICENSE_URL), "DOCTYPE", "line 2")


def test_a_doctype_is_refused_before_its_internal_subset_is_read() -> None:
    # The subset is not even well-formed: the refusal comes first, so it is never parsed.
    broken = b'<!DOCTYPE rsl [ <!ENTITY oops "unterminated > ]><rsl xmlns="%s"/>' % (
        NAMESPACE.encode())
    unreadable(read_rsl(broken, LICENSE_URL), "DOCTYPE")
    assert "not XML" not in read_rsl(broken, LICENSE_URL).problems[0]


@pytest.mark.parametrize("doctype", [
    b'<!DOCTYPE rsl SYSTEM "file:///etc/passwd">',
    b'<!DOCTYPE rsl PUBLIC "-//X//EN" "http://169.254.169.254/">',
    b"<!DOCTYPE rsl>",
])
def test_every_doctype_is_refused(doctype: bytes) -> None:
    unreadable(read_rsl(doctype + CRAWLING_LICENSE, LICENSE_URL), "DOCTYPE")


def test_an_undeclared_entity_is_not_xml() -> None:
    unreadable(read_rsl(rsl(content("&secret;", license_(permits="all"))), LICENSE_URL),
               "not XML", "undefined entity")


@pytest.mark.parametrize(("body", "words"), [
    (b"", ("not XML",)),
    (b"User-agent: *\nDisallow: /private\n", ("not XML",)),
    (b"<rsl xmlns='https://rslstandard.org/rsl'><content url='/'>", ("not XML", "line 1")),
    (b"\xff\xfe\x00garbage", ("not XML",)),
    (b'<?xml version="1.0" encoding="x-no-such"?><rsl/>', ("not XML", "encoding")),
    (b'<?xml version="1.0" encoding="shift_jis"?><rsl/>', ("not XML", "encoding")),
    (b'<?xml version="1.0" encoding="rot13"?><rsl/>', ("not XML", "encoding")),
    (b'<?xml version="1.0" encoding="idna"?><rsl/>', ("not XML", "encoding")),
    (b'<?xml version="1.0" encoding="punycode"?><rsl>\x80</rsl>', ("not XML", "encoding")),
    (b"<html><body>License</body></html>", ("<html>", "not RSL")),
    (b'<rsl xmlns="https://rslstandard.org/rsl/"><content url="/"/></rsl>',
     ("namespace", "'https://rslstandard.org/rsl/'", "not RSL")),
    (b'<r:rsl xmlns:r="urn:other"><r:content url="/"/></r:rsl>', ("urn:other", "not RSL")),
    (b'<rsl xmlns="https://rslstandard.org/rsl"/>', ("no <content>",)),
    (b'<rsl xmlns="https://rslstandard.org/rsl"><license/></rsl>', ("no <content>",)),
])
def test_what_is_not_an_rsl_document_gives_no_terms(body: bytes, words: tuple[str, ...]) -> None:
    unreadable(read_rsl(body, LICENSE_URL), *words)


def test_a_body_past_the_cap_is_not_parsed() -> None:
    padding = b"<!-- " + b"x" * MAX_BYTES + b" -->"
    body = CRAWLING_LICENSE.replace(b"</rsl>", padding + b"</rsl>")
    unreadable(read_rsl(body, LICENSE_URL), f"more than the {MAX_BYTES}")
    # Up to the cap it is read.
    fitting = CRAWLING_LICENSE.replace(
        b"</rsl>", b"<!-- " + b"x" * (MAX_BYTES - len(CRAWLING_LICENSE) - 9) + b" --></rsl>")
    assert len(fitting) == MAX_BYTES
    assert read_rsl(fitting, LICENSE_URL).terms(f"{SITE}/") is not None


def test_nesting_past_the_limit_is_refused() -> None:
    depth = MAX_DEPTH - 3  # rsl, content, license around it
    deep = "<x>" * depth + "</x>" * depth
    assert read_rsl(rsl(content("/", license_(permits="all", extra=deep))),
                    LICENSE_URL).contents
    deeper = "<x>" * (depth + 1) + "</x>" * (depth + 1)
    unreadable(read_rsl(rsl(content("/", license_(permits="all", extra=deeper))), LICENSE_URL),
               f"nested deeper than {MAX_DEPTH}")
    # Past the point where a recursive reader would overflow the stack.
    unreadable(read_rsl(b"<a>" * 100_000, LICENSE_URL), "nested deeper")


def test_too_many_elements_are_refused() -> None:
    many = "<x/>" * (MAX_ELEMENTS - 3)  # rsl, content, license
    assert read_rsl(rsl(content("/", license_(extra=many))), LICENSE_URL).contents
    unreadable(read_rsl(rsl(content("/", license_(extra=many + "<x/>"))), LICENSE_URL),
               f"more than {MAX_ELEMENTS} elements")


def test_too_many_contents_are_refused_rather_than_cut() -> None:
    # A cut could drop the one that prohibits: the document is refused whole.
    ok = rsl(*(content(f"/{i}/", license_(permits="all")) for i in range(MAX_CONTENTS)))
    assert len(read_rsl(ok, LICENSE_URL).contents) == MAX_CONTENTS
    many = rsl(*(content(f"/{i}/", license_(permits="all")) for i in range(MAX_CONTENTS)),
               content("/", license_(prohibits="all")))
    unreadable(read_rsl(many, LICENSE_URL), f"more than {MAX_CONTENTS}")


@pytest.mark.parametrize(("element", "words"), [
    ('<content><license><permits type="usage">all</permits></license></content>',
     ("line 1", "no url attribute")),
    ('<content url=""><license/></content>', ("an empty url",)),
    ('<content url="  "><license/></content>', ("an empty url",)),
    ('<content url="images/"><license/></content>', ("neither a path nor a full URL",)),
    ('<content url="https:///x"><license/></content>', ("names no host",)),
    ('<content url="http://[::1/x"><license/></content>', ("names no host",)),
    ('<content url="https://h:99999/x"><license/></content>', ("names no host",)),
])
def test_a_content_without_a_usable_url_applies_to_nothing(
        element: str, words: tuple[str, ...]) -> None:
    document = read_rsl(rsl(element, content("/other/", license_(permits="all"))), LICENSE_URL)
    assert len(document.contents) == 2  # the other one is still read
    for url in (f"{SITE}/", f"{SITE}/x", "https://h/x", "http://[::1]/x", f"{SITE}/images/"):
        assert document.terms(url) is None
    text = " ".join(document.problems)
    for word in words:
        assert word in text, text


def test_nested_garbage_is_ignored_and_never_read_as_terms() -> None:
    body = rsl(
        '<junk><content url="/"><license><permits type="usage">all</permits></license>'
        "</content></junk>",
        content("/a/",
                "<license>"
                '<legal type="warranty">ownership</legal>'
                '<permits type="usage"><b>all</b></permits>'  # not text of the element itself
                '<prohibits type="usage">search<i>ai-train</i></prohibits>'
                '<content url="/"><license><permits type="usage">all</permits></license>'
                "</content>"
                '<o:permits xmlns:o="urn:other" type="usage">all</o:permits>'
                "</license>",
                '<content url="/b/"><license><permits type="usage">all</permits></license>'
                "</content>"))
    document = read_rsl(body, LICENSE_URL)
    assert [c.url for c in document.contents] == ["/a/"]
    assert document.terms(f"{SITE}/b/") is None
    assert document.terms(f"{SITE}/x") is None
    terms = terms_of(body, f"{SITE}/a/1")
    assert answers(terms, *PURPOSES) == {"search": X, "train-ai": N, "ai-input": N}


@pytest.mark.parametrize(("element", "words"), [
    ("<permits>all</permits>", ("<permits> without a type",)),
    ('<prohibits type="usages">all</prohibits>', ("type 'usages'",)),
    ('<permits type="usage"> </permits>', ("an empty <permits",)),
])
def test_an_unreadable_permits_or_prohibits_is_said(element: str, words: tuple[str, ...]) -> None:
    document = read_rsl(rsl(content("/", f"<license>{element}</license>")), LICENSE_URL)
    text = " ".join(document.problems)
    for word in words:
        assert word in text, text
    assert "line 1" in text


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_read_rsl_never_raises_on_bytes(body: bytes) -> None:
    document = read_rsl(body, LICENSE_URL)
    assert document.contents or document.problems


_PIECES = [b"<", b">", b"/", b"&", b";", b'"', b"=", b"<!DOCTYPE x>", b"<![CDATA[", b"]]>",
           b"<?x?>", b"<!--", b"-->", b"\x00", b"\xff", b"&#0;", b"&#x110000;", b"url",
           b"xmlns:rsl=", b"content", b"license", b"permits", b" type=", b"usage", b"*", b"$",
           b"%", b"\xc3\xa9", b"\r\n", b'<?xml version="1.0" encoding="utf-7"?>',
           b'<?xml version="1.0" encoding="hex"?>', b"xmlns=", b"<rss>", b"rsl:"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(_PIECES)), max_size=6),
       st.sampled_from([CRAWLING_LICENSE, NO_AI, FEED, EPUB_LICENSE]))
def test_mutated_licences_never_raise(cuts: list[tuple[int, bytes]], base: bytes) -> None:
    body = bytearray(base)
    for at, piece in cuts:
        at %= len(body) + 1
        body[at:at] = piece
    document = read_rsl(bytes(body), LICENSE_URL)
    for url in (f"{SITE}/", f"{SITE}/a?b=c", "/", "https://press.stripe.com/scaling-people.aes",
                "*", ""):
        terms = document.terms(url)
        if terms is not None:
            evaluate(terms, (*PURPOSES, "all", ""))
            _ = [e.evidence.cite() for e in evaluate(terms, PURPOSES)]


# -- which <content> applies ---------------------------------------------------------------------


def test_every_matching_content_applies_most_specific_first() -> None:
    body = rsl(content("/", license_(permits="all")),
               content("/news/*", license_(permits="search")),
               content("/news/", license_(permits="ai-input")),
               content("/news/2025/", license_(permits="ai-train")),
               content("/sport/", license_(permits="all")))
    terms = terms_of(body, f"{SITE}/news/2025/a")
    # RFC 9309's ranking: the longest pattern in octets ("/news/*" and "/news/" tie with the
    # trailing '*' counted, as robots.txt counts it; a tie goes to document order).
    assert [c.url for c in terms.contents] == ["/news/2025/", "/news/*", "/news/", "/"]
    assert terms.content.url == "/news/2025/"
    assert [c.url for c in terms_of(body, f"{SITE}/sport/x").contents] == ["/sport/", "/"]
    assert [c.url for c in terms_of(body, f"{SITE}/").contents] == ["/"]


def test_a_tie_goes_to_document_order() -> None:
    body = rsl(content("/b*", license_(permits="search")), content("/a/", license_()),
               content("/*b", license_()))
    assert [c.index for c in terms_of(body, f"{SITE}/a/b").contents] == [2, 3]
    body = rsl(content("/*b", license_()), content("/a/", license_()))
    assert [c.index for c in terms_of(body, f"{SITE}/a/b").contents] == [1, 2]


def test_a_prohibition_in_a_wider_content_survives_a_narrower_grant() -> None:
    # §3.1.1 (secondary): all applicable licences are evaluated together, and a prohibition
    # always wins, whether it sits in the same <license> or another one governing the asset.
    body = rsl(content("/", license_(prohibits="ai-train")),
               content("/free/", license_(permits="all")))
    free = terms_of(body, f"{SITE}/free/essay")
    assert [c.url for c in free.contents] == ["/free/", "/"]
    findings = {f.purpose: f for f in evaluate(free, PURPOSES)}
    assert findings["train-ai"].answer is X
    assert findings["train-ai"].evidence.content.url == "/"
    assert findings["search"].answer is P
    assert findings["search"].evidence.content.url == "/free/"


def test_a_grant_of_any_applying_content_counts() -> None:
    body = rsl(content("/", license_(permits="search")),
               content("/ai/", license_(permits="ai-train")))
    assert answers(terms_of(body, f"{SITE}/ai/x"), *PURPOSES) == {
        "train-ai": P, "search": P, "ai-input": N}
    assert answers(terms_of(body, f"{SITE}/x"), *PURPOSES) == {
        "train-ai": N, "search": P, "ai-input": N}


@pytest.mark.parametrize(("pattern", "url", "matches"), [
    ("/a", "/a", True),
    ("/a", "/ab/c", True),
    ("/a", "/b/a", False),
    ("/a$", "/a", True),
    ("/a$", "/a/", False),
    ("/a$", "/a?x", False),
    ("/*.pdf$", "/docs/x.pdf", True),
    ("/*.pdf$", "/docs/x.pdf?download=1", False),
    ("/*.pdf", "/docs/x.pdf?download=1", True),
    ("*.pdf", "/x.pdf", True),
    ("/a/*/c", "/a/b/c", True),
    ("/a/*/c", "/a/c", False),
    ("/search?q=", "/search?q=rsl", True),
    ("/search?q=", "/search", False),
    ("/Case", "/case", False),  # paths are case-sensitive (RFC 9309)
    ("/caf%C3%A9", "/café", True),  # percent-encoding: one path (RFC 9309 §2.2.2)
    ("/café", "/caf%c3%a9", True),
    ("/%7Euser", "/~user", True),
    ("/a%2Fb", "/a/b", False),
])
def test_a_path_url_is_matched_by_rfc_9309(pattern: str, url: str, matches: bool) -> None:
    document = read_rsl(rsl(content(pattern, license_(permits="all"))), LICENSE_URL)
    assert (document.terms(f"{SITE}{url}") is not None) is matches
    assert (document.terms(url) is not None) is matches  # a path with its query


@pytest.mark.parametrize(("url", "request_url", "matches"), [
    ("https://example.com/x", "https://example.com/x/y", True),
    ("https://EXAMPLE.com:443/x", "https://example.com/x", True),
    ("https://example.com/x", "HTTPS://Example.COM:443/x", True),
    ("http://example.com/x", "http://example.com:80/x", True),
    ("https://example.com/x", "http://example.com/x", False),
    ("https://example.com/x", "https://example.com:8443/x", False),
    ("https://example.com:8443/x", "https://example.com:8443/x", True),
    ("https://example.com/x", "https://www.example.com/x", False),
    ("https://example.com/x", "https://user:pw@example.com/x", True),
    ("https://example.com", "https://example.com/anything", True),
    ("https://example.com?q", "https://example.com/?q=1", True),
    ("https://example.com/x$", "https://example.com/x", True),
    ("https://example.com/x$", "https://example.com/xy", False),
    ("https://example.com/*.pdf", "https://example.com/a/b.pdf", True),
    ("https://example.com/x#part", "https://example.com/x", True),
    ("https://[::1]:8080/x", "https://[::1]:8080/x", True),
    ("https://example.com/x", "/x", False),  # a path alone names no origin
])
def test_a_full_url_is_matched_for_its_origin_only(url: str, request_url: str,
                                                   matches: bool) -> None:
    document = read_rsl(rsl(content(url, license_(permits="all"))), LICENSE_URL)
    assert (document.terms(request_url) is not None) is matches


def test_a_full_url_content_on_another_host_than_the_licence_still_applies() -> None:
    # "The URL may be on a different host than the robots.txt file" (guide/robots-txt): the
    # document's own URL plays no part in matching.
    body = rsl(content("https://site.example/", license_(prohibits="all")))
    terms = read_rsl(body, "https://licences.example/site.xml").terms("https://site.example/a")
    assert terms is not None and answers(terms, "search") == {"search": X}


def test_no_content_matching_gives_no_terms() -> None:
    document = read_rsl(rsl(content("/members/", license_(prohibits="all"))), LICENSE_URL)
    assert document.terms(f"{SITE}/public") is None
    assert read_rsl(b"not xml", LICENSE_URL).terms(f"{SITE}/") is None


# -- the usage tokens -----------------------------------------------------------------------------

ASKED = ("train-ai", "ai-input", "search", "ai-index", "ai-train", "tdm", "my-purpose")
# token -> the purposes of ASKED it covers (USAGE_PURPOSES, and every token its own name).
COVERED = {
    "all": set(ASKED),
    "ai-all": {"train-ai", "ai-input", "ai-index", "ai-train"},
    "ai-train": {"train-ai", "ai-train"},
    "ai-input": {"ai-input"},
    "ai-index": {"ai-index"},
    "search": {"search"},
    "tdm": {"tdm"},
    "train-ai": {"train-ai"},
}


def test_the_table_is_rsl_1_0s_vocabulary() -> None:
    assert dict(USAGE_PURPOSES) == {
        "all": None,  # every purpose
        "ai-all": {"train-ai", "ai-input", "ai-index", "ai-train"},
        "ai-train": {"train-ai"},
        "ai-input": {"ai-input"},
        "ai-index": {"ai-index"},
        "search": {"search"},
    }


@pytest.mark.parametrize("token", sorted(COVERED))
def test_what_a_permitted_token_grants(token: str) -> None:
    terms = terms_of(rsl(content("/", license_(permits=token))))
    assert {f.purpose for f in evaluate(terms, ASKED) if f.answer is P} == COVERED[token]
    assert {f.purpose for f in evaluate(terms, ASKED) if f.answer is N} == \
        set(ASKED) - COVERED[token]
    assert {purpose for purpose in ASKED if covers(token, purpose)} == COVERED[token]


@pytest.mark.parametrize("token", sorted(COVERED))
def test_what_a_prohibited_token_prohibits(token: str) -> None:
    terms = terms_of(rsl(content("/", license_(prohibits=token))))
    found = evaluate(terms, ASKED)
    assert {f.purpose for f in found if f.answer is X} == COVERED[token]
    assert {f.purpose for f in found if f.answer is P} == set(ASKED) - COVERED[token]
    assert all(f.evidence.token == token for f in found if f.answer is X)


def test_tokens_are_split_on_spaces_and_commas_and_read_in_any_case() -> None:
    terms = terms_of(rsl(content("/", license_(permits="\n  AI-Input,search\tai-index  "))))
    assert terms.content.licenses[0].permits == ("ai-input", "search", "ai-index")
    assert answers(terms, *PURPOSES) == {"train-ai": N, "search": P, "ai-input": P}


# -- how licences combine -------------------------------------------------------------------------


def test_a_permits_list_grants_only_what_it_names() -> None:
    terms = terms_of(rsl(content("/", license_(permits="search"))))
    findings = {f.purpose: f for f in evaluate(terms, PURPOSES)}
    assert findings["search"].answer is P
    assert findings["train-ai"].answer is N
    assert findings["train-ai"].evidence.cite().endswith('<permits type="usage"> search')
    assert [f.purpose for f in prohibited(terms, PURPOSES)] == ["ai-input", "train-ai"]


def test_several_permits_of_one_licence_add_up() -> None:
    body = rsl(content("/", '<license><permits type="usage">search</permits>'
                            '<permits type="user">personal</permits>'
                            '<permits type="usage">ai-input</permits></license>'))
    assert terms_of(body).content.licenses[0].permits == ("search", "ai-input")
    assert answers(terms_of(body), *PURPOSES) == {"search": P, "ai-input": P, "train-ai": N}


def test_a_prohibition_wins_over_a_grant_in_the_same_licence() -> None:
    terms = terms_of(rsl(content("/", license_(permits="all", prohibits="ai-train"))))
    assert answers(terms, *PURPOSES, "ai-index") == {
        "train-ai": X, "search": P, "ai-input": P, "ai-index": P}


def test_a_prohibition_in_one_licence_wins_over_a_grant_in_another() -> None:
    terms = terms_of(rsl(content("/", license_(permits="ai-train search"),
                                 license_(prohibits="ai-train", permits="search"))))
    findings = {f.purpose: f for f in evaluate(terms, PURPOSES)}
    assert findings["train-ai"].answer is X
    assert findings["train-ai"].evidence.license is not None
    assert findings["train-ai"].evidence.license.index == 2


def test_any_licence_may_grant() -> None:
    terms = terms_of(rsl(content("/", license_(permits="search"), license_(permits="ai-input"))))
    findings = {f.purpose: f for f in evaluate(terms, PURPOSES)}
    assert {p: f.answer for p, f in findings.items()} == {
        "search": P, "ai-input": P, "train-ai": N}
    assert findings["ai-input"].evidence.license is not None
    assert findings["ai-input"].evidence.license.index == 2


def test_a_licence_without_usage_permits_grants_what_it_does_not_prohibit() -> None:
    terms = terms_of(rsl(content("/", license_(extra='<payment type="purchase"/>'))))
    assert answers(terms, *PURPOSES) == dict.fromkeys(PURPOSES, P)
    assert terms.content.licenses[0].permits is None
    assert terms.content.licenses[0].payments == ("purchase",)


def test_an_empty_permits_grants_nothing() -> None:
    terms = terms_of(rsl(content("/", '<license><permits type="usage"/></license>')))
    assert answers(terms, *PURPOSES) == dict.fromkeys(PURPOSES, N)


def test_a_content_without_a_licence_states_nothing() -> None:
    body = rsl(content("/"))
    document = read_rsl(body, LICENSE_URL)
    assert any("no <license>" in p for p in document.problems)
    terms = terms_of(body)
    findings = evaluate(terms, PURPOSES)
    assert {f.answer for f in findings} == {U}
    assert findings[0].evidence.cite() == '<content url="/"> #1 (line 1): no <license>'
    assert prohibited(terms, PURPOSES) == ()


def test_findings_map_onto_usage_preferences() -> None:
    body = rsl(content("/", license_(permits="search ai-input", prohibits="ai-input")),
               content("/none/"))
    findings = {f.purpose: f.value for f in evaluate(terms_of(body), PURPOSES)}
    assert findings == {"search": PreferenceValue.ALLOWED, "ai-input": PreferenceValue.DISALLOWED,
                        "train-ai": PreferenceValue.DISALLOWED}
    unstated = evaluate(terms_of(rsl(content("/"))), ["search"])
    assert unstated[0].value is PreferenceValue.UNKNOWN


def test_purposes_are_answered_once_each_in_order() -> None:
    terms = terms_of(CRAWLING_LICENSE)
    assert [f.purpose for f in evaluate(terms, ["search", "train-ai", "search"])] == [
        "search", "train-ai"]
    assert evaluate(terms, []) == ()


def test_payments_default_to_free() -> None:
    body = rsl(content("/", license_(extra='<payment type="Crawl"/><payment/>'),
                       license_(extra='<payment type=" "/>'), license_()))
    assert [lic.payments for lic in terms_of(body).content.licenses] == [
        ("crawl", "free"), ("free",), ("free",)]


def test_user_and_geo_are_kept_as_written_and_not_evaluated() -> None:
    body = rsl(content("/", license_(
        permits="ai-input",
        extra='<permits type="user">non-commercial education</permits>'
              '<prohibits type="geo"> US EU </prohibits>')))
    lic = terms_of(body).content.licenses[0]
    assert lic.conditions == (Condition("permits", "user", "non-commercial education", 1),
                              Condition("prohibits", "geo", "US EU", 1))
    assert answers(terms_of(body), *PURPOSES) == {"ai-input": P, "train-ai": N, "search": N}


def test_servers_of_every_applying_content_in_order() -> None:
    body = rsl(content("/", license_(permits="all"), server=" https://a.example/olp "),
               content("/x/", license_(permits="all"), server="https://b.example/olp"),
               content("/x/y", license_(permits="all"), server="https://a.example/olp"),
               content("/z/", license_(permits="all")))
    assert terms_of(body, f"{SITE}/x/y").servers == ("https://a.example/olp",
                                                     "https://b.example/olp")
    assert terms_of(body, f"{SITE}/z/").servers == ("https://a.example/olp",)
    assert read_rsl(rsl(content("/z/", license_())), LICENSE_URL).terms(
        f"{SITE}/z/") is not None
    assert terms_of(rsl(content("/", license_())), f"{SITE}/").servers == ()


def test_lines_and_indexes_cite_the_elements() -> None:
    body = (b'<?xml version="1.0" encoding="utf-8"?>\n'
            b'<rsl xmlns="https://rslstandard.org/rsl">\n'
            b'  <content url="/a/">\n'
            b"    <license/>\n"
            b"  </content>\n"
            b'  <content url="/">\n'
            b'    <license><permits type="usage">search</permits></license>\n'
            b"    <license>\n"
            b'      <prohibits type="usage">ai-all</prohibits>\n'
            b"    </license>\n"
            b"  </content>\n"
            b"</rsl>\n")
    findings = {f.purpose: f for f in evaluate(terms_of(body, f"{SITE}/a/1"), PURPOSES)}
    evidence = findings["ai-input"].evidence
    assert evidence.cite() == ('<content url="/"> #2 (line 6), <license> #2 (line 8): '
                               '<prohibits type="usage"> ai-all')
    assert findings["search"].evidence.cite() == (
        '<content url="/a/"> #1 (line 3), <license> #1 (line 4): no <permits type="usage">')


def test_no_namespace_is_read_as_rsl_and_said() -> None:
    body = b'<rsl><content url="/"><license><prohibits type="usage">all</prohibits>' \
           b"</license></content></rsl>"
    document = read_rsl(body, LICENSE_URL)
    assert any("without the RSL namespace" in p for p in document.problems)
    assert answers(terms_of(body), "search") == {"search": X}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["/", "/a", "/a/*", "/a$", "*b", "/a/b"]),
                          st.sampled_from(sorted(COVERED)), st.booleans()),
                min_size=1, max_size=5),
       st.sampled_from(["/a", "/a/b", "/b", "/ab"]))
def test_a_prohibition_anywhere_that_applies_decides(
        entries: list[tuple[str, str, bool]], path: str) -> None:
    body = rsl(*(content(pattern, license_(prohibits=token) if banned
                         else license_(permits=token))
                 for pattern, token, banned in entries))
    terms = read_rsl(body, LICENSE_URL).terms(f"{SITE}{path}")
    if terms is None:
        return
    applying = {c.index for c in terms.contents}
    for finding in evaluate(terms, ASKED):
        banned_here = any(banned and finding.purpose in COVERED[token]
                          for index, (_, token, banned) in enumerate(entries, 1)
                          if index in applying)
        assert (finding.answer is X) is banned_here



def test_not_well_formed_xml_is_said_with_its_line_and_column() -> None:
    # A licence copied from prose, its attribute in typographic quotes: XML 1.0 §2.3 (AttValue)
    # quotes an attribute's value with '"' or "'" only. Said where (line and column from 1) and
    # why.
    body = ('<rsl xmlns="https://rslstandard.org/rsl">\n  <content url="/">\n    <license>'
            '\n      <prohibits type=\u201cusage\u201d>ai-train</prohibits>\n    </license>'
            '\n  </content>\n</rsl>\n').encode()
    document = read_rsl(body, LICENSE_URL)
    assert document.unreadable and not document.contents
    [problem] = document.problems
    assert problem.startswith("not XML: not well-formed (invalid token) at line 4, column 23")
    assert "typographic quotes" in problem
    # Other XML that is not well-formed: the place, and no word of quotes.
    [problem] = read_rsl(b"<rsl>\n<content url='/'>\n</rsl>", LICENSE_URL).problems
    assert "at line 3, column 3" in problem and "typographic" not in problem
