"""What robotsgate costs on top of mitmproxy itself.

Starts nginx as a fast local origin serving ../shared/bench/proxy-robots.txt, a plain
`mitmdump`, `mitmdump -s addon.py` (gate) and `robotsgate serve` (serve), robots.txt cached, the
bots Googlebot (whose group has no Crawl-delay), and drives them in turn in the same run with
wrk, which speaks to proxies through absolute-form request targets. For keep-alive and a new
connection per request, at concurrency 1, 10 and 50: requests/s, CPU per request, and the ratios
gate / plain and serve / plain -- for an allowed page, and for a path robotsgate answers 403
itself. Each round runs the proxies back to back (the order turning each round); a ratio is the
median of the rounds' ratios, printed with their range.
Targets: gate / plain >= 0.95 for allowed requests in every cell; serve / plain >= 1.3 for
allowed keep-alive requests (serve leaves out the mitmdump addons nothing asked for).

With two CPUs or more, the proxies run on a CPU of their own and nginx and wrk on another:
the proxy is what is measured, and on a shared CPU the scheduler's choices between the three
processes move a run by more than the difference sought. Each proxy gets one unmeasured warm-up
run first.

With `--against REV` a third proxy runs robotsgate as it was at that git revision (checked out
into a temporary worktree, run with this checkout's mitmproxy), in the same rounds: the table
then also gives that revision's figures and this checkout's rps over it, measured back to back.

Needs nginx and wrk (Debian: `apt-get install -y nginx wrk && service nginx stop`).

    .venv/bin/python scripts/bench_proxy.py [--seconds 5] [--rounds 5] [--against REV]
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MITMDUMP = Path(sys.executable).with_name("mitmdump")
TICKS = os.sysconf("SC_CLK_TCK")
# The CPUs this process may use: the last for the proxies, the others for nginx and wrk (which
# inherit this process's). One CPU: everything shares it.
_CPUS = sorted(os.sched_getaffinity(0))
PROXY_CPUS = {_CPUS[-1]} if len(_CPUS) > 1 else set()
LOAD_CPUS = set(_CPUS[:-1]) if len(_CPUS) > 1 else set(_CPUS)
ROBOTS = REPO.parent / "shared" / "bench" / "proxy-robots.txt"
USER_AGENT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
REFUSED = "google-block-0/page.html"
PAGE = b"<!doctype html><html><head><title>page</title></head><body>" + b"x" * 900 + \
    b"</body></html>\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not start on port {port}")


def start_nginx(workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    www = workdir / "www"
    www.mkdir()
    workdir.chmod(0o755)  # nginx's workers run as an unprivileged user
    # ../shared/bench's file (about 200 rules); the bots are Googlebot, whose group has no
    # Crawl-delay and disallows /google-block-0/.
    (www / "robots.txt").write_bytes(ROBOTS.read_bytes())
    (www / "page.html").write_bytes(PAGE)
    (www / "private.html").write_bytes(PAGE)
    config = workdir / "nginx.conf"
    config.write_text(f"""
worker_processes 1;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx-error.log;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 100000000;
    types {{ text/html html; text/plain txt; }}
    server {{ listen 127.0.0.1:{port}; root {www}; }}
}}
""")
    process = subprocess.Popen(["nginx", "-c", str(config), "-p", str(workdir)],
                               stderr=subprocess.DEVNULL)
    wait_for(port, process, "nginx")
    return process, port


def start_mitmdump(workdir: Path, name: str, checkout: Path | None, serve: bool = False
                   ) -> tuple[subprocess.Popen[bytes], int]:
    """Plain mitmdump (`checkout` None), mitmdump with the robotsgate of `checkout`, or
    (`serve`) that checkout's `robotsgate serve`."""
    port = free_port()
    args = [str(MITMDUMP), "-q", "--listen-host", "127.0.0.1", "--listen-port", str(port),
            "--set", f"confdir={workdir / name}"]
    if serve:
        args[:1] = [sys.executable, "-m", "robotsgate", "serve"]
    env = dict(os.environ)
    if checkout is not None:
        args += [] if serve else ["-s", str(checkout / "addon.py")]
        args += ["--set", f"robots_audit_log={workdir}/{name}.jsonl"]
        if "egress_allow" in (checkout / "robotsgate" / "options.py").read_text():
            args += ["--set", "robots_egress_allow=127.0.0.1"]  # nginx is on loopback
        env["PYTHONPATH"] = str(checkout)  # its robotsgate, before this checkout's
    process = subprocess.Popen(args, cwd=checkout or REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=env)
    if PROXY_CPUS:
        os.sched_setaffinity(process.pid, PROXY_CPUS)
    wait_for(port, process, name)
    return process, port


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


@dataclass(frozen=True)
class Run:
    rps: float
    p50_ms: float
    cpu_us: float  # proxy CPU per request


_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def wrk(proxy_port: int, proxy_pid: int, url: str, connections: int, close: bool,
        seconds: int, workdir: Path) -> Run:
    script = workdir / "target.lua"
    host = url.split("/")[2]
    script.write_text(
        f'wrk.path = "{url}"\nwrk.headers["Host"] = "{host}"\n'
        f'wrk.headers["User-Agent"] = "{USER_AGENT}"\n'
        + ('wrk.headers["Connection"] = "close"\n' if close else ""))
    before = cpu_seconds(proxy_pid)
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script),
         f"http://127.0.0.1:{proxy_port}"], capture_output=True, text=True, check=True).stdout
    cpu = cpu_seconds(proxy_pid) - before
    requests = int(re.search(r"(\d+) requests in", out)[1])  # type: ignore[index]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", out)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if requests == 0:
        raise SystemExit(f"wrk made no request:\n{out}")
    if errors and REFUSED not in url:  # only the 403 path may answer anything but 2xx
        raise SystemExit(f"unexpected error answers:\n{out}")
    return Run(rps, float(p50[1]) * _UNIT_MS[p50[2]] if p50 else float("nan"),
               cpu / requests * 1e6)


