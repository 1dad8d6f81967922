"""Instructions the proxy runs per request, counted: plain mitmdump, a script whose hooks do
nothing, and `mitmdump -s addon.py` (gate), and with `--against REV` that revision's gate, in
the same run.

scripts/bench_proxy.py measures requests/s, which is what the targets are stated in, but on a
shared machine its rounds move by 5 to 20%: a change worth a few per cent cannot be told from
the machine. This counts instead. Each proxy runs under valgrind (callgrind, counting only
between the two marks), behind it the nginx origin of bench_proxy.py with its robots.txt
cached, and one keep-alive client sends it `--requests` requests for the allowed page, then as
many for the path robotsgate answers 403: the instructions the whole process ran (mitmproxy,
robotsgate, the interpreter, the C libraries) divided by the requests. The same code gives the
same count to within 0.2 to 0.5% from one run to the next (up to about 40,000 instructions a
request: the interpreter's collections and the event loop's timers do not fall in the same
place each time), on any machine of the same architecture and Python: about a tenth of what
the gate adds.

With `--hooks`, robotsgate's own hooks are counted instead, in one process and without a
network, which tells changes of a few hundred instructions apart (runs agree to 0.1%):
mitmproxy's addon manager (taddons) runs the four HTTP hooks (requestheaders, request,
responseheaders, response) of one flow after another on the gate, for the allowed page and the
refused path of the whole-proxy count, with the same User-Agent, robots.txt (fetched through a
mock transport, then cached) and page. Only what runs inside one `itertools.starmap` call is
counted (callgrind's --toggle-collect), which runs the flows and nothing else: the instructions
per flow include the event loop that awaits the hooks, and not mitmproxy's proxying.

Instructions are not time: a cache miss costs more than an instruction, and robotsgate's code,
run once per request, finds the caches colder than mitmproxy's loops do. In bench_proxy.py the
gate's share of the CPU has read about twice its share of instructions. Use this to compare
revisions and to find where work goes; state the targets with bench_proxy.py.

    .venv/bin/python scripts/bench_instructions.py [--requests 200] [--against REV] [--hooks]
        [--page small|article|FILE]

Needs valgrind (Debian: apt-get install valgrind), and for the whole proxy nginx. About half a
minute per proxy, or per path and revision with --hooks.
"""

import argparse
import asyncio
import http.client
import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_proxy import (
    MITMDUMP,
    REFUSED,
    REPO,
    USER_AGENT,
    declares,
    free_port,
    page_named,
    start_nginx,
    worktree,
)

WARM = 30  # requests before counting: robots.txt fetched and cached, every path run once
EMPTY_HOOKS = REPO / "scripts" / "bench_empty_hooks.py"
ROBOTS = REPO.parent / "shared" / "bench" / "proxy-robots.txt"  # what nginx serves, too
PATHS = {"allowed": "page.html", "403": REFUSED}


