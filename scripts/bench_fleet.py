"""Does fleet mode slow the proxy down? Requests/s with the Redis store against the in-memory one.

Two real `mitmdump -s addon.py` run side by side, identical but for `robots_redis`: one keeps its
state in memory, the other in a Redis of its own (a private redis-server on a free port, so
that its command counts are this benchmark's alone). A fast local origin (a separate process)
answers a robots.txt with no delay, cached after the warm-up. Rounds alternate between the two
proxies, each round a fixed number of requests from concurrent keep-alive clients (httpx async),
so that both see the same machine. Target: Redis / memory >= 0.90.

    .venv/bin/python scripts/bench_fleet.py [--rounds 6] [--requests 3000] [--concurrency 32]
    .venv/bin/python scripts/bench_fleet.py --faults
    .venv/bin/python scripts/bench_fleet.py --spacing
    .venv/bin/python scripts/bench_fleet.py --workers

--faults instead does to a private redis-server what an operator's bad day does, with two real
proxies (fallback closed), and prints what each fault cost: a restart (requests refused after
it, outages declared, time until the fleet answers again), a proxy killed -9 while it fetched a
robots.txt the others wait for (time until they are answered), and Redis paused (SIGSTOP) for
5 s (locks left behind, time until an origin asked for during the pause is answered); then, on
a Redis Cluster of three primaries and three replicas of its own (cluster-node-timeout 1 s), the
primary that holds an origin's schedule killed -9 (time until each proxy answers again, what it
answered meanwhile, the shortest gap at the origin against its Crawl-delay).

--spacing runs two proxies on one Redis with other traffic flowing through both (a process of
its own, as fast as they answer) and sends bursts of paced requests to a site with
`Crawl-delay: 1` through both: the shortest gap at the origin, and how many fell under 1 s.

--workers measures several proxies on one machine as deploy/ ships them: HAProxy
(deploy/haproxy/robotsgate.cfg) in front of one worker, then of two, all on one Redis, in
alternating rounds of the same load: requests/s of each, and their ratio.

Needs redis-server (Debian: apt-get install redis-server), and haproxy for --workers. Besides
requests/s it prints the requests per CPU-second of each mitmdump (less sensitive to the
client sharing the machine) and how many Redis round trips the Redis rounds cost.
"""

import argparse
import asyncio
import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import redis
import redis.asyncio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.haproxy import HAProxy  # noqa: E402
from tests.e2e.load import OtherTraffic  # noqa: E402  (needs the repository on the path)
from tests.e2e.machine import free_port  # noqa: E402
from tests.e2e.origins import Origin  # noqa: E402
from tests.e2e.proxy import Proxy  # noqa: E402
from tests.e2e.redis_cluster import Cluster  # noqa: E402
from tests.e2e.redis_server import RedisServer  # noqa: E402

