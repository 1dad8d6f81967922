"""Does one hostile robots.txt stall the proxy for everyone else?

    .venv/bin/python scripts/bench_hostile.py [--case NAME] [--url-length N] [--attack S] ...
    .venv/bin/python scripts/bench_hostile.py --table      # µs per decision, no proxy

Starts a real `mitmdump -s addon.py` on 127.0.0.1 (tests/e2e/proxy.py's Proxy), a hostile
origin on 127.0.0.2 serving one of the worst robots.txt files we know how to build (at most
500 KiB, see tests/protocol/hostile_files.py) and an unrelated origin on 127.0.0.3 with an
ordinary robots.txt. Both robots.txt are fetched (and the hostile one parsed and compiled)
first. Then one client measures the latency of sequential requests to the unrelated origin:

- baseline: nothing else going on;
- control: meanwhile 20 clients send requests with URLs of the same length to a third origin
  (127.0.0.4) whose robots.txt is ordinary: what mitmproxy itself costs;
- attack: the same 20 clients send them to the hostile origin: each one a decision against the
  hostile file for a path as long as the URL allows (distinct paths, equally costly).

The 20 clients send in waves: one request each at once, then again once all 20 are answered.
--source runs another copy of the package (a tree from before a change, say) with the same
clients, origins and files.

It prints p50 / p99 / max of the unrelated latency in each phase, what one hostile decision costs
in this process, and how many attack requests the proxy got through. Target: p99 under attack
below 50 ms. Every process it starts listens on loopback only and is stopped at the end; every
wait is bounded (about 40 s by default).
"""

import argparse
import contextlib
import http.client
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

ORDINARY_ROBOTS = "User-agent: *\nDisallow: /private/\nAllow: /private/ok\nDisallow: /*.pdf$\n"
TARGET_P99 = 0.050
DEFAULT_LENGTH = 8192  # the URL cap robotsgate.protocol.MAX_URL_LENGTH, when there is none yet


def _source(path: str | None) -> Path:
    """Where robotsgate is imported from (the repository, or a copy for a before/after run)."""
    source = Path(path).resolve() if path else REPO
    if str(source) != sys.path[0]:
        sys.path.insert(0, str(source))
    return source


# --------------------------------------------------------------------------------------------
# Origins: minimal keep-alive HTTP/1.1 servers in processes of their own
# --------------------------------------------------------------------------------------------


def _serve(host: str, robots: bytes, ready: Any, stop: Any) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed ACK

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = robots if self.path == "/robots.txt" else b"ok\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        request_queue_size = 256

    server = Server((host, 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    ready.put(server.server_address[1])
    stop.wait(600)
    server.shutdown()


class OriginProcess:
    def __init__(self, host: str, robots: str) -> None:
        context = multiprocessing.get_context("spawn")
        ready = context.Queue()
        self._stop = context.Event()
        self.process = context.Process(target=_serve, daemon=True,
                                       args=(host, robots.encode(), ready, self._stop))
        self.process.start()
        self.host = host
        self.port: int = ready.get(timeout=20)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def stop(self) -> None:
        self._stop.set()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)


# --------------------------------------------------------------------------------------------
# Clients
# --------------------------------------------------------------------------------------------


def _get(connection: http.client.HTTPConnection, url: str) -> int:
    connection.request("GET", url)
    response = connection.getresponse()
    response.read()
    return response.status


def _attack(proxy_port: int, urls: list[str], clients: int, stop: Any, done: Any,
            timeout: float) -> None:
    """Waves: `clients` threads send one request each at once, wait for every answer, again."""
    count = [0] * clients
    wave = threading.Barrier(clients)

    def client(index: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=timeout)
        n = index
        while not stop.is_set():
            try:
                wave.wait(timeout=timeout + 1)
            except threading.BrokenBarrierError:
                break
            try:
                _get(connection, urls[n % len(urls)])
                count[index] += 1
            except (OSError, http.client.HTTPException):
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", proxy_port,
                                                        timeout=timeout)
            n += clients
        wave.abort()
        connection.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    stop.wait(600)
    wave.abort()
    for thread in threads:
        thread.join(timeout=timeout + 1)
    done.put(sum(count))


class Attack:
    def __init__(self, proxy_port: int, urls: list[str], clients: int, timeout: float) -> None:
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._done = context.Queue()
        self.process = context.Process(target=_attack, daemon=True, args=(
            proxy_port, urls, clients, self._stop, self._done, timeout))
        self.process.start()

    def stop(self, timeout: float) -> int | None:
        self._stop.set()
        try:
            return int(self._done.get(timeout=timeout + 3))
        except Exception:
            return None
        finally:
            self.process.join(timeout=2)
            if self.process.is_alive():
                self.process.kill()


