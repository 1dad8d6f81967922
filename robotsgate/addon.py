"""mitmproxy glue: options, hooks, and the answers the proxy gives itself.

The only module that imports mitmproxy. It validates the robots_* options in configure(), turns
each request into a call on the Gate, and turns the Verdict into a response (or lets the request
through). Any exception on the way fails closed: 503, never forwarded.
"""

import asyncio
import contextlib
import gc
import logging
import re
import signal
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import certifi
import httpx
from mitmproxy import ctx, exceptions, http
from mitmproxy.net.http.url import hostport
from mitmproxy.proxy import commands, events, layer
from mitmproxy.proxy.layers import (
    DNSLayer,
    HttpLayer,
    RawQuicLayer,
    TCPLayer,
    UDPLayer,
    modes,
)
from mitmproxy.proxy.layers.http import HTTPMode, HttpStream

from robotsgate.archive import RobotsArchive
from robotsgate.audit import AuditLog, AuditRecord, Event, timestamp
from robotsgate.departures import Departures
from robotsgate.fetch import Fetcher
from robotsgate.fleet import FALLBACKS, Fleet, SharedStateUnavailable, check_prefix, check_url
from robotsgate.gate import Gate, GateConfig, Request, Verdict
from robotsgate.identity import AgentMap, Identity, is_product
from robotsgate.metrics import Metrics, MetricsServer
from robotsgate.origin import Origin, same_authority
from robotsgate.pacing import Pacer, parse_retry_after
from robotsgate.pages import PageConfig, Pages
from robotsgate.protocol import MAX_URL_LENGTH, SEMANTICS, url_too_long
from robotsgate.store import MemoryStore

logger = logging.getLogger(__name__)

_TOKEN = re.compile(r"[A-Za-z_-]+")
MODES = ("enforce", "monitor")
PATH_CASES = ("sensitive", "insensitive")
LONG_DELAY = ("clamp", "refuse")
AUDIT_FAILURE = ("closed", "continue")
_IDENTITY = "robotsgate.identity"  # flow.metadata: who the request was decided for
_DELAY_MS = "robotsgate.delay_ms"  # flow.metadata: the wait applied before forwarding
_ANSWERED = "robotsgate.answered"  # flow.metadata: the response is the proxy's own
_ORIGINS_REMEMBERED = 4096
_HOST = "robotsgate.host"  # flow.metadata: the origin's host, as the pacer knows it
_USER_AGENT = "robotsgate.user_agent"  # flow.metadata: the request's User-Agent
_DECIDED = "robotsgate.decided"  # flow.metadata: the request was decided (at its headers)
_PACED = "robotsgate.paced"  # flow.metadata: the interval it keeps, until it takes its turn
# Options whose change rebuilds the gate (and so forgets cached robots.txt files).
_GATE_OPTIONS = frozenset({
    "robots_agent", "robots_semantics", "robots_path_case", "robots_cache_ttl",
    "robots_cache_size", "robots_rules_cache", "robots_error_ttl", "robots_fetch_timeout",
    "robots_min_delay_ms",
    "robots_max_wait", "robots_max_crawl_delay", "robots_on_long_delay",
    "robots_pacing_margin_ms", "robots_archive_dir", "ssl_insecure",
    "robots_redis", "robots_redis_prefix", "robots_redis_fallback",
    "ssl_verify_upstream_trusted_ca", "ssl_verify_upstream_trusted_confdir", "mode"})


class AuditUnwritable(Exception):
    """The audit log cannot be written and robots_audit_failure is "closed"."""


