"""Prometheus metrics: one CollectorRegistry per addon, served on /metrics when asked for.

Counting always happens (an increment is a lock and an add); `robots_metrics_port` only decides
whether the numbers are served. A registry of our own, rather than prometheus_client's global
one, keeps two proxies in one process (or two tests) from counting into each other.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

# Politeness waits range from nothing to robots_max_wait (60 s by default).
WAIT_BUCKETS = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.decisions = Counter(
            "robotsgate_decisions", "Requests decided, by result (forwarded, blocked, "
            "would-block) and reason (allowed, disallowed, crawl-delay, ...)",
            ["result", "reason"], registry=r)
        self.fetches = Counter(
            "robotsgate_robots_fetches", "robots.txt fetches by outcome: ok (parsed), missing "
            "(4xx: no restrictions), unreachable (5xx, 429, network: complete disallow)",
            ["outcome"], registry=r)
        self.cache_hits = Counter(
            "robotsgate_robots_cache_hits", "Requests that found a fresh robots.txt in the cache",
            registry=r)
        self.cache_misses = Counter(
            "robotsgate_robots_cache_misses", "Requests that had to wait for a robots.txt fetch "
            "(their own, or one already in flight)", registry=r)
        self.waits = Histogram(
            "robotsgate_wait_seconds", "Politeness wait before each forwarded request",
            buckets=WAIT_BUCKETS, registry=r)
        # labels() looks its child up under a lock on every call; the hot path keeps its own.
        self._children: dict[tuple[str, str], Any] = {}
        self.in_flight = Gauge(
            "robotsgate_robots_fetches_in_flight", "robots.txt fetches under way", registry=r)

    def _decision(self, result: str, reason: str) -> Any:
        child = self._children.get((result, reason))
        if child is None:
            child = self._children[(result, reason)] = self.decisions.labels(result, reason)
        return child

    def forwarded(self, reason: str, wait: float) -> None:
        """A request let through, after `wait` seconds of politeness."""
        self._decision("forwarded", reason).inc()
        self.waits.observe(wait)

    def recorded(self, event: str, reason: str) -> None:
        """An audit record: every answer the proxy gives itself is one (see audit.Event)."""
        if event in ("block", "would-block"):
            self._decision("blocked" if event == "block" else event, reason).inc()
        elif event == "tunnel":  # a CONNECT let through unseen
            self._decision("forwarded", reason).inc()
        # "delay" records are forwarded requests, counted by forwarded()

    def cache(self, *, hit: bool) -> None:
        (self.cache_hits if hit else self.cache_misses).inc()

    @contextmanager
    def fetching(self) -> Iterator[None]:
        self.in_flight.inc()
        try:
            yield
        finally:
            self.in_flight.dec()

    def fetched(self, outcome: str) -> None:
        self.fetches.labels(outcome).inc()

    def serve(self, host: str, port: int) -> "MetricsServer":
        """Serve the registry over HTTP (every path answers, /metrics included)."""
        server, thread = start_http_server(port, host, self.registry)
        return MetricsServer(host, port, server, thread)


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
