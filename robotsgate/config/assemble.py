"""Settings -> the services that decide requests, built bottom-up and handed down.

No mitmproxy here: the mitmproxy layer reads the options into `Settings` (robotsgate.config.options)
and what mitmproxy's own options say about upstream connections into `Upstream`, and gets back
running services. Errors a user can fix raise ValueError naming the option.
"""

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import certifi
import httpx

from robotsgate.audit.chain import Chain
from robotsgate.audit.log import AuditLog
from robotsgate.config.options import Settings, parse_profiles
from robotsgate.decision.gate import Gate, GateConfig
from robotsgate.decision.identity import AgentMap
from robotsgate.decision.policy import Dialler, Exchange, Rules
from robotsgate.decision.purposes import PurposeMap
from robotsgate.egress.policy import EgressPolicy, Socket
from robotsgate.egress.resolver import Lookup, Resolver, system_lookup
from robotsgate.licensing.licenses import Licensing
from robotsgate.licensing.servers import parse_credentials
from robotsgate.licensing.tdmrep import ORIGINS, TdmRepFiles
from robotsgate.metrics.prometheus import Metrics
from robotsgate.pages import PageConfig, Pages
from robotsgate.payments.spending import (
    Budget,
    Ledger,
    MemoryLedger,
    Money,
    RedisLedger,
    parse_budgets,
    parse_price,
)
from robotsgate.retrieval.archive import RobotsArchive
from robotsgate.retrieval.entries import Retrieval
from robotsgate.retrieval.fetch import Fetcher
from robotsgate.rules_cache import RulesCache
from robotsgate.signing import keys as signing_keys
from robotsgate.signing.directory import Published, read_card
from robotsgate.signing.keys import SigningKey
from robotsgate.signing.messages import Signer
from robotsgate.state.departures import Departures
from robotsgate.state.driver import Politeness
from robotsgate.state.fleet import Fleet, check_kind
from robotsgate.state.pacing import Pacer
from robotsgate.state.store import MemoryStore

# Seconds the fleet's robots.txt fetch lock outlives the fetch timeout: its holder renews it
# while the fetch runs, so this (plus the timeout) is what a holder that died costs the others.
LOCK_MARGIN = 2.0


@dataclass(frozen=True, slots=True)
class Clocks:
    """Injectable so that everything can be driven without real time. Pacing runs on the
    monotonic clock: a wall clock that jumps must not bunch requests up."""

    clock: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


@dataclass(frozen=True, slots=True)
class Upstream:
    """How the proxy reaches origins (mitmproxy's options): robots.txt fetches do the same."""

    insecure: bool = False  # ssl_insecure
    ca_file: str = ""  # ssl_verify_upstream_trusted_ca
    ca_dir: str = ""  # ssl_verify_upstream_trusted_confdir
    proxy: str | None = None  # the upstream proxy of mode upstream:URL
    transport: httpx.AsyncBaseTransport | None = field(default=None, compare=False)

    @staticmethod
    def proxy_of(modes: "list[str] | tuple[str, ...]") -> str | None:
        """In upstream mode the robots.txt fetch goes through the same upstream proxy."""
        for mode in modes:
            if mode.startswith("upstream:"):
                return mode.removeprefix("upstream:")
        return None

    def verify(self) -> ssl.SSLContext | bool:
        """The robots.txt fetch trusts what mitmproxy trusts for upstream connections."""
        if self.insecure:
            return False
        return ssl.create_default_context(
            cafile=self.ca_file or (None if self.ca_dir else certifi.where()),
            capath=self.ca_dir or None)


@dataclass(slots=True)
class Services:
    """What decides requests: rebuilt (and the old one closed) when a GATE option changes."""

    gate: Gate
    fetcher: Fetcher
    fleet: Fleet | None
    politeness: Politeness  # slots reserved by the gate, turns taken as requests leave
    resolver: Resolver  # where requests may be sent, and the address each is dialled at
    licensing: Licensing | None = None  # RSL licences (None: robots_licenses=off)
    # HTTP 402: what may be paid (None: nothing), within which budgets, kept where.
    max_price: Money | None = None
    budgets: tuple[Budget, ...] = ()
    ledger: Ledger = field(default_factory=MemoryLedger)

    async def aclose(self) -> None:
        await self.fetcher.aclose()
        if self.fleet is not None:
            await self.fleet.aclose()


