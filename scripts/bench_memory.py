"""Memory per cached origin: the proxy's own structures, filled with 1,000 to 100,000 origins.

Builds the gate exactly as the proxy does (MemoryStore, parse cache, pacer) and fills it through
an in-memory HTTP transport with a realistic mix of robots.txt bodies: most a few lines, a few
with hundreds of rules, and many identical (hosting platforms serve one file to thousands of
sites). Prints the process's resident memory growth per origin against the target: at most the
robots.txt body's own size plus 2 KiB per origin.

    .venv/bin/python scripts/bench_memory.py [--origins 1000,10000,100000]
"""

import argparse
import asyncio
import gc
import random
import time
from pathlib import Path

import httpx

from robotsgate.decision.gate import Gate, GateConfig
from robotsgate.decision.verdict import Request
from robotsgate.origin import Origin
from robotsgate.retrieval.entries import Retrieval
from robotsgate.retrieval.fetch import Fetcher
from robotsgate.rules_cache import RulesCache
from robotsgate.state.pacing import Pacer
from robotsgate.state.store import MemoryStore

RULES = 4096  # robots_rules_cache's default

PLATFORM_FILES = [  # served verbatim by many sites each
    b"User-agent: *\nDisallow: /wp-admin/\nAllow: /wp-admin/admin-ajax.php\n",
    b"User-agent: *\nDisallow: /cart\nDisallow: /checkout\nDisallow: /account\n"
    b"Disallow: /*?sort_by*\nDisallow: /search\n",
    b"User-agent: *\nDisallow:\n",
    b"User-agent: *\nDisallow: /admin/\nDisallow: /tmp/\nCrawl-delay: 1\n",
    b"User-agent: Googlebot\nAllow: /\n\nUser-agent: *\nDisallow: /private/\n",
]


def body_for(index: int, rng: random.Random) -> bytes:
    roll = rng.random()
    if roll < 0.6:
        return PLATFORM_FILES[index % len(PLATFORM_FILES)]
    host = f"site{index}.example"
    if roll < 0.97:  # a few lines of its own
        return (f"User-agent: *\nDisallow: /private-{index}/\nDisallow: /*?session=\n"
                f"Sitemap: https://{host}/sitemap.xml\n").encode()
    rules = "".join(f"Disallow: /section{n}/{index}/*.php$\nAllow: /section{n}/public/\n"
                    for n in range(rng.randint(100, 300)))
    return f"User-agent: *\n{rules}\nUser-agent: BadBot\nDisallow: /\n".encode()


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", default="1000,10000,100000")
    args = parser.parse_args()
    steps = [int(n) for n in args.origins.split(",")]
    rng = random.Random(9309)
    bodies = [body_for(i, rng) for i in range(max(steps))]

    def answer(request: httpx.Request) -> httpx.Response:
        index = int(request.url.host.removeprefix("site").removesuffix(".example"))
        return httpx.Response(200, content=bodies[index])

    size = max(steps)
    # As the addon builds it, with its defaults: every origin remembered, robots_rules_cache
    # distinct files kept parsed, the others parsed again from their body when needed.
    rules = RulesCache(RULES)
    store = MemoryStore(size, rules)
    retrieval = Retrieval(Fetcher(timeout=5, transport=httpx.MockTransport(answer)), rules,
                          store, time.time)
    gate = Gate(GateConfig(), store, retrieval, time.time,
                Pacer(time.monotonic, max_wait=60, max_hosts=size))

    async def visit(index: int) -> None:
        await gate.check(Request(Origin.of("http", f"site{index}.example", None), "/page",
                                 "ExampleBot/1.0"))

    await visit(0)  # imports, first parse and the like are not per origin
    gc.collect()
    base = rss()
    filled = 1
    print(f"{'origins':>8} {'RSS growth':>12} {'per origin':>11} {'body/origin':>12} "
          f"{'target/origin':>14} {'distinct bodies':>16}")
    for step in steps:
        for index in range(filled, step):
            await visit(index)
        filled = step
        gc.collect()
        growth = rss() - base
        body_bytes = sum(len(b) for b in bodies[:step])
        target = body_bytes + 2048 * step
        distinct = len({b for b in bodies[:step]})
        print(f"{step:>8,} {growth / 2**20:>10.1f} MiB {growth / step:>9.0f} B "
              f"{body_bytes / step:>10.0f} B {target / step:>12.0f} B {distinct:>16,}"
              f"   {'met' if growth <= target else 'NOT met'}")


if __name__ == "__main__":
    asyncio.run(main())
