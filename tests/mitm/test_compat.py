"""The fixes robotsgate makes to mitmproxy (robotsgate.mitm.compat), held against mitmproxy's
own classes: an upgrade that changes what they rely on fails here."""

import logging
from typing import Any

import pytest
from mitmproxy import exceptions, hooks, http, master, options, version
from mitmproxy.addons import proxyserver
from mitmproxy.connection import Server
from mitmproxy.proxy import commands, context
from mitmproxy.proxy.layers.http import HttpRequestHook
from mitmproxy.proxy.layers.http._events import RequestData, RequestEndOfMessage, RequestHeaders
from mitmproxy.proxy.layers.http._http1 import Http1Client
from mitmproxy.test import taddons, tflow
from support.handshakes import handshakes_completed

from robotsgate.mitm import compat
from robotsgate.mitm import master as lean


def sent(client: Http1Client, *events: object) -> bytes:
    """The bytes an HTTP/1.1 client connection writes for these events."""
    data = b""
    for event in events:
        for command in client.send(event):  # type: ignore[arg-type]
            if isinstance(command, commands.SendData):
                data += command.data
    return data


def downgraded(request: http.Request, body: bytes) -> bytes:
    with taddons.context() as tctx:
        ctx = context.Context(tflow.tclient_conn(), tctx.options)
        ctx.server = Server(address=("origin.example", 443))
        client = Http1Client(ctx)
        return sent(client, RequestHeaders(1, request, end_stream=not body),
                    *([RequestData(1, body)] if body else []), RequestEndOfMessage(1))


def h2_request(**headers: str) -> http.Request:
    request = tflow.treq(http_version=b"HTTP/2.0", authority=b"origin.example",
                         headers=http.Headers(**headers), content=b"")
    request.data.host = "origin.example"
    return request


def test_the_checked_mitmproxy_line_is_the_installed_one():
    assert version.VERSION.startswith(compat.CHECKED + ".")


def test_an_http2_body_of_unknown_length_leaves_as_http1_chunked():
    compat.patch()
    request = h2_request()
    wire = downgraded(request, b"GET /secret HTTP/1.1\r\n\r\n")
    head, _, body = wire.partition(b"\r\n\r\n")
    assert b"\r\ntransfer-encoding: chunked" in head.lower()
    assert body == b"18\r\nGET /secret HTTP/1.1\r\n\r\n\r\n0\r\n\r\n"
    # The flow's request is still the HTTP/2 request decided: a copy of it (sent again, or
    # replayed) carries no Transfer-Encoding, which HTTP/2 forbids.
    assert "transfer-encoding" not in request.headers


def test_an_http2_body_of_known_length_and_no_body_are_left_as_they_are():
    compat.patch()
    wire = downgraded(h2_request(**{"content-length": "3"}), b"abc")
    assert wire.endswith(b"\r\n\r\nabc") and b"transfer-encoding" not in wire.lower()
    wire = downgraded(h2_request(), b"")
    assert b"transfer-encoding" not in wire.lower() and wire.endswith(b"\r\n\r\n")


def test_an_open_connection_can_be_named_again():
    server = Server(address=("93.184.215.14", 443))
    server.state = server.state.OPEN  # type: ignore[attr-defined]
    compat.rename(server, ("example.com", 443))
    assert server.address == ("example.com", 443)


# --- robotsgate serve's master -------------------------------------------------------------------


def chain(master: object) -> list[str]:
    return [lean._name(addon) for addon in master.addons.chain]  # type: ignore[attr-defined]


async def test_the_lean_master_starts_as_mitmdumps_own() -> None:
    # The same addons in the same order as mitmdump's DumpMaster, before any is left out: an
    # upgrade that changes mitmdump's list fails here.
    from mitmproxy.tools.dump import DumpMaster

    assert chain(lean.LeanDumpMaster(options.Options())) == \
        chain(DumpMaster(options.Options()))


