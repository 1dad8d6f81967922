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
same count to a few parts in ten thousand, on any machine of the same architecture and Python.

Instructions are not time: a cache miss costs more than an instruction, and robotsgate's code,
run once per request, finds the caches colder than mitmproxy's loops do. In bench_proxy.py the
gate's share of the CPU has read about twice its share of instructions. Use this to compare
revisions and to find where work goes; state the targets with bench_proxy.py.

    .venv/bin/python scripts/bench_instructions.py [--requests 200] [--against REV]

Needs valgrind (Debian: apt-get install valgrind). About half a minute per proxy.
"""

import argparse
import http.client
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
    start_nginx,
    worktree,
)

WARM = 30  # requests before counting: robots.txt fetched and cached, every path run once
EMPTY_HOOKS = REPO / "scripts" / "bench_empty_hooks.py"


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200,
                        help="requests counted per path and proxy (default 200)")
    parser.add_argument("--against", metavar="REV",
                        help="also count robotsgate at this git revision (its gate)")
    args = parser.parse_args()
    if args.requests < 1:
        parser.error("--requests must be at least 1")
    for tool in ("valgrind", "callgrind_control", "nginx"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (Debian: apt-get install "
                             f"{'valgrind' if tool != 'nginx' else 'nginx'})")
    with tempfile.TemporaryDirectory(prefix="robotsgate-instructions-") as tmp:
        workdir = Path(tmp)
        nginx, origin, _ = start_nginx(workdir, False)
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
