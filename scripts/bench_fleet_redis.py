"""The fleet's ceiling: paced decisions per second per Redis core, on one Redis and on a cluster.

Drives the fleet's Redis program directly, without mitmproxy: K simulated proxies (each a
`robotsgate.state.fleet.Fleet` with its own connections and its notice channel, and the
politeness driver on top, as robotsgate.config.assemble builds them), H hosts, each with a
Crawl-delay from a mix. Every paced request goes as the proxy sends it: its slot reserved when
it is decided (the gate's call), its turn as it leaves, and its departure (on a connection
already open, as a crawler's keep-alive connection to a site is; `--new-connections` for one
opened per request).

Two arrival patterns, run one after the other:

- `frontier`: each host is asked again once its delay has passed (a crawler whose frontier
  schedules hosts, or many hosts each asked now and then): a request's slot is now;
- `eager`: each host is asked two requests at a time (a bot faster than the site allows): the
  second waits for its slot.

Redis's own CPU (INFO cpu: used_cpu_user + used_cpu_sys of the server, summed over every
primary) is read before and after each pattern, with the EVALSHA calls (INFO commandstats):
Redis CPU per paced decision, calls per decision, and so decisions per second per Redis core
(one over the CPU per decision). The client side (Python, on the same machine) is not what is
measured: Redis's CPU is, so the figure holds whatever the load generator manages.

    .venv/bin/python scripts/bench_fleet_redis.py [--proxies 8] [--hosts 2000] [--seconds 20]
    .venv/bin/python scripts/bench_fleet_redis.py --cluster 3
    .venv/bin/python scripts/bench_fleet_redis.py --source /tmp/old   # another revision's code

`--cluster N` starts a Redis Cluster of N primaries (no replicas) of its own; otherwise a
private redis-server. `--source DIR` imports robotsgate from DIR (a worktree of another
revision: `git worktree add /tmp/old REV`), to compare revisions on the same machine, in the
same hour. Needs redis-server and redis-cli.

The Crawl-delay mix (`--mix DELAY:WEIGHT,...`) sets how often each host is asked; what a
decision costs in Redis depends on whether it waits for its slot (the pattern), not on the
delay's value.
"""

import argparse
import asyncio
import importlib
import inspect
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _paths(source: Path | None) -> None:
    sys.path.insert(0, str(REPO))
    if source is not None:
        sys.path.insert(0, str(source))


# Crawl-delay values as sites write them, with a weight each: whole seconds, the small values
# most common (see the module's docstring and docs/operating/scaling.md).
MIX = "1:30,2:10,3:5,5:20,10:25,20:5,30:3,60:2"


@dataclass
class Totals:
    decisions: int = 0
    cpu: float = 0.0
    calls: int = 0


def parse_mix(text: str) -> list[tuple[float, float]]:
    mix = []
    for part in text.split(","):
        delay, _, weight = part.partition(":")
        mix.append((float(delay), float(weight or 1)))
    return mix


