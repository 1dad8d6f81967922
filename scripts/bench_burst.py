"""Ten thousand new sites at once: whether one proxy decides each by its own robots.txt, and its
memory per site.

    .venv/bin/python scripts/bench_burst.py [--sites 1000] [--robots-delay 1.5] [--spread 1]
                                            [--connection-per-request]
                                            [--set robots_fetch_concurrency=256 ...]
                                            [--against REV] [--keep DIR] [--max-kib-per-site N]

Each of --sites bots sends its first two requests, one allowed and one disallowed, to a site of
its own. Site i is loopback address 127.1.(i // 250).(i % 250 + 1), all on one port: one asyncio
server, in a process of its own, tells the sites apart by the address a connection came to.
Loopback suffices (no network namespaces): the proxy resolves, classifies and dials each site's
own address, as it would a real one's. Its robots.txt, answered after --robots-delay seconds as
a slow real site does, is its own:

    User-agent: *
    Disallow: /private/<i>/

so a site's answers show whose rules decided them: the allowed request asks for
/private/<i+1>/page (refused, had the proxy used site i+1's file), the disallowed one for
/private/<i>/page (let through under any other site's file); an allowed page says which site
served it, a refusal which rule (X-Robotsgate-Rule) and robots.txt (X-Robotsgate-Robots-Url)
refused it.

The bots start within --spread seconds. Each sends its two requests one after the other on one
connection to the proxy (opened again if the proxy closes it after an answer), the disallowed
one first at even sites; --connection-per-request sends both at once, each on a connection of
its own. Bot i connects from 127.2.(i // 250).(i % 250 + 1), so that no address runs out of
ephemeral ports. Every connection is a descriptor in the bots' process and in the proxy, which
holds them all while the robots.txt files are fetched: the limit is raised to its hard limit
(past it only with CAP_SYS_RESOURCE; 20,000 on the machines these figures come from), so 10,000
sites need one connection a bot.

Before the burst, one more site's two requests warm the proxy up (its fetcher, lazy imports,
buffers). Printed: the time from the first bot's start to the last answer, the answers by
request, status, reason and whether they were the site's own, the robots.txt fetches the sites
saw (and any site fetched more than once, or never), and the proxy's memory: resident after the
warm-up (VmRSS) and its high-water mark at the end (VmHWM), in KiB per site.

Targets: every request answered by its own site's robots.txt (200 from its own site for the
allowed page, 403 disallowed by its own rule for the other), none 503 robots-unavailable; the
peak's growth over the memory after the warm-up, per site, within --max-kib-per-site (default
128: the requests held while their sites' robots.txt is fetched, and each site's entry, rules
and schedule). --keep DIR keeps the proxy's audit log (audit.jsonl) and stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import multiprocessing
import multiprocessing.sharedctypes
import multiprocessing.synchronize
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MITMDUMP = Path(sys.executable).with_name("mitmdump")
ANSWER_TIMEOUT = 900.0
PER_NET = 250  # sites (and bots) per 127.x.y.0/24
MAX_SITES = PER_NET * 256


def raise_descriptor_limit(wanted: int) -> int:
    """Room for `wanted` descriptors (the proxy inherits it); the limit set."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < wanted:
        try:  # root may raise the hard limit (up to fs.nr_open)
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, wanted))
            return wanted
        except (ValueError, OSError):
            pass
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def address(net: int, index: int) -> str:
    return f"127.{net}.{index // PER_NET}.{index % PER_NET + 1}"


def site_index(host: str) -> int:
    """The site a 127.1.x.y address is (-1: none)."""
    parts = host.split(".")
    if len(parts) != 4 or parts[:2] != ["127", "1"]:
        return -1
    return int(parts[2]) * PER_NET + int(parts[3]) - 1


def robots_of(index: int) -> bytes:
    return f"User-agent: *\nDisallow: /private/{index}/\n".encode()


def page_of(index: int) -> bytes:
    return f"page of site {index}\n".encode()


# --- the sites: one asyncio server on every loopback address, in a process of its own ---------


def serve_sites(port: multiprocessing.sharedctypes.Synchronized[int], sites: int,
                robots_delay: float, ready: multiprocessing.synchronize.Event,
                fetches: multiprocessing.sharedctypes.SynchronizedArray[int],
                most: multiprocessing.sharedctypes.Synchronized[int]) -> None:
    raise_descriptor_limit(4 * sites + 1024)
    in_flight = 0

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal in_flight
        try:
            index = site_index(writer.get_extra_info("sockname")[0])
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1]
            if not 0 <= index < sites:
                status, body = b"404 Not Found", b"no such site\n"
            elif path == b"/robots.txt":  # the warm-up site's too, at once
                fetches[index] += 1  # one process, one thread: no lock needed
                in_flight += 1
                most.value = max(most.value, in_flight)
                try:
                    await asyncio.sleep(robots_delay if index < sites - 1 else 0)
                finally:
                    in_flight -= 1
                status, body = b"200 OK", robots_of(index)
            else:
                status, body = b"200 OK", page_of(index)
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain\r\n"
                         b"Content-Length: " + str(len(body)).encode()
                         + b"\r\nConnection: close\r\n\r\n" + body)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        # A port of the kernel's choosing, bound at once: a port found free and bound later
        # may be another socket's by then (a burst leaves thousands in TIME-WAIT).
        server = await asyncio.start_server(answer, "0.0.0.0", 0, backlog=65535)
        port.value = server.sockets[0].getsockname()[1]
        ready.set()
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# --- the bots ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    site: int
    path: str  # "allowed" or "disallowed"
    status: int  # 0: no answer
    reason: str  # X-Robotsgate-Reason, or the exception when no answer came
    own: bool  # answered by the site's own robots.txt (and page)
    seconds: float  # from the time it was due to be sent to its answer