# The origin: a minimal keep-alive HTTP/1.1 server on asyncio, in a process of its own.
ORIGIN = r"""
import asyncio, sys
ROBOTS = b"User-agent: *\nDisallow: /private\n"
def reply(body):
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body), body)
DELAY = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0  # before answering robots.txt
async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1]
            if path.endswith(b"/robots.txt") and DELAY:
                await asyncio.sleep(DELAY)
            writer.write(reply(ROBOTS if path.endswith(b"/robots.txt") else b"ok\n"))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()
async def main():
    server = await asyncio.start_server(serve, sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1",
                                        int(sys.argv[1]), backlog=1024)
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


def start_origin(host: str = "127.0.0.1", robots_delay: float = 0.0
                 ) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", ORIGIN, str(port), host, str(robots_delay)])
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return process, f"http://{host}:{port}"
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


async def statuses(proxy_url: str, urls: list[str]) -> list[int]:
    """Every URL at once through the proxy: their statuses (0: no answer)."""
    async with httpx.AsyncClient(proxy=proxy_url, trust_env=False, timeout=60,
                                 limits=httpx.Limits(max_connections=len(urls))) as client:
        answers = await asyncio.gather(*(client.get(url) for url in urls),
                                       return_exceptions=True)
    return [a.status_code if isinstance(a, httpx.Response) else 0 for a in answers]


def until_answered(proxy: Proxy, url: str, timeout: float = 60.0) -> float:
    """Seconds until a request through the proxy is answered 200."""
    start = time.monotonic()
    while asyncio.run(statuses(proxy.url, [url])) != [200]:
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"no 200 for {url} after {timeout} s")
        time.sleep(0.05)
    return time.monotonic() - start


def faults() -> int:
    origins: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory() as workdir:
            work = Path(workdir)
            server = RedisServer(work / "redis")

            def proxies(name: str, **options: object) -> list[Proxy]:
                return [Proxy(work / f"{name}{i}", {
                    "flow_detail": 0, "robots_audit_log": str(work / f"{name}{i}.jsonl"),
                    "robots_redis": server.url, "robots_redis_prefix": f"{name}:", **options})
                    for i in range(2)]

            def origin(host: str = "127.0.0.1", robots_delay: float = 0.0) -> str:
                process, url = start_origin(host, robots_delay)
                origins.append(process)
                return url

            try:
                # A restart (empty), the pools full of connections it closes.
                fleet = proxies("restart")
                warm = origin()
                for p in fleet:
                    asyncio.run(statuses(p.url, [f"{warm}/w/{i}" for i in range(100)]))
                server.stop()
                server.start()
                started = time.monotonic()
                back = max(until_answered(p, f"{warm}/back") for p in fleet)
                refused = total = 0
                for b in range(6):  # each burst to an origin new to the fleet
                    site = origin(f"127.0.0.{21 + b}")
                    for p in fleet:
                        got = asyncio.run(statuses(p.url, [f"{site}/b/{i}" for i in range(100)]))
                        refused += sum(s != 200 for s in got)
                        total += len(got)
                outages = [p.output().count(" is unreachable (") for p in fleet]
                print(f"restart: answering again {back:.2f} s after Redis was; then 6 bursts "
                      f"of 100 per proxy over {time.monotonic() - started - back:.1f} s: "
                      f"{refused} of {total} requests refused; outages declared per proxy "
                      f"{outages}")
                for p in fleet:
                    p.stop()

                # The proxy fetching a robots.txt everyone waits for, killed -9.
                fleet = proxies("holder")
                slow = origin("127.0.0.31", robots_delay=2.0)
                holder, other = fleet
                assert holder.process is not None
                first = subprocess.Popen([sys.executable, "-c",
                                          "import httpx,sys; httpx.get(sys.argv[2], proxy="
                                          "sys.argv[1], trust_env=False, timeout=30)",
                                          holder.url, f"{slow}/first"],
                                         stderr=subprocess.DEVNULL)
                client = redis.Redis.from_url(server.url)
                while not client.keys("holder:fetch:*"):
                    time.sleep(0.01)
                lease = client.pttl(client.keys("holder:fetch:*")[0])
                client.close()
                holder.process.kill()
                killed = time.monotonic()
                got = asyncio.run(statuses(other.url, [f"{slow}/w/{i}" for i in range(40)]))
                print(f"lock holder killed -9 mid-fetch (lease {lease / 1000:.1f} s, "
                      f"robots_fetch_timeout 10, robots.txt taking 2 s): the 40 waiting "
                      f"requests answered {time.monotonic() - killed:.2f} s after the kill, "
                      f"{got.count(200)} of 40 with 200")
                first.kill()
                other.stop()

                # Redis paused for 5 s (SIGSTOP), requests to a new origin meanwhile.
                fleet = proxies("pause")
                paused_site = origin("127.0.0.41")
                for p in fleet:
                    asyncio.run(statuses(p.url, [f"{warm}/w/{i}" for i in range(20)]))
                assert server.process is not None
                server.pause()
                during = asyncio.run(statuses(fleet[0].url, [f"{paused_site}/during"]))
                time.sleep(5.0)
                server.resume()
                resumed = time.monotonic()
                back = until_answered(fleet[1], f"{paused_site}/after")
                client = redis.Redis.from_url(server.url)
                orphans = client.keys("pause:fetch:*")
                client.close()
                print(f"Redis paused 5 s: during it {during}; the origin first asked for "
                      f"during the pause answered {back:.2f} s after Redis resumed "
                      f"({time.monotonic() - resumed:.2f}); locks left behind: {len(orphans)}")
                for p in fleet:
                    p.stop()

                # Redis's memory lost (FLUSHDB) while paced requests are queued.
                fleet = proxies("flush", robots_max_wait=60, robots_pacing_margin_ms=50)
                site = Origin("127.0.0.51")
                try:
                    site.set_robots("User-agent: *\nCrawl-delay: 1\n")
                    asyncio.run(statuses(fleet[0].url, [site.url("/warm")]))

                    async def wave(name: str, count: int) -> list[int]:
                        return [s for n, p in enumerate(fleet) for s in await statuses(
                            p.url, [site.url(f"/{name}/{n}/{i}") for i in range(count)])]

                    async def flushed() -> tuple[list[int], float]:
                        queued = asyncio.ensure_future(wave("queued", 3))
                        while not any(s.path.startswith("/queued/") for s in site.seen):
                            await asyncio.sleep(0.01)
                        flush = redis.asyncio.Redis.from_url(server.url)
                        await flush.flushdb()
                        await flush.aclose()
                        flushed_at = time.monotonic()
                        later = await wave("later", 2)
                        return [*await queued, *later], flushed_at

                    got, flushed_at = asyncio.run(flushed())
                    arrivals = sorted(s.arrived for s in site.seen
                                      if not s.path.startswith("/robots.txt"))
                    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
                    after = min(a for a in arrivals if a > flushed_at)
                    print(f"FLUSHDB with paced requests queued (Crawl-delay 1): "
                          f"{got.count(200)} of {len(got)} answered 200; shortest gap at the "
                          f"origin {min(gaps):.3f} s; first arrival after the flush "
                          f"{after - flushed_at:.2f} s after it")
                finally:
                    site.stop()
                    for p in fleet:
                        p.stop()
                cluster_failover(work)
            finally:
                server.stop()
    finally:
        for process in origins:
            process.terminate()
            process.wait(timeout=10)
    return 0


def cluster_failover(work: Path) -> None:
    """A cluster's primary killed -9 under two proxies (fallback closed) sending paced requests."""
    from robotsgate.state.redis_pacing import TAGS, bucket_of

    cluster = Cluster(work / "cluster", node_timeout=1000)
    site = Origin("127.0.0.61")
    fleet = [Proxy(work / f"failover{i}", {
        "flow_detail": 0, "robots_audit_log": str(work / f"failover{i}.jsonl"),
        "robots_redis": cluster.url, "robots_redis_prefix": "failover:",
        "robots_max_wait": 60, "robots_pacing_margin_ms": 50}) for i in range(2)]
    try:
        site.set_robots("User-agent: *\nCrawl-delay: 1\n")
        for n, p in enumerate(fleet):
            asyncio.run(statuses(p.url, [site.url(f"/warm/{n}")]))
        host = "127.0.0.61"
        cluster.kill(cluster.primary_of(f"failover:pace:{{{TAGS[bucket_of(host)]}}}:{host}"))
        killed = time.monotonic()
        answered: dict[int, list[int]] = {n: [] for n in range(len(fleet))}
        back: dict[int, float] = {}
        i = 0
        while len(back) < len(fleet) and time.monotonic() - killed < 60:
            for n, p in enumerate(fleet):
                if n in back:
                    continue
                [status] = asyncio.run(statuses(p.url, [site.url(f"/during/{n}/{i}")]))
                answered[n].append(status)
                if status == 200 and any(s != 200 for s in answered[n]):
                    back[n] = time.monotonic() - killed
            i += 1
            time.sleep(0.05)
        arrivals = sorted(s.arrived for s in site.seen if not s.path.startswith("/robots.txt"))
        gaps = [b - a for a, b in itertools.pairwise(arrivals)]
        meanwhile = {n: {s: got.count(s) for s in sorted(set(got))}
                     for n, got in answered.items()}
        leaked = sum(site.saw(f"/during/{n}/{j}") for n, got in answered.items()
                     for j, status in enumerate(got) if status != 200)
        print(f"Redis Cluster primary killed -9 (node timeout 1 s): each proxy answered 200 "
              f"again after {', '.join(f'{t:.2f}' for t in back.values())} s; meanwhile "
              f"{meanwhile} (statuses: count); refused yet forwarded: {leaked}; shortest gap "
              f"at the origin {min(gaps):.3f} s (Crawl-delay 1)")
    finally:
        site.stop()
        for p in fleet:
            p.stop()
        cluster.stop()


