"""Bots for `robotsgate run`, real programs each: those that honour the proxy settings and
those that ignore them.

`python bots.py [--exit N] JSON` is the command a test gives `robotsgate run`: it runs each bot
of JSON ([[name, argv], ...]) in turn, in the environment the run gave it, and prints one JSON
object {name: {"status": the HTTP status it got or null, "err": what it said}}; then exits N.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
FETCH_MJS = REPO / "deploy" / "clients" / "fetch.mjs"

# --- those that honour the proxy settings -------------------------------------------------------


def curl(url: str) -> list[str]:
    return ["curl", "-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", url]


def requests_get(url: str) -> list[str]:
    return [sys.executable, "-c", "import requests, sys\n"
            "print(requests.get(sys.argv[1], timeout=20).status_code)", url]


def node_proxy(url: str) -> list[str]:
    """Node 20 reads no proxy variable itself: the client recipe that asks the proxy."""
    return ["node", str(FETCH_MJS), url]


# --- those that ignore them -----------------------------------------------------------------------


def curl_direct(url: str) -> list[str]:
    return ["curl", "--noproxy", "*", "-sS", "--max-time", "10", "-o", "/dev/null", "-w",
            "%{http_code}", url]


def python_direct(url: str) -> list[str]:
    """Python's http.client, connecting where the URL says (it reads no proxy variable)."""
    return [sys.executable, "-c", "import http.client, sys, urllib.parse\n"
            "u = urllib.parse.urlsplit(sys.argv[1])\n"
            "c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)\n"
            "c.request('GET', u.path)\n"
            "print(c.getresponse().status)", url]


def node_direct(url: str) -> list[str]:
    """Node's fetch() without NODE_USE_ENV_PROXY (and Node 20 reads it in no case)."""
    return ["env", "-u", "NODE_USE_ENV_PROXY", "node", "-e",
            "fetch(process.argv[1], {signal: AbortSignal.timeout(10000)})"
            ".then(r => console.log(r.status))"
            ".catch(e => { console.error(String(e.cause || e)); process.exit(1); })", url]


def _status(out: str) -> int | None:
    for line in reversed(out.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):  # fetch.mjs: one JSON object per URL
            return int(json.loads(line)["status"])
        if line.isdigit() and line != "000":  # curl's %{http_code} is 000 without an answer
            return int(line)
    return None


def main(argv: list[str]) -> int:
    status = 0
    if argv[:1] == ["--exit"]:
        status, argv = int(argv[1]), argv[2:]
    results = {}
    for name, command in json.loads(argv[0]):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=40)
            results[name] = {"status": _status(done.stdout), "err": done.stderr[-2000:]}
        except subprocess.TimeoutExpired:
            results[name] = {"status": None, "err": "timed out"}
    print(json.dumps(results), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
