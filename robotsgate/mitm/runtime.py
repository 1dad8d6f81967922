"""The addon that owns robotsgate's options and services: the others read them from here.

It registers every robots_* option (declared in robotsgate.options), reads them into one frozen
`Settings` on every change, refusing a bad value with an error that names the option, and
rebuilds what a change concerns (robotsgate.assemble): the gate and its state, the nofollow
memory, the audit log, the metrics server. Lifecycle: SIGHUP reopens the audit log; done closes
everything.
"""

import asyncio
import contextlib
import gc
import logging
import signal
from collections.abc import Sequence
from typing import Any

import httpx
from mitmproxy import ctx, exceptions, http

from robotsgate import assemble
from robotsgate.assemble import Clocks, Services, Upstream
from robotsgate.gate import Gate
from robotsgate.identity import AgentMap, Identity
from robotsgate.metrics import Metrics, MetricsServer
from robotsgate.mitm import keys
from robotsgate.mitm.answers import Recorder
from robotsgate.mitm.bodies import drain_answered_bodies
from robotsgate.options import OPTIONS, PREFIX, Rebuilds, Settings
from robotsgate.pages import Pages
from robotsgate.state.departures import Departures

logger = logging.getLogger(__name__)


class Runtime:
    def __init__(self, clocks: Clocks, transport: httpx.AsyncBaseTransport | None = None
                 ) -> None:
        self.clocks = clocks
        self._transport = transport  # where robots.txt is fetched from, in tests
        self.metrics = Metrics()  # this process's registry; served when robots_metrics_port
        self.settings = Settings()
        self.agents = AgentMap.parse(())
        self.services: Services | None = None
        self.upstream: Upstream | None = None
        self.recorder: Recorder | None = None
        self.pages: Pages | None = None  # page-level signals and the nofollow memory
        self._configured: Settings | None = None
        self._metrics_server: MetricsServer | None = None
        self._sighup = False
        # mitmproxy's own options read on every request.
        self.lenient = False  # validate_inbound_headers is off
        self.stream_bodies = False  # stream_large_bodies is set

    @property
    def gate(self) -> Gate | None:
        return self.services.gate if self.services else None

    @property
    def departures(self) -> Departures | None:
        return self.services.departures if self.services else None

    def identify(self, flow: http.HTTPFlow) -> Identity:
        """Which bot the request is from (robots_agents, proxy-auth user, robots_agent, or
        its User-Agent later), kept on the flow for the audit record."""
        auth = flow.metadata.get("proxyauth")
        peer = flow.client_conn.peername
        identity = self.agents.resolve(
            user=auth[0] if isinstance(auth, tuple) and auth else None,
            address=peer[0] if peer else None, agent_option=self.settings.agent or None)
        flow.metadata[keys.IDENTITY] = identity
        return identity

    def load(self, loader: Any) -> None:
        for spec in OPTIONS:
            loader.add_option(spec.name, Sequence[str] if spec.kind is Sequence else spec.kind,
                              spec.default, spec.help, choices=spec.choices)
        _apply_deferred(loader.master.options)
        drain_answered_bodies()

    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        try:
            settings = Settings.read(lambda name: getattr(opts, name))
        except ValueError as exc:
            raise exceptions.OptionsError(str(exc)) from exc
        mitm = set(opts.keys())  # mitmproxy's own options are absent when run alone (tests)
        self.stream_bodies = "stream_large_bodies" in mitm and bool(opts.stream_large_bodies)
        self.lenient = "validate_inbound_headers" in mitm and not opts.validate_inbound_headers
        upstream = Upstream(opts.ssl_insecure, opts.ssl_verify_upstream_trusted_ca or "",
                            opts.ssl_verify_upstream_trusted_confdir or "",
                            Upstream.proxy_of(opts.mode), self._transport)
        changed = settings.changed(self._configured)
        if upstream != self.upstream:
            changed.add(Rebuilds.GATE)
        try:
            # Everything new is built before anything old is replaced: a bad value changes
            # nothing (mitmproxy then puts the option back as it was).
            audit = assemble.audit_log(settings) if Rebuilds.AUDIT in changed else None
            try:
                services = assemble.services(settings, upstream, self.clocks, self.metrics) \
                    if Rebuilds.GATE in changed or self.services is None else None
            except BaseException:
                if audit is not None:
                    audit.close()
                raise
        except ValueError as exc:
            raise exceptions.OptionsError(str(exc)) from exc
        if Rebuilds.METRICS in changed:
            self._serve_metrics(settings.metrics_host, settings.metrics_port)
        self.agents = AgentMap.parse(settings.agents)
        self.settings = self._configured = settings
        if audit is not None:
            if self.recorder is not None:
                self.recorder.audit.close()
                self.recorder.audit = audit
            else:
                self.recorder = Recorder(
                    audit, self.metrics, self.clocks.clock,
                    fail_closed=lambda: self.settings.audit_failure == "closed",
                    monitor=lambda: self.settings.monitor)
        if Rebuilds.PAGES in changed or self.pages is None:
            self.pages = assemble.pages(settings, self.clocks)
        if services is not None:
            old, self.services = self.services, services
            if old is not None:
                _close_later(old)
        self.upstream = upstream

    def running(self) -> None:
        # Whatever is alive once the proxy runs (modules, classes, options: mitmproxy's and ours)
        # lives as long as the process. Out of the cyclic collector's sight, it no longer makes
        # every full collection walk some 100,000 objects that never die: under load those walks
        # took a tenth of the proxy's CPU, and robotsgate's imports make them a fifth longer.
        gc.freeze()
        # logrotate renames the file and sends SIGHUP: records go to a new file from then on.
        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signals, or no loop
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.reopen_audit)
            self._sighup = True
            logger.info("robotsgate: SIGHUP reopens the audit log")

    def reopen_audit(self) -> None:
        if self.recorder is None:
            return
        audit = self.recorder.audit
        try:
            audit.reopen()
        except OSError as exc:
            logger.error("robotsgate: cannot reopen the audit log %s, still writing to the old "
                         "file: %s", audit.path, exc)
            return
        logger.info("robotsgate: audit log %s reopened", audit.path)

    def _serve_metrics(self, host: str, port: int) -> None:
        server = self._metrics_server
        if server is not None and (server.host, server.port) == (host, port):
            return  # options are set again at start-up: a restart would drop scrapes
        if server is not None:
            server.close()
            self._metrics_server = None
        if port == 0:
            return
        try:
            self._metrics_server = self.metrics.serve(host, port)
        except OSError as exc:
            raise exceptions.OptionsError(f"robots_metrics_port: cannot listen on {host}:{port}: "
                                          f"{exc.strerror or exc}") from exc
        logger.info("robotsgate: metrics on http://%s:%d/metrics", host, port)

    async def done(self) -> None:
        if self._sighup:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
            self._sighup = False
        if self._metrics_server is not None:
            self._metrics_server.close()
            self._metrics_server = None
        if self.services is not None:
            await self.services.aclose()
        if self.recorder is not None:
            self.recorder.audit.close()


