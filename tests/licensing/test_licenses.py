"""RSL licences in the decision: fetched by the proxy's fetcher (httpx's transport, a fake
clock), kept, and judged for the purposes a bot declared (robotsgate.licensing.licenses)."""

import base64
from dataclasses import replace

import httpx
import pytest
from support.clock import FakeClock
from support.gate import req, wire_gate
from support.origins import Origins, ok

from robotsgate.config.options import Settings
from robotsgate.decision.gate import Gate
from robotsgate.decision.plan import Answer, Forward
from robotsgate.decision.policy import Unrestricted
from robotsgate.decision.request import Facts
from robotsgate.decision.verdict import Request
from robotsgate.licensing.judging import judge
from robotsgate.licensing.licenses import FETCHES, Licensing
from robotsgate.licensing.servers import Credentials, parse_credentials
from robotsgate.outcomes import Reason
from robotsgate.protocol import RobotsTxt
from robotsgate.protocol.rsl import MAX_LICENSES, License
from robotsgate.protocol.rsl_parse import MAX_BYTES
from robotsgate.protocol.rsl_parse import read_rsl as _read_rsl
from robotsgate.protocol.rsl_rulings import Grant
from robotsgate.retrieval.archive import RobotsArchive

EX = "https://example.com/robots.txt"
LICENSE = "https://example.com/license.xml"
ROBOTS = b"User-agent: *\nDisallow: /private\n\nLicense: https://example.com/license.xml\n"
NO_TRAINING = b"""<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/articles/">
    <license>
      <prohibits type="usage">ai-train</prohibits>
    </license>
  </content>
</rsl>
"""
SEARCH_ONLY = b"""<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/">
    <license>
      <permits type="usage">search</permits>
    </license>
  </content>
</rsl>
"""
SERVER = b"""<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/" server="https://rslcollective.org/api">
    <license>
      <permits type="usage">ai-all search</permits>
    </license>
  </content>
</rsl>
"""


def xml(body: bytes, **headers: str) -> httpx.Response:
    return ok(body, content_type="application/rsl+xml", **headers)


def wired(origins: Origins, clock: FakeClock | None = None, **options):
    return wire_gate(origins.fetcher(), clock or FakeClock(1_000_000.0), licenses=True,
                     **options)


def asking(url: str, *purposes: str) -> Request:
    return replace(req(url), purposes=frozenset(purposes))


# -- the decision -----------------------------------------------------------------------------

async def test_a_prohibited_purpose_is_refused_with_the_element_and_line_that_say_so():
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(NO_TRAINING)})
    gate = wired(origins).gate
    verdict = await gate.check(asking("https://example.com/articles/1", "train-ai"))
    assert (verdict.action, verdict.reason, verdict.status) == \
        ("block", Reason.LICENSE_PROHIBITED, 403)
    refusal = verdict.license_refusal
    assert refusal is not None
    assert (refusal.kind, refusal.url, refusal.line, refusal.purposes) == \
        ("prohibited", LICENSE, 4, ("train-ai",))
    assert refusal.cite == ('<content url="/articles/"> #1 (line 2), <license> #1 (line 3): '
                            '<prohibits type="usage"> ai-train')
    assert refusal.explain().startswith("train-ai prohibited by <content")
    assert refusal.sha256 is not None and len(refusal.sha256) == 64


async def test_what_the_licence_does_not_cover_or_allows_is_forwarded():
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(NO_TRAINING)})
    gate = wired(origins).gate
    # Another path; another purpose; one purpose of two still licensed.
    for request in (asking("https://example.com/about", "train-ai"),
                    asking("https://example.com/articles/1", "search"),
                    asking("https://example.com/articles/1", "train-ai", "search")):
        verdict = await gate.check(request)
        assert verdict.action == "forward", request
        assert verdict.license_refusal is None