class RobotsGate:
    """The robotsgate addon: `addons = [RobotsGate()]`."""

    def __init__(self, *, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        # Injectable so that the addon can be driven without a network or real time. Pacing
        # runs on the monotonic clock: a wall clock that jumps must not bunch requests up.
        self._clock = clock
        self._monotonic = monotonic
        self._sleep = sleep
        self._transport = transport
        self.gate: Gate | None = None
        self._fetcher: Fetcher | None = None
        self._fleet: Fleet | None = None  # robots_redis: the state shared with other proxies
        self._audit: AuditLog | None = None
        self._agents: AgentMap | None = None
        self._audit_failures = 0
        self.metrics = Metrics()  # this addon's own registry; served when robots_metrics_port
        self._metrics_server: MetricsServer | None = None
        self._sighup = False
        self.pages: Pages | None = None  # page-level signals and the nofollow memory
        self._origins: dict[tuple[str, str, int], Origin] = {}
        self.departures: Departures | None = None  # when paced requests really left
        self._stream_bodies = False
        self._lenient = False  # mitmproxy's validate_inbound_headers is off
        # Options read on every request, kept by configure().
        self._monitor = False
        self._agent_option: str | None = None
        self._require_agent = False

    def load(self, loader: Any) -> None:
        loader.add_option("robots_agent", str, "",
                          "Product token to obey robots.txt as, for all traffic (e.g. MyBot). "
                          "Unset: each request's User-Agent header picks the group.")
        loader.add_option("robots_agents", Sequence[str], [],
                          "Product tokens for clients, one KEY=Token per entry: KEY is a "
                          "proxy-auth user name, a client address or a network (10.0.0.0/8). "
                          "Takes precedence over robots_agent and the User-Agent header.")
        loader.add_option("robots_require_agent", bool, False,
                          "Answer 407 to requests whose bot cannot be identified (no map entry, "
                          "no proxy-auth user, no robots_agent and no User-Agent).")
        loader.add_option("robots_audit_failure", str, "closed",
                          "When the audit log cannot be written: closed answers 503 instead of "
                          "forwarding or blocking unrecorded; continue logs the error and goes on.",
                          choices=AUDIT_FAILURE)
        loader.add_option("robots_mode", str, "enforce",
                          "enforce: answer disallowed requests with 403. monitor: decide and "
                          "audit, but forward everything.", choices=MODES)
        loader.add_option("robots_semantics", str, "rfc9309",
                          "How robots.txt is read: rfc9309, google (Google's reference parser) "
                          "or classic (the 1994 standard).", choices=SEMANTICS)
        loader.add_option("robots_path_case", str, "sensitive",
                          "Match paths case-sensitively (RFC 9309) or insensitively.",
                          choices=PATH_CASES)
        loader.add_option("robots_audit_log", str, "robots-audit.jsonl",
                          "Audit log (JSON lines) of every block; '-' for standard output.")
        loader.add_option("robots_cache_ttl", int, 86_400,
                          "Seconds a robots.txt is cached at most (Cache-Control max-age may "
                          "shorten it); at most 86400 (RFC 9309).")
        loader.add_option("robots_cache_size", int, 100_000, "Origins whose robots.txt is cached.")
        loader.add_option("robots_rules_cache", int, 4096,
                          "Distinct robots.txt files kept parsed; a cached origin whose file "
                          "is not among them has it parsed again from its cached body.")
        loader.add_option("robots_fetch_timeout", int, 10,
                          "Seconds to wait for a robots.txt answer before treating the origin "
                          "as unreachable (503).")
        loader.add_option("robots_error_ttl", int, 60,
                          "Seconds an unreachable robots.txt is remembered before it is asked "
                          "for again; also the Retry-After of the 503 answers meanwhile.")
        loader.add_option("robots_min_delay_ms", int, 0,
                          "Least milliseconds between the starts of two requests to one host, "
                          "whatever its robots.txt says.")
        loader.add_option("robots_pacing_margin_ms", int, 10,
                          "Milliseconds added to every non-zero politeness interval, so that "
                          "the proxy's own forwarding jitter never brings two requests closer "
                          "than the site asked.")
        loader.add_option("robots_max_wait", int, 60,
                          "Seconds a request may be held for politeness; one that would wait "
                          "longer is answered 429 with Retry-After.")
        loader.add_option("robots_max_crawl_delay", int, 60,
                          "Longest Crawl-delay (seconds) honoured as asked; a longer one is "
                          "clamped or refused, per robots_on_long_delay.")
        loader.add_option("robots_on_long_delay", str, "clamp",
                          "clamp: use robots_max_crawl_delay instead of a longer Crawl-delay. "
                          "refuse: answer 429 to every request to such a host.",
                          choices=LONG_DELAY)
        loader.add_option("robots_redis", str, "",
                          "redis://host:port/db: share robots.txt and politeness with every "
                          "proxy on this Redis (fleet mode). Unset: this process's memory.")
        loader.add_option("robots_redis_prefix", str, "robotsgate:",
                          "Prefix of every Redis key and channel robotsgate uses.")
        loader.add_option("robots_redis_fallback", str, "closed",
                          "While Redis is unreachable: closed answers 503; local uses this "
                          "proxy's own memory (politeness no longer shared).",
                          choices=FALLBACKS)
        _tooling_options(loader)
        _page_options(loader)
        _apply_deferred(loader.master.options)
        _drain_answered_bodies()

    def configure(self, updated: set[str]) -> None:
        opts = ctx.options
        # Read on every request: reading an option through ctx.options deep-copies its value.
        self._monitor = opts.robots_mode == "monitor"
        # mitmproxy's own options (absent when the addon runs alone, as in its tests).
        mitm = set(opts.keys())
        self._stream_bodies = "stream_large_bodies" in mitm and bool(opts.stream_large_bodies)
        self._lenient = "validate_inbound_headers" in mitm and not opts.validate_inbound_headers
        self._agent_option = opts.robots_agent or None
        self._require_agent = opts.robots_require_agent
        _choice("robots_mode", opts.robots_mode, MODES)
        _choice("robots_semantics", opts.robots_semantics, SEMANTICS)
        _choice("robots_path_case", opts.robots_path_case, PATH_CASES)
        _choice("robots_on_long_delay", opts.robots_on_long_delay, LONG_DELAY)
        _choice("robots_redis_fallback", opts.robots_redis_fallback, FALLBACKS)
        for name, check in (("robots_redis", check_url), ("robots_redis_prefix", check_prefix)):
            value = getattr(opts, name)
            if value or name == "robots_redis_prefix":
                try:
                    check(value)
                except ValueError as exc:
                    raise exceptions.OptionsError(f"{name}: {exc}") from exc
        _choice("robots_audit_failure", opts.robots_audit_failure, AUDIT_FAILURE)
        if "robots_agents" in updated or self._agents is None:
            try:
                self._agents = AgentMap.parse(opts.robots_agents)
            except ValueError as exc:
                raise exceptions.OptionsError(f"robots_agents: {exc}") from exc
        if "robots_agent" in updated and opts.robots_agent and \
                not _TOKEN.fullmatch(opts.robots_agent):
            raise exceptions.OptionsError(
                f"robots_agent must be a product token (letters, '-' and '_'), such as MyBot; "
                f"got {opts.robots_agent!r}")
        _in_range("robots_cache_ttl", opts.robots_cache_ttl, 1, 86_400)
        _in_range("robots_cache_size", opts.robots_cache_size, 1, 100_000_000)
        _in_range("robots_rules_cache", opts.robots_rules_cache, 1, 100_000_000)
        _in_range("robots_fetch_timeout", opts.robots_fetch_timeout, 1, 600)
        _in_range("robots_error_ttl", opts.robots_error_ttl, 1, 86_400)
        _in_range("robots_min_delay_ms", opts.robots_min_delay_ms, 0, 3_600_000)
        _in_range("robots_max_wait", opts.robots_max_wait, 0, 3600)
        _in_range("robots_pacing_margin_ms", opts.robots_pacing_margin_ms, 0, 1000)
        _in_range("robots_max_crawl_delay", opts.robots_max_crawl_delay, 1, 86_400)
        _in_range("robots_audit_max_bytes", opts.robots_audit_max_bytes, 0, 2**50)
        _in_range("robots_audit_keep", opts.robots_audit_keep, 1, 1000)
        _in_range("robots_metrics_port", opts.robots_metrics_port, 0, 65_535)
        if updated & _AUDIT_OPTIONS or self._audit is None:
            self._open_audit(opts.robots_audit_log)
        if updated & {"robots_metrics_port", "robots_metrics_host"}:
            self._serve_metrics(opts.robots_metrics_host, opts.robots_metrics_port)
        self._configure_pages(updated)
        if self.gate is None or updated & _GATE_OPTIONS:
            self._build_gate()

    def _open_audit(self, path: str) -> None:
        try:
            audit = AuditLog(path, max_bytes=ctx.options.robots_audit_max_bytes,
                             keep=ctx.options.robots_audit_keep)
        except OSError as exc:
            raise exceptions.OptionsError(f"robots_audit_log: cannot open {path!r}: "
                                          f"{exc.strerror}") from exc
        if self._audit is not None:
            self._audit.close()
        self._audit = audit

    def _build_gate(self) -> None:
        opts = ctx.options
        config = GateConfig(
            agent=opts.robots_agent or None, semantics=opts.robots_semantics,
            case_sensitive=opts.robots_path_case == "sensitive",
            cache_ttl=opts.robots_cache_ttl, error_ttl=opts.robots_error_ttl,
            parsed_cache_size=opts.robots_rules_cache, min_delay=opts.robots_min_delay_ms / 1000,
            max_crawl_delay=opts.robots_max_crawl_delay, on_long_delay=opts.robots_on_long_delay,
            pacing_margin=opts.robots_pacing_margin_ms / 1000)
        archive = _archive(opts.robots_archive_dir)  # first: a bad directory changes nothing
        old = self._fetcher
        self._fetcher = Fetcher(timeout=opts.robots_fetch_timeout, verify=_upstream_tls(),
                                proxy=_upstream_proxy(opts.mode), transport=self._transport)
        pacer = Pacer(self._monotonic, max_wait=opts.robots_max_wait,
                      max_hosts=opts.robots_cache_size)
        self.departures = Departures(self._monotonic, self._sleep,
                                     max_hosts=min(opts.robots_cache_size, 100_000))
        store = MemoryStore(opts.robots_cache_size)
        old_fleet, fleet = self._fleet, None
        if opts.robots_redis:
            # The in-memory store and pacer stay as the fallback for while Redis is down.
            fleet = Fleet(opts.robots_redis, prefix=opts.robots_redis_prefix,
                          fallback=opts.robots_redis_fallback, clock=self._clock,
                          local_store=store, local_pacer=pacer,
                          max_origins=opts.robots_cache_size, max_wait=opts.robots_max_wait,
                          lock_ttl=2 * opts.robots_fetch_timeout + 5, monotonic=self._monotonic)
        self.gate = Gate(config, self._fetcher, fleet.store if fleet else store, self._clock,
                         fleet.pacer if fleet else pacer, metrics=self.metrics, archive=archive)
        store.parse = self.gate.parse  # cached origins keep bodies; rules come from the gate
        if fleet is not None:
            fleet.bind(self.gate.parse)
        self._fleet = fleet
        if old is not None:
            _close_later(old)
        if old_fleet is not None:
            _close_later(old_fleet)

    def running(self) -> None:
        # Whatever is alive once the proxy runs (modules, classes, options: mitmproxy's and ours)
        # lives as long as the process. Out of the cyclic collector's sight, it no longer makes
        # every full collection walk some 100,000 objects that never die: under load those walks
        # took a tenth of the proxy's CPU, and robotsgate's imports make them a fifth longer.
        gc.freeze()
        # logrotate renames the file and sends SIGHUP: records go to a new file from then on.
        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signals, or no loop
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self._reopen_audit)
            self._sighup = True
            logger.info("robotsgate: SIGHUP reopens the audit log")

    def _reopen_audit(self) -> None:
        if self._audit is None:
            return
        try:
            self._audit.reopen()
        except OSError as exc:
            logger.error("robotsgate: cannot reopen the audit log %s, still writing to the old "
                         "file: %s", self._audit.path, exc)
            return
        logger.info("robotsgate: audit log %s reopened", self._audit.path)

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
        if self._fetcher is not None:
            await self._fetcher.aclose()
        if self._fleet is not None:
            await self._fleet.aclose()
        if self._audit is not None:
            self._audit.close()

    async def requestheaders(self, flow: http.HTTPFlow) -> None:
        """Every request is decided here, as soon as its headers are in: before mitmproxy opens
        a connection for it, and before any of its body is read, let alone streamed
        (stream_large_bodies streams a body as soon as this hook returns)."""
        await self._decide_once(flow)
        if flow.response is not None:
            # The proxy answers: the body is read and dropped, never streamed to the origin.
            flow.request.stream = False
        elif _PACED in flow.metadata and self._streams_now(flow):
            await self._take_turn(flow)

    async def request(self, flow: http.HTTPFlow) -> None:
        # Every flow passes requestheaders first; this only catches one that did not (a flow
        # replayed by another addon, say), so that nothing leaves undecided.
        await self._decide_once(flow)
        if flow.response is None and _PACED in flow.metadata:
            await self._take_turn(flow)

    async def _decide_once(self, flow: http.HTTPFlow) -> None:
        if flow.metadata.get(_DECIDED) or flow.response is not None or flow.error is not None \
                or not flow.live:
            return
        flow.metadata[_DECIDED] = True
        try:
            await self._decide(flow)
        except AuditUnwritable:
            # robots_audit_failure=closed: nothing passes (or is blocked) unrecorded.
            self._answer(flow, 503, "audit-unavailable",
                         "robotsgate cannot write its audit log; nothing is forwarded until it "
                         "can.\n", {"Retry-After": "60"})
        except SharedStateUnavailable:
            # robots_redis_fallback=closed; the outage itself is logged once, by the fleet.
            self._answer(flow, 503, "redis-unavailable",
                         "robotsgate cannot reach the Redis its fleet shares; nothing is "
                         "forwarded until it can.\n", {"Retry-After": "5"})
            with contextlib.suppress(AuditUnwritable):
                self._record(flow, "block", "redis-unavailable", 503, None)
        except Exception:
            # Fail closed: whatever went wrong, the request is not forwarded.
            logger.exception("robotsgate: internal error deciding %s", flow.request.pretty_url)
            self._answer(flow, 503, "internal-error",
                         "robotsgate could not decide this request; it was not forwarded.\n",
                         {"Retry-After": "60"})
            with contextlib.suppress(AuditUnwritable):  # already failing closed
                self._record(flow, "block", "internal-error", 503, None)

    def _identify(self, flow: http.HTTPFlow) -> Identity:
        assert self._agents is not None
        auth = flow.metadata.get("proxyauth")
        peer = flow.client_conn.peername
        identity = self._agents.resolve(
            user=auth[0] if isinstance(auth, tuple) and auth else None,
            address=peer[0] if peer else None, agent_option=self._agent_option)
        flow.metadata[_IDENTITY] = identity
        return identity

    def _refuse_unidentified(self, flow: http.HTTPFlow, identity: Identity,
                             user_agent: str | None) -> bool:
        """robots_require_agent: 407 when nothing says which bot this is."""
        if not self._require_agent or identity.token is not None or is_product(user_agent or ""):
            return False
        self._record(flow, "block", "unidentified", 407, None)
        self._answer(flow, 407, "unidentified",
                     "robotsgate needs to know which bot this is. Send a User-Agent that names "
                     "your bot (e.g. MyBot/1.0), or authenticate to the proxy with your bot's "
                     "name, or ask the operator to map your address (robots_agents).\n",
                     {"Proxy-Authenticate": 'Basic realm="robotsgate"'})
        return True

    def _refuse_framing(self, flow: http.HTTPFlow, seen: "_RequestHeaders") -> bool:
        """Bodies whose end servers may find in different places are refused. Upgrades other
        than WebSocket are refused: after a 101 the connection would be a pipe
        that robotsgate cannot see into. An h2c upgrade is dropped instead, as mitmproxy means
        to (it only recognises the exact lower-case token): the request is served over HTTP/1.1,
        decided like any other."""
        req = flow.request
        if req.path[:1] != "/" and not (req.path == "*" and req.method == "OPTIONS"):
            # HTTP/2 lets a client send any :path; servers read "private/x" as /private/x, and
            # robots.txt rules are about paths that start with '/'.
            return self._refuse_protocol(flow, "target", 400, "robotsgate only forwards request "
                                         "targets that are paths starting with '/'.\n")
        if url_too_long(req.path):
            # Servers refuse request lines this long anyway; a decision's work grows with the
            # path, and one site's hostile robots.txt must not hold the others.
            return self._refuse_protocol(flow, "url-too-long", 414, f"robotsgate decides "
                                         f"request targets of up to {MAX_URL_LENGTH} "
                                         f"characters.\n")
        if self._lenient and not _well_formed(req):
            # validate_inbound_headers off: mitmproxy no longer refuses these, and a control
            # character in a method, path or header name becomes a second request on the way
            # to an HTTP/1 origin.
            return self._refuse_protocol(flow, "framing", 400, "robotsgate does not forward a "
                                         "request with control characters or separators where "
                                         "HTTP allows none (method, path, header names).\n")
        if seen.lengths or seen.encodings:
            smuggled = seen.lengths > 1 or (seen.lengths and seen.encodings) or (
                seen.encodings and [e.strip().lower() for e in seen.encodings] != [b"chunked"])
            if smuggled:
                # Servers disagree on where such a body ends, and the rest would be read as
                # another request nobody decided (mitmproxy refuses these too, unless
                # validate_inbound_headers is off).
                return self._refuse_protocol(
                    flow, "framing", 400, "robotsgate does not forward a request whose body "
                    "length servers may read differently (Content-Length with "
                    "Transfer-Encoding, several Content-Length, or a coding other than "
                    "chunked).\n")
        if seen.upgrade is None:
            return False
        tokens = {token.strip().lower() for token in seen.upgrade.split(",")} - {""}
        if tokens == {"websocket"}:
            return False  # the handshake is decided on its path like any request
        if tokens <= {"h2c"}:
            _drop_upgrade(flow.request.headers)
            return False
        return self._refuse_protocol(flow, "upgrade", 400,
                                     f"robotsgate does not forward protocol upgrades other "
                                     f"than WebSocket (asked for: {seen.upgrade}).\n")

    def _refuse_protocol(self, flow: http.HTTPFlow, what: str, status: int, text: str) -> bool:
        """A request robotsgate cannot decide what it would carry: refused and audited."""
        if self._monitor:
            self._record(flow, "would-block", what, status, None)
            return False
        self._record(flow, "block", what, status, None)
        self._answer(flow, status, what, text, {"Connection": "close"})
        return True

    def _refuse_misdirected(self, flow: http.HTTPFlow, host: str | None) -> bool:
        """A Host header, or a request target's authority (absolute form, :authority), naming
        another host than the request goes to: 400. Servers serve by one or the other (RFC 9112
        §3.2.2 prefers the target's); both must name what was decided."""
        req = flow.request
        claimed = next((name for name in (host, req.authority) if name and not
                        same_authority(name, req.scheme, req.host, req.port)), None)
        if claimed is None:
            return False
        self._record(flow, "block", "host-mismatch", 400, None)
        self._answer(flow, 400, "host-mismatch",
                     f"The Host header ({claimed}) names another host than the request goes to "
                     f"({req.host}:{req.port}); robotsgate decides for the real target only.\n",
                     {})
        return True

    async def http_connect(self, flow: http.HTTPFlow) -> None:
        """With ignore_hosts/allow_hosts set, every tunnel is decided now, on its host alone.

        mitmproxy decides to pass a connection through unseen by its CONNECT target, but also by
        the address it connects to and by the TLS server name the client sends later -- none of
        which is known yet. So when any host may go unseen, every CONNECT is decided on its host;
        without those options every request inside a tunnel is decided on its own.
        """
        opts = ctx.options
        if flow.response is not None or self.gate is None or \
                not (opts.ignore_hosts or opts.allow_hosts):
            return
        try:
            req = flow.request
            identity = self._identify(flow)
            scheme = "http" if req.port == 80 else "https"
            verdict = await self.gate.check_host(Origin.of(scheme, req.host, req.port),
                                                 req.headers.get("user-agent"), identity.token)
            if verdict.action == "forward":
                if _not_intercepted(req.host, req.port):
                    self._record(flow, "tunnel", "not-intercepted", None, verdict)
                return
            status = verdict.status or 503
            if self._monitor:
                self._record(flow, "would-block", verdict.reason, status, verdict)
                return
            self._record(flow, "block", verdict.reason, status, verdict)
            self._answer(flow, status, verdict.reason,
                         f"robots.txt of {req.host} ({verdict.robots_url}) "
                         + ("disallows everything for this agent; "
                            if verdict.action == "block" else "could not be fetched; ")
                         + "this tunnel, which the proxy cannot see into, is refused.\n",
                         {"Retry-After": str(verdict.retry_after)} if verdict.retry_after else {},
                         verdict)
        except SharedStateUnavailable:
            self._answer(flow, 503, "redis-unavailable", "robotsgate cannot reach the Redis its "
                         "fleet shares; this tunnel was refused.\n", {"Retry-After": "5"})
            with contextlib.suppress(AuditUnwritable):
                self._record(flow, "block", "redis-unavailable", 503, None)
        except Exception:
            logger.exception("robotsgate: internal error deciding CONNECT %s", flow.request.host)
            self._answer(flow, 503, "internal-error", "robotsgate could not decide this tunnel; "
                         "it was refused.\n", {"Retry-After": "60"})
            with contextlib.suppress(AuditUnwritable):  # already failing closed
                self._record(flow, "block", "internal-error", 503, None)

    async def _decide(self, flow: http.HTTPFlow) -> None:
        assert self.gate is not None
        req = flow.request
        seen = _RequestHeaders.of(req.headers.fields)
        host, user_agent, referer = seen.host, seen.user_agent, seen.referer
        identity = self._identify(flow)
        if seen.folded:
            _unfold(req.headers)  # obs-fold: one reading for every server (RFC 9112 §5.2)
        if self._refuse_framing(flow, seen) or self._refuse_misdirected(flow, host) or \
                self._refuse_unidentified(flow, identity, user_agent) or \
                self._refuse_nofollow(flow, identity, user_agent, referer):
            return
        if not (host and host.strip()) and not (req.is_http2 or req.is_http3):
            # No Host (or an empty one): the origin would serve its default site, not the one
            # decided. The request goes out naming its target.
            req.headers["Host"] = hostport(req.scheme, req.host, req.port)
        origin = self._origin(req.scheme, req.host, req.port)
        flow.metadata[_HOST] = origin.host
        flow.metadata[_USER_AGENT] = user_agent
        verdict = await self.gate.check(Request(origin, req.path, user_agent, identity.token))
        if verdict.action == "forward":
            await self._forward(flow, verdict)
            return
        status = verdict.status or 503
        if self._monitor:
            self._record(flow, "would-block", verdict.reason, status, verdict)
            # Forwarded all the same, so it takes its turn in the host's schedule like any other.
            wait, interval = await self.gate.pace_regardless(origin, verdict)
            await self._forward(flow, replace(verdict, action="forward", wait=wait,
                                              interval=interval), record=False)
            return
        self._record(flow, "block", verdict.reason, status, verdict)
        if verdict.action == "block":
            self._answer_block(flow, verdict)
            return
        retry = {"Retry-After": str(verdict.retry_after or 60)}
        self._answer(flow, status, verdict.reason, _MESSAGES[verdict.reason].format(
            v=verdict, asked=f"{verdict.asked_delay or 0:g}"), retry, verdict)

    def _origin(self, scheme: str, host: str, port: int) -> Origin:
        """Origin.of, remembered: a bot asks the same few origins again and again."""
        where = (scheme, host, port)
        origin = self._origins.get(where)
        if origin is None:
            if len(self._origins) >= _ORIGINS_REMEMBERED:
                self._origins.clear()  # endless distinct origins: start over
            origin = self._origins[where] = Origin.of(scheme, host, port)
        return origin

    async def _forward(self, flow: http.HTTPFlow, verdict: Verdict, *, record: bool = True
                       ) -> None:
        if record:
            self.metrics.forwarded(verdict.reason, verdict.wait)
        if record and (verdict.wait > 0 or verdict.asked_delay is not None):
            self._record(flow, "delay", verdict.reason, None, verdict)
        if verdict.wait > 0:
            await self._sleep(verdict.wait)
        flow.metadata[_DELAY_MS] = round(verdict.wait * 1000)
        if verdict.interval > 0:
            flow.metadata[_PACED] = verdict.interval  # its turn is taken when it is released

    async def _take_turn(self, flow: http.HTTPFlow) -> None:
        """A paced request leaves one interval after the previous one really left (see
        robotsgate.departures); called from the last hook before mitmproxy sends it."""
        interval = flow.metadata.pop(_PACED, None)
        if interval is None or self.departures is None:
            return
        async with self.departures.turn(flow.metadata[_HOST], interval, flow.id,
                                        tls=flow.request.scheme == "https"):
            pass

    def _streams_now(self, flow: http.HTTPFlow) -> bool:
        """Whether mitmproxy may send this request before its request hook: a body that is
        streamed (stream_large_bodies) goes as soon as the headers are decided."""
        if flow.request.stream:
            return True
        if not self._stream_bodies:
            return False
        headers = flow.request.headers
        return "transfer-encoding" in headers or headers.get("content-length", "0") != "0"

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if self.departures is not None and _HOST in flow.metadata:
            self.departures.settled(flow.metadata[_HOST], flow.id)

    def error(self, flow: http.HTTPFlow) -> None:
        self.responseheaders(flow)

    def server_connected(self, data: Any) -> None:
        self._connected(data.server.address, tls=False)

    def tls_established_server(self, data: Any) -> None:
        self._connected(data.context.server.address, tls=True)

    def _connected(self, address: tuple[str, int] | None, *, tls: bool) -> None:
        if self.departures is not None and address is not None:
            self.departures.connected(self._origin("http", address[0], address[1]).host,
                                      tls=tls)

    async def response(self, flow: http.HTTPFlow) -> None:
        """Pushback: a 429 or 503 from the origin pauses its host for every bot."""
        if flow.response is None or flow.metadata.get(_ANSWERED) or self.gate is None:
            return
        if flow.response.status_code == 101 and flow.websocket is None:
            self._refuse_switch(flow)
            return
        seen = _ResponseHeaders.of(flow.response.headers.fields)
        added: list[tuple[bytes, bytes]] = []
        delay = flow.metadata.get(_DELAY_MS)
        if delay is not None:
            added.append((b"X-Robotsgate-Delay-Ms", str(delay).encode("ascii")))
        self._page_signals(flow, seen, added)
        if added:
            _set_headers(flow.response.headers, added, replace=seen.ours)
        host = flow.metadata.get(_HOST) or \
            Origin.of(flow.request.scheme, flow.request.host, flow.request.port).host
        if flow.response.status_code in (429, 503):
            pause = await self.gate.pacer.pushback(host, parse_retry_after(
                flow.response.headers.get("retry-after"), self._clock()))
            logger.info("robotsgate: %s answered %d: pausing it for %.1f s", host,
                        flow.response.status_code, pause)
        else:
            await self.gate.pacer.recovered(host)

    def _refuse_switch(self, flow: http.HTTPFlow) -> None:
        """An origin switching protocols to anything but WebSocket (an upgrade it was never
        offered, or one mitmproxy will not read): mitmproxy would relay the connection as a
        raw pipe from then on. The connection is closed instead, before the 101 reaches the
        client."""
        if self._monitor:
            self._record(flow, "would-block", "upgrade", 101, None)
            return
        # Not "block": the request itself was decided and did reach the origin.
        self._record(flow, "cut", "upgrade", 502, None)
        flow.kill()

    def next_layer(self, nextlayer: layer.NextLayer) -> None:
        """Whatever mitmproxy chose to speak on a connection, either each request on it is
        decided, or the connection is refused and audited.

        HTTP (1, 2, 3, WebSocket) and TLS layers lead to decided requests or to another choice
        of layer. The others carry bytes robotsgate cannot decide: raw TCP (mitmproxy falls back
        to it for bytes that do not look like HTTP at first sight, such as a request line
        written in two parts or after an empty line), UDP, DNS, raw QUIC. Raw TCP in a tunnel
        is read as HTTP instead (mitmproxy's own choice with rawtcp off), so every request in
        it is decided and anything else gets mitmproxy's 400. The rest is refused; a connection
        that ignore_hosts or allow_hosts pass through unseen is let through only inside a
        CONNECT, which http_connect decided on its host.
        """
        if nextlayer.layer is None:
            # Script addons are asked before mitmproxy's own chooser: let it choose first (it
            # leaves a layer that is already set alone when its turn comes).
            ctx.master.addons.get("nextlayer").next_layer(nextlayer)
        chosen = nextlayer.layer
        if chosen is None:
            return
        context = nextlayer.context
        nested = _undecidable_below(chosen)
        if nested is not None:  # a stack chosen whole (reverse:tls://, reverse:tcp:// + TLS)
            self._refuse_connection(nextlayer, nested)
            return
        if not isinstance(chosen, _UNDECIDABLE):
            return
        address = context.server.address
        tunnel = len(context.layers) > 1 and isinstance(
            context.layers[0], (modes.HttpProxy, modes.HttpUpstreamProxy))
        if tunnel and address is not None and _ignored(nextlayer) and \
                _not_intercepted(address[0], address[1]):
            return  # decided at the CONNECT, on its host, and recorded there (http_connect)
        if isinstance(chosen, TCPLayer) and address is not None and \
                context.client.transport_protocol == "tcp":
            # Raw TCP, or a passthrough mitmproxy chose by something else than the CONNECT
            # target (a Host header, a server name, the address it resolved): read as HTTP.
            nextlayer.layer = HttpLayer(context, HTTPMode.transparent)
            return
        self._refuse_connection(nextlayer, chosen)

    def _refuse_connection(self, nextlayer: layer.NextLayer, chosen: layer.Layer) -> None:
        context = nextlayer.context
        kind = {TCPLayer: "tcp", UDPLayer: "udp", DNSLayer: "dns"}.get(type(chosen), "quic")
        address = context.server.address
        target = _peer(address) if address else "unknown"
        event: Event = "would-block" if self._monitor else "block"
        with contextlib.suppress(AuditUnwritable):  # refused either way
            self._record_connection(context, event, f"{kind}://{target}", kind.upper())
        if self._monitor:
            return
        logger.info("robotsgate: refused a %s connection to %s from %s: it carries nothing "
                    "robotsgate can decide", kind, target, _peer(context.client.peername))
        nextlayer.layer = _Refused(context)

    def _record_connection(self, context: Any, event: Event, url: str, method: str) -> None:
        assert self._audit is not None and self._agents is not None
        peer = context.client.peername
        identity = self._agents.resolve(user=None, address=peer[0] if peer else None,
                                        agent_option=self._agent_option)
        self.metrics.recorded(event, "protocol")
        record = AuditRecord(
            ts=timestamp(self._clock()), event=event, reason="protocol", status=None,
            agent=identity.token or "*", user_agent=None, client=_peer(peer), method=method,
            url=url, robots_url=None, robots_status=None, robots_fetched_at=None,
            robots_sha256=None, group=None, rule=None, line=None, delay_ms=0,
            mode="monitor" if self._monitor else "enforce", agent_source=identity.source)
        self._write(record)

    # -- page-level signals (robotsgate.pages) ---------------------------------------------------

    def _configure_pages(self, updated: set[str]) -> None:
        opts = ctx.options
        _in_range("robots_nofollow_memory", opts.robots_nofollow_memory, 1, 100_000_000)
        _in_range("robots_nofollow_ttl", opts.robots_nofollow_ttl, 1, 30 * 86_400)
        if self.pages is None or updated & _PAGE_OPTIONS:
            self.pages = Pages(PageConfig(
                enforce_nofollow=opts.robots_enforce_nofollow, strip=opts.robots_strip,
                memory_size=opts.robots_nofollow_memory, memory_ttl=opts.robots_nofollow_ttl),
                self._clock, self._monotonic)

    def _refuse_nofollow(self, flow: http.HTTPFlow, identity: Identity, user_agent: str | None,
                         referer: str | None) -> bool:
        """403 for a link that the page named in the Referer says not to follow."""
        if self.pages is None or not referer:
            return False  # no Referer, no page to have been told about: the common case
        found = self.pages.nofollow(url=flow.request.url, referer=referer, agent=identity.token,
                                    user_agent=user_agent)
        if found is None:
            return False
        if self._monitor:
            self._record(flow, "would-block", "nofollow", 403, None, page=found.page)
            return False
        self._record(flow, "block", "nofollow", 403, None, page=found.page)
        where = ("is nofollow for this agent (META robots or X-Robots-Tag)" if found.why == "page"
                 else "has this link in a nofollow section")
        self._answer(flow, 403, "nofollow", f"Not followed: the referring page {found.page} "
                     f"{where}.\n", {"X-Robotsgate-Page": found.page})
        return True

    def _page_signals(self, flow: http.HTTPFlow, seen: "_ResponseHeaders",
                      added: list[tuple[bytes, bytes]]) -> None:
        """HTML responses: one normalised X-Robots-Tag (appended to `added`), nofollow links
        remembered, sections stripped (robots_strip). Trouble here never breaks a response: it
        goes through as it came, and the trouble is logged."""
        response, req = flow.response, flow.request
        if response is None or self.pages is None:
            return
        content_type = seen.content_type
        if not self.pages.reads(req.method, response.status_code, content_type):
            return
        try:
            raw = response.raw_content
            if raw is None:
                return  # streamed (stream_large_bodies): already on its way to the bot
            identity = flow.metadata.get(_IDENTITY)
            result = self.pages.annotate(
                url=lambda: req.url, method=req.method, status=response.status_code,
                agent=identity.token if identity else self._agent_option,
                user_agent=flow.metadata[_USER_AGENT] if _USER_AGENT in flow.metadata
                else req.headers.get("user-agent"),
                content_type=content_type, x_robots_tag=seen.x_robots_tag, raw=raw,
                content_encoding=seen.content_encoding)
        except Exception:
            logger.exception("robotsgate: could not read the page signals of %s; passed on "
                             "unchanged", req.pretty_url)
            return
        # The origin's own X-Robots-Tag headers are replaced: the one value carries everything
        # they said for this agent, together with the page's META and nothing for other agents.
        added.append((b"X-Robots-Tag", result.x_robots_tag.encode("utf-8", "surrogateescape")))
        if result.body is not None:
            response.content = result.body

    def _answer_block(self, flow: http.HTTPFlow, verdict: Verdict) -> None:
        decision = verdict.decision
        assert decision is not None and decision.rule is not None
        rule = decision.rule
        self._answer(flow, 403, "disallowed",
                     f"Forbidden by robots.txt: {decision.explain()}\n"
                     f"robots.txt: {verdict.robots_url}\nagent: {verdict.agent}\n",
                     {"X-Robotsgate-Rule": f"{rule.directive.capitalize()}: {rule.pattern}",
                      "X-Robotsgate-Line": str(rule.line)}, verdict)

    def _answer(self, flow: http.HTTPFlow, status: int, reason: str, body: str,
                extra: dict[str, str], verdict: Verdict | None = None) -> None:
        headers = {"Content-Type": "text/plain; charset=utf-8", "X-Robotsgate-Reason": reason,
                   **extra}
        if verdict is not None:
            headers["X-Robotsgate-Robots-Url"] = verdict.robots_url
            headers["X-Robotsgate-Agent"] = verdict.agent
        if "close" in flow.request.headers.get("connection", "").lower():
            headers["Connection"] = "close"
        flow.response = http.Response.make(status, body.encode("utf-8"), headers)
        flow.metadata[_ANSWERED] = True

    def _record(self, flow: http.HTTPFlow, event: Event, reason: str, status: int | None,
                verdict: Verdict | None, *, page: str | None = None) -> None:
        assert self._audit is not None
        self.metrics.recorded(event, reason)
        req = flow.request
        entry = verdict.entry if verdict else None
        decision = verdict.decision if verdict else None
        rule = decision.rule if decision else None
        group = decision.group if decision else None
        peer = flow.client_conn.peername
        identity = flow.metadata.get(_IDENTITY)
        record = AuditRecord(
            ts=timestamp(self._clock()), event=event, reason=reason, status=status,
            agent=verdict.agent if verdict else (identity.token if identity else None) or "*",
            user_agent=req.headers.get("user-agent"),
            client=f"{peer[0]}:{peer[1]}" if peer else None, method=req.method,
            url=req.url,  # the target decided, not whatever a Host header claims
            robots_url=verdict.robots_url if verdict else None,
            robots_status=entry.status if entry else None,
            robots_fetched_at=timestamp(entry.fetched_at) if entry else None,
            robots_sha256=entry.sha256 if entry else None,
            group=", ".join(group.agents) if group else None,
            rule=f"{rule.directive.capitalize()}: {rule.pattern}" if rule else None,
            line=rule.line if rule else None,
            delay_ms=round(verdict.wait * 1000) if verdict else 0,
            mode="monitor" if self._monitor else "enforce",
            asked_delay_ms=_ms(verdict.asked_delay) if verdict else None,
            agent_source=identity.source if identity else None,
            user_agent_mismatch=identity.mismatch(req.headers.get("user-agent"))
            if identity else None, page=page)
        self._write(record)

    def _write(self, record: AuditRecord) -> None:
        assert self._audit is not None
        try:
            self._audit.write(record)
        except OSError as exc:
            self._audit_failures += 1
            if self._audit_failures == 1 or self._audit_failures % 1000 == 0:
                logger.error("robotsgate: cannot write the audit log %s (%d failures so far): "
                             "%s", self._audit.path, self._audit_failures, exc)
            if ctx.options.robots_audit_failure == "closed":
                raise AuditUnwritable(str(exc)) from exc