def egress(settings: Settings, own: tuple[Socket, ...] = ()) -> EgressPolicy:
    """Which addresses requests may be sent to; `own`: the proxy's own listening sockets."""
    return EgressPolicy.parse(settings.egress_deny, settings.egress_allow, own)


def services(settings: Settings, upstream: Upstream, clocks: Clocks, metrics: Metrics, *,
             own: tuple[Socket, ...] = (), lookup: Lookup = system_lookup,
             spent: MemoryLedger | None = None) -> Services:
    """Bottom up, each part handed what it needs: nothing below the gate knows the gate.
    `spent`: the proxy's own ledger, kept from one configuration to the next (money spent is
    spent, whatever options change), used when the budgets are kept in memory."""
    archive = _archive(settings.archive_dir)  # first: a bad directory changes nothing
    resolver = Resolver(egress(settings, own), lookup=lookup)
    rules = RulesCache(settings.rules_cache, semantics=settings.semantics,
                       case_sensitive=settings.path_case == "sensitive")
    fetcher = Fetcher(timeout=settings.fetch_timeout, verify=upstream.verify(),
                      proxy=upstream.proxy, transport=upstream.transport, resolver=resolver,
                      concurrency=settings.fetch_concurrency)
    pacer = Pacer(clocks.monotonic, max_wait=settings.max_wait, max_hosts=settings.cache_size)
    # Cached origins keep bodies; their rules come back through the rules cache.
    local_store = MemoryStore(settings.cache_size, rules)
    fleet = None
    if settings.redis:
        try:
            check_kind(settings.redis)
        except ValueError as exc:
            raise ValueError(f"robots_redis: {exc}") from exc
        # The in-memory store and pacer stay as the fallback for while Redis is down.
        fleet = Fleet(settings.redis, prefix=settings.redis_prefix,
                      fallback=settings.redis_fallback, clock=clocks.clock, rules=rules,
                      local_store=local_store, local_pacer=pacer,
                      max_origins=settings.cache_size, max_wait=settings.max_wait,
                      lock_ttl=settings.fetch_timeout + LOCK_MARGIN,
                      monotonic=clocks.monotonic)
    store = fleet.store if fleet else local_store
    departures = Departures(clocks.monotonic, clocks.sleep,
                            max_hosts=min(settings.cache_size, 100_000),
                            shared=fleet.departures if fleet else None)
    politeness = Politeness(fleet.pacer if fleet else pacer, departures,
                            monotonic=clocks.monotonic, sleep=clocks.sleep)
    retrieval = Retrieval(fetcher, rules, store, clocks.clock, cache_ttl=settings.cache_ttl,
                          error_ttl=settings.error_ttl, metrics=metrics, archive=archive,
                          contact=settings.contact)
    licensing = None
    if settings.licenses == "enforce":
        try:
            credentials = parse_credentials(settings.license_credentials)
        except ValueError as exc:
            raise ValueError(f"robots_license_credentials: {exc}") from None
        licensing = Licensing(fetcher, clocks.clock, cache_ttl=settings.cache_ttl,
                              error_ttl=settings.error_ttl, contact=settings.contact,
                              archive=archive, credentials=credentials)
    # TDMRep's file: read for bots with declared purposes, as the proxy, kept per origin.
    tdmrep = TdmRepFiles(fetcher, clocks.clock, cache_ttl=settings.cache_ttl,
                         error_ttl=settings.error_ttl, contact=settings.contact,
                         size=min(settings.cache_size, ORIGINS))
    gate = Gate(gate_config(settings), store, retrieval, clocks.clock, politeness.pacing,
                metrics=metrics, licensing=licensing, tdmrep=tdmrep)
    try:
        max_price = parse_price(settings.max_price) if settings.max_price else None
    except ValueError as exc:
        raise ValueError(f"robots_max_price: {exc}") from None
    try:
        budgets = parse_budgets(settings.budget)
    except ValueError as exc:
        raise ValueError(f"robots_budget: {exc}") from None
    ledger: Ledger = (spent or MemoryLedger()) if fleet is None else \
        RedisLedger(fleet.client, settings.redis_prefix, fleet.ask)
    return Services(gate, fetcher, fleet, politeness, resolver, licensing, max_price, budgets,
                    ledger)