async def test_a_purpose_the_licence_does_not_grant_is_refused_as_not_granted():
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(SEARCH_ONLY)})
    gate = wired(origins).gate
    verdict = await gate.check(asking("https://example.com/x", "train-ai", "ai-input"))
    assert verdict.reason == Reason.LICENSE_PROHIBITED
    assert verdict.license_refusal is not None
    assert [(r.purpose, r.answer) for r in verdict.license_refusal.rulings] == \
        [("ai-input", Grant.NOT_GRANTED), ("train-ai", Grant.NOT_GRANTED)]
    assert "not granted" in verdict.license_refusal.explain()
    assert (await gate.check(asking("https://example.com/x", "search"))).action == "forward"


async def test_the_path_the_server_would_serve_is_judged_too():
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(NO_TRAINING)})
    gate = wired(origins).gate
    verdict = await gate.check(asking("https://example.com/x/../articles/1", "train-ai"))
    assert verdict.reason == Reason.LICENSE_PROHIBITED


async def test_only_a_bot_that_declared_purposes_waits_for_a_licence():
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(NO_TRAINING)})
    gate = wired(origins).gate
    assert (await gate.check(req("https://example.com/articles/1"))).action == "forward"
    assert LICENSE not in origins.urls  # never fetched


async def test_a_disallowed_path_is_refused_by_robots_txt_before_any_licence_is_read():
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(NO_TRAINING)})
    gate = wired(origins).gate
    verdict = await gate.check(asking("https://example.com/private", "train-ai"))
    assert verdict.reason == Reason.DISALLOWED
    assert LICENSE not in origins.urls


async def test_the_document_is_fetched_once_as_the_proxy_and_kept():
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(NO_TRAINING)})
    w = wired(origins)
    for _ in range(5):
        await w.gate.check(replace(asking("https://example.com/articles/1", "train-ai"),
                                   user_agent="EvilBot/6.6"))
    fetched = [request for request in origins.seen if str(request.url) == LICENSE]
    assert len(fetched) == 1 and w.licensing is not None and w.licensing.fetches == 1
    assert fetched[0].headers["user-agent"] == "robotsgate"  # never the bot's
    assert fetched[0].headers["accept"].startswith("application/rsl+xml")


async def test_it_is_fetched_again_when_its_max_age_runs_out():
    clock = FakeClock(1_000_000.0)
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(NO_TRAINING, cache_control="max-age=60")})
    gate = wired(origins, clock).gate
    await gate.check(asking("https://example.com/articles/1", "train-ai"))
    clock.now += 59
    await gate.check(asking("https://example.com/articles/1", "train-ai"))
    assert origins.urls.count(LICENSE) == 1
    clock.now += 2
    await gate.check(asking("https://example.com/articles/1", "train-ai"))
    assert origins.urls.count(LICENSE) == 2


async def test_a_licence_on_another_host_applies_to_the_site_that_names_it():
    robots = b"User-agent: *\nAllow: /\nLicense: https://licences.example.net/news.xml\n"
    origins = Origins(**{EX: ok(robots),
                         "https://licences.example.net/news.xml": xml(NO_TRAINING)})
    gate = wired(origins).gate
    verdict = await gate.check(asking("https://example.com/articles/1", "train-ai"))
    assert verdict.reason == Reason.LICENSE_PROHIBITED
    assert verdict.license_refusal is not None
    assert verdict.license_refusal.url == "https://licences.example.net/news.xml"


async def test_a_full_url_content_applies_only_to_its_own_origin():
    doc = NO_TRAINING.replace(b'url="/articles/"', b'url="https://other.example/articles/"')
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(doc)})
    gate = wired(origins).gate
    assert (await gate.check(asking("https://example.com/articles/1", "train-ai"))).action \
        == "forward"


# -- what a fetch means -----------------------------------------------------------------------

@pytest.mark.parametrize("answer", [
    httpx.Response(404), httpx.Response(410), httpx.Response(403),
    # An HTML page about a licence, not an RSL document.
    ok(b"<!DOCTYPE html><html><body>CC BY 4.0<br></body></html>", content_type="text/html"),
    # Well-formed XML, another vocabulary.
    xml(b'<feed xmlns="http://www.w3.org/2005/Atom"><title>x</title></feed>'),
])
async def test_a_licence_that_says_nothing_refuses_nothing(answer):
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: answer})
    gate = wired(origins).gate
    verdict = await gate.check(asking("https://example.com/articles/1", "train-ai"))
    assert verdict.action == "forward" and verdict.license_refusal is None


