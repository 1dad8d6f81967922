"""Where robotsgate relies on mitmproxy's internals: every such place, here and in
robotsgate.mitm.master (the lean master `serve` runs), and nowhere else.

Each function names what it relies on; `check()` says at load time whether the installed
mitmproxy is the one these were read against (`CHECKED`), and tests/mitm/test_compat.py holds each
against mitmproxy's own behaviour, so that an upgrade fails in one place. `relied_on` lists the
private names of both modules.
"""

import logging
import re
from typing import Any

from mitmproxy import (
    connection,
    ctx,
    http,
    optmanager,
    version,
)
from mitmproxy.addonmanager import AddonManager, Loader, safecall
from mitmproxy.proxy import commands, context, events, layer, tunnel
from mitmproxy.proxy.layers import modes
from mitmproxy.proxy.layers.http import GetHttpConnection, HttpStream
from mitmproxy.proxy.layers.http._events import RequestHeaders
from mitmproxy.proxy.layers.http._http1 import Http1Client

from robotsgate.mitm.flow import state

logger = logging.getLogger(__name__)

CHECKED = "12.3"  # the mitmproxy release line everything below was read against


def relied_on() -> dict[str, bool]:
    """Every private name of mitmproxy this module uses, and whether it is there."""
    from mitmproxy.addons.clientplayback import ReplayHandler
    from mitmproxy.addons.next_layer import NextLayer
    from mitmproxy.addons.script import ScriptLoader
    from mitmproxy.proxy.mode_servers import AsyncioServerInstance

    names = {
        "OptManager.deferred": hasattr(optmanager.OptManager(), "deferred"),
        "optmanager._UnconvertedStrings": hasattr(optmanager, "_UnconvertedStrings"),
        "NextLayer._ignore_connection": hasattr(NextLayer, "_ignore_connection"),
        "GetHttpConnection.connection_spec_matches":
            hasattr(GetHttpConnection, "connection_spec_matches"),
        "HttpStream.check_body_size": hasattr(HttpStream, "check_body_size"),
        "HttpStream.request_body_buf": "request_body_buf" in HttpStream.__annotations__,
        "Http1Client.send": hasattr(Http1Client, "send"),
        "AddonManager.chain, .lookup": {"chain", "lookup"} <= set(_stored(AddonManager)),
        # LeanAddons: what it takes the place of, and how AddonManager invokes an addon.
        "AddonManager._configure_all, .trigger_event, .invoke_addon": all(
            hasattr(AddonManager, name) for name in ("_configure_all", "trigger_event",
                                                     "invoke_addon")),
        "addonmanager.safecall": callable(safecall),
        # serve's start-up check: addons declare their options through a Loader on a master
        # that has only `options` and `commands` (mitmdump_options).
        "Loader(master).master": "master" in _stored(Loader),
        # A request sent again, signed, when its origin asks (robotsgate.mitm.again).
        "clientplayback.ReplayHandler.replay": hasattr(ReplayHandler, "replay"),
        # A layer of robotsgate's own, and the stacks mitmproxy chooses whole (tunnels).
        "Layer._handle_event": hasattr(layer.Layer, "_handle_event"),
        "TunnelLayer.child_layer": "child_layer" in tunnel.TunnelLayer.__annotations__,
        "Context.layers": "layers" in context.Context.__annotations__,
        # Whether mitmdump is still starting (robotsgate.mitm.runtime).
        "ScriptLoader.is_running": "is_running" in _stored(ScriptLoader),
        # The listening sockets whose backlog is deepened (deepen_backlogs).
        "AsyncioServerInstance._servers": "_servers" in _stored(AsyncioServerInstance),
    }
    return names


def _stored(cls: type) -> tuple[str, ...]:
    """The attribute names a class's __init__ mentions (where it sets or reads them)."""
    init: Any = vars(cls)["__init__"]
    return tuple(init.__code__.co_names)


def check() -> list[str]:
    """At load: what makes this mitmproxy one robotsgate cannot run on (a name this layer relies
    on is gone: its fixes would silently not apply); a warning when the installed mitmproxy is
    not the line this layer was checked against."""
    missing = sorted(name for name, present in relied_on().items() if not present)
    if missing:
        return [f"cannot run on mitmproxy {version.VERSION}: this layer relies on "
                f"{', '.join(missing)}, which it does not have"]
    if not version.VERSION.startswith(CHECKED + "."):
        logger.warning("robotsgate: its mitmproxy layer was checked against mitmproxy %s.x, "
                       "this is %s: run its tests before relying on it", CHECKED,
                       version.VERSION)
    return []