def start_cluster(work: Path, primaries: int) -> tuple[str, list[str], list[Any]]:
    from tests.e2e.redis_cluster import cluster_port
    from tests.e2e.redis_server import RedisServer

    nodes = [RedisServer(work / f"node{n}", port=cluster_port(), options=(
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"))
        for n in range(primaries)]
    created = subprocess.run(
        ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{n.port}" for n in nodes),
         "--cluster-replicas", "0", "--cluster-yes"], capture_output=True, text=True,
        timeout=60)
    if created.returncode != 0:
        raise SystemExit(f"redis-cli --cluster create: {created.stdout}{created.stderr}")
    deadline = time.monotonic() + 30
    while True:
        states = [subprocess.run(["redis-cli", "-p", str(n.port), "cluster", "info"],
                                 capture_output=True, text=True).stdout for n in nodes]
        if all("cluster_state:ok" in s for s in states):
            break
        if time.monotonic() > deadline:
            raise SystemExit("the cluster never became ok")
        time.sleep(0.2)
    urls = [n.url.removesuffix("/0") for n in nodes]
    return f"redis+cluster://127.0.0.1:{nodes[0].port}", urls, nodes


async def server_stats(urls: list[str]) -> tuple[float, int, list[float]]:
    """(CPU seconds, EVALSHA calls) summed over the primaries, and each primary's CPU."""
    from redis.asyncio import Redis

    cpu, calls, each = 0.0, 0, []
    for url in urls:
        node = Redis.from_url(url)
        try:
            info = await node.info()
            stats = await node.info("commandstats")
        finally:
            await node.aclose()
        seconds = float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
        cpu += seconds
        each.append(seconds)
        calls += int(stats.get("cmdstat_evalsha", {}).get("calls", 0))
    return cpu, calls, each


async def run(args: argparse.Namespace, url: str, nodes: list[str]) -> None:
    from robotsgate.rules_cache import RulesCache
    from robotsgate.state.departures import Departures
    from robotsgate.state.driver import Politeness
    from robotsgate.state.fleet import Fleet
    from robotsgate.state.pacing import Pacer, Slot
    from robotsgate.state.store import MemoryStore

    # What this revision's driver takes: `at_once` (said as the proxy says it) only where known.
    at_once_known = "at_once" in inspect.signature(Politeness.turn).parameters
    rules = RulesCache(10)
    prefix = f"bench:{random.getrandbits(32):x}:"
    fleets = [Fleet(url, prefix=prefix, fallback="closed", clock=time.time, rules=rules,
                    local_store=MemoryStore(100, rules),
                    local_pacer=Pacer(time.monotonic, max_wait=600, max_hosts=args.hosts),
                    max_origins=args.hosts * 2, max_wait=600, lock_ttl=10.0)
              for _ in range(args.proxies)]
    proxies = []
    for fleet in fleets:
        fleet.start()
        departures = Departures(time.monotonic, asyncio.sleep, max_hosts=args.hosts * 2,
                                shared=fleet.departures)
        proxies.append(Politeness(fleet.pacer, departures, monotonic=time.monotonic,
                                  sleep=asyncio.sleep))
    for fleet in fleets:
        while not fleet.shared_pacer.is_listening:
            await asyncio.sleep(0.05)
    await asyncio.sleep(2.5)  # a new fleet regroups first (2 s): past that
    mix = parse_mix(args.mix)
    rng = random.Random(1)
    delays = rng.choices([d for d, _ in mix], [w for _, w in mix], k=args.hosts)
    hosts = [f"h{i}.bench.example" for i in range(args.hosts)]
    flows = iter(range(10**12))
    new_connections = args.new_connections

    async def request(proxy: Politeness, host: str, interval: float) -> bool:
        flow = f"f{next(flows)}"
        slot = await proxy.pacing.reserve(host, interval)
        if not isinstance(slot, Slot):
            return False
        options: dict[str, Any] = {"tls": False, "client": "bot"}
        if at_once_known:
            options["at_once"] = lambda: not new_connections
        await proxy.turn(host, time.monotonic() + slot.wait, interval, flow, **options)
        if new_connections:
            proxy.departures.connected(host, tls=False, client="bot")
        else:
            proxy.settled(host, flow)
        return True

    async def pattern(name: str) -> None:
        done = 0
        stop = 0.0

        async def host_loop(i: int) -> None:
            nonlocal done
            host, interval = hosts[i], delays[i] * args.scale
            # Hosts start spread out, each at some point of its own interval.
            await asyncio.sleep(min(rng.random() * interval, stop - time.monotonic()))
            n = i
            while time.monotonic() < stop:
                n += 1
                if name == "frontier":
                    started = time.monotonic()
                    ok = await request(proxies[n % len(proxies)], host, interval)
                    done += ok
                    await asyncio.sleep(max(0.0, min(started + interval + 0.05,
                                                     stop) - time.monotonic()))
                else:
                    answers = await asyncio.gather(
                        request(proxies[n % len(proxies)], host, interval),
                        request(proxies[(n + 1) % len(proxies)], host, interval))
                    done += sum(answers)  # (read after the await: no update lost)

        # What Redis spends with the fleet connected and nothing asked (its own timers, the
        # proxies' watchers), over as long: taken off, so that a slow run is not charged it.
        idle0 = (await server_stats(nodes))[0]
        await asyncio.sleep(args.seconds)
        cpu0, calls0, each0 = await server_stats(nodes)
        idle = cpu0 - idle0
        stop = time.monotonic() + args.seconds
        began = time.monotonic()
        await asyncio.gather(*(host_loop(i) for i in range(args.hosts)))
        await asyncio.sleep(0.5)  # the departures reported in the background
        took = time.monotonic() - began
        cpu1, calls1, each1 = await server_stats(nodes)
        cpu, calls = cpu1 - cpu0 - idle * took / args.seconds, calls1 - calls0
        spread = [b - a for a, b in zip(each0, each1, strict=True)]
        if args.json:
            print(json.dumps({"pattern": name, "decisions": done, "seconds": took,
                              "calls": calls, "cpu": cpu, "nodes": spread}), flush=True)
            return
        print(f"{name:8} {done:7d} decisions in {took:5.1f} s ({done / took:6.0f}/s), "
              f"{calls / max(done, 1):.2f} EVALSHA each, Redis CPU {cpu * 1e6 / max(done, 1):6.1f}"
              f" us each -> {done / cpu if cpu else float('nan'):8.0f} paced decisions/s per "
              f"Redis core" + (f"; per node: {', '.join(f'{s:.2f}' for s in spread)} s CPU"
                               if len(nodes) > 1 else ""))

    try:
        for name in args.patterns.split(","):
            await pattern(name)
    finally:
        for fleet in fleets:
            await fleet.aclose()


def against(args: argparse.Namespace) -> int:
    """This revision and another in alternating rounds (each a process of its own): per pattern,
    the medians of the rounds, and this one's Redis CPU per decision over the other's."""
    own = [a for a in sys.argv[1:] if a != "--json"]
    drop = {"--against", "--rounds", "--source"}
    passed = []
    skip = False
    for a in own:
        if skip:
            skip = False
            continue
        if a in drop:
            skip = True
            continue
        if a.split("=", 1)[0] in drop:
            continue
        passed.append(a)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {"this": {}, "that": {}}
    for round_ in range(args.rounds):
        order = [("this", REPO), ("that", args.against)]
        for label, source in order if round_ % 2 == 0 else order[::-1]:
            out = subprocess.run(
                [sys.executable, __file__, *passed, "--source", str(source), "--json"],
                capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                if line.startswith("{"):
                    row = json.loads(line)
                    results[label].setdefault(row["pattern"], []).append(row)
    print(f"{args.proxies} proxies, {args.hosts} hosts, mix {args.mix} (x{args.scale}), "
          f"{'cluster of ' + str(args.cluster) if args.cluster else 'one Redis'}, "
          f"{args.rounds} rounds of each; this: {REPO}, that: {args.against}")
    for pattern in results["this"]:
        line = []
        for label in ("this", "that"):
            got = results[label].get(pattern, [])
            per = statistics.median(r["cpu"] / max(r["decisions"], 1) for r in got)
            calls = statistics.median(r["calls"] / max(r["decisions"], 1) for r in got)
            rate = statistics.median(r["decisions"] / r["seconds"] for r in got)
            line.append((per, calls, rate))
            print(f"{pattern:8} {label}: {rate:5.0f} decisions/s, {calls:.2f} EVALSHA each, "
                  f"Redis CPU {per * 1e6:6.1f} us each -> {1 / per:7.0f} per Redis core")
        print(f"{pattern:8} Redis CPU per decision, this / that: {line[0][0] / line[1][0]:.2f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proxies", type=int, default=8, help="simulated proxies (K)")
    parser.add_argument("--hosts", type=int, default=2000, help="hosts (H)")
    parser.add_argument("--seconds", type=float, default=20.0, help="per pattern")
    parser.add_argument("--mix", default=MIX, help="Crawl-delay mix, DELAY:WEIGHT,...")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every delay (a shorter run asks hosts more often)")
    parser.add_argument("--patterns", default="frontier,eager")
    parser.add_argument("--cluster", type=int, default=0, help="primaries of a local cluster")
    parser.add_argument("--redis", help="an existing Redis (its CPU is shared with its users)")
    parser.add_argument("--new-connections", action="store_true",
                        help="each request opens a connection (its departure reported)")
    parser.add_argument("--source", type=Path, help="import robotsgate from this directory")
    parser.add_argument("--against", type=Path,
                        help="another revision's worktree, run in alternating rounds with this")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each, with --against")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.against:
        return against(args)
    _paths(args.source)
    robotsgate = importlib.import_module("robotsgate")
    print(f"robotsgate from {Path(robotsgate.__file__).parent.parent}; {args.proxies} proxies, "
          f"{args.hosts} hosts, mix {args.mix} (x{args.scale}), "
          f"{'cluster of ' + str(args.cluster) if args.cluster else 'one Redis'}")
    with tempfile.TemporaryDirectory() as tmp:
        servers: list[Any] = []
        try:
            if args.redis:
                url, nodes = args.redis, [args.redis]
            elif args.cluster:
                url, nodes, servers = start_cluster(Path(tmp), args.cluster)
            else:
                from tests.e2e.redis_server import RedisServer

                servers = [RedisServer(Path(tmp) / "redis")]
                url = nodes[0] if (nodes := [servers[0].url]) else ""
            asyncio.run(run(args, url, nodes))
        finally:
            for server in servers:
                server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
