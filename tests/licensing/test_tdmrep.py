"""TDMRep's file in the decision: /.well-known/tdmrep.json fetched by the proxy's fetcher (httpx's
transport, a fake clock), kept per origin (its absence too), and its rule for the path given to
the response's judgement (robotsgate.licensing.tdmrep, robotsgate.decision.gate)."""

import httpx
from support.clock import FakeClock
from support.gate import req, wire_gate
from support.origins import Origins, ok

from robotsgate.decision.verdict import Request

ROBOTS = "https://example.com/robots.txt"
FILE = "https://example.com/.well-known/tdmrep.json"
RESERVED = b'[{"location": "/", "tdm-reservation": 1, "tdm-policy": "https://example.com/p"},' \
           b' {"location": "/open/", "tdm-reservation": 0}]'


def miner(url: str, purposes: str = "train-ai") -> Request:
    r = req(url)
    return Request(r.origin, r.path, r.user_agent, r.agent, frozenset(purposes.split(",")))


async def test_the_rule_for_the_path_goes_into_the_verdict() -> None:
    origins = Origins({ROBOTS: ok(b"User-agent: *\nAllow: /\n"),
                       FILE: ok(RESERVED, content_type="application/json")})
    wired = wire_gate(origins.fetcher(), FakeClock(1_000_000.0), tdmrep=True)
    reserved = await wired.gate.check(miner("https://example.com/a"))
    # Not refused at the request: the answer's own tdm-reservation may supersede the file's.
    assert reserved.action == "forward"
    assert reserved.tdm is not None and reserved.tdm.preference == "1"
    assert reserved.tdm.policy == "https://example.com/p"
    opened = await wired.gate.check(miner("https://example.com/open/b"))
    assert opened.tdm is not None and opened.tdm.preference == "0"
    # Fetched once, as the proxy, with the JSON it asks for.
    [fetch] = [r for r in origins.seen if str(r.url) == FILE]
    assert fetch.headers["user-agent"] == "robotsgate"
    assert fetch.headers["accept"].startswith("application/json")


async def test_a_bot_without_purposes_never_asks() -> None:
    origins = Origins({ROBOTS: ok(b"User-agent: *\nAllow: /\n"), FILE: ok(RESERVED)})
    wired = wire_gate(origins.fetcher(), FakeClock(1_000_000.0), tdmrep=True)
    verdict = await wired.gate.check(req("https://example.com/a"))
    assert verdict.tdm is None and FILE not in origins.urls


async def test_no_file_is_kept_as_long_as_a_file() -> None:
    clock = FakeClock(1_000_000.0)
    origins = Origins({ROBOTS: ok(b"User-agent: *\nAllow: /\n")})  # tdmrep.json: 404
    wired = wire_gate(origins.fetcher(), clock, tdmrep=True, cache_ttl=3600)
    for path in ("/a", "/b", "/c"):
        assert (await wired.gate.check(miner(f"https://example.com{path}"))).tdm is None
    assert origins.urls.count(FILE) == 1
    clock.now += 3601
    await wired.gate.check(miner("https://example.com/d"))
    assert origins.urls.count(FILE) == 2


async def test_a_page_for_any_path_is_no_file() -> None:
    # Many sites answer 200 with a page for every path they do not know.
    origins = Origins({ROBOTS: ok(b"User-agent: *\nAllow: /\n"),
                       FILE: ok(b"<html>Not found</html>", content_type="text/html")})
    wired = wire_gate(origins.fetcher(), FakeClock(1_000_000.0), tdmrep=True)
    assert (await wired.gate.check(miner("https://example.com/a"))).tdm is None


async def test_a_file_that_cannot_be_had_or_read_reads_as_reserved() -> None:
    for answer in (httpx.Response(503), ok(b'[{"location": "/", ', content_type="application/json"),
                   ok(b'{"location": "/"}')):
        clock = FakeClock(1_000_000.0)
        origins = Origins({ROBOTS: ok(b"User-agent: *\nAllow: /\n"), FILE: answer})
        wired = wire_gate(origins.fetcher(), clock, tdmrep=True, error_ttl=60)
        verdict = await wired.gate.check(miner("https://example.com/a"))
        assert verdict.tdm is not None and verdict.tdm.preference == "1", answer
        assert "could not be read" in verdict.tdm.problems[0]
        assert verdict.tdm.text.startswith("/.well-known/tdmrep.json (not read")
        # Remembered for robots_error_ttl only.
        clock.now += 61
        await wired.gate.check(miner("https://example.com/b"))
        assert origins.urls.count(FILE) == 2
