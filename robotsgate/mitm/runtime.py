"""The addon that owns robotsgate's options and services: the others read them from here.

It registers every robots_* option (declared in robotsgate.config.options), reads them into one
frozen `Settings` on every change, refusing a bad value with an error that names the option, and
rebuilds what a change concerns (robotsgate.config.assemble): the gate and its state, the nofollow
memory, the audit log, the metrics server. Lifecycle: SIGHUP reopens the audit log; done closes
everything.

A problem found while the proxy starts (a bad value, a misspelled option, a port it cannot
listen on) ends the process at once, with one line that names it and exit status 2, as every
other usage mistake of robotsgate's commands: before mitmproxy says it listens whenever the
problem is known by then (every bad value is), and leaving no audit log behind that this start
created.
"""

import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
from mitmproxy import ctx, exceptions, http

from robotsgate.audit.chain import Chain, proxy_id
from robotsgate.audit.log import AuditLog
from robotsgate.config import assemble
from robotsgate.config.assemble import Clocks, Services, Upstream
from robotsgate.config.options import Rebuilds, Settings
from robotsgate.decision.gate import Gate
from robotsgate.decision.identity import AgentMap, Identity
from robotsgate.decision.policy import Exchange
from robotsgate.egress.policy import Socket
from robotsgate.egress.resolver import Lookup, Resolver, system_lookup
from robotsgate.metrics import status
from robotsgate.metrics.prometheus import Metrics, MetricsServer
from robotsgate.mitm import compat, startup
from robotsgate.mitm import master as lean
from robotsgate.mitm.again import Resends
from robotsgate.mitm.answers import AuditSink, Recorder
from robotsgate.mitm.flow import state
from robotsgate.pages import Pages
from robotsgate.payments.spending import MemoryLedger
from robotsgate.signing.directory import DIRECTORY_PATH, Published
from robotsgate.signing.directory_server import DirectoryServer
from robotsgate.signing.messages import Signer
from robotsgate.state.driver import Politeness

logger = logging.getLogger(__name__)


class NotConfigured(RuntimeError):
    """A hook ran before robotsgate had a configuration: it fails closed."""


@dataclass(frozen=True, slots=True)
class Live:
    """Everything a request is decided with, from one configuration.

    Built whole by Runtime.configure (nothing old is replaced until everything new is built),
    swapped in at once, and pinned to each flow at its first hook (`Runtime.of`), so that a flow
    never sees an old gate and a new policy, or a new audit mode for an old decision. The
    services inside are live objects (caches, schedules, connections), but which ones a flow
    uses never changes under it.
    """

    settings: Settings
    upstream: Upstream
    services: Services
    recorder: Recorder
    pages: Pages  # page-level signals and the nofollow memory
    exchange: Exchange  # the request policy, over all of the above
    agents: AgentMap
    stream_bodies: bool  # mitmproxy's stream_large_bodies is set, read on every request
    signer: Signer | None = None  # Web Bot Auth: what signs requests as they leave

    def identify(self, flow: http.HTTPFlow) -> Identity:
        """Which bot a CONNECT is from (robots_agents, proxy-auth user, robots_agent, or its
        User-Agent later)."""
        auth = flow.metadata.get("proxyauth")
        peer = flow.client_conn.peername
        return self.agents.resolve(
            user=auth[0] if isinstance(auth, tuple) and auth else None,
            address=peer[0] if peer else None, agent_option=self.settings.agent or None)