def _cpus(cpus: set[int]) -> str:
    return ",".join(map(str, sorted(cpus)))


def worktree(rev: str, into: Path) -> Path:
    """This repository at `rev`, checked out into `into` (removed with it)."""
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(into), rev],
                   check=True)
    return into


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=5, help="length of each wrk run")
    parser.add_argument("--rounds", type=int, default=5, help="alternating runs per cell")
    parser.add_argument("--concurrency", default="1,10,50")
    parser.add_argument("--against", metavar="REV",
                        help="also measure robotsgate at this git revision, in the same rounds")
    args = parser.parse_args()
    for tool in ("nginx", "wrk"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing: apt-get install -y nginx wrk && "
                             "service nginx stop")

    os.sched_setaffinity(0, LOAD_CPUS)  # before nginx and wrk start: they inherit it
    with tempfile.TemporaryDirectory(prefix="robotsgate-bench-") as tmp:
        workdir = Path(tmp)
        checkouts: dict[str, Path | None] = {"plain": None, "gate": REPO, "serve": REPO}
        if args.against:
            checkouts["then"] = worktree(args.against, workdir / "then")
        nginx, origin_port = start_nginx(workdir)
        started = {name: start_mitmdump(workdir, name, checkout, serve=name == "serve")
                   for name, checkout in checkouts.items()}
        try:
            origin = f"http://127.0.0.1:{origin_port}"
            for name, (_, port) in started.items():
                if name != "plain":  # robots.txt cached before anything is measured
                    proxy = urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"})
                    opener = urllib.request.build_opener(proxy)
                    opener.addheaders = [("User-Agent", USER_AGENT)]
                    opener.open(f"{origin}/page.html").read()
            for process, port in started.values():  # warm-up
                wrk(port, process.pid, f"{origin}/page.html", 10, False, 2, workdir)
            print(f"robotsgate vs plain mitmdump; nginx origin; wrk, {args.rounds} rotating "
                  f"runs of {args.seconds:g} s per cell, medians; CPU is the proxy's per request")
            if args.against:
                print(f"then: robotsgate at {args.against}; now: this checkout")
            print(f"proxies on CPU {_cpus(PROXY_CPUS) or 'shared'}, nginx and wrk on CPU "
                  f"{_cpus(LOAD_CPUS)}")
            names = list(started)
            shown = {"plain": "plain", "gate": "now" if args.against else "gate", "then": "then",
                     "serve": "serve"}
            head = " | ".join(f"{shown[n] + ' rps':>9} {'cpu µs':>6}" for n in names)
            ratios_head = "gate/plain (range)  serve/plain (range)" + \
                ("  now/then (range)" if args.against else "")
            print(f"{'path':9} {'conn':10} {'c':>3} | {head} | {ratios_head}")
            worst = worst_serve = float("inf")
            for path in ("page.html", REFUSED):
                for close in (False, True):
                    for c in (int(x) for x in args.concurrency.split(",")):
                        runs: dict[str, list[Run]] = {n: [] for n in names}
                        for round_ in range(args.rounds):
                            # The order turns each round: a drift in the machine's speed during
                            # the cell weighs on all alike.
                            turn = round_ % len(names)
                            for name in names[turn:] + names[:turn]:
                                process, port = started[name]
                                runs[name].append(wrk(port, process.pid, f"{origin}/{path}", c,
                                                      close, args.seconds, workdir))
                        medians = {n: Run(*(statistics.median(getattr(r, f) for r in runs[n])
                                            for f in ("rps", "p50_ms", "cpu_us")))
                                   for n in names}
                        # Each round's runs ran back to back: the median of their ratios.
                        ratios = [g.rps / p.rps
                                  for p, g in zip(runs["plain"], runs["gate"], strict=True)]
                        ratio = statistics.median(ratios)
                        cells = " | ".join(f"{medians[n].rps:9.0f} {medians[n].cpu_us:6.0f}"
                                           for n in names)
                        text = f"{ratio:5.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
                        served = [g.rps / p.rps
                                  for p, g in zip(runs["plain"], runs["serve"], strict=True)]
                        text += (f"    {statistics.median(served):5.2f} "
                                 f"({min(served):.2f}-{max(served):.2f})")
                        if args.against:
                            over = [g.rps / t.rps
                                    for t, g in zip(runs["then"], runs["gate"], strict=True)]
                            text += (f"  {statistics.median(over):5.2f} "
                                     f"({min(over):.2f}-{max(over):.2f})")
                        if path == "page.html":
                            worst = min(worst, ratio)
                            if not close:
                                worst_serve = min(worst_serve, statistics.median(served))
                        label = "allowed" if path == "page.html" else "403"
                        print(f"{label:9} {'close' if close else 'keep-alive':10} {c:>3} | "
                              f"{cells} | {text}", flush=True)
            print(f"target: allowed gate/plain >= 0.95 in every cell: worst {worst:.2f}, "
                  f"{'met' if worst >= 0.95 else 'NOT met'}")
            print(f"target: allowed keep-alive serve/plain >= 1.3: worst {worst_serve:.2f}, "
                  f"{'met' if worst_serve >= 1.3 else 'NOT met'}")
        finally:
            for process, _ in started.values():
                process.terminate()
                process.wait(timeout=10)
            nginx.terminate()
            nginx.wait(timeout=10)
            if args.against:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(workdir / "then")], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
