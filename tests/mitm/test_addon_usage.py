"""AI usage preferences in the addons (robotsgate.mitm.usage), driven as mitmproxy drives them.

What only the addon layer decides: purposes per client, a streamed body judged on its headers,
monitor mode recording once, options changed at run time. The three signals end to end are in
tests/e2e/test_usage.py.
"""

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mitmproxy import http
from mitmproxy.test import tflow
from support.driver import Driven, driven
from support.origins import Origins

from robotsgate.config.assemble import Clocks

ROBOTS = b"User-agent: *\nAllow: /\nContent-Usage: /nt/ train-ai=n\n"


@pytest.fixture
def audit_path(tmp_path: Path) -> Path:
    return tmp_path / "audit.jsonl"


@pytest.fixture
def addon(audit_path: Path) -> Iterator[Driven]:
    origins = Origins({"http://example.com/robots.txt": httpx.Response(200, content=ROBOTS)})
    with driven(clocks=Clocks(clock=lambda: 1_700_000_000.0),
                transport=httpx.MockTransport(origins), robots_audit_log=str(audit_path)) as d:
        yield d


def records(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def flow(path: str, user_agent: str = "TestBot/1.0", user: str | None = None) -> http.HTTPFlow:
    f = tflow.tflow()
    f.request.url = f"http://example.com{path}"
    f.request.headers["User-Agent"] = user_agent
    if user is not None:
        f.metadata["proxyauth"] = (user, "secret")
    return f


def origin_answer(f: http.HTTPFlow, *headers: tuple[bytes, bytes], body: bytes = b"body"
                  ) -> None:
    f.response = http.Response.make(200, body, [(b"Content-Type", b"text/plain"), *headers])


async def test_purposes_follow_the_client(addon: Driven, audit_path: Path) -> None:
    addon.configure(robots_purpose="search",
                    robots_purposes=["trainer=train-ai", "TrainBot=train-ai"])
    by_user, by_token, other = flow("/nt/a", user="trainer"), flow("/nt/b", "TrainBot/2"), \
        flow("/nt/c", "SearchBot/1")
    for f in (by_user, by_token, other):
        await addon.request(f)
    assert by_user.response is not None and by_user.response.status_code == 403
    assert by_token.response is not None and by_token.response.status_code == 403
    assert other.response is None  # search is not disallowed: forwarded
    assert [r["purposes"] for r in records(audit_path)] == ["train-ai", "train-ai"]


async def test_a_streamed_body_refused_on_its_headers_is_cut(addon: Driven,
                                                             audit_path: Path) -> None:
    addon.configure(robots_purpose="ai-input")
    f = flow("/big")
    await addon.request(f)
    assert f.response is None
    origin_answer(f, (b"tdm-reservation", b"1"))
    f.response.stream = True
    addon.responseheaders(f)
    assert f.error is not None  # killed: not a byte of the body reaches the bot
    [record] = records(audit_path)
    assert (record["reason"], record["status"], record["origin_status"]) == \
        ("usage-preference", 403, 200)
    assert record["rule"] == "tdm-reservation: 1" and record["line"] is None


async def test_a_streamed_body_that_may_be_used_says_so_before_it_flows(addon: Driven) -> None:
    f = flow("/nt/x")
    await addon.request(f)
    origin_answer(f, (b"Content-Usage", b"search=y"), (b"X-Robotsgate-Usage", b"all=y"))
    f.response.stream = True
    addon.responseheaders(f)
    assert f.error is None
    assert f.response.headers.get_all("X-Robotsgate-Usage") == ["train-ai=n, search=y"]


async def test_monitor_mode_records_a_refusal_once_and_forwards(addon: Driven,
                                                                audit_path: Path) -> None:
    addon.configure(robots_mode="monitor", robots_purpose="train-ai")
    at_request, at_response = flow("/nt/x"), flow("/open")
    for f, header in ((at_request, b"search=y"), (at_response, b"train-ai=n")):
        await addon.request(f)
        assert f.response is None
        origin_answer(f, (b"Content-Usage", header))
        addon.responseheaders(f)
        await addon.response(f)
        assert f.response.status_code == 200 and f.response.content == b"body"
    assert [(r["event"], r["url"], r["origin_status"]) for r in records(audit_path)] == [
        ("would-block", "http://example.com/nt/x", None),
        ("would-block", "http://example.com/open", 200)]


async def test_a_change_of_purposes_applies_to_the_next_request(addon: Driven) -> None:
    first = flow("/nt/x")
    await addon.request(first)
    assert first.response is None
    addon.configure(robots_purpose="train-ai")
    second = flow("/nt/x")
    await addon.request(second)
    assert second.response is not None and second.response.status_code == 403
    assert second.response.headers["X-Robotsgate-Purposes"] == "train-ai"


UNSTRIPPABLE = (b'<!-- robots content="noindex" --><table><!-- robots content="noindex" -->'
                b'<plaintext><!-- robots content="noindex" -->secret words')


async def test_a_page_that_cannot_be_stripped_is_not_sent(addon: Driven, audit_path: Path
                                                          ) -> None:
    addon.configure(robots_strip=True)
    f = flow("/page")
    await addon.request(f)
    f.response = http.Response.make(200, UNSTRIPPABLE, [(b"Content-Type", b"text/html")])
    addon.responseheaders(f)
    await addon.response(f)
    assert f.response.status_code == 503 and b"secret" not in f.response.content
    [record] = records(audit_path)
    assert record["reason"] == "internal-error" and record["origin_status"] == 200
    assert "could not be read" in str(record["error"])


@pytest.mark.parametrize(("purpose", "status"), [("", 200), ("train-ai", 502)])
async def test_a_page_in_a_coding_the_proxy_cannot_read(addon: Driven, purpose: str,
                                                        status: int) -> None:
    # The bot chose Accept-Encoding; the origin answered in a coding robotsgate cannot undo.
    # Only annotation is at stake without purposes; with them, a TDM reservation in the page
    # could refuse every one, so the page is not sent: refused for what it is (content-coding),
    # not as a fault of the proxy's.
    addon.configure(robots_purpose=purpose)
    f = flow("/page")
    await addon.request(f)
    f.response = http.Response.make(200, b"", [(b"Content-Type", b"text/html")])
    # Set as sent: make() would try to encode a body it is given in that coding.
    f.response.headers["Content-Encoding"] = "dcz"
    f.response.raw_content = b"\x00\x01 opaque"
    addon.responseheaders(f)
    await addon.response(f)
    assert f.response.status_code == status
    if purpose:
        assert f.response.headers["X-Robotsgate-Reason"] == "content-coding"
        assert b"dcz not known" in f.response.content


async def answered(addon: Driven, path: str, user_agent: str, content_type: bytes,
                   *headers: tuple[bytes, bytes], body: bytes = b"body") -> http.HTTPFlow:
    f = flow(path, user_agent)
    await addon.request(f)
    assert f.response is None
    f.response = http.Response.make(200, body, [(b"Content-Type", content_type), *headers])
    addon.responseheaders(f)
    await addon.response(f)
    return f


@pytest.mark.parametrize(("robots_tag", "content_type", "refused"), [
    (b"noai", b"text/plain", True),
    (b"noindex, NoAI", b"text/plain", True),
    (b"trainbot: noai", b"text/plain", True),  # for this bot by name
    (b"otherbot: noai", b"text/plain", False),  # for another
    (b"noimageai", b"image/png", True),  # noimageai speaks of images
    (b"noimageai", b"text/plain", False),
    (b"noindex", b"text/plain", False),
])
async def test_noai_in_x_robots_tag_is_train_ai_n(addon: Driven, audit_path: Path,
                                                  robots_tag: bytes, content_type: bytes,
                                                  refused: bool) -> None:
    addon.configure(robots_purposes=["TrainBot=train-ai"])
    f = await answered(addon, "/open", "TrainBot/1.0", content_type,
                       (b"X-Robots-Tag", robots_tag))
    assert (f.response.status_code == 403) is refused
    if refused:
        [record] = records(audit_path)
        assert (record["event"], record["reason"]) == ("withheld", "usage-preference")
        directive = "noimageai" if b"noimageai" in robots_tag else "noai"
        assert record["rule"] == f"X-Robots-Tag: {directive}"  # the directive that refused
    # A bot crawling for search only is told, not refused.
    search = await answered(addon, "/open", "SearchBot/1.0", content_type,
                            (b"X-Robots-Tag", robots_tag))
    assert search.response.status_code == 200
    assert search.response.headers.get("X-Robotsgate-Usage") == \
        ("train-ai=n" if refused and b"trainbot" not in robots_tag else None)


async def test_noai_in_a_pages_meta_is_train_ai_n(addon: Driven, audit_path: Path) -> None:
    addon.configure(robots_purposes=["TrainBot=train-ai"])
    page = b'<html><head><meta name="robots" content="noai"></head><body>art</body></html>'
    f = await answered(addon, "/art", "TrainBot/1.0", b"text/html", body=page)
    assert f.response.status_code == 403 and b"art" not in f.response.content
    [record] = records(audit_path)
    assert record["rule"] == '<meta name="robots" content="noai">'
    # noimageai in a page speaks of its images, not of the page.
    page = page.replace(b"noai", b"noimageai")
    assert (await answered(addon, "/art2", "TrainBot/1.0", b"text/html",
                           body=page)).response.status_code == 200


@pytest.mark.parametrize("in_meta", [False, True])
async def test_a_tdm_reservation_refusal_records_its_policy(addon: Driven, audit_path: Path,
                                                            in_meta: bool) -> None:
    addon.configure(robots_purposes=["TrainBot=train-ai"])
    policy = "https://example.com/tdm-policy.json"
    if in_meta:
        page = (f'<html><head><meta name="tdm-reservation" content="1">'
                f'<meta name="tdm-policy" content="{policy}"></head></html>').encode()
        f = await answered(addon, "/p", "TrainBot/1.0", b"text/html", body=page)
    else:
        f = await answered(addon, "/p", "TrainBot/1.0", b"text/plain",
                           (b"tdm-reservation", b"1"), (b"tdm-policy", policy.encode()))
    assert f.response.status_code == 403
    [record] = records(audit_path)
    assert record["tdm_policy"] == policy


@pytest.mark.parametrize("mode", ["enforce", "monitor"])
async def test_the_pages_meta_supersedes_the_tdm_reservation_header(
        addon: Driven, audit_path: Path, mode: str) -> None:
    # TDMRep's own order: the page's META after the header. `tdm-reservation: 1` and
    # <meta name="tdm-reservation" content="0">: rights not reserved, the page forwarded, and
    # nothing recorded (not even a would-block on the headers alone).
    addon.configure(robots_purposes=["TrainBot=train-ai"], robots_mode=mode)
    page = (b'<html><head><meta name="tdm-reservation" content="0"></head>'
            b"<body>text</body></html>")
    f = await answered(addon, "/p", "TrainBot/1.0", b"text/html", (b"tdm-reservation", b"1"),
                       body=page)
    assert f.response.status_code == 200 and b"text" in f.response.content
    assert f.response.headers["X-Robotsgate-Usage"] == "train-ai=y, ai-input=y"
    assert records(audit_path) == []
    # The other way round: the header's 0 superseded by the META's 1.
    f = await answered(addon, "/q", "TrainBot/1.0", b"text/html", (b"tdm-reservation", b"0"),
                       body=page.replace(b'content="0"', b'content="1"'))
    assert f.response.status_code == (403 if mode == "enforce" else 200)
    [record] = records(audit_path)
    assert record["rule"] == '<meta name="tdm-reservation" content="1">'
