"""Where robotsgate relies on mitmproxy's internals: every such place, and only here.

Each function names what it relies on; `check()` says at load time whether the installed
mitmproxy is the one these were read against (`CHECKED`), and tests/mitm/test_compat.py holds each
against mitmproxy's own behaviour, so that an upgrade fails in one place.
"""

import argparse
import logging
import os
import re
import socket
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from mitmproxy import (
    addons,
    connection,
    ctx,
    exceptions,
    http,
    master,
    options,
    optmanager,
    version,
)
from mitmproxy.addonmanager import AddonManager, Loader, safecall, traverse
from mitmproxy.addons import dumper, errorcheck, keepserving, readfile, termlog
from mitmproxy.proxy import commands, context, events, layer, tunnel
from mitmproxy.proxy.layers import modes
from mitmproxy.proxy.layers.http import GetHttpConnection, HttpStream
from mitmproxy.proxy.layers.http._events import RequestHeaders
from mitmproxy.proxy.layers.http._http1 import Http1Client
from mitmproxy.tools import cmdline

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


def mitmdump_options() -> options.Options:
    """Every option mitmdump declares (robotsgate's are declared by its script, later).

    mitmdump's parser has a flag only for an option that is declared, and most are declared by
    mitmdump's addons as they load (`-s` by the script loader, `--modify-headers` by
    modifyheaders): each addon's `load` declares its options here first, on options of their
    own, as mitmdump's master would."""
    declared = options.Options()
    # A master to load into: its options, and commands dropped (no command is run here).
    loading = SimpleNamespace(options=declared, commands=SimpleNamespace(add=lambda *_: None))
    loader = Loader(loading)
    for each in (*addons.default_addons(), dumper.Dumper(), keepserving.KeepServing(),
                 readfile.ReadFileStdin(), errorcheck.ErrorCheck()):
        for addon in traverse([each]):
            load = getattr(addon, "load", None)
            if callable(load):
                load(loader)
    return declared


def mitmdump_parser(declared: options.Options, *, prog: str) -> argparse.ArgumentParser:
    """mitmdump's command line as mitmdump reads it (mitmproxy.tools.cmdline), for options
    `declared` (mitmdump_options), so that `robotsgate serve` can refuse a mistake with status
    2 before it starts mitmdump (which turns argparse's 2 into 1)."""
    parser: argparse.ArgumentParser = cmdline.mitmdump(declared)
    parser.prog = prog
    return parser


def dump_options(opts: optmanager.OptManager, out: Any) -> None:
    """`opts` as mitmdump --options writes them: a config.yaml with each option's help."""
    optmanager.dump_defaults(opts, out)


# The addons of mitmdump a forward proxy always needs: accepting connections and choosing their
# layers (proxyserver, nextlayer, tlsconfig, dnsresolver), its command line and scripts (core,
# scriptloader, keepserving, errorcheck), refusing what must be refused whatever the options
# say (block: public clients when listening on every address; disable_h2c: h2c upgrades;
# strip_dns_https_records: ECH in DNS answers). Every other one is kept only when the operator
# sets one of its options (dumper: when it would print, flow_detail above 0).
NEEDED = frozenset({"core", "proxyserver", "nextlayer", "tlsconfig", "dnsresolver",
                    "scriptloader", "keepserving", "errorcheck", "block", "disableh2c",
                    "stripdnshttpsrecords"})


def _name(addon: object) -> str:
    return str(getattr(addon, "name", type(addon).__name__.lower()))