async def test_the_lean_master_keeps_what_a_proxy_needs_and_what_was_asked_for() -> None:
    opts = options.Options()
    master = lean.LeanDumpMaster(opts)
    opts.update(modify_headers=["/~q/X-Test/1"], flow_detail=0)
    removed = master.leave_out()
    kept = chain(master)
    assert set(kept) == lean.NEEDED | {"termlog", "modifyheaders", "robotsgate-left-out"}
    assert "onboarding" in removed and "dumper" in removed and "anticache" in removed
    assert len(kept) < len(removed)


async def test_an_option_of_an_addon_left_out_is_refused_later() -> None:
    opts = options.Options()
    master = lean.LeanDumpMaster(opts)
    master.leave_out()
    with pytest.raises(exceptions.OptionsError, match="anticache needs mitmproxy's anticache "
                                                      "addon, which robotsgate serve leaves out"):
        opts.update(anticache=True)
    assert opts.anticache is False  # rolled back
    opts.update(listen_port=8081)  # a kept addon's option is set as ever


async def test_printing_flows_keeps_the_dumper() -> None:
    opts = options.Options()
    master = lean.LeanDumpMaster(opts)
    opts.update(flow_detail=1)
    master.leave_out()
    assert "dumper" in chain(master)


class _Seen:
    """An addon that notes the events it gets, in one list shared by all."""

    def __init__(self, name: str, seen: list[str], *, halt: bool = False,
                 fail: bool = False) -> None:
        self.name, self.seen, self.halt, self.fail = name, seen, halt, fail

    def request(self, flow: object) -> None:
        self.seen.append(self.name)
        if self.fail:
            raise ValueError("a broken addon")
        if self.halt:
            raise exceptions.AddonHalt()


class _Parent:
    """An addon that manages addons, as mitmproxy's Script does: its `addons` changed together
    with register and remove."""

    name = "parent"

    def __init__(self) -> None:
        self.addons: list[object] = []


async def _request(master: lean.LeanDumpMaster) -> None:
    await master.addons.trigger_event(HttpRequestHook(tflow.tflow()))


async def test_the_lean_addon_manager_triggers_in_order_only_those_with_the_hook() -> None:
    opts = options.Options()
    master = lean.LeanDumpMaster(opts)
    seen: list[str] = []
    master.addons.add(_Seen("one", seen), _Seen("two", seen, fail=True), _Seen("three", seen))
    await _request(master)
    # A failing addon is logged and the event goes on, as AddonManager does it.
    assert seen == ["one", "two", "three"]
    having = master.addons._having["request"]  # type: ignore[attr-defined]
    assert [lean._name(a) for a in having][-3:] == ["one", "two", "three"]
    assert len(having) < len(master.addons.chain)  # most of mitmdump's addons have no request
    master.addons.add(_Seen("halting", seen, halt=True), _Seen("after", seen))
    seen.clear()
    await _request(master)
    assert seen == ["one", "two", "three", "halting"]  # AddonHalt ends the event


async def test_the_lean_addon_manager_sees_addons_registered_and_removed_later() -> None:
    master = lean.LeanDumpMaster(options.Options())
    parent = _Parent()
    master.addons.add(parent)
    seen: list[str] = []
    await _request(master)  # the list for "request" is made without the child
    child = _Seen("child", seen)
    parent.addons.append(child)
    master.addons.register(child)  # as Script does when it loads its file
    await _request(master)
    assert seen == ["child"]
    master.addons.remove(child)
    parent.addons.remove(child)
    await _request(master)
    assert seen == ["child"]
    master.leave_out()  # the chain itself replaced
    gone = _Seen("gone", seen)
    master.addons.add(gone)
    master.addons.chain = [a for a in master.addons.chain if a is not gone]
    await _request(master)
    assert seen == ["child"]