def gate_config(settings: Settings) -> GateConfig:
    """How the gate paces, from the options."""
    return GateConfig(min_delay=settings.min_delay_ms / 1000,
                      max_crawl_delay=settings.max_crawl_delay,
                      on_long_delay=settings.on_long_delay,
                      pacing_margin=settings.pacing_margin_ms / 1000)


def exchange(settings: Settings, gate: Gate, egress: Dialler, pages: Pages | None = None
             ) -> Exchange:
    """The exchange policy over `gate`: the proxy's, and `robotsgate check`'s (which dials
    nothing and reads no pages)."""
    return Exchange(
        Rules(agent=settings.agent or None, require_agent=settings.require_agent,
              monitor=settings.monitor, strip=settings.strip),
        gate, egress, agents=AgentMap.parse(settings.agents),
        purposes=PurposeMap.parse(settings.purpose, settings.purposes), pages=pages)


def signing_key(settings: Settings) -> SigningKey | None:
    """robots_signing_key, read once for a configuration: what signs the requests, the key
    directory's responses and the audit log's checkpoints."""
    if not settings.signing_key:
        return None
    try:
        return signing_keys.load(settings.signing_key)
    except ValueError as exc:
        raise ValueError(f"robots_signing_key: {exc}") from None


def signer(settings: Settings, key: SigningKey | None) -> Signer | None:
    """What signs the requests that leave (Web Bot Auth), when robots_signature_agent asks."""
    if not settings.signature_agent:
        return None
    if key is None:
        raise ValueError("robots_signature_agent: requests are signed with robots_signing_key, "
                         "which is not set (robotsgate keygen FILE makes one)")
    return Signer(key, settings.signature_agent, profile=settings.signature_profile,
                  validity=settings.signature_validity,
                  agents=frozenset(token.lower() for token in settings.signing_agents),
                  asked=frozenset(token.lower() for token in settings.signing_asked),
                  profiles=parse_profiles(settings.signature_profiles))


def published(settings: Settings, key: SigningKey | None) -> Published | None:
    """The key directory and the Signature Agent Card, when robots_directory_port serves
    them: the signing key first, then robots_directory_keys."""
    if not settings.directory_port:
        return None
    if key is None:
        raise ValueError("robots_directory_port: the directory publishes robots_signing_key, "
                         "which is not set (robotsgate keygen FILE makes one)")
    keys, signers = [key.public], [key]
    for path in settings.directory_keys:
        try:
            listed, held = signing_keys.directory_key(path)
        except ValueError as exc:
            raise ValueError(f"robots_directory_keys: {exc}") from None
        keys += listed
        signers += [held] if held is not None else []
    try:
        card = read_card(settings.signature_card) if settings.signature_card else {}
    except ValueError as exc:
        raise ValueError(f"robots_signature_card: {exc}") from None
    return Published(tuple(dict.fromkeys(keys)), tuple({k.public: k for k in signers}.values()),
                     card, settings.signature_validity)


def pages(settings: Settings, clocks: Clocks) -> Pages:
    """Page-level signals and the nofollow memory."""
    return Pages(PageConfig(enforce_nofollow=settings.enforce_nofollow, strip=settings.strip,
                            memory_size=settings.nofollow_memory,
                            memory_ttl=settings.nofollow_ttl), clocks.clock, clocks.monotonic)


def audit_log(settings: Settings, chain: Chain | None = None,
              clock: Callable[[], float] = time.time,
              key: SigningKey | None = None) -> AuditLog:
    """The audit log; `chain`: this proxy's, which goes on from one audit log to the next;
    `key`: what signs its checkpoints (signing_key)."""
    try:
        return AuditLog(settings.audit_log, max_bytes=settings.audit_max_bytes,
                        keep=settings.audit_keep, chain=chain, key=key,
                        checkpoint_every=settings.audit_checkpoint, clock=clock)
    except OSError as exc:
        raise ValueError(f"robots_audit_log: cannot open {settings.audit_log!r}: "
                         f"{exc.strerror}") from exc


def _archive(directory: str) -> RobotsArchive | None:
    if not directory:
        return None
    try:
        return RobotsArchive(directory)
    except OSError as exc:
        raise ValueError(f"robots_archive_dir: cannot use {directory!r}: "
                         f"{exc.strerror or exc}") from exc
