"""The decision service and the fetcher, driven through httpx's transport and a fake clock.

What the stores do under the gate (one fetch for everyone sharing one, the last good copy) is in
tests/state/test_store_contract.py, for every store.
"""

import asyncio
import gzip
import tracemalloc
import zlib

import httpx
import pytest
from support.clock import FakeClock
from support.gate import make_gate, req
from support.origins import Origins, ok

from robotsgate.origin import Origin
from robotsgate.protocol import MAX_BYTES
from robotsgate.retrieval.fetch import MAX_REDIRECTS, Fetcher, max_age
from robotsgate.rules_cache import RulesCache
from robotsgate.state.store import HOT_ORIGINS, MemoryStore

EX = "http://example.com/robots.txt"
ROBOTS = b"User-agent: *\nDisallow: /private\n\nUser-agent: FooBot\nDisallow: /foo-only\n"


# -- origins ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("a", "b"), [
    (("http", "Example.COM", None), ("http", "example.com", 80)),
    (("https", "example.com.", 443), ("https", "example.com", None)),
])
def test_origin_is_case_trailing_dot_and_default_port_insensitive(a, b):
    assert Origin.of(*a) == Origin.of(*b)


def test_origin_robots_url_names_non_default_ports_and_ipv6():
    assert Origin.of("http", "example.com", 8080).robots_url == "http://example.com:8080/robots.txt"
    assert Origin.of("https", "example.com", 443).robots_url == "https://example.com/robots.txt"
    assert Origin.of("http", "::1", 81).robots_url == "http://[::1]:81/robots.txt"


def test_scheme_and_port_make_different_origins():
    assert len({Origin.of("http", "a", None), Origin.of("https", "a", None),
                Origin.of("http", "a", 8080)}) == 3


# -- decisions ---------------------------------------------------------------------------------

async def test_disallowed_path_is_blocked_and_names_the_rule():
    gate = make_gate(Origins(**{EX: ok(ROBOTS)}))
    verdict = await gate.check(req("http://example.com/private/x", agent="MyBot"))
    assert verdict.action == "block" and verdict.status == 403 and verdict.agent == "MyBot"
    assert verdict.decision is not None and verdict.decision.rule is not None
    assert (verdict.decision.rule.pattern, verdict.decision.rule.line) == ("/private", 2)
    assert verdict.robots_url == "http://example.com/robots.txt"
    assert verdict.entry is not None and verdict.entry.status == 200
    assert (await gate.check(req("http://example.com/public", agent="MyBot"))).action == "forward"


async def test_user_agent_header_picks_the_group_when_no_agent_is_configured():
    gate = make_gate(Origins(**{EX: ok(ROBOTS)}))
    browser_like = "Mozilla/5.0 (compatible; FooBot/2.1)"
    foo = await gate.check(req("http://example.com/foo-only", browser_like))
    assert foo.action == "block" and foo.agent == "foobot"
    # FooBot's group replaces '*': /private is not FooBot's business.
    assert (await gate.check(req("http://example.com/private", "FooBot/2.1"))).action == "forward"
    other = await gate.check(req("http://example.com/private", "curl/8.0"))
    assert other.action == "block" and other.agent == "*"


async def test_configured_agent_overrides_the_header():
    gate = make_gate(Origins(**{EX: ok(ROBOTS)}))
    verdict = await gate.check(req("http://example.com/foo-only", "curl/8.0", agent="FooBot"))
    assert verdict.action == "block" and verdict.agent == "FooBot"
    tunnel = await gate.check_host(Origin.of("http", "example.com", None), "curl/8.0", "FooBot")
    assert tunnel.action == "forward" and tunnel.agent == "FooBot"


async def test_query_string_is_part_of_the_match():
    body = b"User-agent: *\nDisallow: /*?session=\n"
    gate = make_gate(Origins(**{EX: ok(body)}))
    assert (await gate.check(req("http://example.com/a?session=1"))).action == "block"
    assert (await gate.check(req("http://example.com/a"))).action == "forward"


async def test_the_bots_own_robots_txt_passes_without_a_fetch():
    origins = Origins(**{EX: ok(b"User-agent: *\nDisallow: /")})
    gate = make_gate(origins)
    verdict = await gate.check(req("http://example.com/robots.txt"))
    assert verdict.action == "forward" and verdict.reason == "robots.txt"
    assert origins.seen == []