@pytest.mark.parametrize(("answer", "said"), [
    (httpx.Response(503), "HTTP 503"),
    (httpx.Response(429), "HTTP 429"),
    (xml(b"<rsl xmlns='https://rslstandard.org/rsl'><content url='/'>"), "no element found"),
    (xml(b'<!DOCTYPE rsl [<!ENTITY a "aaaa">]><rsl/>'), "DOCTYPE"),
    (ok(b'<?xml version="1.0"?><rsl><content url="/"><license>'), "not XML"),
    (xml(b"<rsl xmlns='https://rslstandard.org/rsl'>" + b" " * MAX_BYTES + b"</rsl>"),
     "more than"),
])
async def test_a_licence_that_cannot_be_read_refuses_for_error_ttl(answer, said):
    clock = FakeClock(1_000_000.0)
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: answer})
    gate = wired(origins, clock, error_ttl=30).gate
    verdict = await gate.check(asking("https://example.com/articles/1", "train-ai"))
    assert (verdict.action, verdict.reason, verdict.status, verdict.retry_after) == \
        ("unavailable", Reason.LICENSE_UNAVAILABLE, 503, 30)
    assert verdict.license_refusal is not None
    assert said in (verdict.license_refusal.error or "")
    # Remembered for error_ttl, then asked again.
    await gate.check(asking("https://example.com/articles/1", "train-ai"))
    assert origins.urls.count(LICENSE) == 1
    origins.routes[LICENSE] = xml(NO_TRAINING)
    clock.now += 31
    assert (await gate.check(asking("https://example.com/about", "train-ai"))).action \
        == "forward"
    assert origins.urls.count(LICENSE) == 2


async def test_a_prohibition_wins_over_another_licence_that_cannot_be_read():
    robots = ROBOTS + b"License: https://example.com/broken.xml\n"
    origins = Origins(**{EX: ok(robots), LICENSE: xml(NO_TRAINING),
                         "https://example.com/broken.xml": httpx.Response(500)})
    gate = wired(origins).gate
    refused = await gate.check(asking("https://example.com/articles/1", "train-ai"))
    assert refused.reason == Reason.LICENSE_PROHIBITED
    # Where the readable licence does not refuse, the unreadable one may: 503.
    other = await gate.check(asking("https://example.com/about", "train-ai"))
    assert other.reason == Reason.LICENSE_UNAVAILABLE
    assert other.license_refusal is not None
    assert other.license_refusal.url == "https://example.com/broken.xml"


async def test_a_licence_server_means_a_licence_must_be_obtained():
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(SERVER)})
    gate = wired(origins).gate
    verdict = await gate.check(asking("https://example.com/a", "train-ai"))
    assert (verdict.action, verdict.reason, verdict.status) == \
        ("block", Reason.LICENSE_REQUIRED, 403)
    assert verdict.license_refusal is not None
    assert verdict.license_refusal.server == "https://rslcollective.org/api"
    assert verdict.license_refusal.cite == '<content server="https://rslcollective.org/api">'


async def test_with_licences_off_nothing_is_fetched():
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(NO_TRAINING)})
    gate = wire_gate(origins.fetcher(), FakeClock(1_000_000.0)).gate
    verdict = await gate.check(asking("https://example.com/articles/1", "train-ai"))
    assert verdict.action == "forward" and LICENSE not in origins.urls


async def test_the_body_that_decided_is_archived(tmp_path):
    archive = RobotsArchive(tmp_path)
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(NO_TRAINING)})
    gate = wired(origins, archive=archive).gate
    verdict = await gate.check(asking("https://example.com/articles/1", "train-ai"))
    assert verdict.license_refusal is not None and verdict.license_refusal.sha256
    assert archive.path(verdict.license_refusal.sha256).read_bytes() == NO_TRAINING
    assert LICENSE in archive.sidecar(verdict.license_refusal.sha256).read_text()


# -- the pure judgement -----------------------------------------------------------------------