# Headers read on every request and every page, each set in one pass over the raw fields:
# Headers.get() scans them all, lower-casing every name, once per header asked for.
_FOLD = (b"\r", b"\n")


@dataclass(slots=True)
class _RequestHeaders:
    """What robotsgate reads of a request's headers, in one pass over its fields."""

    host: str | None
    user_agent: str | None
    referer: str | None
    upgrade: str | None
    folded: bool  # a value continued on the next line (obs-fold), or holding a bare CR or LF
    lengths: int  # Content-Length fields
    encodings: list[bytes]  # Transfer-Encoding values

    @classmethod
    def of(cls, fields: Sequence[tuple[bytes, bytes]]) -> "_RequestHeaders":
        seen = cls(None, None, None, None, False, 0, [])
        for name, value in fields:
            lowered = name.lower()
            if lowered == b"content-length":
                seen.lengths += 1
            elif lowered == b"transfer-encoding":
                seen.encodings.append(value)
            elif lowered == b"host":
                seen.host = _fold(seen.host, value)
            elif lowered == b"user-agent":
                seen.user_agent = _fold(seen.user_agent, value)
            elif lowered == b"referer":
                seen.referer = _fold(seen.referer, value)
            elif lowered == b"upgrade":
                seen.upgrade = _fold(seen.upgrade, value)
            if b"\r" in value or b"\n" in value:
                seen.folded = True
        return seen


