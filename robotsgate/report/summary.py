"""What the bots were blocked from, and why: the audit log summed up.

Reads audit JSON lines (robotsgate.audit.records) in one pass, in bounded memory whatever the
log's size: the blocked hosts, agents, paths, URLs, rules, reasons and statuses, each kept by a
TopCounts of fixed capacity (Bounds), the paths and reasons of the most blocked hosts and agents
(and the agents' URLs) likewise, and a timeline whose buckets widen (minute, hour, day) when
there would be too many. The counters are counts.py's; text.py prints the tables; html.py draws
the same numbers as a page.

Money: every payment record (event payment) is summed, exactly, in the currency its price is
in, per bot (its `bot` field: the bot whose budgets counted it; its `agent` in a log written
before there was one), per site and per UTC day (Sums: each table keeps `Bounds.keys` names and
sums the rest into one row, so no total is ever an estimate); overcharges are counted per site,
bot and what the site wrote.

Paths are a URL's path without its query (`/search` for `/search?q=a`), so a bot walking
`?page=1, 2, 3...` shows as one heavily blocked path; URLs are counted as the bot sent them, query
included (fragment left out), cut to MAX_KEY_CHARS characters.
"""

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any
from urllib.parse import urlsplit

from robotsgate.audit.chain import CHECKPOINT
from robotsgate.payments.spending import OVERCHARGED_NOTE, read_price
from robotsgate.report.counts import Breakdown, Sums, TopCounts

# Refusals: a request that never left (block), one that would not have (would-block), an answer
# withheld from the bot after the request reached the origin (withheld).
BLOCK_EVENTS = frozenset({"block", "would-block", "withheld"})
USAGE_PREFERENCE = "usage-preference"

# Timeline buckets kept while reading, before they are merged into wider ones.
_MAX_KEPT = 5000
_KEPT_WIDTHS = (60, 3600, 86_400, 7 * 86_400)
# Widths offered for display, seconds.
DISPLAY_WIDTHS = (60, 300, 900, 3600, 3 * 3600, 6 * 3600, 86_400, 7 * 86_400, 30 * 86_400)
_RELATIVE = re.compile(r"(\d+)\s*([smhdw])", re.IGNORECASE)
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}
# A URL's path: what follows scheme://authority, up to the query or fragment.
_PATH = re.compile(r"[^/?#]*//[^/?#]*([^?#]*)")
# Longer paths and URLs are cut (and end in "…"): a bot's 8 KB URL must not make every kept
# key 8 KB. URLs that differ only after the cut count as one.
MAX_KEY_CHARS = 300
NO_PATH = ""  # the path of a target that has none (CONNECT host:port, tcp://host:port)




@dataclass(frozen=True, slots=True)
class Bounds:
    """How many keys a report keeps: its memory is proportional to these, whatever the log.

    `keys` per top table (hosts, agents, paths, URLs, rules, reasons, statuses); `broken_down`
    hosts, and as many agents, are kept with a Detail of `each` paths, reasons (and URLs).
    """

    keys: int = 10_000
    broken_down: int = 100
    each: int = 200

    @classmethod
    def to_show(cls, top: int, broken_down: int, each: int) -> "Bounds":
        """The default bounds, raised to keep ten times as many keys as are to be shown."""
        default = cls()
        return cls(keys=max(default.keys, 10 * top),
                   broken_down=max(default.broken_down, 10 * broken_down),
                   each=max(default.each, 10 * each))


@dataclass(frozen=True, slots=True)
class Only:
    """The records a report is about: one agent's (product token, any case), one host's (any
    port unless one is given), those whose User-Agent holds some text (any case), or several
    of these at once. None: every record."""

    agent: str | None = None
    host: str | None = None
    user_agent: str | None = None

    def __post_init__(self) -> None:
        if self.host is not None and (not self.host or re.search(r"[/\s@?#]", self.host)):
            raise ValueError(f"--host wants a host, with :port if it is not the scheme's "
                             f"default (a.example, b.example:8080), got {self.host!r}")
        if self.agent is not None and not self.agent.strip():
            raise ValueError("--agent wants a product token (MyBot), or * for requests no "
                             "named group applied to")

    def wants(self, record: dict[str, Any]) -> bool:
        # A payment's bot (as the proxy names it) is its agent too: a bot named by its
        # User-Agent decides as a robots.txt group (often *) but spends as itself.
        if self.agent is not None and \
                str(record.get("agent") or "*").lower() != self.agent.lower() and \
                str(record.get("bot")).lower() != self.agent.lower():
            return False
        if self.user_agent is not None and \
                self.user_agent.lower() not in str(record.get("user_agent") or "").lower():
            return False
        if self.host is None:
            return True
        wanted, host = self.host.lower(), _host(record).lower()
        return host == wanted or (_bare(host) == wanted and _bare(wanted) == wanted)

    def text(self) -> str:
        said = [f"agent {self.agent}"] if self.agent is not None else []
        if self.user_agent is not None:
            said.append(f"User-Agent with {self.user_agent!r}")
        return ", ".join(said + ([f"host {self.host}"] if self.host is not None else []))


