"""How precisely does robotsgate space requests to one host?

100 concurrent clients send one request each, through a real `mitmdump -s addon.py`, to one origin
whose robots.txt says `Crawl-delay: 0.2`. The origin records when each request arrives; the
spacing error is how much later than 0.2 s after its predecessor each one came (negative would be
a politeness violation). Targets: max error <= 20 ms; no gap shorter than the interval, the first
request of the burst included.

The origin runs in a process of its own: in the clients' process, a hundred threads starting at
once would hold the GIL while the first request arrives and stamp it late, which looks like a
short gap after it.

    .venv/bin/python scripts/bench_pacing.py [--clients 100] [--delay 0.2]
"""

import argparse
import itertools
import multiprocessing
import multiprocessing.synchronize
import statistics
import sys
import tempfile
import threading
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.origins import Origin  # noqa: E402  (needs the repository on the path)
from tests.e2e.proxy import Proxy  # noqa: E402


def _serve_origin(robots: str, ready: "multiprocessing.Queue[int]",
                  done: "multiprocessing.Queue[list[tuple[str, float]]]",
                  stop: "multiprocessing.synchronize.Event") -> None:
    origin = Origin()
    origin.set_robots(robots)
    ready.put(origin.port)
    stop.wait()
    done.put([(s.path, s.arrived) for s in origin.seen])  # time.monotonic(): one clock for all
    origin.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.2, help="the Crawl-delay, seconds")
    args = parser.parse_args()

    context = multiprocessing.get_context("spawn")
    ready: multiprocessing.Queue[int] = context.Queue()
    done: multiprocessing.Queue[list[tuple[str, float]]] = context.Queue()
    stop = context.Event()
    server = context.Process(target=_serve_origin, daemon=True, args=(
        f"User-agent: *\nCrawl-delay: {args.delay}\n", ready, done, stop))
    server.start()
    port = ready.get(timeout=60)

    def url(path: str) -> str:
        return f"http://127.0.0.1:{port}{path}"

    with tempfile.TemporaryDirectory() as workdir:
        max_wait = int(args.clients * args.delay) + 30
        proxy = Proxy(Path(workdir), {"robots_max_wait": max_wait, "robots_audit_log": "-"})
        try:
            with httpx.Client(proxy=proxy.url, timeout=max_wait + 30) as client:
                client.get(url("/warm-up"))  # robots.txt fetched and cached
            start = threading.Barrier(args.clients)
            failures: list[str] = []

            def one(i: int) -> None:
                with httpx.Client(proxy=proxy.url, timeout=max_wait + 30) as client:
                    start.wait()
                    response = client.get(url(f"/page/{i}"))
                    if response.status_code != 200:
                        failures.append(f"/page/{i}: {response.status_code}")

            threads = [threading.Thread(target=one, args=(i,)) for i in range(args.clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=max_wait + 60)
        finally:
            proxy.stop()
            stop.set()
            seen = done.get(timeout=60)
            server.join(timeout=10)

    # Only the queued requests: the gap after the warm-up is idle time, not spacing.
    arrivals = sorted(arrived for path, arrived in seen if path.startswith("/page/"))
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    errors_ms = [(gap - args.delay) * 1000 for gap in gaps]
    print(f"{args.clients} concurrent clients, one host, Crawl-delay {args.delay} s")
    print(f"  requests forwarded     {len(arrivals)}, failed {len(failures)}")
    print("  errors, ms             " + " ".join(f"{e:.0f}" for e in errors_ms))
    print(f"  first to last arrival  {arrivals[-1] - arrivals[0]:.3f} s "
          f"(ideal {args.delay * (len(arrivals) - 1):.3f} s)")
    print(f"  spacing error, ms      median {statistics.median(errors_ms):.2f}   "
          f"max {max(errors_ms):.2f}   min {min(errors_ms):.2f}")
    print(f"  shortest gap           {min(gaps) * 1000:.1f} ms against an interval of "
          f"{args.delay * 1000:.0f} ms (first gap of the burst {gaps[0] * 1000:.1f} ms)")
    print(f"  target                 max <= 20 ms: {'met' if max(errors_ms) <= 20 else 'MISSED'}"
          f"; min >= 0 (never early): {'met' if min(errors_ms) >= -1 else 'MISSED'}")
    for failure in failures[:10]:
        print("  failed:", failure)
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