_LINE_BREAKS = re.compile(rb"[ \t]*[\r\n]+[ \t]*")


def _unfold(headers: http.Headers) -> None:
    """Each obs-fold (and any stray CR or LF) becomes one space, as RFC 9112 §5.2 tells a proxy
    to do: the origin then reads the same one line that robotsgate decided on."""
    headers.fields = tuple((name, _LINE_BREAKS.sub(b" ", value)) for name, value in
                           headers.fields)


def _drop_upgrade(headers: http.Headers) -> None:
    """Remove an upgrade offer: Upgrade, HTTP2-Settings, and those names in Connection."""
    connection = [token.strip() for token in headers.get("connection", "").split(",")
                  if token.strip().lower() not in ("upgrade", "http2-settings", "")]
    for name in ("upgrade", "http2-settings", "connection"):
        headers.pop(name, None)
    if connection:
        headers["Connection"] = ", ".join(connection)
# The response headers robotsgate sets, replacing any the origin sent.
_OURS = frozenset({b"x-robots-tag", b"x-robotsgate-delay-ms"})


def _text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")  # as mitmproxy's Headers decode values


@dataclass(slots=True)
class _ResponseHeaders:
    """What robotsgate reads of a response's headers, in one pass over its fields."""

    content_type: str | None
    content_encoding: str | None
    x_robots_tag: list[str]  # every value, unfolded
    ours: bool  # a header robotsgate sets is there already (the origin sent one)

    @classmethod
    def of(cls, fields: Sequence[tuple[bytes, bytes]]) -> "_ResponseHeaders":
        seen = cls(None, None, [], False)
        for name, value in fields:
            lowered = name.lower()
            if lowered == b"content-type":
                seen.content_type = _fold(seen.content_type, value)
            elif lowered == b"content-encoding":
                seen.content_encoding = _fold(seen.content_encoding, value)
            elif lowered in _OURS:
                seen.ours = True
                if lowered == b"x-robots-tag":
                    seen.x_robots_tag.append(_text(value))
        return seen


