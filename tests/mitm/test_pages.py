"""Page-level signals in the addon (taddons/tflow) and the nofollow memory (robotsgate.pages)."""

import dataclasses
import gzip
import json
import tracemalloc
import zlib
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest
from mitmproxy import exceptions, http
from mitmproxy.test import tflow
from support.clock import FakeClock
from support.driver import Driven, driven

from robotsgate.config.assemble import Clocks
from robotsgate.mitm.flow import state
from robotsgate.pages import PageConfig, Pages, url_key

UA = "MyBot/1.0 (+http://bot.example/)"
HTML = "text/html; charset=utf-8"
NOFOLLOW_PAGE = b"""<html><head><meta name="robots" content="nofollow"><title>p</title></head>
<body><a href="/linked">l</a> <a href="../up/b.html">b</a> <a href="http://other.example/x">o</a>
<a href="/%7Euser/x">u</a> <a href="mailto:a@example.com">m</a></body></html>"""
SECTION_PAGE = b"""<html><head><title>s</title></head><body>
<a href="/normal">normal</a>
<!-- robots content="nofollow" --><a href="/sidebar">sidebar</a><!-- /robots -->
<!-- robots content="noindex" -->Secret words<!-- /robots --></body></html>"""


@pytest.fixture
def audit_path(tmp_path: Path) -> Path:
    return tmp_path / "audit.jsonl"


