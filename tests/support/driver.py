"""robotsgate's addons driven as mitmproxy drives them, without a proxy or a network.

`Driven` runs each hook on every addon of a RobotsGate, in order, through mitmproxy's own addon
manager (taddons), so a unit test sees what the proxy would: a request is decided by the
request decision, then takes its turn, and so on.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from mitmproxy import hooks, http
from mitmproxy.proxy import server_hooks
from mitmproxy.proxy.layers import http as http_layer
from mitmproxy.test import taddons

from robotsgate.config.assemble import Clocks
from robotsgate.egress.resolver import Lookup
from robotsgate.mitm import RobotsGate
from robotsgate.mitm.runtime import Runtime


class Driven:
    def __init__(self, root: RobotsGate, tctx: taddons.context) -> None:
        self.root = root
        self.tctx = tctx
        self.runtime: Runtime = root.runtime

    def __getattr__(self, name: str) -> Any:
        return getattr(self.runtime, name)  # gate, pages, metrics, recorder, departures...

    def configure(self, **options: Any) -> None:
        self.tctx.configure(self.root, **options)

    async def _run(self, hook: hooks.Hook) -> None:
        await self.tctx.master.addons.invoke_addon(self.root, hook)

    async def request(self, flow: http.HTTPFlow) -> None:
        """As mitmproxy does: requestheaders, then (when nothing answered yet) request."""
        await self._run(http_layer.HttpRequestHeadersHook(flow))
        await self._run(http_layer.HttpRequestHook(flow))

    async def requestheaders(self, flow: http.HTTPFlow) -> None:
        await self._run(http_layer.HttpRequestHeadersHook(flow))

    async def request_only(self, flow: http.HTTPFlow) -> None:
        """The request hook alone: a flow that never passed requestheaders (a replay)."""
        await self._run(http_layer.HttpRequestHook(flow))

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        self.tctx.master.addons.invoke_addon_sync(self.root,
                                                  http_layer.HttpResponseHeadersHook(flow))

    async def response(self, flow: http.HTTPFlow) -> None:
        await self._run(http_layer.HttpResponseHook(flow))

    async def error(self, flow: http.HTTPFlow) -> None:
        await self._run(http_layer.HttpErrorHook(flow))

    async def http_connect(self, flow: http.HTTPFlow) -> None:
        await self._run(http_layer.HttpConnectHook(flow))

    def server_connected(self, data: Any) -> None:
        """A connection to an origin is up (`ServerConnectionHookData`)."""
        self.tctx.master.addons.invoke_addon_sync(self.root, server_hooks.ServerConnectedHook(data))

    def running(self) -> None:
        self.tctx.master.addons.invoke_addon_sync(self.root, hooks.RunningHook())

    async def done(self) -> None:
        await self._run(hooks.DoneHook())


async def documentation_address(host: str, port: int) -> list[str]:
    """Every name resolves to an address of TEST-NET-3 (RFC 5737): public-looking, and never
    dialled, since no test here opens a connection."""
    return ["203.0.113.10"]


@contextmanager
def driven(*, clocks: Clocks | None = None, transport: httpx.AsyncBaseTransport | None = None,
           lookup: Lookup = documentation_address, **options: Any) -> Iterator[Driven]:
    """A configured RobotsGate in mitmproxy's test context."""
    root = RobotsGate(clocks=clocks, transport=transport, lookup=lookup)
    with taddons.context(root) as tctx:
        addon = Driven(root, tctx)
        addon.configure(**options)
        yield addon