def test_judge_cites_a_prohibition_over_a_purpose_not_granted():
    from robotsgate.licensing.judging import LicenseDocument

    def doc(url: str, body: bytes) -> tuple[License, LicenseDocument]:
        return (License(url, 1), LicenseDocument(url, "ok", _read_rsl(body, url), 200, None,
                                                 0.0, 1.0))

    found = judge([doc("https://a/l.xml", SEARCH_ONLY), doc("https://b/l.xml", NO_TRAINING)],
                  ["https://example.com/articles/1"], ["train-ai"])
    assert found is not None and found.url == "https://b/l.xml"
    assert found.rulings[0].answer is Grant.PROHIBITED


# -- the answer -------------------------------------------------------------------------------

async def _plan(origins: Origins, *, monitor: bool = False):
    from robotsgate.config import assemble

    gate = wired(origins).gate
    settings = Settings(purpose="train-ai", mode="monitor" if monitor else "enforce")
    exchange = assemble.exchange(settings, gate, Unrestricted())
    return await exchange.decide(Facts("https", "example.com", 443, b"GET", b"/articles/1", b"",
                                       ((b"Host", b"example.com"),
                                        (b"User-Agent", b"NewsBot/1.0"))))


async def test_the_answer_names_the_licence_its_element_and_its_line():
    plan = await _plan(Origins(**{EX: ok(ROBOTS), LICENSE: xml(NO_TRAINING)}))
    assert isinstance(plan, Answer) and plan.reason == Reason.LICENSE_PROHIBITED
    headers = dict(plan.headers)
    assert headers["X-Robotsgate-License"] == LICENSE
    assert headers["X-Robotsgate-Line"] == "4"
    assert headers["X-Robotsgate-Purposes"] == "train-ai"
    assert headers["X-Robotsgate-Rule"].endswith('<prohibits type="usage"> ai-train')
    assert "Refused by this site's licence" in plan.text and LICENSE in plan.text
    assert plan.records[-1].reason == Reason.LICENSE_PROHIBITED


async def test_an_unavailable_licence_is_answered_with_retry_after():
    plan = await _plan(Origins(**{EX: ok(ROBOTS), LICENSE: httpx.Response(502)}))
    assert isinstance(plan, Answer) and plan.reason == Reason.LICENSE_UNAVAILABLE
    assert dict(plan.headers)["Retry-After"] == "60"
    assert "HTTP 502" in plan.text


async def test_monitor_mode_forwards_and_records_what_it_would_have_refused():
    plan = await _plan(Origins(**{EX: ok(ROBOTS), LICENSE: xml(NO_TRAINING)}), monitor=True)
    assert isinstance(plan, Forward)
    assert [(r.event, r.reason) for r in plan.records] == \
        [("would-block", Reason.LICENSE_PROHIBITED)]


# -- licence servers --------------------------------------------------------------------------

SERVER_URL = "https://licenses.example/olp"
SERVED = SERVER.replace(b"https://rslcollective.org/api", SERVER_URL.encode())


def token_server(*answers: httpx.Response):
    """A token endpoint that answers in turn, and keeps what it was asked."""
    asked: list[httpx.Request] = []
    queue = list(answers)

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return handle, asked


def token(value: str, expires_in: int = 3600) -> httpx.Response:
    return httpx.Response(200, json={"access_token": value, "token_type": "License",
                                     "expires_in": expires_in})


def licensed_gate(handle, clock: FakeClock | None = None, document: bytes = SERVED):
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(document),
                         f"{SERVER_URL}/token": handle})
    clock = clock or FakeClock(1_000_000.0)
    w = wire_gate(origins.fetcher(), clock)
    licensing = Licensing(origins.fetcher(), clock,
                          credentials={SERVER_URL: Credentials("bot-1", "s3cret")})
    gate = Gate(w.gate.config, w.store, w.retrieval, clock, w.pacer, licensing=licensing)
    return gate, licensing


