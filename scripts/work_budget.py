"""The work robotsgate does per decision and per request, counted, against its stored budget.

    .venv/bin/python scripts/work_budget.py           # measured, budget, ratio
    .venv/bin/python scripts/work_budget.py --write   # store what was measured as the budget

Work is lines of robotsgate's own Python executed (sys.settrace), which is the same on every
machine and every run: no clock is read. tests/test_work_budget.py fails when a measure exceeds
its budget in tests/work_budget.json by more than TOLERANCE, so a change that makes the hot path
do markedly more work fails CI however fast the machine is. A change that does less work may
lower the budget with --write (and says so in its commit).

Measures:
- decision, shop: a RobotsTxt decision, per request of ../shared/bench's shop workload (its
  first 2,000 requests, the file parsed and its groups compiled first);
- allowed flow / refused flow: one request's four HTTP hooks (requestheaders, request,
  responseheaders, response) on the addon, as mitmproxy's addon manager runs them (taddons), its
  robots.txt cached: a request forwarded, and one answered 403 and written to the audit log.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO.parent / "shared" / "bench"
BUDGET = REPO / "tests" / "work_budget.json"
PACKAGE = str(REPO / "robotsgate") + os.sep
TOLERANCE = 1.25  # a measure may exceed its budget by this factor before the test fails
SHOP_REQUESTS = 2000
FLOWS = 200


class Lines:
    """Counts the lines of robotsgate's Python run while it is active."""

    def __init__(self) -> None:
        self.count = 0
        self._ours: dict[str, bool] = {}

    def _trace(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        name = frame.f_code.co_filename
        ours = self._ours.get(name)
        if ours is None:
            ours = self._ours[name] = name.startswith(PACKAGE)
        if not ours:
            return None
        if event == "line":
            self.count += 1
        return self._trace

    @contextmanager
    def counting(self) -> Iterator[Lines]:
        previous = sys.gettrace()
        sys.settrace(self._trace)
        try:
            yield self
        finally:
            sys.settrace(previous)


def shop_decision() -> float:
    """Lines per decision of the shop workload."""
    from robotsgate.protocol import RobotsTxt

    robots = RobotsTxt.parse((BENCH / "shop-robots.txt").read_text())
    rows = [line.split("\t") for line in
            (BENCH / "shop-requests.tsv").read_text().splitlines()[1:SHOP_REQUESTS + 1]]
    for agent, url in rows:  # every group compiled, before counting
        robots.decide(agent, url)
    lines = Lines()
    with lines.counting():
        for agent, url in rows:
            robots.decide(agent, url)
    return lines.count / len(rows)


def flows() -> dict[str, float]:
    """Lines per allowed and per refused flow through the addon's four HTTP hooks."""
    import httpx
    from mitmproxy import http
    from mitmproxy.proxy.layers import http as layers
    from mitmproxy.test import taddons, tflow

    from robotsgate.mitm import RobotsGate

    async def lookup(host: str, port: int) -> list[str]:
        return ["203.0.113.10"]

    # The proxy benchmark's file, without its Crawl-delay (pacing is waiting, not work).
    body = b"".join(line for line in (BENCH / "proxy-robots.txt").read_bytes().splitlines(True)
                    if not line.lower().startswith(b"crawl-delay"))

    def robots(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body)

    root = RobotsGate(lookup=lookup, transport=httpx.MockTransport(robots))
    hooks = (layers.HttpRequestHeadersHook, layers.HttpRequestHook,
             layers.HttpResponseHeadersHook, layers.HttpResponseHook)
    result: dict[str, float] = {}
    with taddons.context(root) as tctx:
        tctx.configure(root, robots_audit_log=os.devnull, robots_agent="BenchBot")
        manager = tctx.master.addons

        def flow(path: str) -> http.HTTPFlow:
            f = tflow.tflow()
            f.request.url = f"http://example.com{path}"
            f.request.headers["Host"] = "example.com"
            f.request.headers["User-Agent"] = "BenchBot/1.0"
            return f

        async def run(path: str, count: int) -> int:
            made = [flow(path) for _ in range(count)]
            refused = 0
            for f in made:
                f.response = None
                for hook in hooks[:2]:
                    await manager.invoke_addon(root, hook(f))
                if f.response is None:
                    f.response = http.Response.make(200, b"page", {"Content-Type": "text/plain"})
                else:
                    refused += 1
                for hook in hooks[2:]:
                    await manager.invoke_addon(root, hook(f))
            return refused

        loop = asyncio.new_event_loop()
        try:
            for name, path, refused in (("allowed flow", "/", 0),
                                        ("refused flow", "/private/x", FLOWS)):
                loop.run_until_complete(run(path, 20))  # robots.txt cached, code warm
                lines = Lines()
                with lines.counting():
                    got = loop.run_until_complete(run(path, FLOWS))
                assert got == refused, (name, got)
                result[name] = lines.count / FLOWS
        finally:
            loop.close()
    return result


def measure() -> dict[str, float]:
    return {"decision, shop": shop_decision(), **flows()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"store the measures in {BUDGET}")
    args = parser.parse_args()
    measured = measure()
    budget = json.loads(BUDGET.read_text()) if BUDGET.exists() else {}
    print(f"{'measure':<18}{'lines':>10}{'budget':>10}{'ratio':>8}")
    for name, lines in measured.items():
        stored = budget.get(name)
        ratio = f"{lines / stored:.2f}" if stored else "-"
        print(f"{name:<18}{lines:>10.1f}{stored or float('nan'):>10.1f}{ratio:>8}")
    if args.write:
        BUDGET.write_text(json.dumps({k: round(v, 1) for k, v in measured.items()}, indent=2)
                          + "\n")
        print(f"written to {BUDGET}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