def records(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def fake() -> FakeClock:
    return FakeClock()


@pytest.fixture
def gate(audit_path: Path, fake: FakeClock):
    # No robots.txt anywhere (404): robots.txt allows everything, only page signals block.
    with driven(clocks=Clocks(clock=fake, monotonic=fake, sleep=fake.sleep),
                transport=httpx.MockTransport(lambda request: httpx.Response(404)),
                robots_audit_log=str(audit_path)) as addon:
        yield addon, addon.tctx


async def fetch(addon: Driven, url: str, *, referer: str | None = None, user_agent: str = UA,
                method: str = "GET", status: int = 200, content_type: str | None = HTML,
                body: bytes = b"<html><body>page</body></html>",
                headers: Sequence[tuple[str, str]] = ()) -> http.HTTPFlow:
    """A request through the request hook and, when the proxy let it through, the origin's
    answer through the response hook."""
    f = tflow.tflow()
    f.request.method = method
    f.request.url = url
    f.request.headers["User-Agent"] = user_agent
    if referer is not None:
        f.request.headers["Referer"] = referer
    await addon.request(f)
    if f.response is None:
        f.response = http.Response.make(status, body, {})
        if content_type is not None:
            f.response.headers["Content-Type"] = content_type
        for name, value in headers:
            f.response.headers.add(name, value)
        await addon.response(f)
    return f


def answered(f: http.HTTPFlow) -> int | None:
    """The status the proxy answered itself, or None when the request went to the origin."""
    return f.response.status_code if state(f).answered else None


# -- nofollow enforcement --------------------------------------------------------------------------


async def test_a_link_of_a_nofollow_page_is_refused_with_that_referer(gate, audit_path):
    addon, _ = gate
    page = "http://example.com/dir/page.html"
    await fetch(addon, page, body=NOFOLLOW_PAGE)
    f = await fetch(addon, "http://example.com/linked", referer=page)
    assert answered(f) == 403
    assert f.response.headers["X-Robotsgate-Reason"] == "nofollow"
    assert f.response.headers["X-Robotsgate-Page"] == page
    assert b"is nofollow for this agent" in f.response.content
    [record] = records(audit_path)
    assert record["event"] == "block" and record["reason"] == "nofollow"
    assert record["status"] == 403 and record["page"] == page
    assert record["url"] == "http://example.com/linked" and record["user_agent"] == UA


async def test_the_same_url_without_that_referer_is_allowed(gate, audit_path):
    addon, _ = gate
    page = "http://example.com/dir/page.html"
    await fetch(addon, page, body=NOFOLLOW_PAGE)
    assert answered(await fetch(addon, "http://example.com/linked")) is None
    assert answered(await fetch(addon, "http://example.com/linked",
                                referer="http://example.com/elsewhere")) is None
    # Not a link of the page: a request naming it as Referer is not following a link of it.
    assert answered(await fetch(addon, "http://example.com/unlinked", referer=page)) is None
    assert records(audit_path) == []


@pytest.mark.parametrize("target", [
    "http://example.com/up/b.html",  # ../up/b.html from /dir/page.html
    "http://other.example/x",  # other hosts too
    "http://EXAMPLE.com:80/~user/x",  # the gate's normal form: case, default port, %7E
])
async def test_links_are_resolved_and_normalised(gate, target):
    addon, _ = gate
    page = "http://example.com/dir/page.html"
    await fetch(addon, page, body=NOFOLLOW_PAGE)
    assert answered(await fetch(addon, target, referer="http://Example.COM/dir/page.html#top")) \
        == 403


async def test_a_base_href_resolves_the_links(gate):
    addon, _ = gate
    body = b'<html><head><base href="/base/"><meta name=robots content=none></head>' \
           b'<body><a href="x.html">x</a></body></html>'
    await fetch(addon, "http://example.com/p", body=body)
    assert answered(await fetch(addon, "http://example.com/base/x.html",
                                referer="http://example.com/p")) == 403
    assert answered(await fetch(addon, "http://example.com/x.html",
                                referer="http://example.com/p")) is None


async def test_a_nofollow_sections_link_is_refused_and_a_normal_link_allowed(gate, audit_path):
    addon, _ = gate
    page = "http://example.com/s"
    await fetch(addon, page, body=SECTION_PAGE)
    refused = await fetch(addon, "http://example.com/sidebar", referer=page)
    assert answered(refused) == 403
    assert b"has this link in a nofollow section" in refused.response.content
    assert answered(await fetch(addon, "http://example.com/normal", referer=page)) is None
    assert [r["url"] for r in records(audit_path)] == ["http://example.com/sidebar"]


async def test_x_robots_tag_nofollow_counts_like_meta(gate):
    addon, _ = gate
    await fetch(addon, "http://example.com/h", body=b'<a href="/a">a</a>',
                headers=[("X-Robots-Tag", "nofollow")])
    assert answered(await fetch(addon, "http://example.com/a",
                                referer="http://example.com/h")) == 403


async def test_agent_specific_signals_apply_to_that_agent_only(gate):
    addon, _ = gate
    body = b'<html><head><meta name="otherbot" content="nofollow"></head>' \
           b'<body><a href="/a">a</a></body></html>'
    page = "http://example.com/agents"
    await fetch(addon, page, body=body, user_agent="OtherBot/2.0")
    await fetch(addon, page, body=body, user_agent=UA)
    assert answered(await fetch(addon, "http://example.com/a", referer=page,
                                user_agent="OtherBot/2.0")) == 403
    assert answered(await fetch(addon, "http://example.com/a", referer=page)) is None


async def test_the_memory_is_per_agent(gate):
    addon, _ = gate
    page = "http://example.com/dir/page.html"
    await fetch(addon, page, body=NOFOLLOW_PAGE, user_agent="OtherBot/2.0")
    # MyBot never fetched the page through the proxy: nothing is known for it.
    assert answered(await fetch(addon, "http://example.com/linked", referer=page)) is None


async def test_robots_agent_names_the_agent(gate):
    addon, _ = gate
    addon.configure(robots_agent="MyBot")
    body = b'<html><head><meta name="mybot" content="nofollow"></head>' \
           b'<body><a href="/a">a</a></body></html>'
    await fetch(addon, "http://example.com/p", body=body, user_agent="curl/8.0")
    assert answered(await fetch(addon, "http://example.com/a", referer="http://example.com/p",
                                user_agent="python-requests/2.31")) == 403


async def test_a_page_that_is_no_longer_nofollow_is_forgotten(gate):
    addon, _ = gate
    page = "http://example.com/dir/page.html"
    await fetch(addon, page, body=NOFOLLOW_PAGE)
    # A HEAD and a 304 carry no page: they must not make the memory forget, and their headers
    # stay the origin's (a 304's replace those of the bot's cached copy).
    head = await fetch(addon, page, method="HEAD", body=b"", headers=[("X-Robots-Tag", "x")])
    assert head.response.headers.get_all("X-Robots-Tag") == ["x"]
    not_modified = await fetch(addon, page, status=304, body=b"")
    assert "X-Robots-Tag" not in not_modified.response.headers
    assert answered(await fetch(addon, "http://example.com/linked", referer=page)) == 403
    await fetch(addon, page, body=NOFOLLOW_PAGE.replace(b"nofollow", b"follow"))
    assert answered(await fetch(addon, "http://example.com/linked", referer=page)) is None


async def test_the_memory_expires(gate, fake):
    addon, _ = gate
    addon.configure(robots_nofollow_ttl=60)
    page = "http://example.com/dir/page.html"
    await fetch(addon, page, body=NOFOLLOW_PAGE)
    fake.now += 59
    assert answered(await fetch(addon, "http://example.com/linked", referer=page)) == 403
    fake.now += 2
    assert answered(await fetch(addon, "http://example.com/linked", referer=page)) is None


async def test_enforcement_can_be_turned_off(gate, audit_path):
    addon, _ = gate
    addon.configure(robots_enforce_nofollow=False)
    page = "http://example.com/dir/page.html"
    annotated = await fetch(addon, page, body=NOFOLLOW_PAGE)
    assert annotated.response.headers["X-Robots-Tag"] == "nofollow"  # still annotated
    assert answered(await fetch(addon, "http://example.com/linked", referer=page)) is None
    assert records(audit_path) == []


async def test_monitor_mode_records_would_block_and_forwards(gate, audit_path):
    addon, _ = gate
    addon.configure(robots_mode="monitor")
    page = "http://example.com/dir/page.html"
    await fetch(addon, page, body=NOFOLLOW_PAGE)
    assert answered(await fetch(addon, "http://example.com/linked", referer=page)) is None
    [record] = records(audit_path)
    assert record["event"] == "would-block" and record["reason"] == "nofollow"
    assert record["page"] == page


async def test_a_failing_nofollow_check_fails_closed(gate, audit_path):
    addon, _ = gate
    broken = FakeClock()
    # The memory's own timer (injected) fails once the page is remembered.
    pages = Pages(PageConfig(), FakeClock(), broken)
    live = addon.runtime.live
    live.exchange.pages = pages
    addon.runtime.install(dataclasses.replace(live, pages=pages))
    page = "http://example.com/dir/page.html"
    await fetch(addon, page, body=NOFOLLOW_PAGE)
    broken.broken = True
    f = await fetch(addon, "http://example.com/linked", referer=page)
    assert answered(f) == 503
    assert f.response.headers["X-Robotsgate-Reason"] == "internal-error"
    assert records(audit_path)[-1]["reason"] == "internal-error"


# -- annotation ------------------------------------------------------------------------------------


async def test_every_html_response_gets_one_normalised_x_robots_tag(gate):
    addon, _ = gate
    plain = await fetch(addon, "http://example.com/plain")
    assert plain.response.headers.get_all("X-Robots-Tag") == ["all"]
    f = await fetch(addon, "http://example.com/mixed",
                    body=b'<html><head><meta name="ROBOTS" content="NOARCHIVE"></head></html>',
                    headers=[("X-Robots-Tag", "noindex"), ("X-Robots-Tag", "otherbot: nofollow"),
                             ("x-robots-tag", "MyBot: nosnippet")])
    # The origin's three headers became one, for this agent: otherbot's nofollow is not for it.
    assert f.response.headers.get_all("X-Robots-Tag") == ["noindex, noarchive, nosnippet"]
    xhtml = await fetch(addon, "http://example.com/x", content_type="application/xhtml+xml",
                        body=b'<html><head><meta name="robots" content="none"/></head></html>')
    assert xhtml.response.headers["X-Robots-Tag"] == "noindex, nofollow"


async def test_other_responses_are_left_alone(gate):
    addon, _ = gate
    f = await fetch(addon, "http://example.com/data.json", content_type="application/json",
                    body=b'{"a": "<meta name=robots content=none>"}',
                    headers=[("X-Robots-Tag", "otherbot: noindex")])
    assert f.response.headers.get_all("X-Robots-Tag") == ["otherbot: noindex"]
    assert f.response.content == b'{"a": "<meta name=robots content=none>"}'


async def test_parse_trouble_passes_the_response_through_unchanged(gate):
    addon, _ = gate
    f = await fetch(addon, "http://example.com/broken", body=b"not gzip at all",
                    headers=[("Content-Encoding", "gzip"), ("X-Robots-Tag", "noindex")])
    assert f.response.raw_content == b"not gzip at all"
    assert f.response.headers.get_all("X-Robots-Tag") == ["noindex"]


async def test_a_compressed_page_is_read(gate):
    addon, _ = gate
    f = await fetch(addon, "http://example.com/gz", body=gzip.compress(NOFOLLOW_PAGE),
                    headers=[("Content-Encoding", "gzip")])
    assert f.response.headers["X-Robots-Tag"] == "nofollow"
    assert answered(await fetch(addon, "http://example.com/linked",
                                referer="http://example.com/gz")) == 403


# -- strip mode ------------------------------------------------------------------------------------


async def test_strip_mode_removes_noindex_text_and_nofollow_links(gate):
    addon, _ = gate
    addon.configure(robots_strip=True)
    f = await fetch(addon, "http://example.com/s", body=SECTION_PAGE)
    content = f.response.content
    assert b"Secret words" not in content and b'href="/sidebar"' not in content
    assert b"<a>sidebar</a>" in content and b'<a href="/normal">normal</a>' in content
    assert f.response.headers["Content-Length"] == str(len(content))


async def test_strip_mode_is_off_by_default(gate):
    addon, _ = gate
    f = await fetch(addon, "http://example.com/s", body=SECTION_PAGE)
    assert f.response.content == SECTION_PAGE


async def test_strip_mode_keeps_the_content_encoding(gate):
    addon, _ = gate
    addon.configure(robots_strip=True)
    f = await fetch(addon, "http://example.com/s", body=gzip.compress(SECTION_PAGE),
                    headers=[("Content-Encoding", "gzip")])
    assert f.response.headers["Content-Encoding"] == "gzip"
    assert b"Secret words" not in gzip.decompress(f.response.raw_content)


async def test_strip_mode_strips_a_page_in_stacked_codings(gate):
    addon, _ = gate
    addon.configure(robots_strip=True)
    f = await fetch(addon, "http://example.com/s", body=gzip.compress(gzip.compress(SECTION_PAGE)),
                    headers=[("Content-Encoding", "gzip, gzip")])
    # mitmproxy encodes one coding, not a stack: the stripped page goes without one.
    assert "Content-Encoding" not in f.response.headers
    assert b"Secret words" not in f.response.raw_content
    assert b"<a>sidebar</a>" in f.response.raw_content
    assert f.response.headers["Content-Length"] == str(len(f.response.raw_content))


FIVE_LAYERS = ", ".join(["gzip"] * 5)


def five_times(body: bytes) -> bytes:
    for _ in range(5):
        body = gzip.compress(body)
    return body


async def test_a_page_in_codings_not_undone_keeps_its_headers_and_their_nofollow(gate):
    addon, _ = gate
    f = await fetch(addon, "http://example.com/deep", body=five_times(SECTION_PAGE),
                    headers=[("Content-Encoding", FIVE_LAYERS), ("X-Robots-Tag", "nofollow")])
    assert f.response.headers.get_all("X-Robots-Tag") == ["nofollow"]
    assert f.response.raw_content == five_times(SECTION_PAGE)
    # Its links are unknown: every one asked for with it as Referer is refused.
    assert answered(await fetch(addon, "http://example.com/anything",
                                referer="http://example.com/deep")) == 403


@pytest.mark.parametrize("options", [{"robots_strip": True}, {"robots_purpose": "train-ai"}])
async def test_a_page_that_must_be_read_in_codings_not_undone_is_withheld(
        gate, audit_path, options):
    addon, _ = gate
    addon.configure(**options)
    f = await fetch(addon, "http://example.com/deep", body=five_times(SECTION_PAGE),
                    headers=[("Content-Encoding", FIVE_LAYERS)])
    assert answered(f) == 502
    assert f.response.headers["X-Robotsgate-Reason"] == "content-coding"
    assert b"5 codings" in f.response.content and b"Secret" not in f.response.content
    [record] = records(audit_path)
    assert (record["event"], record["reason"], record["status"]) == \
        ("withheld", "content-coding", 502)
    assert record["origin_status"] == 200 and "more than the 4" in record["error"]


# -- options ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("option", "value"), [
    ("robots_nofollow_memory", 0), ("robots_nofollow_ttl", 0),
    ("robots_nofollow_ttl", 31 * 86_400)])
