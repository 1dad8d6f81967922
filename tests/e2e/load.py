"""Other traffic: a busy proxy, as a fleet's proxies are busy in production.

`OtherTraffic` runs, in a process of its own (so that it takes nothing from the origins that
record arrival times in the test's process), a fast keep-alive origin and keep-alive clients that
ask it through each given proxy as fast as they are answered, until stopped.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from types import TracebackType

from .machine import clean_env, free_port

# argv: origin port, clients per proxy, proxy URLs. Prints "ready", then on stdin's end the
# number of answers it got.
_SCRIPT = r"""
import asyncio, os, sys, httpx

async def serve(reader, writer):
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()

async def main(port, clients, proxies):
    server = await asyncio.start_server(serve, "127.0.0.1", port, backlog=1024)
    stop = asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    answered = 0
    async def worker(client, n):
        nonlocal answered
        while not stop.done():
            try:
                await client.get(f"http://127.0.0.1:{port}/load/{n}")
                answered += 1
            except httpx.HTTPError:
                await asyncio.sleep(0.01)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    sessions = [httpx.AsyncClient(proxy=p, trust_env=False, timeout=30, limits=limits)
                for p in proxies]
    print("ready", flush=True)
    await asyncio.gather(*(worker(c, n) for c in sessions for n in range(clients)))
    print(answered, flush=True)
    os._exit(0)  # the proxies' connections to the origin are still open: no orderly goodbye

asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]))
"""


class OtherTraffic:
    """`with OtherTraffic(proxy_urls) as load:` ... `load.rate` (answers per second) after."""

    def __init__(self, proxy_urls: Sequence[str], clients: int = 16) -> None:
        self._args = [sys.executable, "-c", _SCRIPT, str(free_port()), str(clients),
                      *proxy_urls]
        self._process: subprocess.Popen[str] | None = None
        self._started = 0.0
        self.answered = 0
        self.rate = 0.0

    def __enter__(self) -> OtherTraffic:
        self._process = subprocess.Popen(self._args, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, env=clean_env())
        assert self._process.stdout is not None
        if self._process.stdout.readline().strip() != "ready":
            self._process.kill()
            raise RuntimeError("the traffic generator did not start")
        self._started = time.monotonic()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        assert self._process is not None
        try:
            out, _ = self._process.communicate("", timeout=60)
            self.answered = int(out.strip() or 0)
            self.rate = self.answered / max(time.monotonic() - self._started, 1e-9)
        finally:
            if self._process.poll() is None:
                self._process.kill()
                self._process.wait()
