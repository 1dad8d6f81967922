"""A thousand new sites at once: how long one proxy takes to decide them all, and its memory.

    .venv/bin/python scripts/bench_burst.py [--sites 1000] [--robots-delay 1.5] [--spread 1]
                                            [--set robots_fetch_concurrency=256 ...]
                                            [--against REV]

Each of --sites bots sends its first two requests, one allowed and one disallowed, to a site of
its own: sites on as many loopback addresses (127.1.x.y), each answering its robots.txt after
--robots-delay seconds, as a slow real site does, and its pages at once. The 2 x --sites
requests are sent within --spread seconds through one `mitmdump -s addon.py`, each on a
connection of its own. Printed: the time from the first request sent to the last answer, the
answers by status and reason, the robots.txt fetches the sites saw, and the proxy's resident
memory before the burst and at its peak (VmHWM).

Target: every request answered by its own site's robots.txt (200 for the allowed page, 403
disallowed for the other), none 503 robots-unavailable, and memory bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import multiprocessing
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MITMDUMP = Path(sys.executable).with_name("mitmdump")
ROBOTS = b"User-agent: *\nDisallow: /private\n"
ANSWER_TIMEOUT = 300.0


def raise_descriptor_limit() -> None:
    """Room for thousands of sockets (the proxy inherits it)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def site(index: int, port: int) -> str:
    return f"127.1.{index // 250}.{index % 250 + 1}:{port}"


# --- the sites: one asyncio server on every loopback address, in a process of its own ---------


def serve_sites(port: int, robots_delay: float, ready: multiprocessing.synchronize.Event,
                fetches: multiprocessing.sharedctypes.Synchronized[int],
                most: multiprocessing.sharedctypes.Synchronized[int]) -> None:
    raise_descriptor_limit()
    in_flight = 0

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal in_flight
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1]
            if path == b"/robots.txt":
                with fetches.get_lock():
                    fetches.value += 1
                in_flight += 1
                most.value = max(most.value, in_flight)
                try:
                    await asyncio.sleep(robots_delay)
                finally:
                    in_flight -= 1
                body = ROBOTS
            else:
                body = b"page\n"
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(answer, "0.0.0.0", port, backlog=4096)
        ready.set()
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# --- the bots ---------------------------------------------------------------------------------


async def one_request(proxy_port: int, authority: str, path: str, at: float
                      ) -> tuple[int, str, float]:
    """(status, X-Robotsgate-Reason, seconds from `at` to the answer); status 0: no answer."""
    await asyncio.sleep(max(0.0, at - time.monotonic()))
    try:
        async with asyncio.timeout(ANSWER_TIMEOUT):
            reader, writer = await asyncio.open_connection("127.0.0.1", proxy_port)
            writer.write(f"GET http://{authority}{path} HTTP/1.1\r\nHost: {authority}\r\n"
                         f"User-Agent: BurstBot/1.0\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            await reader.read()
            writer.close()
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
        return 0, type(exc).__name__, time.monotonic() - at
    lines = head.decode("latin-1").split("\r\n")
    reason = next((line.split(":", 1)[1].strip() for line in lines
                   if line.lower().startswith("x-robotsgate-reason:")), "")
    return int(lines[0].split()[1]), reason, time.monotonic() - at


async def burst(proxy_port: int, sites: list[str], spread: float
                ) -> tuple[list[tuple[str, int, str, float]], float]:
    start = time.monotonic() + 0.2
    tasks = []
    for index, authority in enumerate(sites):
        at = start + spread * index / len(sites)
        for path in ("/", "/private/x"):
            tasks.append((path, asyncio.create_task(one_request(proxy_port, authority, path,
                                                                at))))
    answers = [(path, *await task) for path, task in tasks]
    return answers, time.monotonic() - start


# --- the proxy --------------------------------------------------------------------------------


def memory_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def start_proxy(workdir: Path, options: list[str], checkout: Path
                ) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    args = [str(MITMDUMP), "-q", "--listen-host", "127.0.0.1", "--listen-port", str(port),
            "-s", str(checkout / "addon.py"), "--set", f"confdir={workdir / 'conf'}",
            "--set", f"robots_audit_log={workdir / 'audit.jsonl'}",
            "--set", "robots_egress_allow=127.0.0.0/8"]
    for option in options:
        args += ["--set", option]
    process = subprocess.Popen(args, cwd=checkout, stdout=subprocess.DEVNULL,
                               stderr=(workdir / "mitmdump.err").open("wb"),
                               env={**os.environ, "PYTHONPATH": str(checkout)})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"mitmdump exited: {(workdir / 'mitmdump.err').read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return process, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("mitmdump did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=1000)
    parser.add_argument("--robots-delay", type=float, default=1.5,
                        help="seconds each site takes to answer its robots.txt")
    parser.add_argument("--spread", type=float, default=1.0,
                        help="seconds over which the requests are sent")
    parser.add_argument("--set", action="append", default=[], metavar="OPTION=VALUE",
                        help="a robotsgate or mitmproxy option for the proxy")
    parser.add_argument("--against", metavar="REV",
                        help="run robotsgate as it was at this git revision instead")
    args = parser.parse_args()
    raise_descriptor_limit()
    sites_port = free_port()
    ready = multiprocessing.Event()
    fetches, most = multiprocessing.Value("i", 0), multiprocessing.Value("i", 0)
    server = multiprocessing.Process(target=serve_sites, daemon=True,
                                     args=(sites_port, args.robots_delay, ready, fetches, most))
    server.start()
    if not ready.wait(30):
        raise SystemExit("the sites did not start")
    with tempfile.TemporaryDirectory(prefix="bench-burst-") as tmp:
        checkout = REPO
        if args.against:
            checkout = Path(tmp) / "then"
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q",
                            str(checkout), args.against], check=True)
        proxy, proxy_port = start_proxy(Path(tmp), args.set, checkout)
        try:
            before = memory_kib(proxy.pid, "VmRSS")
            sites = [site(i, sites_port) for i in range(args.sites)]
            answers, took = asyncio.run(burst(proxy_port, sites, args.spread))
            peak = memory_kib(proxy.pid, "VmHWM")
        finally:
            proxy.terminate()
            proxy.wait(timeout=30)
            server.terminate()
            if args.against:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(checkout)], check=False)
    kinds = collections.Counter((path, status, reason) for path, status, reason, _ in answers)
    slowest = max(seconds for *_, seconds in answers)
    print(f"robotsgate at {args.against or 'this checkout'}; {args.sites:,} new sites, "
          f"robots.txt answered in {args.robots_delay:g} s each; "
          f"{len(answers):,} requests sent within {args.spread:g} s through one proxy"
          + (f" ({', '.join(args.set)})" if args.set else ""))
    print(f"all answered in {took:.2f} s (the slowest request waited {slowest:.2f} s); "
          f"robots.txt fetches seen by the sites: {fetches.value:,}, at most {most.value:,} at "
          f"once")
    for (path, status, reason), count in sorted(kinds.items()):
        print(f"  {path:<11} {status:>3} {reason or '-':<22} {count:>6,}")
    print(f"proxy memory: {before / 1024:.0f} MiB before, peak {peak / 1024:.0f} MiB")
    right = kinds[("/", 200, "")] + kinds[("/private/x", 403, "disallowed")]
    unavailable = sum(count for (_, status, _), count in kinds.items() if status == 503)
    met = right == len(answers)
    print(f"target: every request answered by its site's robots.txt, none 503: {right:,} of "
          f"{len(answers):,} ({unavailable:,} 503), {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