def _fold(seen: str | None, value: bytes) -> str:
    return _text(value) if seen is None else f"{seen}, {_text(value)}"


def _set_headers(headers: http.Headers, added: Sequence[tuple[bytes, bytes]], *,
                 replace: bool) -> None:
    """Add the headers in `added` in one rebuild of the fields (each Headers.set_all() rebuilds
    them); with `replace`, every header of those names that is there already goes first."""
    fields = headers.fields
    if replace:
        names = {name.lower() for name, _ in added}
        fields = tuple(field for field in fields if field[0].lower() not in names)
    headers.fields = (*fields, *added)


_MESSAGES = {
    "robots-unavailable": "robots.txt of this site ({v.robots_url}) could not be fetched; "
                          "nothing is forwarded to it until it can.\n",
    "wait-too-long": "This site's politeness schedule is full for longer than the proxy holds a "
                     "request; retry after {v.retry_after} s.\n",
    "pushback": "This site asked for a pause (429/503); retry after {v.retry_after} s.\n",
    "crawl-delay-too-long": "This site's Crawl-delay ({asked} s) is longer than this proxy "
                            "honours; requests to it are refused.\n",
    "visit-time": "This site's robots.txt allows visits only in its Visit-time window; it opens "
                  "in {v.retry_after} s.\n",
}


