"""How precisely does robotsgate space requests to one host?

100 concurrent clients send one request each, through a real `mitmdump -s addon.py`, to one origin
whose robots.txt says `Crawl-delay: 0.2`. The origin records when each request arrives; the
spacing error is how much later than 0.2 s after its predecessor each one came (negative would be
a politeness violation). Target: max error <= 20 ms.

    .venv/bin/python scripts/bench_pacing.py [--clients 100] [--delay 0.2]
"""

import argparse
import itertools
import statistics
import sys
import tempfile
import threading
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.servers import Origin, Proxy  # noqa: E402  (needs the repository on the path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.2, help="the Crawl-delay, seconds")
    args = parser.parse_args()

    origin = Origin()
    origin.set_robots(f"User-agent: *\nCrawl-delay: {args.delay}\n")
    with tempfile.TemporaryDirectory() as workdir:
        max_wait = int(args.clients * args.delay) + 30
        proxy = Proxy(Path(workdir), {"robots_max_wait": max_wait, "robots_audit_log": "-"})
        try:
            with httpx.Client(proxy=proxy.url, timeout=max_wait + 30) as client:
                client.get(origin.url("/warm-up"))  # robots.txt fetched and cached
            start = threading.Barrier(args.clients)
            failures: list[str] = []

            def one(i: int) -> None:
                with httpx.Client(proxy=proxy.url, timeout=max_wait + 30) as client:
                    start.wait()
                    response = client.get(origin.url(f"/page/{i}"))
                    if response.status_code != 200:
                        failures.append(f"/page/{i}: {response.status_code}")

            threads = [threading.Thread(target=one, args=(i,)) for i in range(args.clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=max_wait + 60)
        finally:
            proxy.stop()
            origin.stop()

    # Only the queued requests: the gap after the warm-up is idle time, not spacing.
    arrivals = sorted(s.arrived for s in origin.seen if s.path.startswith("/page/"))
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    errors_ms = [(gap - args.delay) * 1000 for gap in gaps]
    print(f"{args.clients} concurrent clients, one host, Crawl-delay {args.delay} s")
    print(f"  requests forwarded     {len(arrivals)}, failed {len(failures)}")
    print("  errors, ms             " + " ".join(f"{e:.0f}" for e in errors_ms))
    print(f"  first to last arrival  {arrivals[-1] - arrivals[0]:.3f} s "
          f"(ideal {args.delay * (len(arrivals) - 1):.3f} s)")
    print(f"  spacing error, ms      median {statistics.median(errors_ms):.2f}   "
          f"max {max(errors_ms):.2f}   min {min(errors_ms):.2f}")
    print(f"  target                 max <= 20 ms: {'met' if max(errors_ms) <= 20 else 'MISSED'}"
          f"; min >= 0 (never early): {'met' if min(errors_ms) >= -1 else 'MISSED'}")
    for failure in failures[:10]:
        print("  failed:", failure)
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
