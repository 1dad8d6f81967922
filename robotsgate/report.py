"""What the bots were blocked from, and why: the audit log summed up.

Reads audit JSON lines (see audit.py) in one pass, in bounded memory whatever the log's size:
counters per host, agent, rule, reason and status, and a timeline whose buckets widen (minute,
hour, day) when there would be too many. render_text() prints the tables; report_html.py draws
the same numbers as a page.
"""

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any
from urllib.parse import urlsplit

BLOCK_EVENTS = frozenset({"block", "would-block"})

# Timeline buckets kept while reading, before they are merged into wider ones.
_MAX_KEPT = 5000
_KEPT_WIDTHS = (60, 3600, 86_400, 7 * 86_400)
# Widths offered for display, seconds.
DISPLAY_WIDTHS = (60, 300, 900, 3600, 3 * 3600, 6 * 3600, 86_400, 7 * 86_400, 30 * 86_400)
_RELATIVE = re.compile(r"(\d+)\s*([smhdw])", re.IGNORECASE)
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}
# How an audit line can spell a lone surrogate: a \udcff escape, or the bytes ED A0..BF xx,
# which are not UTF-8 but which json.loads reads with "surrogatepass" (ED also starts Hangul
# syllables: those lines are merely checked for nothing).
_SURROGATE_MARKS = (b"\\ud", b"\\uD", b"\xed")