def spacing(bursts: int = 5, per_proxy: int = 2) -> int:
    """Two proxies, other traffic flowing through both, and bursts of paced requests: the gaps at
    the origin against its Crawl-delay (1 s, the default 10 ms margin)."""
    with tempfile.TemporaryDirectory() as workdir:
        work = Path(workdir)
        server = RedisServer(work / "redis")
        site = Origin("127.0.0.61")
        fleet = [Proxy(work / f"p{i}", {
            "flow_detail": 0, "robots_audit_log": str(work / f"p{i}.jsonl"),
            "robots_redis": server.url, "robots_max_wait": 120}) for i in range(2)]
        try:
            site.set_robots("User-agent: *\nCrawl-delay: 1\n")
            asyncio.run(statuses(fleet[0].url, [site.url("/warm")]))

            async def burst(b: int) -> list[int]:
                got = await asyncio.gather(*(statuses(p.url, [
                    site.url(f"/paced/{b}/{n}/{i}") for i in range(per_proxy)])
                    for n, p in enumerate(fleet)))
                return [s for answers in got for s in answers]

            with OtherTraffic([p.url for p in fleet]) as load:
                answered = [s for b in range(bursts) for s in asyncio.run(burst(b))]
            arrivals = sorted(s.arrived for s in site.seen if s.path.startswith("/paced/"))
            gaps = [b - a for a, b in itertools.pairwise(arrivals)]
            print(f"spacing under load: 2 proxies, other traffic {load.rate:.0f} req/s, "
                  f"{bursts} bursts of {per_proxy} paced requests per proxy (Crawl-delay 1, "
                  f"margin 10 ms): {answered.count(200)} of {len(answered)} answered 200; "
                  f"shortest gap at the origin {min(gaps):.3f} s, "
                  f"{sum(g < 1.0 for g in gaps)} of {len(gaps)} gaps under 1 s")
            return 0 if min(gaps) >= 1.0 else 1
        finally:
            for p in fleet:
                p.stop()
            site.stop()
            server.stop()


