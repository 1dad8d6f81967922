"""What `robotsgate run` costs: its own start-up on top of the proxy's, and what --capture
costs per request against the proxy variables.

Start-up (any user): in alternating rounds, `robotsgate serve` alone (from its start until it
says what is in force, the moment `run` waits for) and `robotsgate run [--sealed] -- CMD` (from
its start until CMD runs: CMD prints the monotonic clock, which every process of the machine
shares). The run's own start-up is the difference of the medians. Target: under 1 s.

Capture (root; with `--capture-rounds 0` left out): an origin in a network namespace of its own
(ip netns, a veth pair; robots.txt allowing everything, no Crawl-delay), and one client program
making requests over one keep-alive connection (http.client) for `--seconds`: through the proxy
variables under `robotsgate run`, and connecting directly under `robotsgate run --capture`
(mitmproxy's TUN mode), in alternating rounds. Requests/s of each and their ratio (median of the
rounds' ratios, with their range).

    .venv/bin/python scripts/bench_run.py [--rounds 7] [--capture-rounds 5] [--seconds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROBOTSGATE = [sys.executable, "-m", "robotsgate"]
# Run by root, a sealed bot is an unprivileged user's (robotsgate run --user): nobody, with the
# machine's own Python, which any user can run (this interpreter may be in root's home). The
# unsealed runs use the same, so that every round starts the same CMD.
AS_ROOT = os.geteuid() == 0
BOT_USER = ["--user", "nobody"] if AS_ROOT else []
BOT_PYTHON = (shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3") if AS_ROOT \
    else sys.executable
CLOCK = [BOT_PYTHON, "-c", "import time; print(time.monotonic())"]

CLIENT = """\
import http.client, json, os, sys, time, urllib.parse
url = urllib.parse.urlsplit(sys.argv[1])
seconds = float(sys.argv[2])
proxied = sys.argv[3] == "proxy"
if proxied:
    proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
    connection = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=30)
    target = sys.argv[1]
else:
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    target = url.path
done, start = 0, time.monotonic()
while time.monotonic() - start < seconds:
    connection.request("GET", target, headers={"Host": url.netloc})
    response = connection.getresponse()
    response.read()
    assert response.status == 200, response.status
    done += 1
