"""A known audit log, and the numbers a report of it must show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _record(ts: str, event: str, reason: str, status: int | None, agent: str, url: str,
            rule: str | None = None, line: int | None = None, delay_ms: int = 0) -> dict[str, Any]:
    host = url.split("/")[2]
    return {"ts": ts, "event": event, "reason": reason, "status": status, "agent": agent,
            "user_agent": f"{agent}/1.0", "client": "127.0.0.1:50000", "method": "GET",
            "url": url, "robots_url": f"http://{host}/robots.txt", "robots_status": 200,
            "robots_fetched_at": "2026-03-01T09:59:00.000+00:00", "robots_sha256": "0" * 64,
            "group": "*", "rule": rule, "line": line, "delay_ms": delay_ms,
            "mode": "monitor" if event == "would-block" else "enforce", "asked_delay_ms": None}


def records() -> list[dict[str, Any]]:
    out = []
    for n in range(5):  # 10:00-10:04: five 403s on a.example for MyBot
        out.append(_record(f"2026-03-01T10:0{n}:00.000+00:00", "block", "disallowed", 403,
                           "MyBot", f"http://a.example/private/{n}", "Disallow: /private", 3))
    for n in range(3):  # 11:00: robots.txt of b.example:8080 unreachable
        out.append(_record(f"2026-03-01T11:00:0{n}.000+00:00", "block", "robots-unavailable",
                           503, "OtherBot", f"http://b.example:8080/page/{n}"))
    for n in range(2):  # 12:30: monitor mode
        out.append(_record(f"2026-03-01T12:30:0{n}.000+00:00", "would-block", "disallowed",
                           403, "OtherBot", f"http://a.example/private/x{n}",
                           "Disallow: /private", 3))
    for n in range(4):  # delays are not blocks
        out.append(_record(f"2026-03-01T13:00:0{n}.000+00:00", "delay", "crawl-delay", None,
                           "MyBot", f"http://a.example/public/{n}", delay_ms=1000))
    out.append(_record("2026-03-02T09:00:00.000+00:00", "block", "wait-too-long", 429, "MyBot",
                       "https://c.example/x"))
    return out


def write(path: Path, *, garbage: bool = False) -> Path:
    lines = [json.dumps(r) for r in records()]
    if garbage:
        lines.insert(3, "this is not JSON")
    path.write_text("\n".join(lines) + "\n")
    return path


# What a report of records() must say.
RECORDS, BLOCKS, WOULD_BLOCK, DELAYS = 15, 11, 2, 4
HOSTS = {"a.example": 7, "b.example:8080": 3, "c.example": 1}
AGENTS = {"MyBot": 6, "OtherBot": 5}
REASONS = {"disallowed": 7, "robots-unavailable": 3, "wait-too-long": 1}
STATUSES = {403: 7, 503: 3, 429: 1}
RULE = "Disallow: /private (line 3)  http://a.example/robots.txt"
# Blocks per hour, 2026-03-01 10:00 to 2026-03-02 09:00 UTC: 24 buckets.
TIMELINE = {"2026-03-01 10:00": 5, "2026-03-01 11:00": 3, "2026-03-01 12:00": 2,
            "2026-03-02 09:00": 1}