class Runtime:
    """The process's part: options in, a `Live` out on every change; the audit sink, the
    metrics registry and server, the listening sockets, SIGHUP."""

    def __init__(self, clocks: Clocks, transport: httpx.AsyncBaseTransport | None = None,
                 lookup: Lookup = system_lookup) -> None:
        self.clocks = clocks
        self._transport = transport  # where robots.txt is fetched from, in tests
        self._lookup = lookup  # how names are resolved, in tests
        self._listening: tuple[Socket, ...] = ()  # the proxy's own listening sockets
        self.metrics = Metrics()  # this process's registry; served when robots_metrics_port
        self.held = status.Held()  # requests held for politeness now, per host
        self._running = False
        self._status_every = 0  # robots_status_interval in force (0: no status line)
        self._status_task: asyncio.Task[None] | None = None
        self._live: Live | None = None
        self._sink: AuditSink | None = None
        self._metrics_server: MetricsServer | None = None
        self._directory_server: DirectoryServer | None = None
        self._published: Published | None = None  # what the directory server serves now
        self._sighup = False
        self._start_errors: list[str] = []  # what stops the start, each said once
        # Files this start created (the audit log and its lock file): a start that fails
        # removes them again, so that it leaves nothing behind (an empty log would read as one
        # of a proxy that ran and saw nothing).
        self._created: set[str] = set()
        # This proxy's chain of audit records, from one audit log to the next (audit/chain.py),
        # and from the last run's (audit/chain_state.py).
        self._chain = Chain(proxy_id(), resumable=True)
        # What this proxy has spent, when its budgets are kept in memory: for its whole life,
        # not one configuration's (a rebuilt gate must not find its budgets full again).
        self._spent = MemoryLedger()
        # Every request sent once more, by whichever part (robotsgate.mitm.again).
        self.resends = Resends()

    @property
    def live(self) -> Live:
        """The configuration in force now."""
        live = self._live
        if live is None:
            raise NotConfigured("robotsgate is not configured yet")
        return live

    def install(self, live: Live) -> None:
        """Put `live` in force: flows that start from now on are decided with it."""
        self._live = live

    def of(self, flow: http.HTTPFlow) -> Live:
        """The configuration this flow is decided with: the one in force at its first hook."""
        known = state(flow)
        live: Live | None = known.live
        if live is None:
            live = known.live = self.live
        return live

    def recorder_of(self, flow: http.HTTPFlow) -> Recorder | None:
        """For a request that fails closed: the recorder of its configuration, or of the one
        in force, if there is any."""
        live = state(flow).live or self._live
        return live.recorder if live is not None else None

    # What tests and tools look at: the parts of the configuration in force.
    @property
    def settings(self) -> Settings:
        return self._live.settings if self._live is not None else Settings()

    @property
    def services(self) -> Services:
        return self.live.services

    @property
    def gate(self) -> Gate:
        return self.live.services.gate

    @property
    def politeness(self) -> Politeness:
        return self.live.services.politeness

    @property
    def resolver(self) -> Resolver:
        return self.live.services.resolver

    @property
    def recorder(self) -> Recorder:
        return self.live.recorder

    @property
    def pages(self) -> Pages:
        return self.live.pages

    @property
    def exchange(self) -> Exchange:
        return self.live.exchange

    def set_listening(self, sockets: tuple[Socket, ...], *, authenticated: bool) -> None:
        """The proxy's listening sockets, once it runs: never a destination
        (robotsgate.mitm.egress); on every interface without proxyauth, an open proxy."""
        self._listening = sockets
        self._own_changed()
        everywhere = [s for s in sockets if s.host in ("", "0.0.0.0", "::")]
        if everywhere and not authenticated:
            logger.warning(
                "robotsgate: listening on every interface (port %d) without proxyauth: anyone "
                "who can reach this machine can use this proxy; --listen-host 127.0.0.1 (as "
                "robotsgate serve does) or --set proxyauth=... keeps it to your bots",
                everywhere[0].port)

    def _own(self) -> tuple[Socket, ...]:
        """The proxy's own sockets, never a destination: where it listens, its metrics, its
        key directory."""
        return self._listening + tuple(
            Socket(server.host, server.port)
            for server in (self._metrics_server, self._directory_server) if server is not None)

    def _own_changed(self) -> None:
        if self._live is not None:
            resolver = self._live.services.resolver
            resolver.set_policy(resolver.policy.with_own(self._own()))

    def load(self, loader: Any) -> None:
        startup.declare(loader)
        options = loader.master.options
        problems = compat.check() or startup.apply_deferred(options)
        if not problems and startup.only_script(options):
            # No other script is still to declare options: a name nothing declared is a
            # misspelling, said now rather than once the proxy listens (running).
            problems = startup.unknown_options(options)
        if problems:
            self._cannot_start(*problems)
            return  # nothing of mitmproxy's is patched: the proxy will not run
        compat.patch()
        if "flow_detail" in options.keys() and options.flow_detail == 0:  # noqa: SIM118
            # Nothing per flow, and nothing per connection or robots.txt fetch either ("client
            # connect", "HTTP Request: GET ..."): the audit log is the record, and robotsgate
            # logs what goes wrong. Warnings and errors still show.
            for name in ("mitmproxy.proxy.server", "httpx"):
                logging.getLogger(name).setLevel(logging.WARNING)

    def configure(self, updated: set[str]) -> None:
        try:
            self._configure()
        except exceptions.OptionsError as exc:
            if not startup.starting():
                raise  # mitmproxy puts the option back as it was and says why
            self._cannot_start(str(exc))

    def _cannot_start(self, *problems: str, running: bool = False) -> None:
        """Problems that stop the start: each logged in one line, once (options are configured
        several times at start-up), rather than a traceback; then, while mitmproxy starts,
        the process ends here, status 2, whatever this start created removed.

        mitmproxy's own way would be its errorcheck addon's exit, status 1, once its servers
        are set up: it loads scripts while it sets them up, so it would say it listens first.
        Ending the start from the script's load or configure hook comes before that (SystemExit
        passes through mitmproxy's hooks, and asyncio.run cancels the setting up); a problem
        found only at running (a misspelled option while other scripts still had to declare
        theirs) ends it there. An addon driven by tests, or a script reloaded into a running
        proxy, is not starting: its problems are only logged."""
        for problem in problems:
            if problem not in self._start_errors:
                self._start_errors.append(problem)
                logger.error("robotsgate: %s", problem)
        if startup.starting() or (running and startup.scripted()):
            self._discard_created()
            sys.stdout.flush()
            raise SystemExit(2)

    def _audit_log(self, settings: Settings, key: Any) -> AuditLog:
        """The audit log of `settings`, the files it creates noted (_discard_created)."""
        path = settings.audit_log
        files = () if path == "-" else (path, f"{path}.lock")
        absent = {name for name in files if not os.path.exists(name)}
        audit = assemble.audit_log(settings, self._chain, self.clocks.clock, key)
        self._created |= {name for name in absent if os.path.exists(name)}
        return audit

    def _discard_created(self) -> None:
        """A failed start: the audit log closed (never in use: no checkpoint), and the files
        this start created removed, while nothing was written to them."""
        if self._sink is not None:
            self._sink.audit.close(checkpoint=False)
        for name in self._created:
            with contextlib.suppress(OSError):
                if os.path.getsize(name) == 0:
                    os.unlink(name)
        self._created.clear()

    def _configure(self) -> None:
        opts = ctx.options
        try:
            settings = Settings.read(lambda name: getattr(opts, name))
        except ValueError as exc:
            raise exceptions.OptionsError(str(exc)) from exc
        mitm = set(opts.keys())  # mitmproxy's own options are absent when run alone (tests)
        stream_bodies = "stream_large_bodies" in mitm and bool(opts.stream_large_bodies)
        upstream = Upstream(opts.ssl_insecure, opts.ssl_verify_upstream_trusted_ca or "",
                            opts.ssl_verify_upstream_trusted_confdir or "",
                            Upstream.proxy_of(opts.mode), self._transport)
        old = self._live
        changed = settings.changed(old.settings if old is not None else None)
        if old is None or upstream != old.upstream:
            changed.add(Rebuilds.GATE)
        try:
            # Everything new is built before anything old is replaced: a bad value changes
            # nothing (mitmproxy then puts the option back as it was).
            key = assemble.signing_key(settings)  # first: a bad key changes nothing
            signer = assemble.signer(settings, key)
            published = assemble.published(settings, key)
            startup.check_listen_port(opts)
            audit = self._audit_log(settings, key) \
                if Rebuilds.AUDIT in changed or self._sink is None else None
            try:
                services = assemble.services(settings, upstream, self.clocks, self.metrics,
                                             own=self._own(), lookup=self._lookup,
                                             spent=self._spent) \
                    if Rebuilds.GATE in changed or old is None else old.services
                if Rebuilds.METRICS in changed:
                    self._serve_metrics(settings.metrics_host, settings.metrics_port)
                self._published = published
                if Rebuilds.DIRECTORY in changed:
                    self._serve_directory(settings.directory_host, settings.directory_port)
            except BaseException:
                if audit is not None:
                    audit.close(checkpoint=False)  # never in use: no line of the chain in it
                raise
        except ValueError as exc:
            raise exceptions.OptionsError(str(exc)) from exc
        if audit is not None:
            if self._sink is None:
                self._sink = AuditSink(audit)
            else:
                self._sink.replace(audit)
        pages = assemble.pages(settings, self.clocks) \
            if Rebuilds.PAGES in changed or old is None else old.pages
        recorder = Recorder(self._sink, self.metrics, self.clocks.clock,  # type: ignore[arg-type]
                            fail_closed=settings.audit_failure == "closed",
                            monitor=settings.monitor)
        exchange = assemble.exchange(settings, services.gate, services.resolver, pages)
        self.install(Live(settings, upstream, services, recorder, pages, exchange,
                          exchange.agents, stream_bodies, signer))
        if changed & {Rebuilds.METRICS, Rebuilds.DIRECTORY}:
            self._own_changed()  # the proxy's own ports: never a destination
        if self._running:
            self._follow_status()
        if old is not None and services is not old.services:
            _close_later(old.services)

    def running(self) -> None:
        # Every script has loaded: a --set that nothing registered is a misspelling, which
        # mitmproxy would keep waiting for, silently, while the proxy runs without it.
        problems = startup.unknown_options(ctx.master.options)
        if problems or self._start_errors:
            self._cannot_start(*problems, running=True)
            return
        # Whatever is alive once the proxy runs (modules, classes, options: mitmproxy's and ours)
        # lives as long as the process. Out of the cyclic collector's sight, it no longer makes
        # every full collection walk some 100,000 objects that never die: under load those walks
        # took a tenth of the proxy's CPU, and robotsgate's imports make them a fifth longer.
        gc.freeze()
        opts = ctx.options
        authenticated = "proxyauth" in opts and bool(opts.proxyauth)
        self.set_listening(tuple(Socket(host, port) for host, port in lean.listening()),
                           authenticated=authenticated)
        lean.deepen_backlogs()  # a burst of new bots waits to be accepted, never dropped
        live = self.live
        audit = self._sink.audit if self._sink is not None else None
        try:
            if audit is not None:
                audit.claim()  # the chain the last run left: its id is in the summary
        except OSError as exc:
            self._cannot_start(f"robots_audit_log: cannot keep its chain's state beside "
                               f"{live.settings.audit_log}: {exc.strerror or exc}")
            return
        logger.info(startup.summary(live.settings, metrics=self._metrics_server,
                            proxyauth=authenticated, chain=self._chain.proxy,
                            signer=audit.key.public.keyid if audit and audit.key else None))
        self._running = True
        self._created.clear()  # started: what it created is the proxy's now
        self._follow_status()
        if live.services.fleet is not None:
            # Watch the fleet's Redis from the start: one that cannot be reached is said at
            # once, not at the first request.
            live.services.fleet.start()

        # logrotate renames the file and sends SIGHUP: records go to a new file from then on.
        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signals, or no loop
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.reopen_audit)
            self._sighup = True
            logger.info("robotsgate: SIGHUP reopens the audit log")

    def _follow_status(self) -> None:
        """The status line every robots_status_interval seconds, from when the proxy runs; a
        change of the interval takes effect at once."""
        every = self.settings.status_interval
        if every == self._status_every:
            return
        if self._status_task is not None:
            self._status_task.cancel()
            self._status_task = None
        self._status_every = every
        if every:
            self._status_task = asyncio.get_running_loop().create_task(self._say_status(every))

    async def _say_status(self, every: int) -> None:
        monotonic = self.clocks.monotonic
        before, since = status.read(self.metrics, self.held), monotonic()
        while True:
            await self.clocks.sleep(every)
            now, at = status.read(self.metrics, self.held), monotonic()
            logger.info(status.line(now, before, at - since))
            before, since = now, at

    def reopen_audit(self) -> None:
        if self._sink is None:
            return
        audit = self._sink.audit
        try:
            audit.reopen()
        except OSError as exc:
            logger.error("robotsgate: cannot reopen the audit log %s, still writing to the old "
                         "file: %s", audit.path, exc)
            return
        logger.info("robotsgate: audit log %s reopened", audit.path)

    def _serve_metrics(self, host: str, port: int) -> None:
        old, self._metrics_server = self._metrics_server, None  # None if the new one fails
        self._metrics_server = _relisten(old, host, port, lambda: self.metrics.serve(host, port),
                                         "robots_metrics_port")
        if self._metrics_server is not None and self._metrics_server is not old:
            logger.info("robotsgate: metrics on http://%s:%d/metrics", host, port)

    def _serve_directory(self, host: str, port: int) -> None:
        old, self._directory_server = self._directory_server, None
        self._directory_server = _relisten(
            old, host, port,
            lambda: DirectoryServer(host, port, lambda: self._published, self.clocks.clock),
            "robots_directory_port")
        if self._directory_server is not None and self._directory_server is not old:
            logger.info("robotsgate: key directory on http://%s:%d%s", host, port,
                        DIRECTORY_PATH)

    async def done(self) -> None:
        self._running = False
        if self._status_task is not None:
            self._status_task.cancel()
            self._status_task = None
            self._status_every = 0
        if self._sighup:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
            self._sighup = False
        if self._metrics_server is not None:
            self._metrics_server.close()
            self._metrics_server = None
        if self._directory_server is not None:
            self._directory_server.close()
            self._directory_server = None
        if self._live is not None:
            await self._live.services.aclose()
        if self._sink is not None:
            self._sink.audit.close()
        self._chain.release()


class _Listening(Protocol):
    host: str
    port: int

    def close(self) -> None: ...


def _relisten[S: _Listening](server: S | None, host: str, port: int, start: Callable[[], S],
                             option: str) -> S | None:
    """The server of one of the proxy's own ports once `option` says host:port: `server` itself
    when it listens there already (options are set again at start-up: a restart would drop its
    clients), else a new one (none for port 0), the old one closed first."""
    if server is not None and (server.host, server.port) == (host, port):
        return server
    if server is not None:
        server.close()
    if port == 0:
        return None
    try:
        return start()
    except OSError as exc:
        raise exceptions.OptionsError(f"{option}: cannot listen on {host}:{port}: "
                                      f"{exc.strerror or exc}") from exc


_closing: set["asyncio.Task[None]"] = set()


def _close_later(services: Services) -> None:
    try:
        task = asyncio.get_running_loop().create_task(services.aclose())
    except RuntimeError:
        return  # no loop yet: nothing was ever fetched with it
    _closing.add(task)  # keep a reference until it is done
    task.add_done_callback(_closing.discard)