class LeanDumpMaster(master.Master):
    """mitmdump's master (mitmproxy.tools.dump.DumpMaster: its addons, in its order) that,
    before it serves, leaves out the addons nothing asked for.

    mitmproxy's addon manager looks every addon up for every event of every flow, so each
    unused addon costs every request; mitmdump has some thirty. Every option stays declared, so
    the command line and config.yaml are read as mitmdump reads them; an option given at start
    keeps its addon, and one set later for an addon left out is refused (OptionsError), never
    ignored.
    """

    def __init__(self, opts: options.Options, loop: Any = None, with_termlog: bool = True,
                 with_dumper: bool = True) -> None:
        super().__init__(opts, event_loop=loop, with_termlog=False)
        # Master made its addon manager; this one takes its place, before any addon is added
        # (Master's own termlog is added just as Master adds it).
        opts.changed.disconnect(self.addons._configure_all)
        self.addons = LeanAddons(self)
        if with_termlog:
            self._termlog_addon = termlog.TermLog()
            self.addons.add(self._termlog_addon)
        self.declared: dict[str, tuple[object, frozenset[str]]] = {}
        self.given: set[str] = set()  # options given since construction
        chain = [*addons.default_addons(), *([dumper.Dumper()] if with_dumper else []),
                 keepserving.KeepServing(), readfile.ReadFileStdin(), errorcheck.ErrorCheck()]
        for addon in chain:
            before = set(opts.keys())
            self.addons.add(addon)
            self.declared[_name(addon)] = (addon, frozenset(opts.keys()) - before)
        opts.changed.connect(self._given)  # after: declaring an option announces it too
        self.left_out: dict[str, str] = {}  # option -> the addon left out that declared it

    def _given(self, updated: set[str]) -> None:
        self.given |= updated

    def wanted(self, name: str, declared: frozenset[str]) -> bool:
        if name in NEEDED:
            return True
        if name == "dumper":
            return int(self.options.flow_detail) > 0
        return bool(declared & self.given)

    def leave_out(self) -> list[str]:
        """Remove the addons not wanted; their names."""
        removed = []
        for name, (addon, declared) in self.declared.items():
            if not self.wanted(name, declared):
                # AddonManager.remove, but for its done hook: these have not started (and
                # some have an async done, which remove cannot call).
                for each in traverse([addon]):
                    self.addons.chain = [a for a in self.addons.chain if a is not each]
                    self.addons.lookup.pop(_name(each), None)
                removed.append(name)
                self.left_out.update(dict.fromkeys(declared, name))
        if removed:
            self.addons.add(_LeftOut(self.left_out))
        return removed

    async def run(self) -> None:
        self.leave_out()
        await super().run()


class LeanAddons(AddonManager):
    """mitmproxy's addon manager, that triggers an event only on the addons that have a hook
    for it.

    AddonManager.trigger_event walks every addon of the chain for every event (each in its own
    coroutine, safecall and two generators, and an update event after each of a flow's), to
    find the few that have the hook. Here the addons of the chain whose tree has the hook are
    listed once per event name, and the list is made again whenever the tree or its hooks can
    have changed: mitmproxy's API for the tree is add, register, remove and clear (a Script
    addon reloading its file, the ScriptLoader changing the scripts, an addon managing addons:
    all go through register and remove), and a hook set at run time is set in `configure`.
    Each addon listed is invoked exactly as AddonManager invokes it, in the chain's order,
    under safecall, an AddonHalt ending the event; an addon added while the event runs gets it
    too, as AddonManager's walk of the chain would give it.

    Assumed, as mitmproxy's API says: an addon that changes its `addons` registers or removes
    them; a hook appears on a running addon only when options change.
    """

    def __init__(self, master: Any) -> None:
        self._having: dict[str, list[Any]] = {}  # event name -> the chain's addons with its hook
        super().__init__(master)

    @property
    def chain(self) -> list[Any]:
        return self._chain

    @chain.setter
    def chain(self, chain: list[Any]) -> None:
        self._chain = chain
        self._having = {}

    def register(self, addon: Any) -> Any:
        self._having = {}
        try:
            return super().register(addon)
        finally:
            self._having = {}

    def add(self, *addons: Any) -> None:
        try:
            super().add(*addons)
        finally:
            self._having = {}

    def remove(self, addon: Any) -> None:
        try:
            super().remove(addon)
        finally:
            self._having = {}

    def clear(self) -> None:
        try:
            super().clear()
        finally:
            self._having = {}

    def _configure_all(self, updated: set[str]) -> None:
        # A configure hook may set or drop a hook.
        self._having = {}
        try:
            super()._configure_all(updated)
        finally:
            self._having = {}

    async def trigger_event(self, event: Any) -> None:
        chain = self._chain
        start = len(chain)
        having = self._having.get(event.name)
        if having is None:
            having = self._having[event.name] = [addon for addon in chain
                                                 if _has_hook(addon, event.name)]
        try:
            for addon in having:
                with safecall():
                    await self.invoke_addon(addon, event)
            # AddonManager walks the chain's list itself: an addon added (appended to it)
            # while this event ran gets the event too.
            while start < len(chain):
                addon = chain[start]
                start += 1
                if _has_hook(addon, event.name):
                    with safecall():
                        await self.invoke_addon(addon, event)
        except exceptions.AddonHalt:
            return


