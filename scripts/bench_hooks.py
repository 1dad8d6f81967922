"""robotsgate's hooks timed alone: what one allowed request costs in robotsgate's own code.

In one process, no network: mitmproxy's own addon manager (taddons) runs the four HTTP hooks of
one allowed flow (requestheaders, request, responseheaders, response) on `RobotsGate`, its
robots.txt cached, as the proxy runs them; and, to tell what the split into small addons costs,
the addon manager's walk over robotsgate's addon tree alone (each hook looks every addon up),
against one addon. Prints microseconds per flow, the median of `--rounds` rounds.

Also an https flow, and one signed for Web Bot Auth (a revision that can): what signing costs
a request, and what making one signature costs (a request to a site not visited in the same
second pays it).

With `--against REV`, the same is measured for robotsgate at that git revision (checked out into
a temporary worktree, run in a process of its own), interleaved round by round.

    .venv/bin/python scripts/bench_hooks.py [--flows 20000] [--rounds 5] [--against REV]
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ROBOTS = b"User-agent: *\nDisallow: /private\n"
HOOKS = ("requestheaders", "request", "responseheaders", "response")


def measure(flows: int) -> dict[str, float]:
    """µs per allowed flow through RobotsGate's hooks, and µs per hook event for the addon
    manager's walk over its addon tree and over a single addon (this process's robotsgate)."""
    import httpx
    from mitmproxy import http
    from mitmproxy.addonmanager import traverse
    from mitmproxy.proxy.layers import http as layers
    from mitmproxy.test import taddons, tflow

    try:
        from robotsgate.mitm import RobotsGate
    except ImportError:  # a revision whose addon was one module
        from robotsgate.addon import RobotsGate  # type: ignore[no-redef]

    async def lookup(host: str, port: int) -> list[str]:
        return ["203.0.113.10"]

    def robots(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=ROBOTS)

    kwargs: dict[str, Any] = {"transport": httpx.MockTransport(robots)}
    try:
        root = RobotsGate(lookup=lookup, **kwargs)
    except TypeError:  # a revision before names were resolved
        root = RobotsGate(**kwargs)
    result: dict[str, float] = {}
    with taddons.context(root) as tctx:
        tctx.configure(root, robots_audit_log=os.devnull)
        manager = tctx.master.addons
        hooks = (layers.HttpRequestHeadersHook, layers.HttpRequestHook,
                 layers.HttpResponseHeadersHook, layers.HttpResponseHook)

        scheme = ["http"]

        def flow() -> http.HTTPFlow:
            f = tflow.tflow()
            f.request.url = f"{scheme[0]}://example.com/page"
            f.request.headers["Host"] = "example.com"
            f.request.headers["User-Agent"] = "TestBot/1.0"
            return f

        async def run(count: int) -> float:
            made = [flow() for _ in range(count)]
            for f in made:
                f.response = None
            start = time.perf_counter()
            for f in made:
                for hook in hooks[:2]:
                    await manager.invoke_addon(root, hook(f))
                f.response = http.Response.make(200, b"page", {"Content-Type": "text/plain"})
                for hook in hooks[2:]:
                    await manager.invoke_addon(root, hook(f))
            return (time.perf_counter() - start) / count * 1e6

        loop = asyncio.new_event_loop()
        loop.run_until_complete(run(200))  # robots.txt fetched and cached, code warm
        result["flow_us"] = loop.run_until_complete(run(flows))
        scheme[0] = "https"
        loop.run_until_complete(run(200))
        result["https_us"] = loop.run_until_complete(run(flows))
        signed = _signing(tctx, root)
        if signed is not None:  # a revision that signs requests (Web Bot Auth)
            loop.run_until_complete(run(200))
            result["signed_us"] = loop.run_until_complete(run(flows))
            result["signature_us"] = signed
        loop.close()

        class One:
            def requestheaders(self, f: object) -> None:
                pass

        for name, tree in (("walk_tree_us", root), ("walk_one_us", One())):
            start = time.perf_counter()
            for _ in range(flows):
                for hook_name in HOOKS:
                    for addon in traverse([tree]):
                        getattr(addon, hook_name, None)
            result[name] = (time.perf_counter() - start) / flows * 1e6
    return result


def _signing(tctx: Any, root: Any) -> float | None:
    """Turn request signing on (a fresh key); µs per signature made (one per origin and
    second: every request of a crawl that visits each site less than once a second). None for
    a revision that cannot sign."""
    try:
        from robotsgate.signing import keys as signing_keys
        from robotsgate.signing.messages import Signer
    except ImportError:  # a revision before the packages by concern
        try:
            from robotsgate.httpsig import Signer  # type: ignore[no-redef]

            from robotsgate import signing as signing_keys  # type: ignore[no-redef]
        except ImportError:
            return None
    folder = tempfile.mkdtemp(prefix="robotsgate-key-")
    key = signing_keys.generate(os.path.join(folder, "key.pem"))
    tctx.configure(root, robots_signing_key=key.path,
                   robots_signature_agent="https://bots.example/directory")
    signer = Signer(key, "https://bots.example/directory")
    start = time.perf_counter()
    for n in range(2000):
        signer.fields(f"site{n}.example", 1_700_000_000.0)
    return (time.perf_counter() - start) / 2000 * 1e6


def child(checkout: Path, flows: int) -> dict[str, float]:
    """`measure` in a process of its own, with the robotsgate of `checkout`."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, __file__, "--child", str(flows)], env=env,
                          capture_output=True, text=True, check=True, cwd=checkout)
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flows", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", metavar="REV")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)))
        return 0
    with tempfile.TemporaryDirectory(prefix="robotsgate-hooks-") as tmp:
        checkouts = {"now": REPO}
        if args.against:
            then = Path(tmp) / "then"
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q",
                            str(then), args.against], check=True)
            checkouts["then"] = then
        try:
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
            for _ in range(args.rounds):
                for name, checkout in checkouts.items():
                    runs[name].append(child(checkout, args.flows))
        finally:
            if args.against:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(Path(tmp) / "then")], check=False)
    print(f"µs per allowed flow, 4 HTTP hooks through mitmproxy's addon manager, robots.txt "
          f"cached; medians of {args.rounds} rounds of {args.flows:,} flows")
    for name, results in runs.items():
        med = {key: statistics.median(r[key] for r in results) for key in results[0]}
        label = f"{name} ({args.against})" if name == "then" else name
        print(f"{label:>22}: flow {med['flow_us']:6.1f} µs; addon tree walked 4 times "
              f"{med['walk_tree_us']:5.1f} µs (one addon: {med['walk_one_us']:4.1f} µs)")
        if "signed_us" in med:
            print(f"{'':>22}  https flow {med['https_us']:6.1f} µs, signed (one origin, its "
                  f"signature made once a second) {med['signed_us']:6.1f} µs "
                  f"({med['signed_us'] / med['https_us']:.2f}x); a signature made "
                  f"{med['signature_us']:5.1f} µs")
    if args.against:
        now = statistics.median(r["flow_us"] for r in runs["now"])
        then_us = statistics.median(r["flow_us"] for r in runs["then"])
        print(f"now / then: {now / then_us:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