def _apply_deferred(options: Any) -> None:
    """Apply `--set robots_...` values now, one by one, each error naming its option.

    mitmproxy defers `--set` for options that a script registers, then applies them all at once
    when the script loads; one value that does not parse makes the whole script fail to load,
    and mitmdump would run on as a plain proxy that forwards everything. Applying ours here,
    separately, turns a bad value into an error logged at start-up, on which mitmdump exits.
    """
    deferred: dict[str, Any] = options.deferred
    # OptManager has keys() but is not iterable.
    known = {name for name in options.keys() if name.startswith(PREFIX)}  # noqa: SIM118
    for name in sorted(k for k in deferred if k.startswith(PREFIX)):
        value = deferred.pop(name)
        if name not in known:
            logger.error("unknown option %s; robotsgate's options are %s", name,
                         ", ".join(sorted(known)))
            continue
        try:
            if hasattr(value, "val"):  # strings from the command line, not yet converted
                options.set(*(f"{name}={v}" for v in value.val))
            else:
                options.update(**{name: value})
        except exceptions.OptionsError as exc:
            logger.error("%s: %s", name, exc)


_closing: set["asyncio.Task[None]"] = set()


def _close_later(services: Services) -> None:
    try:
        task = asyncio.get_running_loop().create_task(services.aclose())
    except RuntimeError:
        return  # no loop yet: nothing was ever fetched with it
    _closing.add(task)  # keep a reference until it is done
    task.add_done_callback(_closing.discard)