async def test_a_licence_is_obtained_from_its_server_and_presented():
    handle, asked = token_server(token("tok-1"))
    gate, licensing = licensed_gate(handle)
    for path in ("/a", "/b", "/c"):
        verdict = await gate.check(asking(f"https://example.com{path}", "search"))
        assert verdict.action == "forward" and verdict.license_token is not None
        assert verdict.license_token.header == "License tok-1"
    assert len(asked) == 1 and licensing.token_requests == 1  # kept until it expires
    request = asked[0]
    assert request.method == "POST"
    assert request.headers["authorization"] == \
        "Basic " + base64.b64encode(b"bot-1:s3cret").decode()
    form = dict(httpx.QueryParams(request.content.decode()))
    assert form["grant_type"] == "rsl" and form["resource"] == "https://example.com/"
    assert "permits" in form["license"] and "ai-all search" in form["license"]


async def test_a_token_is_asked_for_again_before_it_expires_and_after_it_is_forgotten():
    clock = FakeClock(1_000_000.0)
    handle, asked = token_server(token("tok-1", 100), token("tok-2", 100), token("tok-3"))
    gate, licensing = licensed_gate(handle, clock)
    first = await gate.check(asking("https://example.com/a", "search"))
    clock.now += 69  # 31 s left: still used
    assert (await gate.check(asking("https://example.com/a", "search"))).license_token \
        == first.license_token
    clock.now += 2  # within the margin: a new one
    second = await gate.check(asking("https://example.com/a", "search"))
    assert second.license_token is not None and second.license_token.value == "tok-2"
    licensing.forget(second.license_token)
    third = await gate.check(asking("https://example.com/a", "search"))
    assert third.license_token is not None and third.license_token.value == "tok-3"
    assert len(asked) == 3


@pytest.mark.parametrize(("answer", "reason", "said"), [
    (httpx.Response(401, json={"error": "invalid_client"}), Reason.LICENSE_REQUIRED,
     "refused the licence: invalid_client"),
    (httpx.Response(503), Reason.LICENSE_UNAVAILABLE, "HTTP 503"),
    # A token that would break the header it goes in.
    (token("tok\r\nX-Evil: 1"), Reason.LICENSE_REQUIRED, "no usable access_token"),
    (httpx.Response(200, content=b"<html>"), Reason.LICENSE_REQUIRED, "not a JSON object"),
])
async def test_a_licence_that_cannot_be_obtained_refuses(answer, reason, said):
    handle, asked = token_server(answer)
    gate, _ = licensed_gate(handle)
    verdict = await gate.check(asking("https://example.com/a", "search"))
    assert verdict.reason == reason and verdict.license_token is None
    assert verdict.license_refusal is not None and said in (verdict.license_refusal.error or "")
    await gate.check(asking("https://example.com/a", "search"))
    assert len(asked) == 1  # the failure is remembered for error_ttl


async def test_without_credentials_for_its_server_a_licence_is_required():
    origins = Origins(**{EX: ok(ROBOTS), LICENSE: xml(SERVED)})
    gate = wired(origins).gate
    verdict = await gate.check(asking("https://example.com/a", "search"))
    assert verdict.reason == Reason.LICENSE_REQUIRED
    assert "robots_license_credentials" in (verdict.license_refusal.error or "")
    assert not any("/token" in url for url in origins.urls)