def test_bad_options_are_refused_naming_the_option(gate, option, value):
    addon, _ = gate
    with pytest.raises(exceptions.OptionsError, match=option):
        addon.configure(**{option: value})


# -- the memory on its own -------------------------------------------------------------------------


def memory(**config: int) -> tuple[Pages, FakeClock]:
    timer = FakeClock()
    return Pages(PageConfig(**config), FakeClock(), timer), timer  # type: ignore[arg-type]


def remember(pages: Pages, url: str, body: bytes, **kwargs: object) -> None:
    pages.annotate(url=url, method="GET", status=200, agent=None, user_agent=UA,
                   content_type=HTML, x_robots_tag=[], raw=body, **kwargs)  # type: ignore[arg-type]


def refused(pages: Pages, url: str, referer: str) -> bool:
    return pages.nofollow(url=url, referer=referer, agent=None, user_agent=UA) is not None


def nofollow_page(*links: str) -> bytes:
    anchors = "".join(f'<a href="{link}">x</a>' for link in links)
    return f"<html><head><meta name=robots content=nofollow></head><body>{anchors}</body></html>" \
        .encode()


def test_the_memory_is_bounded_in_links_least_recently_used_first():
    pages, _ = memory(memory_size=5)
    remember(pages, "http://a.example/", nofollow_page("/1", "/2"))
    remember(pages, "http://b.example/", nofollow_page("/1", "/2"))
    assert refused(pages, "http://a.example/1", "http://a.example/")  # a is now the most recent
    remember(pages, "http://c.example/", nofollow_page("/1", "/2"))  # 6 links > 5: b goes
    assert len(pages) == 2
    assert not refused(pages, "http://b.example/1", "http://b.example/")
    assert refused(pages, "http://a.example/2", "http://a.example/")
    assert refused(pages, "http://c.example/2", "http://c.example/")


