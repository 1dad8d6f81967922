"""What each part of robotsgate costs an allowed request, in the proxy's CPU.

The proxies of scripts/bench_proxy.py (nginx origin, wrk, robots.txt cached, Googlebot, the
allowed page, keep-alive), in the same rotating rounds: plain `mitmdump`, `mitmdump -s addon.py`
(gate), and the gate with one part left out at a time (scripts/bench_parts_addon.py), and with
every part that works on answers left out (the decision alone); and a script whose four HTTP
hooks do nothing (scripts/bench_empty_hooks.py): what mitmproxy itself spends to call any
script's hooks, the floor under the gate's cost. Prints each proxy's requests/s and CPU per
request (medians of the rounds), and what a part costs: the gate's CPU per request less that of
the gate without it (the median of the rounds' differences); for the decision alone and the
empty hooks, their CPU per request less plain mitmdump's. A part idle under the configuration
(Pay, Sign, LicenseCheck: nothing priced, signed or licensed) costs what calling it costs.

A figure of a few µs is within the noise of a run; the ones that matter are tens.

Target: `mitmdump -s addon.py` within 3% of the floor, gate / empty hooks >= 0.97 in
requests/s (the median of the rounds' ratios), with the counted-work guard of
tests/test_work_budget.py in CI.

    .venv/bin/python scripts/bench_parts.py [--seconds 4] [--rounds 5] [--concurrency 10]
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import urllib.request
from pathlib import Path

from bench_proxy import (
    LOAD_CPUS,
    MITMDUMP,
    PROXY_CPUS,
    REPO,
    USER_AGENT,
    Run,
    free_port,
    start_mitmdump,
    start_nginx,
    wait_for,
    wrk,
)

# The parts that work on answers (robotsgate.mitm lists them all).
ANSWERS = ("Pay", "Sign", "Pushback", "PageReader", "UsageCheck", "LicenseCheck")
VARIANTS: dict[str, tuple[str, ...]] = {
    "without Pushback": ("Pushback",),
    "without PageReader": ("PageReader",),
    "without UsageCheck": ("UsageCheck",),
    "without Turns": ("Turns",),
    "without Pay, Sign, LicenseCheck": ("Pay", "Sign", "LicenseCheck"),
    "decision alone": ANSWERS,
}


def start_without(workdir: Path, name: str, without: tuple[str, ...]
                  ) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    folder = workdir / name.replace(" ", "-").replace(",", "")
    args = [str(MITMDUMP), "-q", "--listen-host", "127.0.0.1", "--listen-port", str(port),
            "--set", f"confdir={folder}", "-s", str(REPO / "scripts" / "bench_parts_addon.py"),
            "--set", f"robots_audit_log={folder}.jsonl", "--set", "robots_egress_allow=127.0.0.1"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "ROBOTSGATE_BENCH_WITHOUT": ",".join(without)}
    process = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=env)
    if PROXY_CPUS:
        os.sched_setaffinity(process.pid, PROXY_CPUS)
    wait_for(port, process, name)
    return process, port


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=4, help="length of each wrk run")
    parser.add_argument("--rounds", type=int, default=5, help="alternating runs per proxy")
    parser.add_argument("--concurrency", type=int, default=10)
    args = parser.parse_args()
    os.sched_setaffinity(0, LOAD_CPUS)  # before nginx and wrk start: they inherit it
    with tempfile.TemporaryDirectory(prefix="robotsgate-parts-") as tmp:
        workdir = Path(tmp)
        nginx, origin_port, _ = start_nginx(workdir, False)
        started: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
        try:
            started["plain"] = start_mitmdump(workdir, "plain", None)
            started["empty hooks"] = start_mitmdump(
                workdir, "empty hooks", None,
                extra=["-s", str(REPO / "scripts" / "bench_empty_hooks.py")])
            started["gate"] = start_mitmdump(workdir, "gate", REPO)
            for name, without in VARIANTS.items():
                started[name] = start_without(workdir, name, without)
            url = f"http://127.0.0.1:{origin_port}/page.html"
            for name, (process, port) in started.items():
                if name not in ("plain", "empty hooks"):  # robots.txt cached first
                    opener = urllib.request.build_opener(urllib.request.ProxyHandler(
                        {"http": f"http://127.0.0.1:{port}"}))
                    opener.addheaders = [("User-Agent", USER_AGENT)]
                    opener.open(url).read()
                wrk(port, process.pid, url, args.concurrency, False, 2, workdir)  # warm-up
            names = list(started)
            runs: dict[str, list[Run]] = {name: [] for name in names}
            for round_ in range(args.rounds):
                turn = round_ % len(names)
                for name in names[turn:] + names[:turn]:
                    process, port = started[name]
                    runs[name].append(wrk(port, process.pid, url, args.concurrency, False,
                                          args.seconds, workdir))
        finally:
            for process, _ in started.values():
                process.terminate()
                process.wait(timeout=10)
            nginx.terminate()
            nginx.wait(timeout=10)
    print(f"allowed page, keep-alive, c={args.concurrency}; wrk, {args.rounds} rotating runs of "
          f"{args.seconds} s each; medians; CPU is the proxy's per request")
    print(f"{'proxy':34}{'rps':>7}{'cpu µs':>8}   cost, µs of CPU per request")
    for name in names:
        rps = statistics.median(run.rps for run in runs[name])
        cpu = statistics.median(run.cpu_us for run in runs[name])
        if name == "plain":
            cost = ""
        elif name in ("empty hooks", "gate", "decision alone"):
            cost = f"{_difference(runs[name], runs['plain']):+.0f} over plain mitmdump"
        else:
            cost = f"{_difference(runs['gate'], runs[name]):+.0f} (the part's)"
        print(f"{name:34}{rps:7.0f}{cpu:8.0f}   {cost}")
    # The target: the gate within 3% of the floor (a script whose hooks do nothing, in the
    # same rounds), its requests/s over the floor's, the median of the rounds' ratios.
    ratios = [g.rps / e.rps for g, e in zip(runs["gate"], runs["empty hooks"], strict=True)]
    ratio = statistics.median(ratios)
    print(f"target: gate / empty hooks >= 0.97 (within 3% of the floor): {ratio:.3f} "
          f"({min(ratios):.2f}-{max(ratios):.2f}), {'met' if ratio >= 0.97 else 'NOT met'}")
    return 0


def _difference(over: list[Run], under: list[Run]) -> float:
    """The median of the rounds' differences in CPU per request (each round back to back)."""
    return statistics.median(o.cpu_us - u.cpu_us for o, u in zip(over, under, strict=True))


if __name__ == "__main__":
    raise SystemExit(main())