def probe(proxy_port: int, origin: OriginProcess, seconds: float, timeout: float,
          gap: float) -> list[float]:
    """Latencies (s) of sequential requests to `origin` for `seconds`; a timeout counts as such."""
    latencies: list[float] = []
    connection = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=timeout)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        start = time.perf_counter()
        try:
            status = _get(connection, origin.url(f"/page/{n}"))
            if status != 200:
                raise RuntimeError(f"unrelated origin answered {status} through the proxy")
            latencies.append(time.perf_counter() - start)
        except (OSError, http.client.HTTPException):
            latencies.append(max(timeout, time.perf_counter() - start))
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", proxy_port, timeout=timeout)
        time.sleep(gap)
    connection.close()
    return latencies


def summary(latencies: list[float]) -> tuple[float, float, float]:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))]
    return statistics.median(ordered), p99, ordered[-1]


# --------------------------------------------------------------------------------------------
# What one decision costs here
# --------------------------------------------------------------------------------------------


def decision_cost(text: str, paths: list[str], repeats: int = 3) -> tuple[float, float, float]:
    """(parse s, compile s, best decision s) for `text` and the given paths, in this process."""
    from robotsgate.protocol import RobotsTxt

    start = time.perf_counter()
    robots = RobotsTxt.parse(text)
    parsed = time.perf_counter()
    robots.decide("bot", "/")
    compiled = time.perf_counter()
    best = float("inf")
    for _ in range(repeats):
        for path in paths:
            begin = time.perf_counter()
            robots.decide("bot", path)
            best = min(best, time.perf_counter() - begin)
            if time.perf_counter() - compiled > 5:
                return parsed - start, compiled - parsed, best
    return parsed - start, compiled - parsed, best


def table(lengths: list[int], names: list[str], budget: float) -> None:
    """µs per decision for every case and path length (best of a few, bounded in time)."""
    from robotsgate.protocol import RobotsTxt
    from tests.protocol.hostile_files import CASES

    print(f"{'case':<20}{'bytes':>9}{'rules':>8}{'parse ms':>10}{'compile ms':>12}"
          + "".join(f"{f'{n:,} chars':>16}" for n in lengths))
    for name in names:
        case = CASES[name]
        text = case.build()
        start = time.perf_counter()
        robots = RobotsTxt.parse(text)
        parsed = time.perf_counter()
        robots.decide("bot", "/")
        compiled = time.perf_counter()
        rules = sum(len(group.rules) for group in robots.groups)
        cells = []
        for length in lengths:
            best = float("inf")
            spent = 0.0
            for variant in range(3):
                path = case.path(length, variant)
                begin = time.perf_counter()
                robots.decide("bot", path)
                took = time.perf_counter() - begin
                best, spent = min(best, took), spent + took
                if spent > budget:
                    break
            cells.append(f"{best * 1e6:>14,.0f}µs")
        print(f"{name:<20}{len(text.encode()):>9,}{rules:>8,}{(parsed - start) * 1e3:>10,.0f}"
              f"{(compiled - parsed) * 1e3:>12,.0f}" + "".join(f"{c:>16}" for c in cells),
              flush=True)


# --------------------------------------------------------------------------------------------


def pin(pid: int, cpus: set[int]) -> None:
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setaffinity(pid, cpus)


def urls_for(origin: OriginProcess, make_path: Callable[[int, int], str], length: int,
             count: int) -> list[str]:
    prefix = origin.url("")
    return [prefix + make_path(length - len(prefix), variant) for variant in range(count)]


