"""Prometheus metrics: one CollectorRegistry per addon, served on /metrics when asked for.

Counting always happens; `robots_metrics_port` only decides whether the numbers are served. A
registry of our own, rather than prometheus_client's global one, keeps two proxies in one process
(or two tests) from counting into each other.

What is counted on every request (decisions, cache hits, waits) is counted in plain integers on
the event loop and turned into metric families only when /metrics is read: a prometheus_client
Counter or Histogram takes a lock and several calls per update, which the proxy would pay on
every request to spare a scrape every few seconds some arithmetic.
"""

import bisect
import threading
from collections import Counter as Tally
from collections.abc import Iterator
from contextlib import contextmanager
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

# Politeness waits range from nothing to robots_max_wait (60 s by default).
WAIT_BUCKETS = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
_LE = (*(repr(bound) for bound in WAIT_BUCKETS), "+Inf")  # the bucket labels, as Go writes them


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        # Counted per request, published by _Published.
        self.decisions: Tally[tuple[str, str]] = Tally()  # (result, reason) -> requests
        self.cache_hits = 0
        self.cache_misses = 0
        self.wait_counts = [0] * (len(WAIT_BUCKETS) + 1)  # per bucket, not cumulative; +Inf last
        self.wait_sum = 0.0
        r.register(_Published(self))
        # Counted per robots.txt fetch: rare enough for prometheus_client's own types.
        self.fetches = Counter(
            "robotsgate_robots_fetches", "robots.txt fetches by outcome: ok (parsed), missing "
            "(4xx: no restrictions), unreachable (5xx, 429, network: complete disallow)",
            ["outcome"], registry=r)
        self.spent = Counter(
            "robotsgate_charged_micros", "money spent on paid requests (HTTP 402 "
            "pay-per-crawl) as the budgets count it: crawler-charged in full when it is a "
            "price in the currency agreed, else the price agreed; millionths of the currency",
            ["currency"], registry=r)
        self.overcharges = Counter(
            "robotsgate_overcharges", "paid requests whose crawler-charged said more than the "
            "price agreed (kind more), another currency (currency) or nothing readable "
            "(unreadable)", ["kind"], registry=r)
        self.in_flight = Gauge(
            "robotsgate_robots_fetches_in_flight", "robots.txt fetches under way", registry=r)

    def forwarded(self, reason: str, wait: float) -> None:
        """A request let through, after `wait` seconds of politeness."""
        self.decisions["forwarded", reason] += 1
        # Buckets are "less than or equal": a wait of exactly 0.0 is in the first.
        self.wait_counts[0 if wait <= 0.0 else bisect.bisect_left(WAIT_BUCKETS, wait)] += 1
        self.wait_sum += wait

    def recorded(self, event: str, reason: str) -> None:
        """An audit record: every answer the proxy gives itself is one (see audit.Event)."""
        if event in ("block", "would-block", "withheld"):
            self.decisions["blocked" if event == "block" else event, reason] += 1
        elif event == "tunnel":  # a CONNECT let through unseen
            self.decisions["forwarded", reason] += 1
        # "delay" records are forwarded requests, counted by forwarded()

    def cache(self, *, hit: bool) -> None:
        if hit:
            self.cache_hits += 1
        else:
            self.cache_misses += 1

    @contextmanager
    def fetching(self) -> Iterator[None]:
        self.in_flight.inc()
        try:
            yield
        finally:
            self.in_flight.dec()

    def charged(self, currency: str, micros: int) -> None:
        """What the budgets counted for a paid request."""
        self.spent.labels(currency).inc(micros)

    def overcharged(self, kind: str) -> None:
        """A paid request's crawler-charged above the price agreed, in another currency, or
        unreadable (spending.Overcharge)."""
        self.overcharges.labels(kind).inc()

    def fetched(self, outcome: str) -> None:
        self.fetches.labels(outcome).inc()

    def serve(self, host: str, port: int) -> "MetricsServer":
        """Serve the registry over HTTP (every path answers, /metrics included)."""
        server, thread = start_http_server(port, host, self.registry)
        return MetricsServer(host, port, server, thread)


class _Published(Collector):
    """The per-request counts as metric families, made when the registry is read.

    The scrape runs on the metrics server's thread while the event loop counts: every value is
    read once (a copy of the tally, single integers), so a scrape sees each number whole.
    """

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self._metrics
        decisions = CounterMetricFamily(
            "robotsgate_decisions", "Requests decided, by result (forwarded, blocked, "
            "would-block, withheld) and reason (allowed, disallowed, crawl-delay, ...)",
            labels=["result", "reason"])
        for (result, reason), count in sorted(dict(m.decisions).items()):
            decisions.add_metric([result, reason], count)
        yield decisions
        yield CounterMetricFamily(
            "robotsgate_robots_cache_hits", "Requests that found a fresh robots.txt in the cache",
            value=m.cache_hits)
        yield CounterMetricFamily(
            "robotsgate_robots_cache_misses", "Requests that had to wait for a robots.txt fetch "
            "(their own, or one already in flight)", value=m.cache_misses)
        counts, total, running = list(m.wait_counts), m.wait_sum, 0
        buckets = []
        for label, count in zip(_LE, counts, strict=True):
            running += count
            buckets.append((label, running))
        yield HistogramMetricFamily(
            "robotsgate_wait_seconds", "Politeness wait before each forwarded request",
            buckets=buckets, sum_value=total)


class MetricsServer:
    def __init__(self, host: str, port: int, server: WSGIServer,
                 thread: threading.Thread) -> None:
        self.host = host
        self.port = port
        self._server = server
        self._thread = thread

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