_AUDIT_OPTIONS = frozenset({"robots_audit_log", "robots_audit_max_bytes", "robots_audit_keep"})


def _tooling_options(loader: Any) -> None:
    loader.add_option("robots_audit_max_bytes", int, 0,
                      "Rotate the audit log when it would grow past this many bytes (0: never; "
                      "use logrotate and SIGHUP instead).")
    loader.add_option("robots_audit_keep", int, 5,
                      "Rotated audit logs kept by robots_audit_max_bytes: FILE.1 ... FILE.N.")
    loader.add_option("robots_archive_dir", str, "",
                      "Directory where every distinct robots.txt body fetched is kept, named by "
                      "its sha256, with a .json sidecar (URL, status, headers, fetched_at).")
    loader.add_option("robots_metrics_port", int, 0,
                      "Port for Prometheus metrics on /metrics (0: not served).")
    loader.add_option("robots_metrics_host", str, "127.0.0.1",
                      "Address the metrics port listens on.")


def _archive(directory: str) -> RobotsArchive | None:
    if not directory:
        return None
    try:
        return RobotsArchive(directory)
    except OSError as exc:
        raise exceptions.OptionsError(f"robots_archive_dir: cannot use {directory!r}: "
                                      f"{exc.strerror or exc}") from exc


# Options whose change starts a new Pages (and so forgets the remembered nofollow links).
_PAGE_OPTIONS = frozenset({"robots_enforce_nofollow", "robots_strip", "robots_nofollow_memory",
                           "robots_nofollow_ttl"})