def _bare(host: str) -> str:
    """A host without its port: b.example for b.example:8080, [::1] for [::1]:8080."""
    if host.startswith("["):
        return host[: host.find("]") + 1] or host
    return host.partition(":")[0]


class Timeline:
    """Counts per time bucket; the buckets widen as needed to stay under _MAX_KEPT."""

    def __init__(self) -> None:
        self.width = _KEPT_WIDTHS[0]
        self.counts: dict[int, int] = {}  # bucket start (epoch seconds) -> count

    def add(self, seconds: float) -> None:
        start = int(seconds // self.width) * self.width
        self.counts[start] = self.counts.get(start, 0) + 1
        if len(self.counts) > _MAX_KEPT and self.width != _KEPT_WIDTHS[-1]:
            self.width = _KEPT_WIDTHS[_KEPT_WIDTHS.index(self.width) + 1]
            merged: dict[int, int] = {}
            for begin, count in self.counts.items():
                wider = begin // self.width * self.width
                merged[wider] = merged.get(wider, 0) + count
            self.counts = merged

    def buckets(self, max_buckets: int = 48) -> tuple[int, list[tuple[int, int]]]:
        """(width, [(start, count)]) from the first bucket to the last, gaps filled with 0."""
        if not self.counts:
            return self.width, []
        first, last = min(self.counts), max(self.counts)
        width = next((w for w in DISPLAY_WIDTHS
                      if w >= self.width and (last - first) // w + 1 <= max_buckets),
                     DISPLAY_WIDTHS[-1])
        merged: dict[int, int] = {}
        for start, count in self.counts.items():
            wider = start // width * width
            merged[wider] = merged.get(wider, 0) + count
        begin, end = first // width * width, last // width * width
        return width, [(start, merged.get(start, 0)) for start in range(begin, end + width, width)]


RuleKey = tuple[str, int | None, str]  # rule as written, its line, the robots.txt URL


@dataclass
class Summary:
    """Everything report prints, gathered in one pass (a builder: add() records, then read)."""

    bounds: Bounds = field(default_factory=Bounds)
    only: Only | None = None
    sources: list[str] = field(default_factory=list)
    records: int = 0  # audit records read (within --since/--until, --agent/--host)
    skipped: int = 0  # lines that are not audit records
    first_skipped: str | None = None  # where the first of them is, "file:line"
    blocks: int = 0  # block + would-block
    would_blocks: int = 0
    delays: int = 0
    delay_ms: int = 0
    first: float | None = None
    last: float | None = None
    timeline: Timeline = field(default_factory=Timeline)
    # The top tables, all of blocks, made from `bounds`.
    hosts: TopCounts[str] = field(init=False)
    agents: TopCounts[str] = field(init=False)
    # Bots named by nothing but their User-Agent all decide as *: their User-Agents tell them
    # apart.
    user_agents: TopCounts[str] = field(init=False)
    # Delays (forwarded after a politeness wait), per host.
    delayed_hosts: TopCounts[str] = field(init=False)
    paths: TopCounts[str] = field(init=False)
    urls: TopCounts[str] = field(init=False)
    rules: TopCounts[RuleKey] = field(init=False)
    reasons: TopCounts[str] = field(init=False)
    statuses: TopCounts[int] = field(init=False)
    by_host: Breakdown = field(init=False)
    by_agent: Breakdown = field(init=False)
    # Refusals by usage preferences (reason usage-preference): per purpose the bot declared,
    # and per purpose and host.
    purposes: TopCounts[str] = field(init=False)
    purpose_hosts: TopCounts[tuple[str, str]] = field(init=False)
    # ... and per signal that stated the preference (Content-Usage, Content-Signal,
    # tdm-reservation, noai...; signal_of).
    signals: TopCounts[str] = field(init=False)
    # Money: payments (records of event payment whose price was counted), summed per bot, per
    # site and per UTC day; overcharges per (site, bot, what the site wrote).
    payments: int = 0
    spent_bots: Sums = field(init=False)
    spent_sites: Sums = field(init=False)
    spent_days: Sums = field(init=False)
    overcharges: TopCounts[tuple[str, str, str]] = field(init=False)

    def __post_init__(self) -> None:
        keys = self.bounds.keys
        self.hosts, self.agents = TopCounts(keys), TopCounts(keys)
        self.user_agents, self.delayed_hosts = TopCounts(keys), TopCounts(keys)
        self.paths, self.urls = TopCounts(keys), TopCounts(keys)
        self.rules, self.reasons, self.statuses = TopCounts(keys), TopCounts(keys), \
            TopCounts(keys)
        self.purposes, self.purpose_hosts = TopCounts(keys), TopCounts(keys)
        self.signals = TopCounts(keys)
        self.spent_bots, self.spent_sites, self.spent_days = Sums(keys), Sums(keys), Sums(keys)
        self.overcharges = TopCounts(keys)
        self.by_host = Breakdown(self.bounds.broken_down, self.bounds.each, urls=False)
        self.by_agent = Breakdown(self.bounds.broken_down, self.bounds.each)

    def add(self, record: dict[str, Any], when: float) -> None:
        self.records += 1
        event = record.get("event")
        if not isinstance(event, str):  # the log's, whatever it holds: a list is unhashable
            event = str(event)
        if self.first is None or when < self.first:
            self.first = when
        if self.last is None or when > self.last:
            self.last = when
        if event == "delay":
            self.delays += 1
            self.delay_ms += _int(record.get("delay_ms")) or 0
            self.delayed_hosts.add(_host(record))
        elif event == "payment":
            self._paid(record, when)
        if event not in BLOCK_EVENTS:
            return
        self.blocks += 1
        self.would_blocks += event == "would-block"
        host = _host(record)
        agent = str(record.get("agent") or "*")
        reason = str(record.get("reason") or "?")
        url = record.get("url")
        path, url = _path_and_url(url if isinstance(url, str) else "")
        self.hosts.add(host)
        self.agents.add(agent)
        self.user_agents.add(_cut(str(record.get("user_agent") or "(none)")))
        self.paths.add(path)
        self.urls.add(url)
        self.reasons.add(reason)
        detail = self.by_host.count(host)
        detail.paths.add(path)
        detail.reasons.add(reason)
        detail = self.by_agent.count(agent)
        detail.paths.add(path)
        detail.reasons.add(reason)
        if detail.urls is not None:
            detail.urls.add(url)
        if reason in _FOR_USE:
            declared = record.get("purposes")
            for purpose in (declared.split(",") if isinstance(declared, str) else ["?"]):
                self.purposes.add(_cut(purpose.strip()))
                self.purpose_hosts.add((_cut(purpose.strip()), host))
        if reason == USAGE_PREFERENCE:
            self.signals.add(signal_of(record.get("rule"), record.get("line")))
        elif reason in _SIGNAL_OF_REASON:
            signal = _SIGNAL_OF_REASON[reason]
            if reason in _FOR_USE:  # a licence: robots.txt's has a line, a page's none
                signal += " (robots.txt License)" if record.get("line") is not None else \
                    " (Link header or <link>)"
            self.signals.add(signal)
        status = _int(record.get("status"))
        if status is not None:
            self.statuses.add(status)
        if record.get("rule"):
            self.rules.add((_cut(str(record["rule"])), _int(record.get("line")),
                            _cut(str(record.get("robots_url") or ""))))
        self.timeline.add(when)

    def _paid(self, record: dict[str, Any], when: float) -> None:
        """A payment record: its price (what the budgets counted) summed; an overcharge
        counted."""
        price = record.get("price")
        money = read_price(price) if isinstance(price, str) else None
        site = _host(record)
        bot = _cut(str(record.get("bot") or record.get("agent") or "*"))
        error = record.get("error")
        if isinstance(error, str) and error.startswith(OVERCHARGED_NOTE):
            written = record.get("charged_as_written")
            self.overcharges.add((site, bot, _cut(str(written)) if written is not None
                                  else "(nothing)"))
        if money is None:
            return  # nothing charged, or no answer: nothing paid
        self.payments += 1
        self.spent_bots.add(bot, money.currency, money.micros)
        self.spent_sites.add(site, money.currency, money.micros)
        day = datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d")
        self.spent_days.add(day, money.currency, money.micros)

    def skip(self, where: str) -> None:
        self.skipped += 1
        if self.first_skipped is None:
            self.first_skipped = where


# Refusals for what a bot crawls for: counted by purpose. Each licence and price refusal's
# signal is its reason's.
_FOR_USE = frozenset({USAGE_PREFERENCE, "license-prohibited", "license-required",
                      "license-unavailable"})
_SIGNAL_OF_REASON = {"license-prohibited": "RSL licence", "license-required": "RSL licence",
                     "license-unavailable": "RSL licence",
                     "price-refused": "402 crawler-price", "budget-exhausted": "402 crawler-price",
                     "overcharged": "402 crawler-price",
                     "x402-unsupported": "402 x402"}

# The statements of usage preferences, by how an audit record's rule begins (Statement.text).
_SIGNALS = (("Content-Usage:", "robots.txt Content-Usage"),
            ("Content-Signal:", "robots.txt Content-Signal"),
            ("tdm-reservation:", "tdm-reservation header"),
            ('<meta name="tdm-reservation"', "tdm-reservation META"),
            ("X-Robots-Tag:", "X-Robots-Tag noai"),
            ('<meta name="robots"', "robots META noai"))


def signal_of(rule: object, line: object) -> str:
    """The signal a usage refusal's rule was stated in: a robots.txt line, a header or a META
    (a Content-Usage rule with a line number is robots.txt's; without one, the header's)."""
    if not isinstance(rule, str) or not rule:
        return "(nothing stated: robots_usage_unknown=refuse)"
    if rule.startswith("Content-Usage:") and line is None:
        return "Content-Usage header"
    for prefix, name in _SIGNALS:
        if rule.startswith(prefix):
            return name
    return "other"


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _cut(text: str) -> str:
    return text if len(text) <= MAX_KEY_CHARS else text[: MAX_KEY_CHARS - 1] + "…"


def _path_and_url(url: str) -> tuple[str, str]:
    """The path (no query) and the URL (no fragment) a block is counted under, both cut."""
    if "#" in url:
        url = url.partition("#")[0]
    found = _PATH.match(url)
    if found is None:  # authority form: CONNECT host:port
        path = NO_PATH
    else:  # an empty http(s) path is "/"; tcp://host:port has none
        path = found[1] or ("/" if url.startswith(("http://", "https://")) else NO_PATH)
    return _cut(path), _cut(url) if url else "?"


def _host(record: dict[str, Any]) -> str:
    # robots_url is the origin's, already normal (scheme://host[:port]/robots.txt, default port
    # left out): slicing it is much cheaper than parsing each request URL.
    robots_url = record.get("robots_url")
    if isinstance(robots_url, str) and robots_url.endswith("/robots.txt") and \
            "//" in robots_url:
        return _cut(robots_url[robots_url.index("//") + 2 : -len("/robots.txt")])
    return _cut(host_of(str(record.get("url") or "")))


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
         until: float | None = None, progress: Callable[[int], None] | None = None,
         only: Only | None = None, bounds: Bounds | None = None) -> Summary:
    """Sum up audit logs; `progress` is told the bytes read so far, now and then."""
    summary = Summary(bounds=bounds or Bounds(), only=only)
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
            if record.get("event") == CHECKPOINT:
                continue  # the chain's, not a request's (robotsgate verify reads those)
            if (since is not None and when < since) or (until is not None and when >= until):
                continue
            if only is not None and not only.wants(record):
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
    # How an audit line can spell a lone surrogate: a \udcff escape, or the bytes ED A0..BF xx,
    # which are not UTF-8 but which json.loads reads with "surrogatepass" (ED also starts
    # Hangul syllables: those lines are merely checked for nothing). Most lines hold no \u
    # escape at all, so one scan for it settles them.
    if (b"\\u" in raw and (b"\\ud" in raw or b"\\uD" in raw)) or b"\xed" in raw:
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