# -- fetch outcomes (RFC 9309 §2.3.1) ----------------------------------------------------------

async def test_4xx_means_no_restrictions():
    gate = make_gate(Origins(**{EX: httpx.Response(404)}))
    verdict = await gate.check(req("http://example.com/anything"))
    assert verdict.action == "forward"
    assert verdict.entry is not None and verdict.entry.kind == "missing"


@pytest.mark.parametrize("status", [500, 502, 503, 429])
async def test_5xx_and_429_mean_complete_disallow(status):
    gate = make_gate(Origins(**{EX: httpx.Response(status)}), error_ttl=90)
    verdict = await gate.check(req("http://example.com/anything"))
    assert verdict.action == "unavailable" and verdict.status == 503
    assert verdict.retry_after == 90
    assert verdict.entry is not None and verdict.entry.status == status


async def test_connection_error_means_complete_disallow():
    async def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    gate = make_gate(Origins(**{"example.com": refuse}))
    verdict = await gate.check(req("http://example.com/x"))
    assert verdict.action == "unavailable"
    assert verdict.entry is not None and "ConnectError" in (verdict.entry.error or "")


async def test_a_robots_txt_that_never_answers_times_out_as_unreachable():
    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(60)
        raise AssertionError("not reached")

    fetcher = Fetcher(timeout=0.05, transport=httpx.MockTransport(Origins(**{"example.com": hang})))
    result = await fetcher.fetch("http://example.com/robots.txt", None)
    assert result.outcome == "unreachable" and "timed out" in (result.error or "")


async def test_retry_after_counts_down_with_the_clock():
    clock = FakeClock()
    gate = make_gate(Origins(**{EX: httpx.Response(503)}), clock,
                     error_ttl=60)
    await gate.check(req("http://example.com/x"))
    clock.now += 45
    assert (await gate.check(req("http://example.com/x"))).retry_after == 15


async def test_redirects_are_followed_across_hosts_and_rules_apply_to_the_original_origin():
    origins = Origins(**{
        EX: httpx.Response(301, headers={"Location": "https://www.example.com/robots.txt"}),
        "https://www.example.com/robots.txt": httpx.Response(
            302, headers={"Location": "/r/robots.txt"}),
        "https://www.example.com/r/robots.txt": ok(ROBOTS),
    })
    gate = make_gate(origins)
    verdict = await gate.check(req("http://example.com/private", "curl"))
    assert verdict.action == "block" and verdict.robots_url == "http://example.com/robots.txt"
    assert len(origins.seen) == 3


async def test_more_than_five_redirects_means_unavailable_so_no_restrictions():
    async def loop(request: httpx.Request) -> httpx.Response:
        n = int(request.url.params.get("n", "0"))
        return httpx.Response(302, headers={"Location": f"/robots.txt?n={n + 1}"})

    origins = Origins(**{"example.com": loop})
    gate = make_gate(origins)
    verdict = await gate.check(req("http://example.com/x"))
    assert verdict.action == "forward" and verdict.entry is not None
    assert verdict.entry.kind == "missing"
    assert len(origins.seen) == MAX_REDIRECTS + 1


async def test_only_the_first_500_kib_are_read():
    body = b"User-agent: *\n" + b"#" * (MAX_BYTES + 10_000) + b"\nDisallow: /late\n"
    fetcher = Fetcher(timeout=2, transport=httpx.MockTransport(
        Origins(**{"example.com": ok(body)})))
    result = await fetcher.fetch("http://example.com/robots.txt", None)
    assert len(result.body) == MAX_BYTES