def test_credentials_are_read_and_bad_ones_named_without_the_secret(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("from-file\n")
    found = parse_credentials([f"https://Licenses.Example/olp/=bot:@{secret}",
                               "https://other.example=b2:inline"])
    assert found["https://licenses.example/olp"].secret == "from-file"
    assert found["https://other.example"].client_id == "b2"
    assert "from-file" not in repr(found)


# Every way an entry can be wrong, the secret (hunter2) wherever a slip puts it: each is named
# by its position and its server's host, and nothing else of it is ever in the message.
BAD_CREDENTIALS = [
    ("https://x.example=hunter2", "entry 2 (licence server x.example) is not SERVER="),
    ("https://x.example:hunter2", "entry 2 (licence server x.example) is not SERVER="),
    ("https://x.example/olp?k=v=hunter2", "entry 2 (licence server x.example) is not SERVER="),
    ("hunter2", 'entry 2 (no licence server URL before "=") is not SERVER='),
    ("bot:hunter2", 'entry 2 (no licence server URL before "=") is not SERVER='),
    ("=bot:hunter2", 'entry 2 (no licence server URL before "="): the licence server must be '
                     "an https:// URL"),
    ("https://x.example= :hunter2", "entry 2 (licence server x.example) is not SERVER="),
    ("http://x.example=bot:hunter2", "entry 2 (licence server x.example): the licence server "
                                     "must be an https:// URL"),
    ("x.example=bot:hunter2", 'entry 2 (no licence server URL before "="): the licence server '
                              "must be an https:// URL"),
    ("https://bot:hunter2@x.example=bot:hunter2", "entry 2 (licence server x.example): the "
                                                  "licence server's URL must not hold"),
    ("https://x.example=bot:@hunter2", "entry 2 (licence server x.example): cannot read the "
                                       'secret from the file it names after "@"'),
    ("https://x.example=bot:@hunter2\0", "entry 2 (licence server x.example): cannot read"),
    ("https://x.example=bot:", "entry 2 (licence server x.example): an empty secret"),
]


@pytest.mark.parametrize(("bad", "said"), BAD_CREDENTIALS)
def test_a_bad_credentials_entry_is_named_by_its_place_and_host_never_its_value(bad, said):
    with pytest.raises(ValueError) as caught:
        parse_credentials(["https://good.example=ok:fine", bad])
    message = str(caught.value)
    assert message.startswith(said), message
    assert "hunter2" not in message and "bot" not in message, message
    # The same through the option's own check, and with the option named.
    with pytest.raises(ValueError) as caught:
        Settings.read(lambda name: ["https://good.example=ok:fine", bad]
                      if name == "robots_license_credentials" else
                      getattr(Settings(), name.removeprefix("robots_")))
    assert str(caught.value).startswith(f"robots_license_credentials: {said}")
    assert "hunter2" not in str(caught.value)


def test_the_settings_never_show_a_secret():
    settings = Settings(license_credentials=("https://x.example=bot:hunter2",),
                        redis="redis://:hunter2@127.0.0.1:6379/0")
    assert "hunter2" not in repr(settings) and "hunter2" not in str(settings)


async def test_a_licence_servers_answer_that_repeats_the_secret_is_not_recorded_with_it():
    def handle(request: httpx.Request) -> httpx.Response:
        said = base64.b64decode(request.headers["authorization"].split()[1]).decode()
        return httpx.Response(400, json={"error": f"invalid_client {said}"})

    gate, _ = licensed_gate(handle)
    verdict = await gate.check(asking("https://example.com/a", "search"))
    assert verdict.reason == Reason.LICENSE_REQUIRED
    error = verdict.license_refusal.error or ""
    assert "invalid_client" in error and "[secret]" in error and "s3cret" not in error


async def test_a_licence_is_only_ever_asked_for_the_requests_own_origin():
    # RSL reads "//victim.example/" as a path: the licence asked for is example.com's.
    handle, asked = token_server(token("tok-1"))
    gate, _ = licensed_gate(handle, document=SERVED.replace(b'url="/"',
                                                             b'url="//victim.example/"'))
    verdict = await gate.check(asking("https://example.com//victim.example/x", "search"))
    assert verdict.license_token is not None
    form = dict(httpx.QueryParams(asked[0].content.decode()))
    assert form["resource"] == "https://example.com//victim.example/"


# -- bounds: what one site can make the proxy fetch -------------------------------------------

THIRD = "https://victim.example"
PERMITS_TRAINING = b"""<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/"><license><permits type="usage">ai-all search</permits></license></content>
</rsl>
"""


def storm(count: int, host: str = THIRD) -> bytes:
    """A robots.txt that names `count` distinct licence documents at `host`."""
    return b"User-agent: *\nAllow: /\n" + b"".join(
        f"License: {host}/l/{n}.xml\n".encode() for n in range(count))


def test_robots_txt_reads_the_first_16_documents_it_names_each_once():
    robots = RobotsTxt.parse(storm(1100))
    assert [license.line for license in robots.licenses] == list(range(3, 19))
    unread = robots.unread_licenses
    assert unread is not None
    assert (unread.first.url, unread.first.line, unread.count, unread.named, unread.cap) == \
        (f"{THIRD}/l/16.xml", 19, 1084, 1100, 16)
    assert MAX_LICENSES == 16
    # The same document named 1,100 times is one document: nothing past the cap.
    same = RobotsTxt.parse(b"User-agent: *\nAllow: /\n" + b"License: https://a.example/l\n" * 1100)
    assert [license.line for license in same.licenses] == [3]
    assert same.unread_licenses is None


async def test_a_storm_of_license_lines_fetches_16_once_and_refuses_what_it_did_not_read():
    origins = Origins(**{EX: ok(storm(1100)), "victim.example": xml(PERMITS_TRAINING)})
    gate = wired(origins).gate
    first = await gate.check(asking("https://example.com/a", "train-ai"))
    assert sum("victim.example" in url for url in origins.urls) == 16
    # The 16 read grant training; the 1,084 not read may prohibit it: refused as unavailable.
    assert (first.action, first.reason, first.status) == \
        ("unavailable", Reason.LICENSE_UNAVAILABLE, 503)
    refusal = first.license_refusal
    assert refusal is not None
    assert (refusal.url, refusal.line) == (f"{THIRD}/l/16.xml", 19)
    assert "1,100 licence documents named, only the first 16 read" in (refusal.error or "")
    second = await gate.check(asking("https://example.com/b", "train-ai"))
    assert second.reason == Reason.LICENSE_UNAVAILABLE
    assert sum("victim.example" in url for url in origins.urls) == 16  # kept: none again
    # A bot that declared nothing is not refused, and fetches nothing.
    assert (await gate.check(req("https://example.com/c"))).action == "forward"


async def test_a_prohibition_among_the_documents_read_is_cited_before_those_not_read():
    origins = Origins(**{EX: ok(storm(40)), "victim.example": xml(PERMITS_TRAINING),
                         f"{THIRD}/l/5.xml": xml(NO_TRAINING)})
    verdict = await wired(origins).gate.check(asking("https://example.com/articles/1",
                                                     "train-ai"))
    assert verdict.reason == Reason.LICENSE_PROHIBITED
    assert verdict.license_refusal is not None and \
        verdict.license_refusal.url == f"{THIRD}/l/5.xml"


async def test_a_site_has_at_most_64_documents_fetched_per_cache_ttl_then_uses_them_as_read():
    clock = FakeClock(1_000_000.0)
    # 16 documents that may be kept for no time at all: each request would fetch all 16.
    origins = Origins(**{EX: ok(storm(16)),
                         "victim.example": xml(PERMITS_TRAINING, cache_control="max-age=0")})
    w = wired(origins, clock, cache_ttl=3600)
    for n in range(10):
        verdict = await w.gate.check(asking(f"https://example.com/{n}", "train-ai"))
        assert verdict.action == "forward", (n, verdict.license_refusal)
        clock.now += 1
    # 4 requests' worth, then the copies as last read: still judged, still forwarded.
    assert sum("victim.example" in url for url in origins.urls) == FETCHES == 64
    clock.now += 3600  # a new window
    await w.gate.check(asking("https://example.com/again", "train-ai"))
    assert sum("victim.example" in url for url in origins.urls) == 64 + 16


async def test_past_its_budget_a_document_never_read_is_not_fetched_but_refused():
    clock = FakeClock(1_000_000.0)
    site = Origins(**{"victim.example": xml(PERMITS_TRAINING, cache_control="max-age=0")})
    licensing = Licensing(site.fetcher(), clock, cache_ttl=3600)
    for n in range(FETCHES):
        await licensing.document(f"{THIRD}/l/{n}.xml", "https://example.com")
    assert site.fetches == FETCHES
    held = await licensing.document(f"{THIRD}/l/new.xml", "https://example.com")
    assert held.kind == "unavailable" and "not fetched: 64 licence documents" in \
        (held.error or "")
    assert site.fetches == FETCHES
    # Another site's budget is its own.
    other = await licensing.document(f"{THIRD}/l/new.xml", "https://other.example")
    assert other.kind == "ok" and site.fetches == FETCHES + 1