class Timeline:
    """Counts per time bucket; the buckets widen as needed to stay under _MAX_KEPT."""

    def __init__(self) -> None:
        self.width = _KEPT_WIDTHS[0]
        self.counts: Counter[int] = Counter()  # bucket start (epoch seconds) -> count

    def add(self, seconds: float) -> None:
        self.counts[int(seconds // self.width) * self.width] += 1
        if len(self.counts) > _MAX_KEPT and self.width != _KEPT_WIDTHS[-1]:
            self.width = _KEPT_WIDTHS[_KEPT_WIDTHS.index(self.width) + 1]
            merged: Counter[int] = Counter()
            for start, count in self.counts.items():
                merged[start // self.width * self.width] += count
            self.counts = merged

    def buckets(self, max_buckets: int = 48) -> tuple[int, list[tuple[int, int]]]:
        """(width, [(start, count)]) from the first bucket to the last, gaps filled with 0."""
        if not self.counts:
            return self.width, []
        first, last = min(self.counts), max(self.counts)
        width = next((w for w in DISPLAY_WIDTHS
                      if w >= self.width and (last - first) // w + 1 <= max_buckets),
                     DISPLAY_WIDTHS[-1])
        merged: Counter[int] = Counter()
        for start, count in self.counts.items():
            merged[start // width * width] += count
        begin, end = first // width * width, last // width * width
        return width, [(start, merged[start]) for start in range(begin, end + width, width)]


@dataclass
class Summary:
    """Everything report prints, gathered in one pass (a builder: add() records, then read)."""

    sources: list[str] = field(default_factory=list)
    records: int = 0  # audit records read (within --since/--until)
    skipped: int = 0  # lines that are not audit records
    first_skipped: str | None = None  # where the first of them is, "file:line"
    blocks: int = 0  # block + would-block
    would_blocks: int = 0
    delays: int = 0
    delay_ms: int = 0
    first: float | None = None
    last: float | None = None
    events: Counter[str] = field(default_factory=Counter)
    hosts: Counter[str] = field(default_factory=Counter)
    agents: Counter[str] = field(default_factory=Counter)
    rules: Counter[tuple[str, int | None, str]] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    host_reasons: Counter[tuple[str, str]] = field(default_factory=Counter)
    timeline: Timeline = field(default_factory=Timeline)

    def add(self, record: dict[str, Any], when: float) -> None:
        self.records += 1
        event = str(record.get("event"))
        self.events[event] += 1
        self.first = when if self.first is None else min(self.first, when)
        self.last = when if self.last is None else max(self.last, when)
        if event == "delay":
            self.delays += 1
            self.delay_ms += _int(record.get("delay_ms")) or 0
        if event not in BLOCK_EVENTS:
            return
        self.blocks += 1
        self.would_blocks += event == "would-block"
        host = _host(record)
        reason = str(record.get("reason") or "?")
        self.hosts[host] += 1
        self.agents[str(record.get("agent") or "*")] += 1
        self.reasons[reason] += 1
        self.host_reasons[host, reason] += 1
        status = _int(record.get("status"))
        if status is not None:
            self.statuses[status] += 1
        if record.get("rule"):
            self.rules[str(record["rule"]), _int(record.get("line")),
                       str(record.get("robots_url") or "")] += 1
        self.timeline.add(when)

    def skip(self, where: str) -> None:
        self.skipped += 1
        if self.first_skipped is None:
            self.first_skipped = where


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _host(record: dict[str, Any]) -> str:
    # robots_url is the origin's, already normal (scheme://host[:port]/robots.txt, default port
    # left out): slicing it is much cheaper than parsing each request URL.
    robots_url = record.get("robots_url")
    if isinstance(robots_url, str) and robots_url.endswith("/robots.txt") and \
            "//" in robots_url:
        return robots_url[robots_url.index("//") + 2 : -len("/robots.txt")]
    return host_of(str(record.get("url") or ""))


def host_of(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "?"
    if not host:
        return "?"
    host = f"[{host}]" if ":" in host else host
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return host if port is None or port == default else f"{host}:{port}"


def parse_when(text: str, now: float) -> float:
    """An ISO 8601 date or time (UTC unless it says otherwise), or an age: 90m, 24h, 7d, 2w."""
    relative = _RELATIVE.fullmatch(text.strip())
    if relative:
        return now - int(relative[1]) * _UNIT[relative[2].lower()]
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is neither an ISO 8601 time (2026-01-31, "
                         "2026-01-31T12:00) nor an age (90m, 24h, 7d, 2w)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def read(streams: Iterable[tuple[str, IO[bytes]]], *, since: float | None = None,
         until: float | None = None, progress: Callable[[int], None] | None = None) -> Summary:
    """Sum up audit logs; `progress` is told the bytes read so far, now and then."""
    summary = Summary()
    done = 0
    step = 1 << 20  # report progress every MiB
    reported = 0
    for name, stream in streams:
        summary.sources.append(name)
        for number, raw in enumerate(stream, start=1):
            done += len(raw)
            if progress is not None and done - reported >= step:
                progress(done)
                reported = done
            if not raw.strip():
                continue
            record, when = _record(raw)
            if record is None or when is None:
                summary.skip(f"{name}:{number}")
                continue
            if (since is not None and when < since) or (until is not None and when >= until):
                continue
            summary.add(record, when)
    if progress is not None:
        progress(done)
    return summary


def _record(raw: bytes) -> tuple[dict[str, Any] | None, float | None]:
    try:
        record = json.loads(raw)
    except ValueError:  # not JSON, or not UTF-8
        return None, None
    if not isinstance(record, dict) or not isinstance(record.get("ts"), str):
        return None, None
    if any(mark in raw for mark in _SURROGATE_MARKS):
        record = _printable(record)
    try:
        moment = datetime.fromisoformat(record["ts"])
    except ValueError:
        return None, None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return record, moment.timestamp()


def _printable(record: dict[str, Any]) -> dict[str, Any]:
    """Lone surrogates as the text \\udcff, which the report can print.

    The proxy writes a request's bytes that are not UTF-8 as \\udcff escapes (audit.to_line);
    read back, they are lone surrogates, which neither a UTF-8 terminal nor the UTF-8 HTML page
    can take: printed as the escape, the operator sees which byte the bot sent.
    """
    return {key: value.encode("utf-8", "backslashreplace").decode("utf-8")
            if isinstance(value, str) else value for key, value in record.items()}


# -- text ---------------------------------------------------------------------------------------


def when_text(seconds: float, width: int = 1) -> str:
    moment = datetime.fromtimestamp(seconds, UTC)
    if width >= 86_400:
        return moment.strftime("%Y-%m-%d")
    return moment.strftime("%Y-%m-%d %H:%M")


def width_text(width: int) -> str:
    for unit, size in (("week", 7 * 86_400), ("day", 86_400), ("hour", 3600), ("min", 60)):
        if width % size == 0:
            count = width // size
            return f"{count} {unit}" + ("s" if count > 1 and unit != "min" else "")
    return f"{width} s"


def rule_text(key: tuple[str, int | None, str]) -> str:
    rule, line, robots_url = key
    where = f" (line {line})" if line is not None else ""
    return f"{rule}{where}  {robots_url}"


def render_text(summary: Summary, *, top: int = 10, bar_width: int = 40) -> str:
    out: list[str] = []
    period = (f"{when_text(summary.first)} to {when_text(summary.last)} UTC"
              if summary.first is not None and summary.last is not None else "no records")
    out.append(f"audit log: {', '.join(summary.sources)}")
    out.append(f"period:    {period}")
    out.append(f"records:   {summary.records:,}   blocks: {summary.blocks:,}"
               f" (would-block: {summary.would_blocks:,})   delays: {summary.delays:,}"
               f" ({summary.delay_ms / 1000:,.1f} s in all)")
    if summary.skipped:
        out.append(f"skipped:   {summary.skipped:,} line{'s' if summary.skipped > 1 else ''} "
                   f"that {'are' if summary.skipped > 1 else 'is'} not an audit record "
                   f"(first at {summary.first_skipped})")
    tables: list[tuple[str, Iterable[tuple[str, int]]]] = [
        ("blocked hosts", summary.hosts.most_common(top)),
        ("blocked agents", summary.agents.most_common(top)),
        ("deciding rules", ((rule_text(k), n) for k, n in summary.rules.most_common(top))),
        ("reasons", summary.reasons.most_common(top)),
        ("statuses answered", ((str(k), n) for k, n in summary.statuses.most_common(top))),
    ]
    for title, rows in tables:
        out += ["", *table(title, list(rows), summary.blocks)]
    width, buckets = summary.timeline.buckets()
    out += ["", f"blocks over time (per {width_text(width)}, UTC)"]
    if not buckets:
        out.append("  (none)")
    peak = max((count for _, count in buckets), default=0)
    for start, count in buckets:
        bar = "#" * (math.ceil(count / peak * bar_width) if count else 0)
        out.append(f"  {when_text(start, width):<16}  {count:>8,}  {bar}")
    return "\n".join(out) + "\n"


def table(title: str, rows: list[tuple[str, int]], total: int) -> Iterator[str]:
    yield f"top {title}"
    if not rows:
        yield "  (none)"
        return
    for name, count in rows:
        share = f"{count / total:6.1%}" if total else ""
        yield f"  {count:>8,}  {share}  {name}"