async def test_the_lean_master_configures_each_addon_once_per_change() -> None:
    # Master's own addon manager no longer listens to the options: it would configure its
    # chain (termlog) a second time.
    opts = options.Options()
    master = lean.LeanDumpMaster(opts)
    counted: list[set[str]] = []

    class Counting:
        def configure(self, updated: set[str]) -> None:
            counted.append(updated)

    master.addons.add(Counting())
    counted.clear()
    opts.update(listen_port=8089)
    assert counted == [{"listen_port"}]
    assert [lean._name(a) for a in master.addons.chain].count("termlog") == 1


def _master(kind: str) -> master.Master:
    """mitmproxy's Master with its own addon manager ("stock"), or with LeanAddons in its
    place ("lean"): every test below must hold of both alike."""
    made = master.Master(options.Options())
    if kind == "lean":
        made.options.changed.disconnect(made.addons._configure_all)
        made.addons = lean.LeanAddons(made)
    return made


BOTH = pytest.mark.parametrize("kind", ["stock", "lean"])


@BOTH
async def test_an_addon_added_while_an_event_runs_gets_it_as_with_mitmproxys_manager(
        kind: str) -> None:
    made = _master(kind)
    seen: list[str] = []

    class Adder:
        name = "adder"

        def running(self) -> None:
            seen.append("adder")
            made.addons.add(_Late(seen))

    made.addons.add(Adder())
    await made.addons.trigger_event(hooks.RunningHook())
    assert seen == ["adder", "late"]


class _Late:
    name = "late"

    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    def running(self) -> None:
        self.seen.append("late")


@BOTH
async def test_a_hook_set_when_options_change_is_called_as_with_mitmproxys_manager(
        kind: str) -> None:
    made = _master(kind)
    seen: list[str] = []

    class Toggle:
        def load(self, loader: Any) -> None:
            loader.add_option("toggle_on", bool, False, "")

        def configure(self, updated: set[str]) -> None:
            if made.options.toggle_on:
                self.request = lambda flow: seen.append("late")

    made.addons.add(Toggle())
    await made.addons.trigger_event(HttpRequestHook(tflow.tflow()))  # listed without it
    made.options.update(toggle_on=True)
    await made.addons.trigger_event(HttpRequestHook(tflow.tflow()))
    assert seen == ["late"]


@BOTH
async def test_a_hook_that_cannot_be_looked_up_is_logged_as_with_mitmproxys_manager(
        kind: str, caplog: pytest.LogCaptureFixture) -> None:
    # Not raised out of the event: in the proxy the flow would wait for a hook that never ends.
    caplog.set_level(logging.ERROR)
    made = _master(kind)
    seen: list[str] = []

    class Broken:
        name = "broken"

        def __getattr__(self, attr: str) -> Any:
            if attr == "request":
                raise RuntimeError("boom")
            raise AttributeError(attr)

    made.addons.add(Broken(), _Seen("after", seen))
    await made.addons.trigger_event(HttpRequestHook(tflow.tflow()))
    assert seen == ["after"]
    assert "Addon error: boom" in caplog.text


# --- what the layer relies on, and the rules it copies -------------------------------------------


def test_every_name_the_layer_relies_on_is_there() -> None:
    relied_on = compat.relied_on()
    assert len(relied_on) >= 8 and all(relied_on.values()), relied_on
    assert compat.check() == []


def test_a_missing_name_stops_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    from mitmproxy.addons.next_layer import NextLayer

    monkeypatch.delattr(NextLayer, "_ignore_connection")
    assert compat.check() == [f"cannot run on mitmproxy {version.VERSION}: this layer relies "
                              "on NextLayer._ignore_connection, which it does not have"]


def _mitmproxy_ignores(host: str, port: int) -> bool:
    """What mitmproxy's own chooser decides for a connection known only by its target."""
    from mitmproxy.addons.next_layer import NextLayer

    context_ = context.Context(tflow.tclient_conn(), options.Options())
    context_.server = Server(address=(host, port))
    context_.server.peername = None
    return bool(NextLayer()._ignore_connection(context_, b"", b""))


