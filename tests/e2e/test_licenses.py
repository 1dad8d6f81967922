"""End to end: RSL licences (robots.txt `License:`) through a real ``mitmdump -s addon.py``.

An origin whose licence prohibits ai-train for one path, bots declaring their purposes, a
licence that cannot be read, one at an address bots may not reach, and one that names a licence
server. Assertions are about what the client got, what the origin saw and what the audit log
says.
"""

import base64
import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs

from .clients import curl, httpx_call
from .origins import Origin, Reply, Seen
from .proxy import Proxy

ROBOTSGATE = Path(sys.executable).parent / "robotsgate"
OriginFactory = Callable[..., Origin]
ProxyFactory = Callable[..., Proxy]
RSL = {"Content-Type": "application/rsl+xml"}

NO_TRAINING = b"""<?xml version="1.0" encoding="UTF-8"?>
<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/articles/">
    <license>
      <permits type="usage">search ai-input</permits>
      <prohibits type="usage">ai-train</prohibits>
    </license>
  </content>
</rsl>
"""
BOTS = ["TrainBot=train-ai", "SearchBot=search"]


def licensed(site: Origin, body: bytes = NO_TRAINING, *, url: str | None = None) -> str:
    """The site's robots.txt names its licence; the licence's URL."""
    license_url = url or site.url("/license.xml")
    site.set_robots(f"User-agent: *\nDisallow: /private/\n\nLicense: {license_url}\n")
    site.route("/license.xml", body=body, headers=RSL)
    return license_url


def test_a_licence_that_prohibits_training_refuses_the_training_bot_only(
        origin: OriginFactory, proxy: ProxyFactory, tmp_path: Path) -> None:
    site = origin()
    license_url = licensed(site)
    for path in ("/articles/1", "/about"):
        site.route(path, body=f"page {path}")
    archive = tmp_path / "archive"
    gate = proxy(robots_purposes=BOTS, robots_archive_dir=str(archive))

    refused = curl(gate, site.url("/articles/1"), headers={"User-Agent": "TrainBot/1.0"})
    assert refused.status == 403
    assert refused.header("X-Robotsgate-Reason") == "license-prohibited"
    assert refused.header("X-Robotsgate-License") == license_url
    assert refused.header("X-Robotsgate-Line") == "4"
    assert refused.header("X-Robotsgate-Rule") == (
        '<content url="/articles/"> #1 (line 3), <license> #1 (line 4): '
        '<prohibits type="usage"> ai-train')
    assert "does not license any purpose this bot crawls for (train-ai)" in refused.text
    assert not site.saw("/articles/1"), "refused by its licence, yet it reached the origin"

    # Outside the content the licence covers; a bot that crawls for search.
    other = curl(gate, site.url("/about"), headers={"User-Agent": "TrainBot/1.0"})
    assert (other.status, other.text) == (200, "page /about")
    search = curl(gate, site.url("/articles/1"), headers={"User-Agent": "SearchBot/1.0"})
    assert (search.status, search.text) == (200, "page /articles/1")

    # Fetched once, as the proxy: the bots' User-Agents never reach the licence.
    fetches = [seen for seen in site.seen if seen.path == "/license.xml"]
    assert len(fetches) == 1
    assert fetches[0].user_agent == "robotsgate"

    [record] = [r for r in gate.audit() if r["reason"] == "license-prohibited"]
    sha256 = hashlib.sha256(NO_TRAINING).hexdigest()
    assert (record["event"], record["status"], record["purposes"]) == ("block", 403, "train-ai")
    assert record["license"] == license_url and record["license_sha256"] == sha256
    assert record["rule"].endswith('<prohibits type="usage"> ai-train')
    assert record["line"] == 4 and record["robots_sha256"]
    # The body that decided is kept as evidence, beside the robots.txt that named it.
    assert (archive / sha256).read_bytes() == NO_TRAINING
    assert (archive / record["robots_sha256"]).exists()