# --- options given before robotsgate declared them -----------------------------------------------


def deferred(opts: optmanager.OptManager) -> dict[str, Any]:
    """The options given (--set, config.yaml) before any addon declared them, by name:
    mitmproxy's OptManager.deferred, which it applies all at once when an addon declares them
    (process_deferred). What is popped from it mitmproxy never sees again."""
    pending: dict[str, Any] = getattr(opts, "deferred", {})
    return pending


def given_strings(value: Any) -> list[str] | None:
    """The strings of a deferred option as given on the command line, not yet converted; None
    for a value given as one (config.yaml)."""
    if isinstance(value, optmanager._UnconvertedStrings):
        return list(value.val)
    return None


# --- the choice of a connection's layers ---------------------------------------------------------


def choose_layer(nextlayer: layer.NextLayer) -> None:
    """Let mitmproxy's own chooser (the nextlayer addon) choose now, if no one has.

    Script addons are asked before mitmproxy's own addons; robotsgate judges mitmproxy's choice,
    so it asks for it first (the chooser leaves a layer already set alone when its turn comes).
    """
    if nextlayer.layer is None:
        ctx.master.addons.get("nextlayer").next_layer(nextlayer)


def ignored(nextlayer: layer.NextLayer) -> bool:
    """Whether mitmproxy passes this connection through unseen (ignore_hosts, allow_hosts),
    asked of its own chooser (NextLayer._ignore_connection), so that the answer is the one it
    acted on: by the CONNECT target, the address dialled, a Host header, a TLS server name."""
    chooser = ctx.master.addons.get("nextlayer")
    try:
        return bool(chooser._ignore_connection(nextlayer.context, nextlayer.data_client(),
                                               nextlayer.data_server()))
    except Exception:
        return False  # cannot tell (more data needed, or it changed): not let through unseen


def not_intercepted(host: str, port: int) -> bool:
    """Whether mitmproxy will pass a CONNECT to host:port through unseen (ignore_hosts,
    allow_hosts), before any byte of it is seen.

    NextLayer._ignore_connection's test on "host:port" alone, case-insensitively (held against
    it in tests/mitm/test_compat.py): the address dialled, a Host header or a server name can make
    it pass through later as well, which `ignored` answers.
    """
    opts = ctx.options
    address = f"{host}:{port}"
    if opts.allow_hosts and not any(re.search(rex, address, re.IGNORECASE)
                                    for rex in opts.allow_hosts):
        return True
    return any(re.search(rex, address, re.IGNORECASE) for rex in opts.ignore_hosts)


def reuses(server: connection.Server, request: http.Request) -> bool:
    """Whether mitmproxy's HTTP layer would send this request on this connection, by its own
    test (GetHttpConnection.connection_spec_matches: address, TLS, upstream proxy, transport)."""
    wanted = GetHttpConnection((request.host, request.port), request.scheme == "https",
                               server.via, server.transport_protocol)
    return wanted.connection_spec_matches(server)


# --- fixes -----------------------------------------------------------------------------------


def patch() -> None:
    """Apply the fixes below, once per process."""
    _drain_answered_bodies()
    _frame_downgraded_requests()


def rename(server: connection.Server, address: tuple[str, int]) -> None:
    """Give an open connection back the address mitmproxy knows it by.

    The connection was dialled at the address robotsgate classified (an IP), and mitmproxy uses
    `server.address` for more than the dial: to reuse the connection for the next request to the
    same host, and as the host of the requests inside a tunnel. Server.__setattr__ refuses to
    change the address of an open connection; this is the one place that does it.
    """
    object.__setattr__(server, "address", address)


