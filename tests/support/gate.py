"""The gate, wired bottom-up as the proxy wires it, and the requests it decides."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from robotsgate.decision.gate import Gate, GateConfig
from robotsgate.decision.verdict import Request
from robotsgate.licensing.licenses import Licensing
from robotsgate.licensing.tdmrep import TdmRepFiles
from robotsgate.metrics.prometheus import Metrics
from robotsgate.origin import Origin
from robotsgate.retrieval.archive import RobotsArchive
from robotsgate.retrieval.entries import Retrieval, RobotsFetcher
from robotsgate.retrieval.fetch import Fetcher
from robotsgate.rules_cache import RulesCache
from robotsgate.state.pacing import Pacer, Pacing
from robotsgate.state.store import MemoryStore, Store

from .clock import FakeClock
from .origins import Origins


def request_for(url: str, user_agent: str | None = "TestBot/1.0", agent: str | None = None
            ) -> Request:
    """A gate Request for `url`, path and query as sent."""
    u = httpx.URL(url)
    return Request(Origin.of(u.scheme, u.host, u.port), u.raw_path.decode(), user_agent, agent)


@dataclass(frozen=True, slots=True)
class Wired:
    gate: Gate
    retrieval: Retrieval
    store: Store
    rules: RulesCache
    pacer: Pacing
    licensing: Licensing | None = None
    tdmrep: TdmRepFiles | None = None


def wire_gate(fetcher: RobotsFetcher, clock: Callable[[], float], *,
              store: Store | None = None, rules: RulesCache | None = None,
              pacer: Pacing | None = None, metrics: Metrics | None = None,
              archive: RobotsArchive | None = None, semantics: str = "rfc9309",
              case_sensitive: bool = True, rules_size: int = 10_000, store_size: int = 100,
              cache_ttl: int = 86_400, error_ttl: int = 60, max_wait: float = 60.0,
              config: GateConfig | None = None, licenses: bool = False,
              tdmrep: bool = False) -> Wired:
    """Bottom-up, as the proxy does it. A `store` given is used with the `rules` it was built
    with; otherwise a MemoryStore of `store_size` origins keeps bodies and gets its rules back
    through the rules cache. `licenses`: RSL licences read (robots_licenses=enforce), through
    the same fetcher; `tdmrep`: TDMRep's /.well-known/tdmrep.json read, by it too."""
    # "is None", not "or": an empty store or cache is falsy (it has a length).
    if rules is None:
        rules = RulesCache(rules_size, semantics=semantics, case_sensitive=case_sensitive)
    if store is None:
        store = MemoryStore(store_size, rules)
    if metrics is None:
        metrics = Metrics()
    retrieval = Retrieval(fetcher, rules, store, clock, cache_ttl=cache_ttl, error_ttl=error_ttl,
                          metrics=metrics, archive=archive)
    if pacer is None:
        pacer = Pacer(clock, max_wait=max_wait, max_hosts=store_size)
    licensing = None
    if licenses:
        assert isinstance(fetcher, Fetcher), "licences are fetched by the proxy's fetcher"
        licensing = Licensing(fetcher, clock, cache_ttl=cache_ttl, error_ttl=error_ttl,
                              archive=archive)
    files = None
    if tdmrep:
        assert isinstance(fetcher, Fetcher), "tdmrep.json is fetched by the proxy's fetcher"
        files = TdmRepFiles(fetcher, clock, cache_ttl=cache_ttl, error_ttl=error_ttl)
    gate = Gate(config or GateConfig(), store, retrieval, clock, pacer, metrics=metrics,
                licensing=licensing, tdmrep=files)
    return Wired(gate, retrieval, store, rules, pacer, licensing, files)


def make_gate(origins: Origins, clock: FakeClock | None = None, **options: Any) -> Gate:
    """A gate wired as the proxy wires it; `options` as wire_gate takes them (error_ttl=...)."""
    return wire_gate(origins.fetcher(), clock or FakeClock(1_000_000.0), **options).gate


def req(url: str, user_agent: str | None = "FooBot/1.0", agent: str | None = None) -> Request:
    return request_for(url, user_agent, agent)
