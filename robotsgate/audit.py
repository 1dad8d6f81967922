"""The audit log: one JSON object per line, each written with a single write() call.

A record is written with os.write on a descriptor opened with O_APPEND, so a killed proxy never
leaves half a line, and several proxies may append to one file.
"""

import json
import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Literal

# block: the proxy answered itself (403, 429, 503); would-block: it would have, in monitor mode;
# delay: forwarded after a politeness wait, or with a Crawl-delay cut down to the maximum.
# tunnel: a CONNECT the proxy lets through without seeing inside (mitmproxy ignore_hosts).
Event = Literal["block", "would-block", "delay", "tunnel"]


@dataclass(frozen=True, slots=True)
class AuditRecord:
    ts: str
    event: Event
    reason: str  # disallowed | robots-unavailable | internal-error | wait-too-long | ...
    status: int | None  # what the proxy answered (or would have); None when it forwarded
    agent: str  # the product token the decision was made for
    user_agent: str | None
    client: str | None
    method: str
    url: str
    robots_url: str | None
    robots_status: int | None
    robots_fetched_at: str | None
    robots_sha256: str | None
    group: str | None  # the group's User-agent values, e.g. "FooBot, BarBot"
    rule: str | None  # e.g. "Disallow: /private"
    line: int | None
    delay_ms: int
    mode: str  # enforce | monitor
    asked_delay_ms: int | None = None  # the site's Crawl-delay when it was clamped or refused
    agent_source: str | None = None  # map-user | map-address | proxyauth | option | user-agent
    user_agent_mismatch: bool | None = None  # a configured token the User-Agent does not name

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))


def timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


class AuditLog:
    """Appends records to a file, or to standard output for path "-"."""

    def __init__(self, path: str) -> None:
        self.path = path
        if path == "-":
            self._fd = 1
        else:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, record: AuditRecord) -> None:
        data = (record.to_json() + "\n").encode("utf-8")
        written = os.write(self._fd, data)
        if written != len(data):  # only on a full disk or similar; never leave a torn line
            raise OSError(f"audit log {self.path}: short write ({written} of {len(data)} bytes)")

    def close(self) -> None:
        if self._fd != 1:
            os.close(self._fd)
            self._fd = -1
