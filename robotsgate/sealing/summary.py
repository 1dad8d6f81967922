"""What a bot did through the gate, counted by the run's proxy (robotsgate.mitm.tally), and the
one summary `robotsgate run` prints when the bot ends.

Pure: the counts (as the proxy wrote them, JSON) and the audit records of connections refused
whole in, text out. Host names are the bot's choice: shown escaped.
"""

import json
import signal
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from robotsgate.escape import escaped

HOSTS_SHOWN = 20  # per-host lines in a summary; the rest are counted in one line


@dataclass(frozen=True, slots=True)
class HostCounts:
    """One host's requests: each either forwarded (some after a politeness wait), refused by
    the proxy (by reason), or failed (no answer: the origin unreachable, the bot gone)."""

    requests: int = 0
    forwarded: int = 0
    delayed: int = 0
    failed: int = 0
    refused: Mapping[str, int] = field(default_factory=dict)
    would_refuse: int = 0  # monitor mode: forwarded, though refused by their decision

    @classmethod
    def of(cls, counts: Mapping[str, Any]) -> "HostCounts":
        refused = counts.get("refused", {})
        return cls(int(counts.get("requests", 0)), int(counts.get("forwarded", 0)),
                   int(counts.get("delayed", 0)), int(counts.get("failed", 0)),
                   {str(reason): int(n) for reason, n in refused.items()},
                   int(counts.get("would_refuse", 0)))

    def __add__(self, other: "HostCounts") -> "HostCounts":
        return HostCounts(self.requests + other.requests, self.forwarded + other.forwarded,
                          self.delayed + other.delayed, self.failed + other.failed,
                          dict(Counter(self.refused) + Counter(other.refused)),
                          self.would_refuse + other.would_refuse)

    def said(self) -> str:
        """'9 requests: 7 forwarded (2 delayed), 2 refused (disallowed 2)'."""
        parts = [f"{self.forwarded} forwarded" + (f" ({self.delayed} delayed)"
                                                  if self.delayed else "")]
        if self.would_refuse:
            parts.append(f"{self.would_refuse} of them refused in enforce mode")
        refused = sum(self.refused.values())
        parts.append(f"{refused} refused" + (f" ({_by_reason(self.refused)})" if refused else ""))
        if self.failed:
            parts.append(f"{self.failed} failed")
        return f"{self.requests} request{'' if self.requests == 1 else 's'}: " + \
            ", ".join(parts)


@dataclass(frozen=True, slots=True)
class Tally:
    hosts: Mapping[str, HostCounts]

    @classmethod
    def parse(cls, text: str) -> "Tally":
        """What robotsgate.mitm.tally wrote; ValueError when it is not that."""
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("hosts"), dict):
            raise ValueError("not a tally of hosts")
        return cls({str(host): HostCounts.of(counts) for host, counts in data["hosts"].items()})

    @property
    def total(self) -> HostCounts:
        total = HostCounts()
        for counts in self.hosts.values():
            total += counts
        return total


def connections_refused(records: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """Connections refused whole (raw TCP, UDP, QUIC, DNS: nothing robotsgate can decide), by
    kind, from the audit records of the run: they carry no request to count per host."""
    kinds: Counter[str] = Counter()
    for record in records:
        if record.get("reason") == "protocol" and record.get("event") in ("block", "would-block"):
            kinds[str(record.get("method", "?")).lower()] += 1
    return kinds


def render(tally: Tally | None, *, command: str, status: str, agent: str | None,
           audit_log: str | None, connections: Mapping[str, int],
           proxy: str | None = None) -> str:
    """The summary: one line for the run, one per host (most requests first), the connections
    refused whole, and where the audit log is."""
    who = f"as {agent}" if agent else "as each request's User-Agent named it"
    if tally is None:
        lines = [f"robotsgate run: {escaped(command)} {status}; its requests went through "
                 f"{proxy or 'the proxy'} {who}, which counts them itself"]
    else:
        total = tally.total
        lines = [f"robotsgate run: {escaped(command)} {status} after {total.said()} ({who})"]
        ordered = sorted(tally.hosts.items(), key=lambda item: (-item[1].requests, item[0]))
        width = max((len(escaped(host)) for host, _ in ordered[:HOSTS_SHOWN]), default=0)
        for host, counts in ordered[:HOSTS_SHOWN]:
            lines.append(f"  {escaped(host):<{width}}  {counts.said()}")
        if len(ordered) > HOSTS_SHOWN:
            rest = HostCounts()
            for _, counts in ordered[HOSTS_SHOWN:]:
                rest += counts
            lines.append(f"  and {len(ordered) - HOSTS_SHOWN} more hosts: {rest.said()}")
    if connections:
        lines.append(f"  connections refused whole: {sum(connections.values())} "
                     f"({_by_reason(connections)}): nothing in them could be decided")
    if audit_log is not None:
        lines.append(f"  audit log: {escaped(audit_log)}")
    return "\n".join(lines)


def _by_reason(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{reason} {n}" for reason, n in
                     sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def exit_status(returncode: int) -> int:
    """A child's status as a shell gives it: its own exit status, or 128 + the signal that
    killed it (Popen's returncode is then minus the signal)."""
    return 128 - returncode if returncode < 0 else returncode


def status_said(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} (status {128 - returncode})"
    return f"exited with status {returncode}"