def test_a_page_with_more_links_than_the_memory_forbids_everything_from_it():
    pages, _ = memory(memory_size=3)
    remember(pages, "http://a.example/", nofollow_page("/1", "/2", "/3", "/4"))
    assert refused(pages, "http://a.example/1", "http://a.example/")
    assert refused(pages, "http://a.example/not-a-link", "http://a.example/")
    assert not refused(pages, "http://a.example/robots.txt", "http://a.example/")


def test_a_truncated_nofollow_page_forbids_everything_from_it():
    pages, _ = memory()
    body = nofollow_page("/early") + b"<p>" + b"x" * (2 * 1024 * 1024) + b"</p>"
    remember(pages, "http://a.example/", body)
    assert refused(pages, "http://a.example/early", "http://a.example/")
    assert refused(pages, "http://a.example/late", "http://a.example/")


def test_non_http_links_and_referers_are_ignored():
    pages, _ = memory()
    remember(pages, "http://a.example/", nofollow_page("javascript:go()", "mailto:x@y", "/ok"))
    assert refused(pages, "http://a.example/ok", "http://a.example/")
    assert not refused(pages, "http://a.example/ok", "ftp://a.example/")
    assert not refused(pages, "http://a.example/ok", "not a url")


@pytest.mark.parametrize(("url", "key"), [
    ("http://Example.COM/a", "http://example.com/a"),
    ("http://example.com:80/a", "http://example.com/a"),
    ("https://example.com:443/a?b=c#frag", "https://example.com/a?b=c"),
    ("https://example.com:8443", "https://example.com:8443/"),
    ("http://example.com./%7euser/%2fx", "http://example.com/~user/%2Fx"),
    ("http://bücher.example/", "http://xn--bcher-kva.example/"),
    ("http://[::1]:8080/a", "http://[::1]:8080/a"),
    ("mailto:a@example.com", None),
    ("http://example.com:99999/", None),
    ("/relative", None),
])
def test_url_key(url, key):
    assert url_key(url) == key