def _page_options(loader: Any) -> None:
    loader.add_option("robots_enforce_nofollow", bool, True,
                      "Answer 403 to a request whose Referer is a page that is nofollow for "
                      "the agent (META robots, X-Robots-Tag) or that has the requested link in "
                      "a nofollow section.")
    loader.add_option("robots_strip", bool, False,
                      "Remove the text of noindex sections and the hrefs of links in nofollow "
                      "sections from HTML pages before the bot sees them.")
    loader.add_option("robots_nofollow_memory", int, 200_000,
                      "Links remembered for nofollow enforcement, over all pages (least "
                      "recently used pages are forgotten first).")
    loader.add_option("robots_nofollow_ttl", int, 86_400,
                      "Seconds a page's nofollow links are remembered.")


def _not_intercepted(host: str, port: int) -> bool:
    """Whether mitmproxy will pass this CONNECT through unseen (ignore_hosts, allow_hosts).

    Mirrors mitmproxy's own test on "host:port" (next_layer.py), case-insensitively.
    """
    opts = ctx.options
    address = f"{host}:{port}"
    if opts.allow_hosts and not any(re.search(rex, address, re.IGNORECASE)
                                    for rex in opts.allow_hosts):
        return True
    return any(re.search(rex, address, re.IGNORECASE) for rex in opts.ignore_hosts)