def test_a_licence_that_cannot_be_read_refuses_bots_with_purposes_only(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin()
    licensed(site)
    site.route("/license.xml", status=503, body=b"down for maintenance\n")
    site.route("/articles/1", body="page")
    gate = proxy(robots_purposes=BOTS, robots_error_ttl=30)

    refused = curl(gate, site.url("/articles/1"), headers={"User-Agent": "TrainBot/1.0"})
    assert refused.status == 503
    assert refused.header("X-Robotsgate-Reason") == "license-unavailable"
    assert refused.header("Retry-After") == "30"
    assert "HTTP 503" in refused.text
    # A bot that declared nothing is not refused for its use, and waits for no licence.
    plain = curl(gate, site.url("/articles/1"), headers={"User-Agent": "PlainBot/1.0"})
    assert plain.status == 200
    assert not any(seen.path == "/articles/1" and "TrainBot" in seen.user_agent
                   for seen in site.seen)
    [record] = [r for r in gate.audit() if r["reason"] == "license-unavailable"]
    assert record["status"] == 503 and record["error"] == "HTTP 503"


def test_a_licence_at_the_proxys_own_port_is_never_fetched(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin()
    site.route("/articles/1", body="page")
    gate = proxy(robots_purposes=BOTS)
    licensed(site, url=f"http://127.0.0.1:{gate.port}/license.xml")

    refused = curl(gate, site.url("/articles/1"), headers={"User-Agent": "TrainBot/1.0"})
    assert refused.status == 503
    assert refused.header("X-Robotsgate-Reason") == "license-unavailable"
    assert "not reachable through this proxy" in refused.text
    assert not site.saw("/articles/1")


def test_a_licence_server_must_be_asked_over_https(
        https_origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = https_origin()
    licensed(site, NO_TRAINING.replace(b'<content url="/articles/"',
                                       b'<content url="/" server="https://licenses.example/"'))
    site.route("/articles/1", body="page")
    gate = proxy(robots_purposes=BOTS, trust_test_ca=True)

    refused = curl(gate, site.url("/articles/1"), headers={"User-Agent": "SearchBot/1.0"})
    assert refused.status == 403
    assert refused.header("X-Robotsgate-Reason") == "license-required"
    assert "licence server (https://licenses.example/)" in refused.text
    assert not site.saw("/articles/1")


def test_monitor_mode_forwards_what_the_licence_refuses_and_records_it(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin()
    licensed(site)
    site.route("/articles/1", body="page")
    gate = proxy(robots_purposes=BOTS, robots_mode="monitor")

    passed = curl(gate, site.url("/articles/1"), headers={"User-Agent": "TrainBot/1.0"})
    assert (passed.status, passed.text) == (200, "page")
    [record] = [r for r in gate.audit() if r["reason"] == "license-prohibited"]
    assert record["event"] == "would-block" and record["mode"] == "monitor"


def test_with_licences_off_none_is_fetched(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin()
    licensed(site)
    site.route("/articles/1", body="page")
    gate = proxy(robots_purposes=BOTS, robots_licenses="off")

    assert curl(gate, site.url("/articles/1"),
                headers={"User-Agent": "TrainBot/1.0"}).status == 200
    assert not site.saw("/license.xml")


# -- a storm of License: lines ---------------------------------------------------------------

PERMITS_ALL = b"""<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/"><license><permits type="usage">ai-all search</permits></license></content>
</rsl>
"""


def test_a_storm_of_license_lines_fetches_16_from_the_third_party_once(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    """1,100 License: lines naming documents on a third party's host: the proxy fetches the
    first 16 (counted by the third party itself), once, and refuses what the others may govern."""
    site, third = origin(), origin()
    for n in range(1100):
        third.route(f"/l/{n}.xml", body=PERMITS_ALL, headers=RSL)
    site.set_robots("User-agent: *\nAllow: /\n" + "".join(
        f"License: {third.url(f'/l/{n}.xml')}\n" for n in range(1100)))
    gate = proxy(robots_purposes=BOTS)

    first = curl(gate, site.url("/a"), headers={"User-Agent": "TrainBot/1.0"})
    assert len(third.seen) == 16
    assert sorted(s.path for s in third.seen) == sorted(f"/l/{n}.xml" for n in range(16))
    assert {s.user_agent for s in third.seen} == {"robotsgate"}
    assert first.status == 503
    assert first.header("X-Robotsgate-Reason") == "license-unavailable"
    assert first.header("X-Robotsgate-License") == third.url("/l/16.xml")
    assert first.header("X-Robotsgate-Line") == "19"
    assert "1,100 licence documents named, only the first 16 read" in first.text
    second = curl(gate, site.url("/b"), headers={"User-Agent": "TrainBot/1.0"})
    assert second.status == 503
    assert len(third.seen) == 16, "the second request fetched licences again"
    assert not site.saw("/a") and not site.saw("/b")
    # A bot that declared no purpose is not refused for licences, and fetches none.
    plain = curl(gate, site.url("/c"), headers={"User-Agent": "PlainBot/1.0"})
    assert plain.status == 200 and len(third.seen) == 16

    records = [r for r in gate.audit() if r["reason"] == "license-unavailable"]
    assert [(r["url"], r["status"], r["line"], r["license"]) for r in records] == [
        (site.url(path), 503, 19, third.url("/l/16.xml")) for path in ("/a", "/b")]
    assert "this one and 1,083 more are not" in records[0]["error"]

    linted = subprocess.run([str(ROBOTSGATE), "lint", site.robots_url], capture_output=True,
                            text=True, timeout=60)
    assert linted.returncode == 1, linted.stderr
    [finding] = [line for line in linted.stdout.splitlines() if "licence documents" in line]
    assert finding.startswith(f"{site.robots_url}:19: license: 1,100 licence documents named; "
                              f"only the first 16 are read"), finding


# -- licences an answer names -----------------------------------------------------------------

PAGE_LICENSE = b"""<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/">
    <license><prohibits type="usage">ai-all</prohibits></license>
  </content>
</rsl>
"""
LINK = '</page-license.xml>; rel="license"; type="application/rsl+xml"'


def test_a_link_header_licence_withholds_the_answer_from_a_training_bot(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")  # no License: line at all
    site.route("/page-license.xml", body=PAGE_LICENSE, headers=RSL)
    site.route("/story", body="the story", headers={"Link": f'</about>; rel="author", {LINK}'})
    gate = proxy(robots_purposes=BOTS)

    refused = curl(gate, site.url("/story"), headers={"User-Agent": "TrainBot/1.0"})
    assert refused.status == 403
    assert refused.header("X-Robotsgate-Reason") == "license-prohibited"
    assert refused.header("X-Robotsgate-License") == site.url("/page-license.xml")
    assert refused.header("X-Robotsgate-Line") is None  # not robots.txt's
    assert "named by the answer's Link header" in refused.text
    assert "The origin's answer (HTTP 200) was withheld." in refused.text
    assert "the story" not in refused.text

    # ai-all covers no search: the search bot gets the page.
    search = curl(gate, site.url("/story"), headers={"User-Agent": "SearchBot/1.0"})
    assert (search.status, search.text) == (200, "the story")

    [record] = [r for r in gate.audit() if r["reason"] == "license-prohibited"]
    assert (record["event"], record["status"], record["origin_status"]) == ("withheld", 403, 200)
    assert record["license"] == site.url("/page-license.xml") and record["line"] is None
    assert record["rule"].endswith('<prohibits type="usage"> ai-all')
    assert [s.user_agent for s in site.seen if s.path == "/page-license.xml"] == ["robotsgate"]


def test_an_answer_naming_more_licences_than_are_read_is_withheld_from_a_training_bot(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    links = []
    for n in range(9):  # one past the 8 an answer may have read
        site.route(f"/l/{n}.xml", body=PERMITS_ALL, headers=RSL)
        links.append(f'</l/{n}.xml>; rel="license"; type="application/rsl+xml"')
    site.route("/story", body="the story", headers={"Link": ", ".join(links)})
    gate = proxy(robots_purposes=BOTS)

    refused = curl(gate, site.url("/story"), headers={"User-Agent": "TrainBot/1.0"})
    assert refused.status == 503 and "the story" not in refused.text
    assert refused.header("X-Robotsgate-Reason") == "license-unavailable"
    assert refused.header("X-Robotsgate-License") == site.url("/l/8.xml")
    assert "9 licence documents named, only the first 8 read" in refused.text
    assert sorted(p for p in site.paths() if p.startswith("/l/")) == \
        [f"/l/{n}.xml" for n in range(8)]
    [record] = [r for r in gate.audit() if r["reason"] == "license-unavailable"]
    assert (record["event"], record["origin_status"]) == ("withheld", 200)


def test_a_pages_link_element_licence_withholds_it(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    site.route("/licences/page.xml", body=PAGE_LICENSE, headers=RSL)
    page = ('<!doctype html><html><head><base href="/licences/"><title>t</title>'
            '<link rel="license" type="application/rsl+xml" href="page.xml"></head>'
            '<body>the story</body></html>')
    site.route("/story", body=page, headers={"Content-Type": "text/html; charset=utf-8"})
    gate = proxy(robots_purposes=BOTS)

    refused = curl(gate, site.url("/story"), headers={"User-Agent": "TrainBot/1.0"})
    assert refused.status == 403
    assert refused.header("X-Robotsgate-Reason") == "license-prohibited"
    assert refused.header("X-Robotsgate-License") == site.url("/licences/page.xml")
    assert '<link rel="license">' in refused.text and "the story" not in refused.text
    # A bot without purposes gets the page, and no licence is fetched for it.
    plain = curl(gate, site.url("/story"), headers={"User-Agent": "PlainBot/1.0"})
    assert plain.status == 200 and "the story" in plain.text
    assert site.count("/licences/page.xml") == 1


def test_a_streamed_body_whose_link_licence_refuses_it_never_reaches_the_bot(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    site.route("/page-license.xml", body=PAGE_LICENSE, headers=RSL)
    secret = b"secret text " * 20_000  # 240 KB: streamed past stream_large_bodies
    site.route("/big", body=secret, headers={"Link": LINK})
    gate = proxy(robots_purpose="train-ai", stream_large_bodies="10k")
    try:
        refused = httpx_call(gate, site.url("/big"))
    except Exception as exc:  # the connection is cut: what a refusal mid-stream looks like
        assert "secret" not in str(exc)
    else:
        assert refused.status != 200 and "secret text" not in refused.text, refused.status
    [record] = [r for r in gate.audit() if r["reason"] == "license-prohibited"]
    assert record["event"] == "withheld" and record["origin_status"] == 200


# -- a licence server -------------------------------------------------------------------------

def test_a_licence_from_the_licence_server_is_presented_and_renewed_once_refused(
        https_origin: OriginFactory, proxy: ProxyFactory, tmp_path: Path) -> None:
    server = https_origin()
    issued = iter(["tok-1", "tok-2", "tok-3"])

    def issue(seen: Seen) -> Reply:
        form = parse_qs(seen.body.decode())
        if seen.method != "POST" or seen.headers.get("authorization") != \
                "Basic " + base64.b64encode(b"newsbot:s3cret").decode() or \
                form.get("grant_type") != ["rsl"]:
            return Reply(401, b'{"error": "invalid_client"}',
                         {"Content-Type": "application/json"})
        return Reply(200, json.dumps({"access_token": next(issued), "token_type": "License",
                                      "expires_in": 3600}).encode(),
                     {"Content-Type": "application/json"})

    server.answer("/olp/token", issue)
    site = https_origin()
    licensed(site, NO_TRAINING.replace(b'<content url="/articles/"',
                                       f'<content url="/" server="{server.url("/olp")}"'
                                       .encode()))
    taken = {"tok-2"}  # the origin takes the second licence only: the first one expired

    def article(seen: Seen) -> Reply:
        given = seen.headers.get("authorization", "")
        if given.removeprefix("License ") in taken:
            return Reply(200, b"licensed text", {})
        return Reply(401, b"licence please\n",
                     {"WWW-Authenticate": 'License error="invalid_token"'})

    site.answer("/articles/1", article)
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    gate = proxy(robots_purposes=BOTS, trust_test_ca=True,
                 robots_license_credentials=f"{server.url('/olp')}=newsbot:@{secret}")

    got = curl(gate, site.url("/articles/1"),
               headers={"User-Agent": "SearchBot/1.0", "Authorization": "Bearer bots-own"})
    assert (got.status, got.text) == (200, "licensed text")
    # The first licence refused, a second asked for and presented; the bot's own
    # Authorization never left.
    sent = [seen.headers.get("authorization") for seen in site.seen
            if seen.path == "/articles/1"]
    assert sent == ["License tok-1", "License tok-2"]
    assert [seen.path for seen in server.seen] == ["/olp/token", "/olp/token"]
    assert parse_qs(server.seen[0].body.decode())["resource"] == [site.url("/")]
    [record] = [r for r in gate.audit() if r["event"] == "license"]
    assert record["reason"] == "license-refused" and record["origin_status"] == 401
    assert "invalid_token" in record["error"] and "sent again" in record["error"]

    # Kept: the next request carries the renewed licence, with no token request.
    assert curl(gate, site.url("/articles/1"),
                headers={"User-Agent": "SearchBot/1.0"}).status == 200
    assert len(server.seen) == 2


def test_a_licence_server_that_refuses_the_client_refuses_the_request(
        https_origin: OriginFactory, proxy: ProxyFactory) -> None:
    server = https_origin()
    server.route("/olp/token", 401, b'{"error": "invalid_client"}',
                 {"Content-Type": "application/json"})
    site = https_origin()
    licensed(site, NO_TRAINING.replace(b'<content url="/articles/"',
                                       f'<content url="/" server="{server.url("/olp")}"'
                                       .encode()))
    site.route("/articles/1", body="text")
    gate = proxy(robots_purposes=BOTS, trust_test_ca=True,
                 robots_license_credentials=f"{server.url('/olp')}=newsbot:wrong")
    refused = curl(gate, site.url("/articles/1"), headers={"User-Agent": "SearchBot/1.0"})
    assert refused.status == 403
    assert refused.header("X-Robotsgate-Reason") == "license-required"
    assert "refused the licence: invalid_client" in refused.text
    assert not site.saw("/articles/1")


# RSL's guide: a page may embed its licence, `<script type="application/rsl+xml">`.
INLINE = """<!doctype html><html><head><title>t</title>
<script type="application/rsl+xml">
<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/inline/">
    <license>
      <prohibits type="usage">ai-all</prohibits>
    </license>
  </content>
</rsl>
</script></head><body>the inline story</body></html>"""


def test_an_inline_licence_withholds_the_page_from_a_training_bot(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    html = {"Content-Type": "text/html; charset=utf-8"}
    site.route("/inline/story", body=INLINE, headers=html)
    # The same licence with typographic quotes, as copied from prose: not XML.
    site.route("/inline/curly", body=INLINE.replace('type="usage"', "type=\u201cusage\u201d"),
               headers=html)
    gate = proxy(robots_purposes=BOTS)

    refused = curl(gate, site.url("/inline/story"), headers={"User-Agent": "TrainBot/1.0"})
    assert refused.status == 403
    assert refused.header("X-Robotsgate-Reason") == "license-prohibited"
    assert refused.header("X-Robotsgate-License") == site.url("/inline/story")
    assert refused.header("X-Robotsgate-Rule") == (
        '<content url="/inline/"> #1 (line 3), <license> #1 (line 4): '
        '<prohibits type="usage"> ai-all')
    assert '<script type="application/rsl+xml">' in refused.text
    assert "the inline story" not in refused.text
    # search is no AI use: the search bot has it.
    searched = curl(gate, site.url("/inline/story"), headers={"User-Agent": "SearchBot/1.0"})
    assert searched.status == 200 and "the inline story" in searched.text

    # Licence XML that is not well-formed fails closed, saying where and why.
    curly = curl(gate, site.url("/inline/curly"), headers={"User-Agent": "SearchBot/1.0"})
    assert curly.status == 503
    assert curly.header("X-Robotsgate-Reason") == "license-unavailable"
    assert "line 5, column 23" in curly.text and "typographic quotes" in curly.text

    records = [r for r in gate.audit() if r["event"] == "withheld"]
    assert [(r["reason"], r["origin_status"]) for r in records] == \
        [("license-prohibited", 200), ("license-unavailable", 200)]
    assert records[0]["license"] == site.url("/inline/story")
    assert records[0]["license_sha256"] and records[0]["line"] is None
