"""Does fleet mode slow the proxy down? Requests/s with the Redis store against the in-memory one.

Two real `mitmdump -s addon.py` run side by side, identical but for `robots_redis`: one keeps its
state in memory, the other in a Redis of its own (a private redis-server on a free port, so
that its command counts are this benchmark's alone). A fast local origin (a separate process)
answers a robots.txt with no delay, cached after the warm-up. Rounds alternate between the two
proxies, each round a fixed number of requests from concurrent keep-alive clients (httpx async),
so that both see the same machine. Target: Redis / memory >= 0.90.

    .venv/bin/python scripts/bench_fleet.py [--rounds 6] [--requests 3000] [--concurrency 32]

Needs redis-server (Debian: apt-get install redis-server). Besides requests/s it prints the
requests per CPU-second of each mitmdump (less sensitive to the client sharing the machine)
and how many Redis round trips the Redis rounds cost.
"""

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.machine import free_port  # noqa: E402  (needs the repository on the path)
from tests.e2e.proxy import Proxy  # noqa: E402
from tests.e2e.redis_server import RedisServer  # noqa: E402

# The origin: a minimal keep-alive HTTP/1.1 server on asyncio, in a process of its own.
ORIGIN = r"""
import asyncio, sys
ROBOTS = b"User-agent: *\nDisallow: /private\n"
def reply(body):
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body), body)
async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1]
            writer.write(reply(ROBOTS if path.endswith(b"/robots.txt") else b"ok\n"))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", int(sys.argv[1]), backlog=1024)
    async with server:
        await server.serve_forever()
asyncio.run(main())
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load(proxy_url: str, origin_url: str, requests: int, concurrency: int) -> int:
    """Send `requests` GETs through the proxy, `concurrency` at a time; returns failures."""
    failures = 0
    remaining = requests
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(proxy=proxy_url, trust_env=False, timeout=30,
                                 limits=limits) as client:
        async def worker(n: int) -> None:
            nonlocal failures, remaining
            while remaining > 0:
                remaining -= 1
                response = await client.get(f"{origin_url}/page/{n}")
                if response.status_code != 200:
                    failures += 1

        await asyncio.gather(*(worker(n) for n in range(concurrency)))
    return failures


# The commands robotsgate sends itself (the others run inside its Lua scripts): round trips.
ROUND_TRIPS = ("evalsha", "eval", "hgetall", "hdel", "exec", "set", "exists", "script|load")


def redis_commands(url: str) -> int:
    client = redis.Redis.from_url(url)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ROUND_TRIPS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=3000, help="per round and proxy")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()

    port = free_port()
    origin = subprocess.Popen([sys.executable, "-c", ORIGIN, str(port)])
    origin_url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as workdir:
        work = Path(workdir)
        server = RedisServer(work / "redis")
        quiet = {"flow_detail": 0, "robots_audit_log": str(work / "audit.jsonl")}
        proxies = {
            "memory": Proxy(work / "memory", quiet),
            "redis": Proxy(work / "redis-proxy", {**quiet, "robots_redis": server.url}),
        }
        totals = {name: [0.0, 0.0, 0, 0] for name in proxies}  # seconds, cpu, requests, failed
        redis_calls = 0
        try:
            for proxy in proxies.values():  # robots.txt fetched and cached, connections warm
                asyncio.run(load(proxy.url, origin_url, 500, args.concurrency))
            for r in range(args.rounds):
                order = list(proxies) if r % 2 == 0 else list(reversed(proxies))
                for name in order:
                    proxy = proxies[name]
                    assert proxy.process is not None
                    before = redis_commands(server.url)
                    cpu = cpu_seconds(proxy.process.pid)
                    start = time.perf_counter()
                    failed = asyncio.run(load(proxy.url, origin_url, args.requests,
                                              args.concurrency))
                    elapsed = time.perf_counter() - start
                    total = totals[name]
                    total[0] += elapsed
                    total[1] += cpu_seconds(proxy.process.pid) - cpu
                    total[2] += args.requests
                    total[3] += failed
                    if name == "redis":
                        redis_calls += redis_commands(server.url) - before
                    print(f"  round {r + 1} {name:6} {args.requests / elapsed:8.0f} req/s",
                          flush=True)
        finally:
            for proxy in proxies.values():
                proxy.stop()
            server.stop()
            origin.terminate()
            origin.wait(timeout=10)

    rate = {name: t[2] / t[0] for name, t in totals.items()}
    per_cpu = {name: t[2] / t[1] if t[1] else float("nan") for name, t in totals.items()}
    ratio = rate["redis"] / rate["memory"]
    print(f"{args.rounds} rounds x {args.requests} requests per proxy, {args.concurrency} "
          f"concurrent keep-alive clients, cached robots.txt, no delay")
    for name in proxies:
        print(f"  {name:6}  {rate[name]:8.0f} req/s   {per_cpu[name]:8.0f} req per proxy "
              f"CPU-second   failed {totals[name][3]}")
    print(f"  Redis round trips during the Redis rounds: {redis_calls} "
          f"({redis_calls / totals['redis'][2]:.4f} per request)")
    print(f"  ratio redis/memory  {ratio:.3f} req/s, "
          f"{per_cpu['redis'] / per_cpu['memory']:.3f} per CPU-second; "
          f"target >= 0.90: {'met' if ratio >= 0.90 else 'MISSED'}")
    return 0 if not any(t[3] for t in totals.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