@contextlib.contextmanager
def running(*stoppers: Callable[[], object]) -> Iterator[None]:
    try:
        yield
    finally:
        for stop in stoppers:
            with contextlib.suppress(Exception):
                stop()


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--case", default=None, help="hostile file (see --list); default: "
                         "the worst for the matcher in use")
    options.add_argument("--list", action="store_true", help="list the hostile files")
    options.add_argument("--table", action="store_true",
                         help="µs per decision for every case at 1k, 8k and 50k characters")
    options.add_argument("--url-length", type=int, default=None,
                         help="length of the attack URLs (default: MAX_URL_LENGTH, else 8192)")
    options.add_argument("--clients", type=int, default=20)
    options.add_argument("--baseline", type=float, default=5.0, help="seconds")
    options.add_argument("--control", type=float, default=8.0, help="seconds (0: skip)")
    options.add_argument("--attack", type=float, default=12.0, help="seconds")
    options.add_argument("--gap", type=float, default=0.005,
                         help="seconds between two unrelated requests")
    options.add_argument("--timeout", type=float, default=10.0,
                         help="seconds any one request may take")
    options.add_argument("--source", default=None,
                         help="directory holding the robotsgate package and addon.py to run "
                         "(default: this repository)")
    args = options.parse_args()
    source = _source(args.source)

    from tests.protocol.hostile_files import CASES, WORST

    if args.list:
        for name, case in CASES.items():
            print(f"{name:<20}{case.about}")
        return
    if args.table:
        table([1_000, 8_000, 50_000], list(CASES), budget=20.0)
        return

    import robotsgate.protocol as protocol

    cap = getattr(protocol, "MAX_URL_LENGTH", None)
    length = args.url_length or cap or DEFAULT_LENGTH
    case = CASES[args.case or WORST]
    text = case.build()
    print(f"hostile robots.txt: {case.name} ({case.about}), {len(text.encode()):,} bytes")
    print(f"robotsgate from {source}; URL cap "
          f"{f'MAX_URL_LENGTH = {cap:,}' if cap else 'none (MAX_URL_LENGTH not defined)'}; "
          f"attack URLs of {length:,} characters, {args.clients} clients")

    hostile = OriginProcess("127.0.0.2", text)
    unrelated = OriginProcess("127.0.0.3", ORDINARY_ROBOTS)
    benign = OriginProcess("127.0.0.4", ORDINARY_ROBOTS)
    attack_urls = urls_for(hostile, case.path, length, 500)
    control_urls = urls_for(benign, case.path, length, 500)
    parse_s, compile_s, decide_s = decision_cost(
        text, [url[len(hostile.url("")):] for url in attack_urls[:5]])
    print(f"in this process: parse {parse_s * 1e3:,.0f} ms, compile {compile_s * 1e3:,.0f} ms, "
          f"one decision on an attack path {decide_s * 1e6:,.0f} µs")

    import tests.e2e.proxy as mitmdump
    from tests.e2e.proxy import Proxy

    work = Path(tempfile.mkdtemp(prefix="robotsgate-bench-hostile-"))
    mitmdump.ADDON = source / "addon.py"
    mitmdump.REPO = source
    proxy = Proxy(work, {"flow_detail": 0})
    with running(proxy.stop, hostile.stop, unrelated.stop, benign.stop):
        port = proxy.port
        if (os.cpu_count() or 1) >= 2 and proxy.process is not None:
            pin(proxy.process.pid, {0})
            for pid in (os.getpid(), hostile.process.pid, unrelated.process.pid,
                        benign.process.pid):
                pin(pid or 0, {1})
        # Warm up: every robots.txt fetched, the hostile one parsed and its rules compiled.
        warm = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for origin in (unrelated, benign, hostile):
            _get(warm, origin.url("/warm"))
        warm.close()
        begin = time.perf_counter()
        warm = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        first_status = _get(warm, attack_urls[0])
        warm.close()
        first = time.perf_counter() - begin
        print(f"one attack request through the proxy alone: {first * 1e3:,.1f} ms "
              f"(status {first_status})")
        probe(port, unrelated, 1.0, args.timeout, args.gap)

        rows: list[tuple[str, list[float], int | None]] = []
        rows.append(("baseline", probe(port, unrelated, args.baseline, args.timeout, args.gap),
                     None))
        for label, urls, seconds in (("control (benign origin)", control_urls, args.control),
                                     ("attack (hostile origin)", attack_urls, args.attack)):
            if seconds <= 0:
                continue
            attack = Attack(port, urls, args.clients, args.timeout)
            if (os.cpu_count() or 1) >= 2:
                pin(attack.process.pid or 0, {1})
            time.sleep(0.5)  # every client has its first request in flight
            latencies = probe(port, unrelated, seconds, args.timeout, args.gap)
            done = attack.stop(args.timeout)
            rows.append((label, latencies, done))
            time.sleep(0.5)

    print()
    header = (f"{'unrelated origin, latency':<28}{'requests':>9}{'p50 ms':>9}{'p99 ms':>9}"
              f"{'max ms':>9}{'20-client requests':>20}")
    print(header)
    print("-" * len(header))
    for label, latencies, done in rows:
        p50, p99, most = summary(latencies)
        print(f"{label:<28}{len(latencies):>9}{p50 * 1e3:>9.1f}{p99 * 1e3:>9.1f}"
              f"{most * 1e3:>9.1f}{'' if done is None else f'{done:,}':>20}")
    p99 = summary(rows[-1][1])[1]
    verdict = "met" if p99 < TARGET_P99 else "NOT met"
    print(f"\ntarget p99 under attack < {TARGET_P99 * 1e3:.0f} ms: {p99 * 1e3:.1f} ms, {verdict}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
