"""End to end: page-level robots signals through a real ``mitmdump -s addon.py``.

A real origin serves HTML pages; real clients fetch them through the proxy, then follow their
links with and without a Referer. Assertions are about what the client got, what the origin saw
and what the audit log says.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from typing import Any

import pytest

from robotsgate.pages.content import MAX_CODINGS

from .clients import Client, curl, httpx_call, requests_call
from .origins import Origin, page_body
from .proxy import Proxy, run_mitmdump

OriginFactory = Callable[..., Origin]
ProxyFactory = Callable[..., Proxy]

UA = "E2EBot/1.0"
HTML = {"Content-Type": "text/html; charset=utf-8"}

NOFOLLOW_PAGE = b"""<!DOCTYPE html>
<html><head><meta name="robots" content="nofollow"><title>nofollow</title></head>
<body><p>A page whose links are not to be followed.</p>
<a href="/linked/one">one</a> <a href="two?x=1">two</a>
</body></html>
"""

SECTION_PAGE = b"""<html><head><title>sections</title></head>
<body>
<p>Indexed text.</p>
<a href="/normal">a normal link</a>
<!-- robots content="nofollow" -->
<nav><a href="/sidebar">sidebar link</a></nav>
<!-- /robots -->
<!-- robots content="noindex" -->
<p>Secret sidebar words.</p>
<!-- /robots -->
</body></html>
"""

# SECTION_PAGE as robots_strip=true delivers it: the words of the noindex section and the href of
# the nofollow section's link are gone; everything else is byte for byte the origin's.
SECTION_PAGE_STRIPPED = b"""<html><head><title>sections</title></head>
<body>
<p>Indexed text.</p>
<a href="/normal">a normal link</a>
<!-- robots content="nofollow" -->
<nav><a>sidebar link</a></nav>
<!-- /robots -->
<!-- robots content="noindex" -->
<p></p>
<!-- /robots -->
</body></html>
"""


def get(client: Client, gate: Proxy, url: str, referer: str | None = None) -> Any:
    headers = {"User-Agent": UA}
    if referer is not None:
        headers["Referer"] = referer
    return client(gate, url, headers=headers)


def test_a_nofollow_pages_link_is_refused_with_that_referer_and_allowed_without(
    client: Client, origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin()  # no robots.txt: robots.txt allows everything
    site.route("/page", 200, NOFOLLOW_PAGE, HTML)
    gate = proxy()
    page = site.url("/page")

    fetched = get(client, gate, page)
    assert fetched.status == 200 and fetched.body == NOFOLLOW_PAGE
    assert fetched.header("X-Robots-Tag") == "nofollow"

    followed = get(client, gate, site.url("/linked/one"), referer=page)
    assert followed.status == 403, (followed.status, followed.headers, followed.text)
    assert followed.header("X-Robotsgate-Reason") == "nofollow"
    assert followed.header("X-Robotsgate-Page") == page
    relative = get(client, gate, site.url("/two?x=1"), referer=page)
    assert relative.status == 403
    assert not site.saw("/linked/one") and not site.saw("/two?x=1")
    [record, second] = gate.wait_audit(2)
    assert record["event"] == "block" and record["reason"] == "nofollow"
    assert record["status"] == 403 and record["page"] == page
    assert record["url"] == site.url("/linked/one") and second["url"] == site.url("/two?x=1")

    direct = get(client, gate, site.url("/linked/one"))
    assert direct.status == 200 and direct.body == page_body("/linked/one")
    assert site.count("/linked/one") == 1
    assert len(gate.audit()) == 2


def test_a_nofollow_sections_link_is_refused_and_a_normal_link_allowed(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin()
    site.route("/sections", 200, SECTION_PAGE, HTML)
    gate = proxy()
    page = site.url("/sections")

    assert get(httpx_call, gate, page).status == 200
    sidebar = get(httpx_call, gate, site.url("/sidebar"), referer=page)
    normal = get(httpx_call, gate, site.url("/normal"), referer=page)

    assert sidebar.status == 403 and sidebar.header("X-Robotsgate-Reason") == "nofollow"
    assert normal.status == 200 and normal.body == page_body("/normal")
    assert not site.saw("/sidebar") and site.saw("/normal")


def test_https_pages_are_read_too(
    https_origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = https_origin()
    site.route("/page", 200, NOFOLLOW_PAGE, HTML)
    gate = proxy(trust_test_ca=True)

    assert get(httpx_call, gate, site.url("/page")).header("X-Robots-Tag") == "nofollow"
    assert get(httpx_call, gate, site.url("/linked/one"), referer=site.url("/page")).status == 403
    assert not site.saw("/linked/one")


def test_the_origins_x_robots_tag_headers_become_one_for_the_agent(
    client: Client, origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin()
    body = b'<html><head><meta name="E2EBot" content="noarchive"></head><body>x</body></html>'
    site.route("/tagged", 200, body, {**HTML, "X-Robots-Tag": "noindex"})
    site.route("/plain", 200, b"<html><body>plain</body></html>", HTML)
    site.route("/text", 200, b"not html", {"X-Robots-Tag": "otherbot: noindex"})
    gate = proxy()

    tagged = get(client, gate, site.url("/tagged"))
    assert tagged.header("X-Robots-Tag") == "noindex, noarchive"
    assert tagged.body == body
    assert get(client, gate, site.url("/plain")).header("X-Robots-Tag") == "all"
    # Not HTML: not read, and its own header goes through as it came.
    assert get(client, gate, site.url("/text")).header("X-Robots-Tag") == "otherbot: noindex"


def test_strip_mode_delivers_the_page_without_noindex_text_and_nofollow_links(
    client: Client, origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin()
    site.route("/sections", 200, SECTION_PAGE, HTML)
    stripping = proxy(robots_strip="true")
    plain = proxy()

    stripped = get(client, stripping, site.url("/sections"))
    untouched = get(client, plain, site.url("/sections"))

    assert stripped.status == 200
    assert stripped.body == SECTION_PAGE_STRIPPED
    assert stripped.header("Content-Length") == str(len(SECTION_PAGE_STRIPPED))
    assert untouched.body == SECTION_PAGE


# A windows-1252 page (its "é" is the byte E9) whose META comes after </head>, where templates
# put it and where the HTML standard still reads it as the head's.
LATIN_PAGE = (b'<html><head><title>caf\xe9</title></head>\n'
              b'<meta name="robots" content="noindex">\n'
              b'<body><!-- robots content="nofollow" -->\n'
              b'<a href="search?q=caf\xe9">search</a> <a href="sub\\t1">sub</a>\n'
              b'<!-- /robots --><a href="/open">open</a></body></html>')


def test_links_are_remembered_as_the_bot_will_request_them(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin()
    site.route("/dir/page", 200, LATIN_PAGE, {"Content-Type": "text/html; charset=windows-1252"})
    gate = proxy()
    page = site.url("/dir/page")

    fetched = get(httpx_call, gate, page)
    assert fetched.status == 200 and fetched.body == LATIN_PAGE
    assert fetched.header("X-Robots-Tag") == "noindex"
    # What a browser requests for these hrefs on this page: the query in the page's encoding,
    # the backslash as a slash.
    query = get(httpx_call, gate, site.url("/dir/search?q=caf%E9"), referer=page)
    backslash = get(httpx_call, gate, site.url("/dir/sub/t1"), referer=page)
    assert (query.status, backslash.status) == (403, 403)
    assert query.header("X-Robotsgate-Reason") == "nofollow"
    assert get(httpx_call, gate, site.url("/open"), referer=page).status == 200
    assert not site.saw("/dir/search?q=caf%E9") and not site.saw("/dir/sub/t1")
    assert site.saw("/open")


@pytest.mark.parametrize(
    ("option", "value"),
    [("robots_nofollow_memory", "0"), ("robots_nofollow_ttl", "-1"), ("robots_strip", "maybe")],
)
def test_bad_page_options_refuse_to_start(option: str, value: str, tmp_path: Any) -> None:
    code, output = run_mitmdump(tmp_path, {option: value, "robots_audit_log": tmp_path / "a.log"})

    assert code is not None, f"mitmdump kept running with {option}={value}:\n{output}"
    assert code != 0, output
    assert option in output


# A page compressed twice (Content-Encoding: gzip, gzip: the codings in the order the origin
# applied them), whose header says nofollow and whose META says noarchive.
STACKED_PAGE = (b'<html><head><meta name="robots" content="noarchive"></head>'
                b'<body><a href="/stacked/link">link</a></body></html>')


def _gzipped(body: bytes, times: int) -> bytes:
    for _ in range(times):
        body = gzip.compress(body, mtime=0)
    return body


@pytest.mark.parametrize("options", [{}, {"robots_strip": "true"},
                                     {"robots_purpose": "search"}],
                         ids=["plain", "strip", "purposes"])
def test_a_page_with_stacked_codings_is_read_through_them(
    origin: OriginFactory, proxy: ProxyFactory, options: dict[str, str]
) -> None:
    site = origin()
    site.route("/stacked", 200, _gzipped(STACKED_PAGE, 2),
               {**HTML, "Content-Encoding": "gzip, gzip", "X-Robots-Tag": "nofollow"})
    gate = proxy(**options)
    page = site.url("/stacked")

    fetched = get(requests_call, gate, page)  # urllib3 undoes up to five codings

    assert fetched.status == 200, (fetched.status, fetched.headers, fetched.text)
    assert fetched.body == STACKED_PAGE
    # The header's nofollow and the META's noarchive, both read: the body was decoded.
    assert fetched.header("X-Robots-Tag") == "nofollow, noarchive"
    followed = get(requests_call, gate, site.url("/stacked/link"), referer=page)
    assert followed.status == 403 and followed.header("X-Robotsgate-Reason") == "nofollow"
    assert not site.saw("/stacked/link")
    assert all(record["reason"] != "internal-error" for record in gate.audit())


def test_a_page_with_more_codings_than_are_undone_keeps_its_header_or_is_refused(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin()
    body = _gzipped(STACKED_PAGE, MAX_CODINGS + 1)
    site.route("/deep", 200, body, {**HTML, "Content-Encoding": ", ".join(
        ["gzip"] * (MAX_CODINGS + 1)), "X-Robots-Tag": "nofollow"})
    plain, stripping = proxy(), proxy(robots_strip="true")
    page = site.url("/deep")

    # Passed on as it came, but what its header says is kept: nofollow, its links unknown.
    passed = get(curl, plain, page)
    assert passed.status == 200 and passed.body == body
    assert passed.header("X-Robots-Tag") == "nofollow"
    assert get(curl, plain, site.url("/stacked/link"), referer=page).status == 403
    # A page strip mode cannot read is not sent unread: refused for what it is.
    refused = get(curl, stripping, page)
    assert refused.status == 502, (refused.status, refused.text)
    assert refused.header("X-Robotsgate-Reason") == "content-coding"
    [record] = stripping.wait_audit(1)
    assert record["reason"] == "content-coding" and record["event"] == "withheld"
    assert "codings" in record["error"]
    assert not site.saw("/stacked/link")
