"""The master `robotsgate serve` runs: mitmdump's own, with only the addons a proxy needs
(`LeanDumpMaster`, `LeanAddons`), its options and command line (`mitmdump_options`,
`mitmdump_parser`), and what it listens on (`listening`, `deepen_backlogs`).

Like robotsgate.mitm.compat, it relies on mitmproxy's internals; the private names it uses are
in compat's checked list (`compat.relied_on`), so that an upgrade fails in one place.
"""

import argparse
import logging
import os
import socket
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from mitmproxy import addons, ctx, exceptions, master, options, optmanager
from mitmproxy.addonmanager import AddonManager, Loader, safecall, traverse
from mitmproxy.addons import dumper, errorcheck, keepserving, readfile, termlog
from mitmproxy.tools import cmdline

logger = logging.getLogger(__name__)


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
