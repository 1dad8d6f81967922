"""The status line: what the proxy has done, said every robots_status_interval seconds, as
Scrapy's periodic stats say a crawl's (requests, and at what rate; forwarded, of which delayed;
refused, by reason; hosts whose requests are held for politeness now; robots.txt fetches in
flight; money spent).

Nothing is counted for it on a request's way: it reads what is counted anyway (the metrics'
plain integers: robotsgate.metrics.prometheus), and what is held now (`Held`, which only a request
that waits for its turn touches). `line` is pure: two readings and the seconds between them.
"""

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from robotsgate.metrics.prometheus import Metrics
from robotsgate.payments.spending import Money


class Held:
    """Requests held for politeness now, per host (robotsgate.mitm.turns counts them in and
    out, only for requests that wait)."""

    def __init__(self) -> None:
        self._per_host: dict[str, int] = {}

    def arrive(self, host: str) -> None:
        self._per_host[host] = self._per_host.get(host, 0) + 1

    def leave(self, host: str) -> None:
        left = self._per_host[host] - 1
        if left:
            self._per_host[host] = left
        else:
            del self._per_host[host]

    @property
    def hosts(self) -> int:
        return len(self._per_host)


@dataclass(frozen=True, slots=True)
class Counts:
    """The counts at one moment (since the proxy started, but for what is held or in flight)."""

    forwarded: int = 0
    delayed: int = 0  # of the forwarded: held for politeness first
    refused: Mapping[str, int] = field(default_factory=dict)  # reason -> answered by the proxy
    would_refuse: Mapping[str, int] = field(default_factory=dict)  # monitor mode: forwarded
    hosts_waiting: int = 0
    fetching: int = 0  # robots.txt fetches in flight
    spent: tuple[Money, ...] = ()

    @property
    def requests(self) -> int:
        return self.forwarded + sum(self.refused.values()) + sum(self.would_refuse.values())


def read(metrics: Metrics, held: Held) -> Counts:
    """What the metrics have counted, and what is held now."""
    forwarded, refused, would = 0, Counter[str](), Counter[str]()
    for (result, reason), count in list(metrics.decisions.items()):
        if result == "forwarded":
            forwarded += count
        elif result == "blocked":
            refused[reason] += count
        elif result == "would-block":
            would[reason] += count
    delayed = sum(metrics.wait_counts[1:])  # the first bucket: no wait at all
    fetching = metrics.registry.get_sample_value("robotsgate_robots_fetches_in_flight") or 0
    return Counts(forwarded, delayed, dict(refused), dict(would), held.hosts, int(fetching),
                   spent(metrics))


def spent(metrics: Metrics) -> tuple[Money, ...]:
    """Money spent on paid requests, per currency, as the spending ledger's budgets count it
    (what robotsgate.mitm.payments hands the metrics once a paid request's answer is in): the
    one place the status line reads spending."""
    amounts = [Money(sample.labels["currency"], int(sample.value))
               for metric in metrics.spent.collect() for sample in metric.samples
               if sample.name.endswith("_total") and sample.value]
    return tuple(sorted(amounts))


def _number(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def _by_reason(counts: Mapping[str, int]) -> str:
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{count:,} {reason}" for reason, count in ordered)


def line(now: Counts, before: Counts, seconds: float) -> str:
    """The status line for `now`, with the request rate since `before`, `seconds` earlier."""
    rate = (now.requests - before.requests) * 60 / seconds if seconds > 0 else 0.0
    said = [f"{_number(now.requests, 'request')} (at {rate:,.0f}/min): "
            f"{now.forwarded:,} forwarded ({now.delayed:,} delayed)"]
    refused = sum(now.refused.values())
    said.append(f"{refused:,} refused" + (f" ({_by_reason(now.refused)})" if refused else ""))
    would = sum(now.would_refuse.values())
    if would:
        said.append(f"{would:,} forwarded that enforce mode would refuse "
                    f"({_by_reason(now.would_refuse)})")
    money = ", ".join(map(str, now.spent)) or "nothing"
    return (f"robotsgate: {', '.join(said)}; "
            f"{_number(now.hosts_waiting, 'host')} waiting; "
            f"{_number(now.fetching, 'robots.txt fetch', 'robots.txt fetches')} in flight; "
            f"spent {money}")