def own_answer(index: int, sites_port: int, kind: str, status: int,
               headers: dict[str, str], body: bytes) -> bool:
    """Whether the answer is the one the site's own robots.txt calls for."""
    if kind == "allowed":
        return status == 200 and body == page_of(index)
    return (status == 403 and headers.get("x-robotsgate-reason") == "disallowed"
            and headers.get("x-robotsgate-rule") == f"Disallow: /private/{index}/"
            and headers.get("x-robotsgate-robots-url")
            == f"http://{address(1, index)}:{sites_port}/robots.txt")


class Connection:
    """A bot's connection to the proxy, opened again when the proxy closed it after an answer
    (as it does when the origin's answer said Connection: close)."""

    def __init__(self, proxy_port: int, source: str) -> None:
        self._proxy_port = proxy_port
        self._source = source
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def ask(self, authority: str, path: str, close: bool
                  ) -> tuple[int, dict[str, str], bytes]:
        if self._streams is None:
            self._streams = await asyncio.open_connection(
                "127.0.0.1", self._proxy_port, local_addr=(self._source, 0))
        reader, writer = self._streams
        writer.write(f"GET http://{authority}{path} HTTP/1.1\r\nHost: {authority}\r\n"
                     f"User-Agent: BurstBot/1.0\r\n"
                     f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n".encode())
        await writer.drain()
        lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {name.strip().lower(): value.strip() for name, _, value in
                   (line.partition(":") for line in lines[1:] if line)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        if close or headers.get("connection", "").lower() == "close":
            self.close()
        return int(lines[0].split()[1]), headers, body

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


async def one_bot(proxy_port: int, sites_port: int, sites: int, index: int, at: float,
                  per_request: bool) -> list[Answer]:
    """Bot `index`'s two requests to its site, one after the other on one connection (the
    disallowed one first at even sites), or each on a connection of its own, at once."""
    await asyncio.sleep(max(0.0, at - time.monotonic()))
    authority = f"{address(1, index)}:{sites_port}"
    kinds = ("disallowed", "allowed") if index % 2 == 0 else ("allowed", "disallowed")

    async def ask(connection: Connection, kind: str) -> Answer:
        path = f"/private/{(index + 1) % sites if kind == 'allowed' else index}/page"
        try:
            async with asyncio.timeout(ANSWER_TIMEOUT):
                status, headers, body = await connection.ask(authority, path, per_request)
        except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
            connection.close()
            return Answer(index, kind, 0, type(exc).__name__, False, time.monotonic() - at)
        return Answer(index, kind, status, headers.get("x-robotsgate-reason", ""),
                      own_answer(index, sites_port, kind, status, headers, body),
                      time.monotonic() - at)

    source = address(2, index)
    if per_request:
        return list(await asyncio.gather(*(ask(Connection(proxy_port, source), kind)
                                           for kind in kinds)))
    connection = Connection(proxy_port, source)
    try:
        return [await ask(connection, kind) for kind in kinds]
    finally:
        connection.close()


async def burst(proxy_port: int, sites_port: int, sites: int, spread: float, per_request: bool
                ) -> tuple[list[Answer], float]:
    start = time.monotonic() + 0.2
    tasks = [asyncio.create_task(one_bot(proxy_port, sites_port, sites, index,
                                         start + spread * index / sites, per_request))
             for index in range(sites)]
    answers = [answer for task in tasks for answer in await task]
    return answers, time.monotonic() - start


async def warm_up(proxy_port: int, sites_port: int, sites: int) -> None:
    """One more site's two requests, answered at once, before the burst: what the proxy
    allocates once (its fetcher, lazy imports, the audit log's buffers) is not counted as the
    sites' memory."""
    for answer in await one_bot(proxy_port, sites_port, sites + 1, sites, 0.0, False):
        if not answer.own:
            raise SystemExit(f"the warm-up request was not answered as its site's: {answer}")


# --- the proxy --------------------------------------------------------------------------------


def memory_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise SystemExit(f"no {field} for process {pid}: did the proxy exit?")


def start_proxy(workdir: Path, options: Sequence[str], checkout: Path
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


def revision(checkout: Path) -> str:
    found = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain",
                            "--untracked-files=no"], capture_output=True, text=True,
                           check=False).stdout.strip()
    return (found or "?") + (" with changes" if dirty else "")


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
    parser.add_argument("--connection-per-request", action="store_true",
                        help="each request on a connection of its own, both sent at once "
                             "(2 x --sites connections at once: past the descriptors a process "
                             "may have, the proxy fails)")
    parser.add_argument("--keep", metavar="DIR", type=Path,
                        help="keep the proxy's audit log and stderr in DIR")
    parser.add_argument("--max-kib-per-site", type=float, default=128.0,
                        help="the memory target: the proxy's peak growth per site, KiB")
    args = parser.parse_args()
    if not 2 <= args.sites <= MAX_SITES:
        parser.error(f"--sites: 2 to {MAX_SITES:,}")
    # Each request holds a socket at the bot and one at the proxy; the proxy one to the site
    # for each page and robots.txt in flight.
    limit = raise_descriptor_limit(5 * args.sites + 1024)
    ready = multiprocessing.Event()
    port = multiprocessing.Value("i", 0, lock=False)
    fetches = multiprocessing.Array("i", args.sites + 1, lock=False)  # the last: the warm-up
    most = multiprocessing.Value("i", 0, lock=False)
    server = multiprocessing.Process(
        target=serve_sites, daemon=True,
        args=(port, args.sites + 1, args.robots_delay, ready, fetches, most))
    server.start()
    if not ready.wait(30):
        raise SystemExit("the sites did not start")
    sites_port = port.value
    with tempfile.TemporaryDirectory(prefix="bench-burst-") as tmp:
        checkout = REPO
        if args.against:
            checkout = Path(tmp) / "then"
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q",
                            str(checkout), args.against], check=True)
        rev = revision(checkout)
        proxy, proxy_port = start_proxy(Path(tmp), args.set, checkout)
        try:
            asyncio.run(warm_up(proxy_port, sites_port, args.sites))
            before = memory_kib(proxy.pid, "VmRSS")
            answers, took = asyncio.run(burst(proxy_port, sites_port, args.sites, args.spread,
                                                args.connection_per_request))
            peak = memory_kib(proxy.pid, "VmHWM")
        finally:
            proxy.terminate()
            proxy.wait(timeout=60)
            server.terminate()
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                for name in ("audit.jsonl", "mitmdump.err"):
                    if (Path(tmp) / name).exists():
                        shutil.copy(Path(tmp) / name, args.keep / name)
            if args.against:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(checkout)], check=False)
    load = os.getloadavg()
    kinds = collections.Counter((a.path, a.status, a.reason, a.own) for a in answers)
    slowest = max(a.seconds for a in answers)
    print(f"robotsgate at {args.against or 'this checkout'} ({rev}); {args.sites:,} new sites, "
          f"robots.txt answered in {args.robots_delay:g} s each; "
          f"{len(answers):,} requests through one proxy, the bots starting within "
          f"{args.spread:g} s, "
          + ("each request on a connection of its own" if args.connection_per_request else
             "each bot's two on one connection")
          + (f" ({', '.join(args.set)})" if args.set else "")
          + f"; descriptors {limit:,}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"on {os.cpu_count()} CPUs")
    fetched = list(fetches)[:args.sites]
    again = sum(1 for count in fetched if count > 1)
    never = sum(1 for count in fetched if count == 0)
    print(f"all answered in {took:.2f} s (the slowest request waited {slowest:.2f} s); "
          f"robots.txt fetches seen by the sites: {sum(fetched):,} ({again:,} sites fetched "
          f"more than once, {never:,} never), at most {most.value:,} at once")
    print(f"  {'request':<10} {'status':>6} {'reason':<22} {'own':<5} {'count':>7}")
    for (path, status, reason, own), count in sorted(kinds.items()):
        print(f"  {path:<10} {status:>6} {reason or '-':<22} {'yes' if own else 'NO':<5} "
              f"{count:>7,}")
    wrong = [a for a in answers if not a.own]
    for a in wrong[:10]:
        print(f"  not its own answer: site {a.site} ({address(1, a.site)}), {a.path}, "
              f"{a.status} {a.reason or '-'}, after {a.seconds:.2f} s")
    grown = (peak - before) / args.sites
    print(f"proxy memory: {before / 1024:.0f} MiB before the burst (VmRSS), peak "
          f"{peak / 1024:.0f} MiB (VmHWM): {peak / args.sites:.1f} KiB per site at the peak, "
          f"{grown:.1f} KiB per site over the memory before")
    right = len(answers) - len(wrong)
    unavailable = sum(1 for a in answers if a.status == 503)
    answers_met = not wrong
    memory_met = grown <= args.max_kib_per_site
    print(f"target: every request answered by its site's own robots.txt, none 503: {right:,} "
          f"of {len(answers):,} ({unavailable:,} 503), {'met' if answers_met else 'NOT met'}")
    print(f"target: the peak's growth over the memory before, per site, within "
          f"{args.max_kib_per_site:g} KiB: {grown:.1f} KiB, "
          f"{'met' if memory_met else 'NOT met'}")
    return 0 if answers_met and memory_met else 1


if __name__ == "__main__":
    raise SystemExit(main())