def _wrk(proxy_url: str, url: str, connections: int, seconds: int, script: Path) -> float:
    """Requests/s wrk gets through a proxy (absolute-form targets), or raises."""
    script.write_text(f'wrk.path = "{url}"\nwrk.headers["Host"] = "{url.split("/")[2]}"\n')
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(script),
                          proxy_url], capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out or "Socket errors" in out:
        raise SystemExit(f"wrk saw errors:\n{out}")
    return float(out.split("Requests/sec:")[1].split()[0])


def workers(args: argparse.Namespace) -> int:
    """Requests/s through HAProxy to one worker and to two, alternating rounds. The load is
    wrk's (a C client that costs little of the machine) when it is installed, else httpx's."""
    port = free_port()
    origin = subprocess.Popen([sys.executable, "-c", ORIGIN, str(port)])
    origin_url = f"http://127.0.0.1:{port}"
    use_wrk = shutil.which("wrk") is not None
    with tempfile.TemporaryDirectory() as workdir:
        work = Path(workdir)
        server = RedisServer(work / "redis")
        quiet = {"flow_detail": 0, "robots_redis": server.url}
        pool: list[Proxy] = []
        fronts: dict[str, HAProxy] = {}
        rates: dict[str, list[float]] = {"1 worker": [], "2 workers": []}
        failed = 0
        try:
            pool += [Proxy(work / f"worker{i}", {**quiet, "robots_audit_log":
                                                 str(work / "a.jsonl")}) for i in range(2)]
            fronts["1 worker"] = HAProxy(work / "one", [pool[0].port])
            fronts["2 workers"] = HAProxy(work / "two", [p.port for p in pool])
            for front in fronts.values():  # robots.txt cached, connections warm
                asyncio.run(load(front.url, origin_url, 500, args.concurrency))
            for r in range(args.rounds):
                for name in list(fronts) if r % 2 == 0 else list(reversed(fronts)):
                    if use_wrk:
                        rate = _wrk(fronts[name].url, f"{origin_url}/page/1", args.concurrency,
                                    5, work / "target.lua")
                    else:
                        start = time.perf_counter()
                        failed += asyncio.run(load(fronts[name].url, origin_url, args.requests,
                                                   args.concurrency))
                        rate = args.requests / (time.perf_counter() - start)
                    rates[name].append(rate)
                    print(f"  round {r + 1} {name:9} {rate:8.0f} req/s", flush=True)
        finally:
            for front in fronts.values():
                front.stop()
            for proxy in pool:
                proxy.stop()
            server.stop()
            origin.terminate()
            origin.wait(timeout=10)
    one, two = (sum(rates[name]) / len(rates[name]) for name in rates)
    client = "wrk, 5 s a round" if use_wrk else f"httpx, {args.requests} requests a round"
    print(f"{args.rounds} rounds, {args.concurrency} concurrent keep-alive clients ({client}) "
          f"through HAProxy (leastconn), cached robots.txt, one Redis; {os.cpu_count()} CPUs "
          f"for everything")
    print(f"  1 worker  {one:8.0f} req/s\n  2 workers {two:8.0f} req/s")
    print(f"  ratio     {two / one:.2f}")
    return 0 if not failed else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=3000, help="per round and proxy")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--faults", action="store_true", help="measure what faults cost")
    parser.add_argument("--spacing", action="store_true",
                        help="measure paced requests' gaps at the origin under load")
    parser.add_argument("--workers", action="store_true",
                        help="one worker against two behind HAProxy, on one Redis")
    args = parser.parse_args()
    if args.faults:
        return faults()
    if args.spacing:
        return spacing()
    if args.workers:
        return workers(args)

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
