"""The audit summary as text: the tables `robotsgate report` prints (render_text), and the words
the text and the page (html.py) share: times, bucket widths, rules, paths, counts, and
the notes that say when counts are estimates.

Every line is escaped (escape.py) before it is printed: hosts, paths, agents and rules are what
bots and sites wrote.
"""

import math
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from robotsgate.escape import escaped
from robotsgate.payments.spending import Money
from robotsgate.report.counts import Breakdown, Count, Sum, Sums, TopCounts
from robotsgate.report.summary import NO_PATH, RuleKey, Summary

# -- words shared by the text and the page ------------------------------------------------------


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


def rule_text(key: RuleKey) -> str:
    rule, line, robots_url = key
    where = f" (line {line})" if line is not None else ""
    return f"{rule}{where}  {robots_url}"


def purpose_host_text(key: tuple[str, str]) -> str:
    return f"{key[0]}  {key[1]}"


def path_text(path: str) -> str:
    return path if path != NO_PATH else "(no path: a connection)"


def plural(count: int, noun: str) -> str:
    return noun if count == 1 else f"{noun}s"


def count_text(row: Count[Any]) -> str:
    """A count as printed: ~ in front when it is an estimate (an upper bound)."""
    return f"~{row.count:,}" if row.error else f"{row.count:,}"


def distinct_text(top: TopCounts[Any]) -> str:
    """How many distinct keys a table saw: a number, or N+ once it had to drop some."""
    return f"{len(top):,}" if top.exact else f"{top.capacity:,}+"


def none_text(top: TopCounts[Any]) -> str:
    """What an empty table says: nothing was counted, or nothing is known to stand out."""
    return "(none)" if top.exact else "(none known to stand out)"


def estimate_note(top: TopCounts[Any], rows: Iterable[Count[Any]], noun: str) -> str | None:
    """What the reader must know of a table's counts when they are not all exact (`noun` in
    the singular: path, URL, status)."""
    if top.exact:
        return None
    worst = max((row.error for row in rows), default=0)
    plural = noun + ("es" if noun.endswith("s") else "s")
    said = (f"over {top.capacity:,} distinct {plural}, so the heaviest are kept: "
            f"one not kept was blocked at most {top.floor:,} "
            f"time{"s" if top.floor > 1 else ""}")
    if worst:
        said += f"; ~ marks an estimate, at most {worst:,} too high"
    return said


def money_text(currency: str, micros: int) -> str:
    return str(Money(currency, micros))


def spent_text(summary: Summary) -> str:
    """What was spent in all, per currency: "USD 5.03 in 4 payments"."""
    totals = summary.spent_bots.totals()
    amounts = ", ".join(money_text(currency, micros) for currency, micros in totals.items())
    return f"{amounts or 'nothing'} in {summary.payments:,} {plural(summary.payments, 'payment')}"


def overcharge_text(key: tuple[str, str, str]) -> str:
    site, bot, written = key
    return f"{site}  {bot}  charged {written!r}"


def sums_note(sums: Sums, shown: int, noun: str) -> str | None:
    """What the reader must know of a spending table: rows left out, or merged."""
    said = []
    if len(sums) > shown:
        said.append(f"{shown:,} of {len(sums):,} rows shown")
    if sums.merged:
        said.append(f"over {sums.capacity:,} {noun}s: {sums.merged:,} payments of the others "
                    f"summed in (others)")
    return "; ".join(said) or None


SPENDING_NOTE = ("as the budgets counted it: crawler-charged in full, or the price agreed when "
                 "what the site wrote cannot be counted")
OVERCHARGES_NOTE = ("each such site is paid no more until robots_forgive_overcharge names it; "
                    "what it wrote is in the audit record's charged_as_written")


def period_text(summary: Summary) -> str:
    if summary.first is None or summary.last is None:
        return "no records"
    return f"{when_text(summary.first)} to {when_text(summary.last)} UTC"


# -- text ---------------------------------------------------------------------------------------