print(json.dumps({"requests": done, "seconds": time.monotonic() - start}))
"""


def serve_ready(workdir: Path) -> float:
    """Seconds from starting `robotsgate serve` to its start-up line."""
    start = time.monotonic()
    process = subprocess.Popen(
        [*ROBOTSGATE, "serve", "--listen-port", "0", "--set", f"confdir={workdir / 'conf'}",
         "--set", f"robots_audit_log={workdir / 'audit.jsonl'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if b"robotsgate: obeying robots.txt" in line:
                return time.monotonic() - start
        raise SystemExit(f"serve did not start: exit {process.wait()}")
    finally:
        process.terminate()
        process.wait(timeout=30)


def run_ready(workdir: Path, *options: str) -> tuple[float, float]:
    """Seconds from starting `robotsgate run OPTIONS -- CMD` to CMD running, and to the run's
    end (the proxy stopped, the summary printed)."""
    start = time.monotonic()
    done = subprocess.run(
        [*ROBOTSGATE, "run", *options, "--set", f"confdir={workdir / 'conf'}",
         "--set", f"robots_audit_log={workdir / 'audit.jsonl'}", "--", *CLOCK],
        capture_output=True, text=True, timeout=120)
    ended = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"robotsgate run failed: {done.stderr}")
    return float(done.stdout.strip()) - start, ended


def startup(rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-run-") as scratch:
        workdir = Path(scratch)
        serve_ready(workdir)  # the CA made once, outside the rounds
        serves, runs, sealed, ends = [], [], [], []
        for i in range(rounds):
            order = [0, 1, 2] if i % 2 == 0 else [2, 1, 0]
            for which in order:
                if which == 0:
                    serves.append(serve_ready(workdir))
                elif which == 1:
                    ready, ended = run_ready(workdir)
                    runs.append(ready)
                    ends.append(ended)
                else:
                    sealed.append(run_ready(workdir, "--sealed", *BOT_USER)[0])
    serve, plain, seal = (statistics.median(x) for x in (serves, runs, sealed))
    print(f"start-up, median of {rounds} rounds (s): serve ready {serve:.3f} "
          f"[{min(serves):.3f}-{max(serves):.3f}]; run, CMD running {plain:.3f} "
          f"[{min(runs):.3f}-{max(runs):.3f}], --sealed {seal:.3f} "
          f"[{min(sealed):.3f}-{max(sealed):.3f}]; run to its end {statistics.median(ends):.3f}")
    print(f"the run's own start-up on top of the proxy's: {plain - serve:+.3f} s, "
          f"--sealed {seal - serve:+.3f} s (target < 1 s)")


# --- capture ---------------------------------------------------------------------------------


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def origin_namespace() -> Iterator[tuple[str, int]]:
    """An origin on 10.x.y.2 in a namespace of its own: (address, port)."""
    tag = secrets.token_hex(3)
    third, name = secrets.randbelow(256), f"rgb{tag}"
    host, address = f"10.251.{third}.1", f"10.251.{third}.2"
    ip("netns", "add", name)
    try:
        ip("link", "add", f"rgbh{tag}", "type", "veth", "peer", "name", f"rgbi{tag}")
        ip("link", "set", f"rgbi{tag}", "netns", name)
        ip("addr", "add", f"{host}/30", "dev", f"rgbh{tag}")
        ip("link", "set", f"rgbh{tag}", "up")
        ip("-n", name, "addr", "add", f"{address}/30", "dev", f"rgbi{tag}")
        ip("-n", name, "link", "set", f"rgbi{tag}", "up")
        ip("-n", name, "link", "set", "lo", "up")
        made: list[http.server.ThreadingHTTPServer] = []

        def build() -> None:
            fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
            os.setns(fd, os.CLONE_NEWNET)
            os.close(fd)
            made.append(http.server.ThreadingHTTPServer((address, 0), _Page))

        thread = threading.Thread(target=build)
        thread.start()
        thread.join()
        server = made[0]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield address, server.server_address[1]
        finally:
            server.shutdown()
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            ip("link", "del", f"rgbh{tag}")
        ip("netns", "del", name)


class _Page(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b"User-agent: *\nAllow: /\n"

    def do_GET(self) -> None:
        # One write: headers and body in two segments would wait for a delayed ACK each time.
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(self.body), self.body))

    def log_message(self, format: str, *args: object) -> None:
        pass


def through(workdir: Path, address: str, url: str, seconds: int, capture: bool) -> float:
    options = ["--capture", *BOT_USER] if capture else []
    done = subprocess.run(
        [*ROBOTSGATE, "run", "--agent", "BenchBot", *options,
         "--set", f"confdir={workdir / 'conf'}", "--set", f"robots_audit_log={workdir / 'a'}",
         "--set", f"robots_egress_allow={address}", "--",
         BOT_PYTHON, "-c", CLIENT, url, str(seconds), "direct" if capture else "proxy"],
        capture_output=True, text=True, timeout=seconds + 120)
    if done.returncode != 0:
        raise SystemExit(f"robotsgate run failed: {done.stderr}")
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    return float(measured["requests"] / measured["seconds"])


def capture(rounds: int, seconds: int) -> None:
    if os.geteuid() != 0:
        print("capture: needs root (robotsgate run --capture), left out")
        return
    with tempfile.TemporaryDirectory(prefix="bench-run-") as scratch, \
            origin_namespace() as (address, port):
        workdir = Path(scratch)
        url = f"http://{address}:{port}/page"
        through(workdir, address, url, 1, False)  # warm-up, and robots.txt's first fetch path
        regular, captured = [], []
        for i in range(rounds):
            for capture_it in ([False, True] if i % 2 == 0 else [True, False]):
                (captured if capture_it else regular).append(
                    through(workdir, address, url, seconds, capture_it))
    ratios = [c / r for c, r in zip(captured, regular, strict=True)]
    print(f"keep-alive, one client, {seconds} s per round, {rounds} rounds: proxy variables "
          f"{statistics.median(regular):.0f} req/s, --capture (TUN) "
          f"{statistics.median(captured):.0f} req/s; capture / proxy "
          f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--capture-rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    os.chdir(REPO)
    startup(args.rounds)
    if args.capture_rounds:
        capture(args.capture_rounds, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