_TOKEN_BYTES = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TARGET_BYTES = re.compile(rb"[^\x00-\x20\x7f]+")


def _well_formed(req: http.Request) -> bool:
    """Method and header names are tokens, the path and authority hold no control character or
    space: what mitmproxy's validate_inbound_headers would have made sure of."""
    data = req.data
    return bool(_TOKEN_BYTES.fullmatch(data.method)
                and _TARGET_BYTES.fullmatch(data.path)
                and (not data.authority or _TARGET_BYTES.fullmatch(data.authority))
                and all(_TOKEN_BYTES.fullmatch(name) for name, _ in req.headers.fields))


# Layers that carry bytes robotsgate cannot decide request by request.
_UNDECIDABLE = (TCPLayer, UDPLayer, DNSLayer, RawQuicLayer)


class _Refused(layer.Layer):
    """A connection closed as soon as it starts: nothing it sends goes anywhere."""

    def _handle_event(self, event: events.Event) -> layer.CommandGenerator[None]:
        if isinstance(event, events.Start):
            yield commands.CloseConnection(self.context.client)


def _undecidable_below(chosen: layer.Layer) -> layer.Layer | None:
    """An undecidable layer under the chosen one, when mitmproxy chose a whole stack at once."""
    below = getattr(chosen, "child_layer", None)
    while below is not None:
        if isinstance(below, _UNDECIDABLE):
            return below
        below = getattr(below, "child_layer", None)
    return None


def _drain_answered_bodies() -> None:
    """The body of a request robotsgate answered itself is read and dropped, never streamed.

    The answer is set when the headers are in; mitmproxy then reads the body before it sends
    the answer, and checks the size of what it has read so far against stream_large_bodies
    and body_size_limit as it goes. Left alone, that check would switch such a request to
    streaming (which mitmproxy refuses for an answered request: the connection breaks with a
    crash report) or keep an unbounded body in memory. Patched once, here: for an answered
    request the check drops what was read and lets the rest come.
    """
    original = HttpStream.check_body_size
    if getattr(original, "robotsgate", False):
        return

    def check_body_size(stream: HttpStream, request: bool) -> layer.CommandGenerator[bool]:
        if request and stream.flow.metadata.get(_ANSWERED):
            stream.request_body_buf.clear()
            return False
        return (yield from original(stream, request))

    check_body_size.robotsgate = True  # type: ignore[attr-defined]
    HttpStream.check_body_size = check_body_size  # type: ignore[method-assign,assignment]


def _ignored(nextlayer: layer.NextLayer) -> bool:
    """Whether mitmproxy passes this connection through unseen (ignore_hosts, allow_hosts), asked
    of its own next-layer addon, so that the answer is the one it acted on."""
    chooser = ctx.master.addons.get("nextlayer")
    try:
        return bool(chooser._ignore_connection(nextlayer.context, nextlayer.data_client(),
                                               nextlayer.data_server()))
    except Exception:
        return False  # cannot tell: not let through unseen


def _peer(peername: Any) -> str | None:
    return f"{peername[0]}:{peername[1]}" if peername else None


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


def _apply_deferred(options: Any) -> None:
    """Apply `--set robots_...` values now, one by one, each error naming its option.

    mitmproxy defers `--set` for options that a script registers, then applies them all at once
    when the script loads; one value that does not parse makes the whole script fail to load,
    and mitmdump would run on as a plain proxy that forwards everything. Applying ours here,
    separately, turns a bad value into an error logged at start-up, on which mitmdump exits.
    """
    deferred: dict[str, Any] = options.deferred
    # OptManager has keys() but is not iterable.
    known = {name for name in options.keys() if name.startswith("robots_")}  # noqa: SIM118
    for name in sorted(k for k in deferred if k.startswith("robots_")):
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


def _choice(name: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise exceptions.OptionsError(f"{name} must be one of {', '.join(choices)}; "
                                      f"got {value!r}")


def _in_range(name: str, value: int, minimum: int, maximum: int) -> None:
    if not minimum <= value <= maximum:
        raise exceptions.OptionsError(f"{name} must be a whole number from {minimum} to "
                                      f"{maximum}; got {value}")


def _upstream_tls() -> ssl.SSLContext | bool:
    """The robots.txt fetch trusts what mitmproxy trusts for upstream connections."""
    opts = ctx.options
    if opts.ssl_insecure:
        return False
    context = ssl.create_default_context(
        cafile=opts.ssl_verify_upstream_trusted_ca or
        (None if opts.ssl_verify_upstream_trusted_confdir else certifi.where()),
        capath=opts.ssl_verify_upstream_trusted_confdir or None)
    return context


def _upstream_proxy(modes: Sequence[str]) -> str | None:
    """In upstream mode the robots.txt fetch goes through the same upstream proxy."""
    for mode in modes:
        if mode.startswith("upstream:"):
            return mode.removeprefix("upstream:")
    return None


_closing: set["asyncio.Task[None]"] = set()


def _close_later(fetcher: Fetcher | Fleet) -> None:
    try:
        task = asyncio.get_running_loop().create_task(fetcher.aclose())
    except RuntimeError:
        return  # no loop yet: nothing was ever fetched with it
    _closing.add(task)  # keep a reference until it is done
    task.add_done_callback(_closing.discard)