@pytest.mark.parametrize("ignore, allow", [
    ([], []),
    (["example\\.com"], []),
    (["^example\\.com:443$"], []),
    (["EXAMPLE\\.COM"], []),
    ([":8443$"], []),
    ([], ["example\\.com"]),
    ([], ["^other\\.example:443$"]),
    (["www\\."], ["example\\.com"]),
])
@pytest.mark.parametrize("host, port", [
    ("example.com", 443), ("www.example.com", 443), ("Example.COM", 8443),
    ("other.example", 443), ("192.0.2.1", 443), ("::1", 443)])
def test_a_tunnel_passed_unseen_is_the_one_mitmproxy_passes(
        ignore: list[str], allow: list[str], host: str, port: int) -> None:
    # compat.not_intercepted answers before any byte is seen what mitmproxy's chooser answers
    # for a connection known only by its CONNECT target.
    with taddons.context() as tctx:
        tctx.options.update(ignore_hosts=ignore, allow_hosts=allow)
        assert compat.not_intercepted(host, port) is _mitmproxy_ignores(host, port)


def _server(host: str, port: int, *, tls: bool) -> Server:
    server = Server(address=(host, port))
    server.tls = tls
    return server


@pytest.mark.parametrize("server, url, reused", [
    (_server("example.com", 443, tls=True), "https://example.com/", True),
    (_server("example.com", 443, tls=False), "https://example.com/", False),
    (_server("example.com", 80, tls=False), "http://example.com/", True),
    (_server("example.com", 443, tls=True), "https://example.com:8443/", False),
    (_server("example.com", 443, tls=True), "https://www.example.com/", False),
])
def test_a_connection_is_reused_as_mitmproxy_reuses_it(
        server: Server, url: str, reused: bool) -> None:
    request = http.Request.make("GET", url)
    assert compat.reuses(server, request) is reused


def test_options_given_before_they_were_declared_are_taken_as_given() -> None:
    opts = options.Options()
    opts.set("robots_agent=bot", "robots_example=a", "robots_example=b", defer=True)
    opts.deferred["robots_other"] = 3  # as config.yaml gives a value
    deferred = compat.deferred(opts)
    assert sorted(deferred) == ["robots_agent", "robots_example", "robots_other"]
    assert compat.given_strings(deferred["robots_example"]) == ["a", "b"]
    assert compat.given_strings(deferred["robots_other"]) is None
    deferred.pop("robots_agent")
    assert "robots_agent" not in opts.deferred  # taken for good


async def test_the_proxys_listening_sockets_queue_a_burst_of_new_connections() -> None:
    # mitmproxy listens with asyncio's backlog of 100: while the proxy is busy (here: its event
    # loop not running at all), connections past that are dropped by the kernel, or established
    # on the bot's side only and reset minutes later.
    burst = 300
    server = proxyserver.Proxyserver()
    with taddons.context(server) as tctx:
        tctx.configure(server, listen_host="127.0.0.1", listen_port=0)
        assert await server.setup_servers()
        try:
            [(_, port)] = [address[:2] for address in server.listen_addrs()]
            assert lean.deepen_backlogs() == 1
            assert handshakes_completed(port, burst) == burst
        finally:
            await server.servers.update([])


async def test_the_queue_is_mitmproxys_100_without_robotsgate() -> None:
    # What the test above relies on: mitmproxy's own backlog is still too short for a burst.
    server = proxyserver.Proxyserver()
    with taddons.context(server) as tctx:
        tctx.configure(server, listen_host="127.0.0.1", listen_port=0)
        assert await server.setup_servers()
        try:
            [(_, port)] = [address[:2] for address in server.listen_addrs()]
            assert handshakes_completed(port, 300) <= 101
        finally:
            await server.servers.update([])