def _has_hook(addon: Any, name: str) -> bool:
    """Whether the addon's tree has the hook, as AddonManager._iter_hooks would find it."""
    try:
        return any(getattr(each, name, None) for each in traverse([addon]))
    except Exception:
        return True  # invoked, to meet the error under safecall, as AddonManager meets it


class _LeftOut:
    """Refuses a change, after start-up, of an option whose addon was left out."""

    name = "robotsgate-left-out"

    def __init__(self, left_out: dict[str, str]) -> None:
        self.left_out = left_out

    def configure(self, updated: set[str]) -> None:
        for option in sorted(updated & self.left_out.keys()):
            raise exceptions.OptionsError(
                f"{option} needs mitmproxy's {self.left_out[option]} addon, which robotsgate "
                f"serve leaves out unless {option} is given at start-up: restart with "
                f"--set {option}=...")


def serve(args: Sequence[str]) -> None:
    """mitmdump's main (mitmproxy.tools.main.mitmdump) with LeanDumpMaster."""
    from mitmproxy.tools import main

    def extra(parsed: argparse.Namespace) -> dict[str, str]:
        if parsed.filter_args:
            given = " ".join(parsed.filter_args)
            return {"save_stream_filter": given, "readfile_filter": given,
                    "dumper_filter": given}
        return {}

    main.run(LeanDumpMaster, cmdline.mitmdump, list(args), extra)


def listening() -> list[tuple[str, int]]:
    """(host, port) of every address the proxy listens on (mitmproxy's proxyserver addon);
    host "" or an unspecified address: every address of this machine."""
    proxyserver = ctx.master.addons.get("proxyserver")
    if proxyserver is None:
        return []
    return [(str(address[0]), int(address[1])) for address in proxyserver.listen_addrs()]


# A listening socket's queue of connections the kernel has completed and the proxy not yet
# accepted. The kernel caps it at net.core.somaxconn (4096 by default since Linux 5.4).
LISTEN_BACKLOG = 65_535


def deepen_backlogs(backlog: int = LISTEN_BACKLOG) -> int:
    """Listen again, with `backlog`, on every TCP socket mitmproxy's proxyserver listens on; the
    number of sockets.

    mitmproxy listens with asyncio's default backlog of 100. A burst of new connections (a
    crawler's thousands of bots starting at once) fills that while the proxy is busy deciding,
    and the kernel then drops the handshake's last ACK: the bot's connection is established on
    its side only, its request is retransmitted into nothing for minutes and finally reset.
    listen(2) on a listening socket only changes its backlog (Linux), so a duplicate of the
    descriptor is enough, and mitmproxy's servers are left as they are.
    """
    proxyserver = ctx.master.addons.get("proxyserver")
    if proxyserver is None:
        return 0
    done = 0
    for instance in proxyserver.servers:
        for server in getattr(instance, "_servers", ()):  # asyncio.Server (UDP's have none)
            for sock in getattr(server, "sockets", ()):
                if sock.type != socket.SOCK_STREAM:
                    continue
                with socket.socket(fileno=os.dup(sock.fileno())) as same:
                    same.listen(backlog)
                done += 1
    return done


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