def render_text(summary: Summary, *, top: int = 10, broken_down: int = 5, each: int = 5,
                bar_width: int = 40) -> str:
    """The report as text: `top` rows per table, and for each of the `broken_down` heaviest
    agents and hosts, its `each` top paths and URLs."""
    out: list[str] = []
    out.append(f"audit log: {', '.join(summary.sources)}")
    if summary.only is not None:
        out.append(f"only:      {summary.only.text()}")
    out.append(f"period:    {period_text(summary)}")
    out.append(f"records:   {summary.records:,}   blocks: {summary.blocks:,}"
               f" (would-block: {summary.would_blocks:,})   delays: {summary.delays:,}"
               f" ({summary.delay_ms / 1000:,.1f} s in all)")
    if summary.payments or summary.overcharges:
        out.append(f"spent:     {spent_text(summary)}"
                   + (f"; overcharges: {summary.overcharges.total:,}"
                      if summary.overcharges else ""))
    if summary.skipped:
        out.append(f"skipped:   {summary.skipped:,} line{'s' if summary.skipped > 1 else ''} "
                   f"that {'are' if summary.skipped > 1 else 'is'} not an audit record "
                   f"(first at {summary.first_skipped})")
    tables: list[tuple[str, str, TopCounts[Any], Callable[[Any], str]]] = [
        ("blocked hosts", "host", summary.hosts, str),
        ("blocked agents", "agent", summary.agents, str),
        ("blocked User-Agents", "User-Agent", summary.user_agents, str),
        ("blocked paths", "path", summary.paths, path_text),
        ("blocked URLs", "URL", summary.urls, str),
        ("deciding rules", "rule", summary.rules, rule_text),
        ("reasons", "reason", summary.reasons, str),
        ("statuses answered", "status", summary.statuses, str),
    ]
    if summary.purposes:  # only when bots declared purposes and were refused for them
        tables += [("usage refusals by purpose", "purpose", summary.purposes, str),
                   ("usage refusals by purpose and host", "purpose and host",
                    summary.purpose_hosts, purpose_host_text)]
    if summary.signals:  # refusals for use, licences or prices
        tables.append(("refusals by signal (usage, licences, prices)", "signal",
                       summary.signals, str))
    for title, noun, counts, name in tables:
        out += ["", *table(title, counts, top, summary.blocks, noun, name)]
    if summary.payments or summary.overcharges:
        out += ["", *spending_text(summary, top)]
    if summary.delays:
        out += ["", *table("delayed hosts", summary.delayed_hosts, top, summary.delays, "host")]
    if broken_down:
        for kind, breakdown in (("agent", summary.by_agent), ("host", summary.by_host)):
            out += ["", *breakdown_text(kind, breakdown, broken_down, each)]
    width, buckets = summary.timeline.buckets()
    out += ["", f"blocks over time (per {width_text(width)}, UTC)"]
    if not buckets:
        out.append("  (none)")
    peak = max((count for _, count in buckets), default=0)
    for start, count in buckets:
        bar = "#" * (math.ceil(count / peak * bar_width) if count else 0)
        out.append(f"  {when_text(start, width):<16}  {count:>8,}  {bar}")
    # Hosts, paths, agents and rules are what bots and sites wrote: an escape sequence in one
    # would clear the reader's screen, a CR or LF would forge a row.
    return "\n".join(escaped(line) for line in out) + "\n"


def spending_text(summary: Summary, top: int) -> Iterator[str]:
    """Money spent per bot, per site and per UTC day, and the overcharges."""
    yield f"money spent ({SPENDING_NOTE})"
    for title, sums, rows, noun in (
            ("per bot", summary.spent_bots, summary.spent_bots.top(top), "bot"),
            ("per site", summary.spent_sites, summary.spent_sites.top(top), "site"),
            ("per day (UTC)", summary.spent_days, summary.spent_days.last(max(top, 31)),
             "day")):
        yield f"  {title}"
        if not rows:
            yield "    (none)"
        yield from (sum_line(row) for row in rows)
        note = sums_note(sums, len(rows), noun)
        if note:
            yield f"    ({note})"
    if summary.overcharges:
        yield ""
        yield from table(f"overcharges ({OVERCHARGES_NOTE})", summary.overcharges, top,
                         summary.overcharges.total, "overcharge", overcharge_text)


def sum_line(row: Sum) -> str:
    return (f"    {money_text(row.currency, row.amount):>18}  {row.times:>6,} "
            f"{plural(row.times, 'payment'):<8}  {row.name}")


def table(title: str, counts: TopCounts[Any], top: int, total: int, noun: str,
          name: Callable[[Any], str] = str, indent: str = "  ") -> Iterator[str]:
    yield f"{indent[2:]}top {title}"
    rows = counts.top(top)
    if not rows:
        yield f"{indent}{none_text(counts)}"
    for row in rows:
        share = f"{row.count / total:6.1%}" if total else ""
        yield f"{indent}{count_text(row):>8}  {share}  {name(row.key)}"
    note = estimate_note(counts, rows, noun)
    if note:
        yield f"{indent}({note})"


def breakdown_text(kind: str, breakdown: Breakdown, broken_down: int,
                   each: int) -> Iterator[str]:
    what = "paths and URLs" if kind == "agent" else "paths"
    yield (f"top blocked {what} per {kind} "
           f"(the {broken_down} most blocked {kind}s, {each} of each)")
    heaviest = breakdown.top(broken_down)
    if not heaviest:
        yield "  (none)"
    note = estimate_note(breakdown, heaviest, kind)
    if note:
        yield f"  ({note})"
    for row in heaviest:
        detail = breakdown.details[row.key]
        partial = (f"; {what} of its last {detail.paths.total:,} only"
                   if detail.paths.total != row.count else "")
        yield f"  {kind} {row.key}: {count_text(row)} {plural(row.count, 'block')}{partial}"
        yield from table("paths", detail.paths, each, detail.paths.total, "path", path_text,
                         indent="      ")
        if detail.urls is not None:
            yield from table("URLs", detail.urls, each, detail.urls.total, "URL", str,
                             indent="      ")