# -- compressed pages ------------------------------------------------------------------------------


def gzip_bomb_page(head: bytes, mib: int) -> bytes:
    """An HTML page whose body inflates to `mib` MiB of white space: a compression bomb."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    spaces = b" " * (1 << 20)
    parts = [compressor.compress(b"<html><head>" + head + b"</head><body>")]
    parts += [compressor.compress(spaces) for _ in range(mib)]
    return b"".join([*parts, compressor.compress(b"</body></html>"), compressor.flush()])


async def test_a_compression_bomb_page_is_read_no_further_than_the_cap(gate):
    addon, _ = gate
    raw = gzip_bomb_page(b'<meta name="robots" content="noindex">', 256)
    tracemalloc.start()
    try:
        f = await fetch(addon, "http://example.com/bomb", body=raw,
                        headers=[("Content-Encoding", "gzip")])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f.response.headers["X-Robots-Tag"] == "noindex"
    assert f.response.raw_content == raw  # passed on as it came, still compressed
    assert peak < 32 << 20, f"peak {peak >> 20} MiB for a 256 MiB bomb"


async def test_strip_mode_leaves_a_long_compressed_page_as_it_came(gate):
    addon, _ = gate
    addon.configure(robots_strip=True)
    raw = gzip.compress(b"<html><body><!-- robots content=noindex -->secret<!-- /robots -->"
                        + b" " * (3 << 20) + b"</body></html>")
    f = await fetch(addon, "http://example.com/long", body=raw,
                    headers=[("Content-Encoding", "gzip")])
    assert f.response.raw_content == raw
    assert f.response.headers["X-Robots-Tag"] == "all"


async def test_strip_mode_rewrites_a_long_plain_page_keeping_its_tail(gate):
    addon, _ = gate
    addon.configure(robots_strip=True)
    tail = b" " * (3 << 20) + b"<!-- robots content=noindex -->past the cap<!-- /robots -->"
    body = b"<html><body><!-- robots content=noindex -->secret<!-- /robots -->" + tail
    f = await fetch(addon, "http://example.com/long", body=body)
    assert f.response.content == body.replace(b"secret", b"")


def test_a_part_of_a_page_does_not_replace_what_the_whole_said():
    # A 206 (the bot chose the Range) holds no nofollow META: it must not make the page's
    # links followable again.
    pages, _ = memory()
    remember(pages, "http://a.example/", nofollow_page("/1"))
    pages.annotate(url="http://a.example/", method="GET", status=206, agent=None, user_agent=UA,
                   content_type=HTML, x_robots_tag=[], raw=b"<html><head></head>")
    assert refused(pages, "http://a.example/1", "http://a.example/")