def _drain_answered_bodies() -> None:
    """The body of a request robotsgate answered itself is read and dropped, never streamed.

    The answer is set when the headers are in; mitmproxy then reads the body before it sends
    the answer, and checks the size of what it has read so far against stream_large_bodies
    and body_size_limit as it goes (HttpStream.check_body_size). Left alone, that check would
    switch such a request to streaming (which mitmproxy refuses for an answered request: the
    connection breaks with a crash report) or keep an unbounded body in memory. For an answered
    request the check drops what was read and lets the rest come.
    """
    original = HttpStream.check_body_size
    if getattr(original, "robotsgate", False):
        return

    # Plain functions handing mitmproxy the generator to run (it runs them with `yield from`):
    # a wrapping generator would be one more frame for every event of every request.
    def check_body_size(stream: HttpStream, request: bool) -> layer.CommandGenerator[bool]:
        if request and state(stream.flow).answered:
            stream.request_body_buf.clear()
            return _returning(False)
        return original(stream, request)

    check_body_size.robotsgate = True  # type: ignore[attr-defined]
    HttpStream.check_body_size = check_body_size  # type: ignore[method-assign,assignment]


def _returning(value: bool) -> layer.CommandGenerator[bool]:
    """A command generator that issues no command and gives `value`."""
    return value
    yield  # a generator, for `yield from`


def _frame_downgraded_requests() -> None:
    """An HTTP/2 or HTTP/3 request with a body leaves as HTTP/1.1 with its body framed.

    HTTP/2 needs no header to say that a body follows (RFC 9113 §8.1.1). Http1Client.send turns
    such a request into an HTTP/1.1 head without Content-Length or Transfer-Encoding, and then
    writes the DATA frames' bytes raw: the origin reads a request without a body, and the body's
    bytes as the next request, one nobody decided. Here a request whose body is still to come
    (its headers did not end the stream) and whose length no header gives is sent chunked
    (Http1Client chunks the data of a request marked so, and ends it with the last chunk).
    The Host of the downgraded request is the :authority robotsgate wrote.

    The mark is on a copy of the request that this connection keeps (Http1Client reads the
    request of the RequestHeaders event again for each DATA and for the end of the body), not
    on the flow's: the flow stays the HTTP/2 request that was decided, which a request sent
    again (robotsgate.mitm.again) or replayed copies, and HTTP/2 forbids Transfer-Encoding
    (mitmproxy refuses a copy that carries one as smuggling).
    """
    original = Http1Client.send
    if getattr(original, "robotsgate", False):
        return

    def send(client: Http1Client, event: object) -> layer.CommandGenerator[None]:
        if isinstance(event, RequestHeaders) and not event.end_stream:
            request = event.request
            headers = request.headers
            if (request.is_http2 or request.is_http3) and "content-length" not in headers \
                    and "transfer-encoding" not in headers:
                framed = request.copy()
                framed.headers["transfer-encoding"] = "chunked"
                event = RequestHeaders(event.stream_id, framed, event.end_stream,
                                       event.replay_flow)
        return original(client, event)  # type: ignore[arg-type]

    send.robotsgate = True  # type: ignore[attr-defined]
    Http1Client.send = send  # type: ignore[method-assign,assignment]





# --- layers -----------------------------------------------------------------------------------


class _Closing(layer.Layer):
    """A connection closed as soon as it starts: nothing it sends goes anywhere. (A layer's
    behaviour is its `_handle_event`, as mitmproxy's own layers write theirs.)"""

    def _handle_event(self, event: events.Event) -> layer.CommandGenerator[None]:
        if isinstance(event, events.Start):
            yield commands.CloseConnection(self.context.client)


def closing(ctx_: context.Context) -> layer.Layer:
    """A layer that closes the client's connection as it starts."""
    return _Closing(ctx_)


def layers_below(chosen: layer.Layer) -> list[layer.Layer]:
    """The layers under `chosen`, when mitmproxy chose a whole stack at once (a tunnel layer
    holds the next in `child_layer`)."""
    found = []
    below = getattr(chosen, "child_layer", None)
    while below is not None:
        found.append(below)
        below = getattr(below, "child_layer", None)
    return found


def in_proxy_tunnel(ctx_: context.Context) -> bool:
    """Whether a connection's layers sit inside an HTTP proxy's CONNECT tunnel (the context's
    stack of layers starts with the proxy mode's)."""
    stack = ctx_.layers
    return len(stack) > 1 and isinstance(stack[0], (modes.HttpProxy, modes.HttpUpstreamProxy))


def scripts_starting(loader: object) -> bool:
    """Whether mitmdump is still starting: its script loader has not seen it run yet (a script
    reloaded into a running proxy, or an addon driven by tests, is not starting)."""
    return loader is not None and not getattr(loader, "is_running", True)