class Chunks(httpx.AsyncByteStream):
    """A body that arrives in pieces, as from a socket."""

    def __init__(self, data: bytes, size: int = 16_384) -> None:
        self.data, self.size = data, size

    async def __aiter__(self):  # type: ignore[override]
        for start in range(0, len(self.data), self.size):
            yield self.data[start : start + self.size]


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_compression_bomb_is_inflated_no_further_than_the_cap(encoding):
    plain = b"User-agent: *\nDisallow: /x\n" + b"\0" * 200_000_000
    bomb = gzip.compress(plain) if encoding == "gzip" else zlib.compress(plain)
    del plain

    async def explode(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Encoding": encoding}, stream=Chunks(bomb))

    fetcher = Fetcher(timeout=5, transport=httpx.MockTransport(explode))
    tracemalloc.start()
    try:
        result = await fetcher.fetch("http://example.com/robots.txt", None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.outcome == "ok"
    assert len(result.body) == MAX_BYTES
    assert result.body.startswith(b"User-agent: *\nDisallow: /x\n")
    assert peak < 8 * MAX_BYTES, f"inflating took {peak:,} bytes at its peak"


async def test_an_encoding_that_was_not_asked_for_is_unreachable():
    async def brotli(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept-encoding"] == "gzip, deflate"
        return httpx.Response(200, headers={"Content-Encoding": "br"}, stream=Chunks(b"xx"))

    fetcher = Fetcher(timeout=5, transport=httpx.MockTransport(brotli))
    result = await fetcher.fetch("http://example.com/robots.txt", None)
    assert result.outcome == "unreachable" and "br" in (result.error or "")


async def test_the_fetch_never_sends_the_bots_user_agent():
    # A bot named by its User-Agent alone: one copy per origin, fetched as the proxy.
    origins = Origins(**{"example.com": ok(ROBOTS), "other.example": ok(ROBOTS)})
    gate = make_gate(origins)
    await gate.check(req("http://example.com/x", "FooBot/3.0 (+https://foo.example)"))
    await gate.check(req("http://example.com/y", "BarBot/1.0 " + "x" * 20_000))
    assert [s.headers["user-agent"] for s in origins.seen] == ["robotsgate"]
    # A bot the operator names: its own copy, fetched as its product token.
    await gate.check(req("http://other.example/x", "anything at all", agent="FooBot"))
    assert origins.seen[-1].headers["user-agent"] == "FooBot"


# -- caching -------------------------------------------------------------------------------------

async def test_the_second_request_does_not_refetch():
    origins = Origins(**{"example.com": ok(ROBOTS)})
    gate = make_gate(origins)
    for _ in range(5):
        await gate.check(req("http://example.com/x"))
    assert len(origins.seen) == 1


async def test_ttl_expiry_refetches():
    clock = FakeClock()
    origins = Origins(**{"example.com": ok(ROBOTS)})
    gate = make_gate(origins, clock, cache_ttl=3600)
    await gate.check(req("http://example.com/x"))
    clock.now += 3599
    await gate.check(req("http://example.com/x"))
    assert len(origins.seen) == 1
    clock.now += 2
    await gate.check(req("http://example.com/x"))
    assert len(origins.seen) == 2


async def test_cache_control_max_age_shortens_the_ttl_but_never_lengthens_it():
    clock = FakeClock()
    origins = Origins(**{
        "short.example": httpx.Response(
            200, headers={"Cache-Control": "public, max-age=60"}, content=ROBOTS),
        "long.example": httpx.Response(
            200, headers={"Cache-Control": "max-age=999999"}, content=ROBOTS),
    })
    gate = make_gate(origins, clock, cache_ttl=3600)
    await gate.check(req("http://short.example/x"))
    await gate.check(req("http://long.example/x"))
    clock.now += 61
    await gate.check(req("http://short.example/x"))
    await gate.check(req("http://long.example/x"))
    assert [r.url.host for r in origins.seen] == ["short.example", "long.example", "short.example"]
    clock.now += 3600
    await gate.check(req("http://long.example/x"))
    assert len(origins.seen) == 4


@pytest.mark.parametrize(("header", "seconds"), [
    ("max-age=30", 30), ("public, max-age=\"45\"", 45), ("no-cache", 0), ("no-store", 0),
    ("private", None), (None, None), ("s-maxage=5", None),
])
def test_max_age(header, seconds):
    assert max_age(header) == seconds


async def test_the_last_good_copy_is_used_while_robots_txt_is_unreachable():
    clock = FakeClock()
    answers = [ok(ROBOTS), httpx.Response(500), ok(b"")]

    async def next_answer(request: httpx.Request) -> httpx.Response:
        return answers.pop(0)

    origins = Origins(**{"example.com": next_answer})
    gate = make_gate(origins, clock, cache_ttl=3600, error_ttl=60)
    first = await gate.check(req("http://example.com/private", "curl"))
    assert first.action == "block"
    clock.now += 3601
    stale = await gate.check(req("http://example.com/private", "curl"))
    assert stale.action == "block", "a 5xx must not erase the rules we had"
    assert stale.entry is not None and stale.entry.error == "HTTP 500"
    assert stale.entry.status == 200 and stale.entry.sha256 == first.entry.sha256  # type: ignore[union-attr]
    clock.now += 30
    await gate.check(req("http://example.com/private", "curl"))
    assert len(origins.seen) == 2, "no new fetch until error_ttl has passed"
    clock.now += 31
    fresh = await gate.check(req("http://example.com/private", "curl"))
    assert fresh.action == "forward" and len(origins.seen) == 3


async def test_a_client_that_goes_away_does_not_cancel_the_fetch_of_the_others():
    release = asyncio.Event()

    async def slow(request: httpx.Request) -> httpx.Response:
        await release.wait()
        return ok(ROBOTS)

    gate = make_gate(Origins(**{"example.com": slow}))
    first = asyncio.create_task(gate.check(req("http://example.com/private", "curl")))
    second = asyncio.create_task(gate.check(req("http://example.com/private", "curl")))
    await asyncio.sleep(0.01)
    first.cancel()
    release.set()
    assert (await second).action == "block"


async def test_identical_bodies_share_one_parsed_object():
    origins = Origins(**{"a.example": ok(ROBOTS),
                         "b.example": ok(ROBOTS)})
    gate = make_gate(origins)
    a = await gate.check(req("http://a.example/x"))
    b = await gate.check(req("http://b.example/x"))
    assert a.entry is not None and b.entry is not None
    assert a.entry.robots is b.entry.robots
    assert a.entry.body is b.entry.body and a.entry.sha256 is b.entry.sha256  # one copy kept


async def test_semantics_and_path_case_reach_the_parser():
    body = b"User-agent: *\nDisallow: /Private\n"
    gate = make_gate(Origins(**{"example.com": ok(body)}), case_sensitive=False)
    assert (await gate.check(req("http://example.com/PRIVATE/x"))).action == "block"
    classic = make_gate(Origins(**{"example.com": ok(b"User-agent: *\nDisallow: /a /b\n")}),
                        semantics="classic")
    assert (await classic.check(req("http://example.com/b/x"))).action == "block"


async def test_a_path_starting_with_two_slashes_is_a_path_not_a_host():
    gate = make_gate(Origins(**{EX: ok(b"User-agent: *\nDisallow: /page\nDisallow: /x/\n")}))
    # Read as a URL, "//h/page" would be host "h" and path "/page", and wrongly blocked.
    assert (await gate.check(req("http://example.com//h/page"))).action == "forward"
    # ...while what a server makes of "//x/y" (/x/y) is still decided too.
    assert (await gate.check(req("http://example.com//x/y"))).action == "block"


async def test_cached_origins_keep_bodies_and_get_their_rules_back_through_the_parse_cache():
    bodies = {f"s{i}.example": f"User-agent: *\nDisallow: /private-{i}\n".encode()
              for i in range(5)}
    origins = Origins(**{host: ok(body) for host, body in bodies.items()})
    gate = make_gate(origins, rules_size=2)
    for i in range(5):
        assert (await gate.check(req(f"http://s{i}.example/private-{i}"))).action == "block"
    # Only two files stay parsed, and only a thousand-odd origins stay whole: the others come
    # back from their bodies, with the same answers, and without fetching again.
    for i in range(5):
        verdict = await gate.check(req(f"http://s{i}.example/private-{i}"))
        assert verdict.action == "block" and verdict.decision.rule.line == 2  # type: ignore[union-attr]
        assert (await gate.check(req(f"http://s{i}.example/public"))).action == "forward"
    assert len(origins.seen) == 5


async def test_a_store_with_a_rules_cache_keeps_no_rules_in_its_entries():
    rules = RulesCache(10)
    store = MemoryStore(HOT_ORIGINS * 3, rules)
    fetched = await make_gate(Origins(**{"example.com": ok(ROBOTS)})).check(
        req("http://example.com/x"))
    entry = fetched.entry
    assert entry is not None and entry.robots is not None and entry.sha256 is not None
    for i in range(HOT_ORIGINS * 2):  # more than stay whole
        await store.put(f"o{i}", entry)
    assert len(rules) == 0, "nothing parsed: the entries put had their rules"
    first = await store.get("o0")
    assert first is not None and first.robots is not None and len(rules) == 1
    assert first.robots is rules.parse(entry.sha256, entry.body)
    assert first.robots.decide("x", "/private").allowed is False
