"""100,000 distinct origins: what the gate remembers stays bounded by the configured size.

No network: every robots.txt comes from httpx's MockTransport, each origin's body different (so
that the parse cache, keyed by body, gets a new entry for every one), with a Crawl-delay (so that
the pacer gets a schedule for every host). The clock stands still.
"""

import gc
import hashlib
import sys

import httpx
from support.clock import FakeClock
from support.gate import wire_gate

from robotsgate.decision.verdict import Request
from robotsgate.origin import Origin
from robotsgate.retrieval.fetch import Fetcher
from robotsgate.state.pacing import Pacer
from robotsgate.state.store import MemoryStore

ORIGINS = 100_000
SIZE = 100  # robots_cache_size: store, parse cache and pacer alike
WARM_UP = 5_000  # origins after which memory must stop growing


def body_for(host: str) -> bytes:
    return f"User-agent: *\nCrawl-delay: 1\nDisallow: /{host}\n".encode()


async def robots(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=body_for(request.url.host))


async def test_hundred_thousand_origins_keep_memory_bounded() -> None:
    clock = FakeClock(1_000_000.0)
    fetcher = Fetcher(timeout=2, transport=httpx.MockTransport(robots))
    wired = wire_gate(fetcher, clock, rules_size=SIZE, store_size=SIZE)
    gate, rules, store, pacer = wired.gate, wired.rules, wired.store, wired.pacer
    assert isinstance(store, MemoryStore) and isinstance(pacer, Pacer)
    first_rules = older_rules = None
    blocks_after_warm_up = 0

    for i in range(ORIGINS):
        host = f"site{i}.example"
        origin = Origin.of("http", host, 80)
        blocked = await gate.check(Request(origin, f"/{host}/page", "AnyBot/1.0"))
        allowed = await gate.check(Request(origin, "/elsewhere", "AnyBot/1.0"))
        assert (blocked.action, allowed.action) == ("block", "forward"), (i, blocked, allowed)
        assert blocked.entry is not None
        if i == 0:
            first_rules = blocked.entry.robots
        if i == ORIGINS - SIZE - 1:
            older_rules = blocked.entry.robots
        if i == WARM_UP:
            gc.collect()
            blocks_after_warm_up = sys.getallocatedblocks()
    gc.collect()
    grown = sys.getallocatedblocks() - blocks_after_warm_up

    assert wired.retrieval.fetches == ORIGINS  # each origin fetched once, from the store afterwards
    # 95,000 more origins, and not a block more memory for them (a few hundred for noise;
    # keeping one object per origin anywhere would be 95,000 and more).
    assert grown < 1_000, grown
    assert len(store) == SIZE
    assert len(pacer.pending()) == SIZE  # every host has its next start ahead: clock stands still

    # The parse cache holds the last SIZE bodies (in order, so none is pushed out by the others
    # here) and not one more.
    last = [f"site{i}.example" for i in range(ORIGINS - SIZE, ORIGINS)]
    for host in last:
        entry = await store.get(gate.cache_key(Origin.of("http", host, 80), "AnyBot/1.0"))
        assert entry is not None and entry.sha256 is not None
        assert rules.parse(entry.sha256, body_for(host)) is entry.robots  # cached
    older = f"site{ORIGINS - SIZE - 1}.example"
    body = body_for(older)
    assert older_rules is not None
    assert rules.parse(hashlib.sha256(body).hexdigest(), body) is not older_rules  # parsed anew
    # Forgotten by the store.
    assert await store.get(gate.cache_key(Origin.of("http", older, 80), "AnyBot/1.0")) is None

    # The first origin was forgotten: asking again fetches again, and gets new rules.
    again = await gate.check(Request(Origin.of("http", "site0.example", 80), "/x", "AnyBot/1.0"))
    assert wired.retrieval.fetches == ORIGINS + 1
    assert again.entry is not None and again.entry.robots is not first_rules
    await fetcher.aclose()
