"""What one bot's requests came to, counted for `robotsgate run`'s summary
(robotsgate.sealing.summary): per host, requests forwarded (and delayed), refused by reason,
failed.

A script of its own (robotsgate/run_addon.py), loaded after robotsgate's addon in the proxy a
run starts, so that each flow is counted once its fate is known: at its response (the
origin's, or robotsgate's own answer) or its error. A CONNECT is counted only when robotsgate
refused it: the requests inside an intercepted tunnel are counted themselves. The counts are
written as JSON when the proxy stops.
"""

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from mitmproxy import http

from robotsgate.mitm.flow import state

_TALLIED = "robotsgate.tallied"  # the flow was counted (an error may follow its response)


class _Host:
    __slots__ = ("delayed", "failed", "forwarded", "refused", "requests", "would_refuse")

    def __init__(self) -> None:
        self.requests = self.forwarded = self.delayed = self.failed = self.would_refuse = 0
        self.refused: Counter[str] = Counter()

    def as_json(self) -> dict[str, Any]:
        return {"requests": self.requests, "forwarded": self.forwarded,
                "delayed": self.delayed, "failed": self.failed, "refused": dict(self.refused),
                "would_refuse": self.would_refuse}


class Counting:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.hosts: dict[str, _Host] = {}

    def response(self, flow: http.HTTPFlow) -> None:
        self._count(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._count(flow)

    def _count(self, flow: http.HTTPFlow) -> None:
        if flow.metadata.get(_TALLIED):
            return
        known = state(flow)
        answered = known.answered
        if flow.request.method == "CONNECT" and not answered:
            return  # a tunnel: what goes through it is counted request by request
        flow.metadata[_TALLIED] = True
        host = self.hosts.get(flow.request.host)
        if host is None:
            host = self.hosts[flow.request.host] = _Host()
        host.requests += 1
        if answered and flow.response is not None:
            host.refused[flow.response.headers.get("x-robotsgate-reason", "refused")] += 1
        elif flow.response is None:
            host.failed += 1
        else:
            host.forwarded += 1
            if known.delay_ms:
                host.delayed += 1
            if known.refused:
                host.would_refuse += 1

    def done(self) -> None:
        """Written whole, then renamed into place: the run reads a tally or none."""
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(json.dumps(
            {"hosts": {host: counts.as_json() for host, counts in self.hosts.items()}}))
        os.replace(partial, self.path)


TALLY_VARIABLE = "ROBOTSGATE_RUN_TALLY"  # where the proxy a run starts writes its counts


def from_environment() -> list[Counting]:
    """The addons of robotsgate/run_addon.py: a Counting when the run named its file."""
    path = os.environ.get(TALLY_VARIABLE)
    return [Counting(Path(path))] if path else []