def start(workdir: Path, name: str, script: Path | None, checkout: Path
          ) -> tuple[subprocess.Popen[bytes], int]:
    """mitmdump under callgrind, counting nothing until told to."""
    port = free_port()
    args = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
            f"--callgrind-out-file={workdir / name}.callgrind", str(MITMDUMP), "-q",
            "--listen-host", "127.0.0.1", "--listen-port", str(port),
            "--set", f"confdir={workdir / name}"]
    if script is not None:
        args += ["-s", str(script)]
    if script is not None and script.name == "addon.py":
        args += ["--set", f"robots_audit_log={workdir / name}.jsonl"]
        if declares(checkout, "egress_allow"):
            args += ["--set", "robots_egress_allow=127.0.0.1"]  # nginx is on loopback
    process = subprocess.Popen(args, cwd=checkout, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONPATH": str(checkout)})
    deadline = time.monotonic() + 300  # mitmproxy starts some 50 times slower under valgrind
    while True:
        if process.poll() is not None:
            raise SystemExit(f"{name}: mitmdump under valgrind exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                raise SystemExit(f"{name}: not listening after 300 s") from None
            time.sleep(0.5)


def control(process: subprocess.Popen[bytes], *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(process.pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def totals(path: Path) -> int:
    """The instructions a callgrind dump counted."""
    for line in path.read_text().splitlines():
        if line.startswith("totals:"):  # at the end ("summary:", at the top, may read 0)
            return int(line.split()[1])
    raise SystemExit(f"{path}: no totals in it")


def measure(workdir: Path, name: str, script: Path | None, checkout: Path, origin: int,
            requests: int) -> dict[str, float]:
    """Instructions per request, for the allowed page and the refused path."""
    process, port = start(workdir, name, script, checkout)
    result: dict[str, float] = {}
    try:
        client = http.client.HTTPConnection("127.0.0.1", port, timeout=300)

        def get(path: str) -> int:
            client.request("GET", f"http://127.0.0.1:{origin}/{path}",
                           headers={"Host": f"127.0.0.1:{origin}", "User-Agent": USER_AGENT})
            response = client.getresponse()
            response.read()
            return response.status

        for dump, (label, path) in enumerate((("allowed", "page.html"), ("403", REFUSED)), 1):
            for _ in range(WARM):
                get(path)
            control(process, "--instr=on")
            statuses = {get(path) for _ in range(requests)}
            control(process, "--instr=off")
            control(process, "--dump")  # written as <out>.<n>, the counters zeroed
            gate = script is not None and script.name == "addon.py"
            # Without robotsgate the refused path is forwarded: nginx has no such page (404).
            want = (403 if gate else 404) if label == "403" else 200
            if statuses != {want}:
                raise SystemExit(f"{name}, {label}: answered {sorted(statuses)}, not {want}")
            dumped = workdir / f"{name}.callgrind.{dump}"
            for _ in range(100):  # callgrind writes the dump on its next scheduling point
                if dumped.exists() and "totals:" in dumped.read_text():
                    break
                time.sleep(0.1)
            result[label] = totals(dumped) / requests
    finally:
        process.terminate()
        process.wait()
    return result


def flows(count: int, label: str, page: bytes) -> None:
    """`count` flows through the gate's hooks, counted inside itertools.starmap (--hooks; the
    robotsgate imported is the one PYTHONPATH names)."""
    import httpx
    from mitmproxy import http
    from mitmproxy.proxy.layers import http as layers
    from mitmproxy.test import taddons, tflow

    from robotsgate.mitm import RobotsGate

    async def lookup(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    def robots(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=ROBOTS.read_bytes())

    gate = RobotsGate(lookup=lookup, transport=httpx.MockTransport(robots))
    hooks = (layers.HttpRequestHeadersHook, layers.HttpRequestHook,
             layers.HttpResponseHeadersHook, layers.HttpResponseHook)
    want = 200 if label == "allowed" else 403
    with taddons.context(gate) as tctx:
        # The origin is on loopback, as nginx is for the whole proxy (robots_egress_allow).
        tctx.configure(gate, robots_audit_log=os.devnull, robots_egress_allow=["127.0.0.1"])
        manager = tctx.master.addons

        def made() -> tuple[http.HTTPFlow, http.Response]:
            f = tflow.tflow()
            f.request.url = f"http://127.0.0.1:8080/{PATHS[label]}"
            f.request.headers["Host"] = "127.0.0.1:8080"
            f.request.headers["User-Agent"] = USER_AGENT
            f.response = None
            return f, http.Response.make(200, page, {"Content-Type": "text/html"})

        async def run(batch: list[tuple[http.HTTPFlow, http.Response]]) -> None:
            for f, response in batch:
                for hook in hooks[:2]:
                    await manager.invoke_addon(gate, hook(f))
                if f.response is None:
                    f.response = response
                for hook in hooks[2:]:
                    await manager.invoke_addon(gate, hook(f))

        loop = asyncio.new_event_loop()
        warm = [made() for _ in range(WARM)]
        loop.run_until_complete(run(warm))
        batch = [made() for _ in range(count)]  # made before counting: not the gate's work
        list(itertools.starmap(loop.run_until_complete, [(run(batch),)]))
        loop.close()
        got = {f.response.status_code for f, _ in warm + batch if f.response is not None}
        if got != {want}:
            raise SystemExit(f"{label}: answered {sorted(got)}, not {want}")


def count_hooks(workdir: Path, name: str, checkout: Path, label: str, count: int,
                page: str) -> float:
    """Instructions per flow of the gate's hooks at `checkout` (--hooks)."""
    out = workdir / f"{name}-{label}.callgrind"
    done = subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=starmap_next",
                           f"--callgrind-out-file={out}", sys.executable, __file__, "--page",
                           page, "--flows", str(count), label],
                          env={**os.environ, "PYTHONPATH": str(checkout)},
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name}, {label}: the counted process failed:\n{done.stderr[-2000:]}")
    return totals(out) / count


def hooks_table(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="robotsgate-instructions-") as tmp:
        workdir = Path(tmp)
        then = worktree(args.against, workdir / "then") if args.against else None
        checkouts = [("gate", REPO)] + ([(f"then ({args.against})", then)] if then else [])
        counted: dict[str, dict[str, float]] = {}
        try:
            for name, checkout in checkouts:
                counted[name] = {label: count_hooks(workdir, name.split()[0], checkout, label,
                                                    args.requests, args.page)
                                 for label in PATHS}
        finally:
            if then is not None:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(then)], check=False)
    print(f"instructions per flow of robotsgate's four HTTP hooks, in one process (callgrind, "
          f"taddons), {args.requests} flows per path after {WARM} uncounted; the allowed page: "
          f"{args.page}")
    print(f"{'robotsgate':22}{'allowed':>12}{'403':>12}")
    for name, got in counted.items():
        print(f"{name:22}{got['allowed']:>12,.0f}{got['403']:>12,.0f}")
    if then is not None:
        now, old = counted["gate"], counted[f"then ({args.against})"]
        print(f"now/then: allowed {now['allowed'] / old['allowed']:.3f} "
              f"({now['allowed'] - old['allowed']:+,.0f}), 403 {now['403'] / old['403']:.3f} "
              f"({now['403'] - old['403']:+,.0f}) (below 1: now runs fewer)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200,
                        help="requests (with --hooks: flows) counted per path and proxy "
                             "(default 200)")
    parser.add_argument("--against", metavar="REV",
                        help="also count robotsgate at this git revision (its gate)")
    parser.add_argument("--hooks", action="store_true",
                        help="count robotsgate's own hooks in one process (no network, no "
                             "nginx) instead of the whole proxy: finer, and the gate only")
    parser.add_argument("--page", default="small",
                        help="the allowed page, as bench_proxy.py's --page: small (the "
                             "default), article or an HTML file")
    parser.add_argument("--flows", nargs=2, metavar=("COUNT", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    page = page_named(args.page)
    if args.flows:  # the process --hooks counts
        flows(int(args.flows[0]), args.flows[1], page)
        return 0
    if args.requests < 1:
        parser.error("--requests must be at least 1")
    if args.hooks:
        if shutil.which("valgrind") is None:
            raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
        return hooks_table(args)
    for tool in ("valgrind", "callgrind_control", "nginx"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (Debian: apt-get install "
                             f"{'valgrind' if tool != 'nginx' else 'nginx'})")
    with tempfile.TemporaryDirectory(prefix="robotsgate-instructions-") as tmp:
        workdir = Path(tmp)
        nginx, origin, _ = start_nginx(workdir, False, page)
        then = worktree(args.against, workdir / "then") if args.against else None
        proxies: list[tuple[str, Path | None, Path]] = [
            ("plain", None, REPO), ("empty hooks", EMPTY_HOOKS, REPO),
            ("gate", REPO / "addon.py", REPO)]
        if then is not None:
            proxies.append((f"then ({args.against})", then / "addon.py", then))
        counted: dict[str, dict[str, float]] = {}
        try:
            for name, script, checkout in proxies:
                counted[name] = measure(workdir, name.split()[0], script, checkout, origin,
                                        args.requests)
        finally:
            nginx.terminate()
            nginx.wait()
            if then is not None:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(then)], check=False)
    plain = counted["plain"]
    print(f"instructions per request (callgrind), keep-alive, {args.requests} requests per "
          f"path after {WARM} uncounted; plain/proxy is what bench_proxy.py's gate/plain would "
          f"read were time proportional to instructions")
    print(f"{'proxy':22}{'allowed':>12}{'over plain':>12}{'plain/proxy':>13}"
          f"{'403':>12}{'plain/proxy':>13}")
    for name, got in counted.items():
        print(f"{name:22}{got['allowed']:>12,.0f}{got['allowed'] - plain['allowed']:>+12,.0f}"
              f"{plain['allowed'] / got['allowed']:>13.3f}{got['403']:>12,.0f}"
              f"{plain['403'] / got['403']:>13.3f}")
    if then is not None:
        now, old = counted["gate"], counted[f"then ({args.against})"]
        print(f"gate now/then: allowed {now['allowed'] / old['allowed']:.3f}, "
              f"403 {now['403'] / old['403']:.3f} (below 1: now runs fewer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
