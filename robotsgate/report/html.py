"""The audit summary as one self-contained HTML page: inline CSS and SVG, nothing else.

No script, no external file, no network: the page carries a Content-Security-Policy that forbids
loading anything, so it opens the same from a mail attachment or an air-gapped laptop. Every
string from the log (URLs, agents, rules are what bots and sites sent) is escaped.

The layout is a CSS grid of panels that takes the window's width: three columns at 1280 px,
four at 1920, one on a phone. The bars are HTML (their text keeps its size at any width); the
timeline is an SVG that scales with its panel and scrolls inside it on a narrow screen.
"""

from collections.abc import Callable, Sequence
from html import escape
from typing import Any

from robotsgate.report.counts import Breakdown, Count, Sum, Sums, TopCounts
from robotsgate.report.summary import Summary
from robotsgate.report.text import (
    OVERCHARGES_NOTE,
    SPENDING_NOTE,
    count_text,
    distinct_text,
    estimate_note,
    money_text,
    none_text,
    overcharge_text,
    path_text,
    period_text,
    purpose_host_text,
    rule_text,
    spent_text,
    sums_note,
    when_text,
    width_text,
)

# Distinguishable colours (Okabe-Ito), one per reason, in order of frequency.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
           "#000000", "#999999")
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_STYLE = """
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1f2328; background: #f3f5f8; }
header { background: #1f2d3d; color: #fff; padding: 14px 24px; }
header h1 { font-size: 1.35em; margin: 0; }
header .meta { color: #c9d4e0; margin: 0.2em 0 0; overflow-wrap: anywhere; }
main { padding: 16px 24px 32px; max-width: 2400px; margin: 0 auto; }
.cards { display: grid; gap: 12px; margin-bottom: 16px;
         grid-template-columns: repeat(auto-fit, minmax(min(100%, 8rem), 1fr)); }
.card { background: #fff; border: 1px solid #d8dee4; border-radius: 8px; padding: 8px 14px;
        color: #57606a; }
.card .num { display: block; font-size: 1.7em; font-weight: 600; color: #1f2328; }
.grid { display: grid; gap: 16px; grid-auto-flow: dense;
        grid-template-columns: repeat(auto-fill, minmax(min(100%, 380px), 1fr)); }
.panel { background: #fff; border: 1px solid #d8dee4; border-radius: 8px; padding: 12px 16px;
         min-width: 0; }
.wide { grid-column: span 2; }
@media (max-width: 860px) { .wide { grid-column: auto; } }
h2 { font-size: 1.05em; margin: 0 0 0.6em; }
h2.part { font-size: 1.2em; margin: 1.6em 0 0.6em; }
h3 { font-size: 1.05em; margin: 0; overflow-wrap: anywhere; }
h4 { font-size: 0.95em; margin: 0.9em 0 0.3em; color: #57606a; }
.kind { font-weight: 400; color: #57606a; }
.meta, .note { color: #57606a; margin: 0.2em 0 0.5em; }
.note { font-size: 0.9em; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
th, td { padding: 3px 6px; vertical-align: top; }
th { text-align: left; font-weight: 600; color: #57606a; border-bottom: 1px solid #d8dee4; }
th.n, td.n { text-align: right; width: 5.5em; white-space: nowrap; }
th.times, td.times { width: 6.5em; }
th.money, td.money { width: 9.5em; text-align: right; white-space: nowrap;
                     font-variant-numeric: tabular-nums; }
th.share, td.share { width: 4.5em; text-align: right; white-space: nowrap; }
td.share { background: linear-gradient(90deg, #cfe3f5 var(--share), transparent 0); }
tbody tr:nth-child(even) { background: #f6f8fa; }
td.name { overflow-wrap: anywhere; }
td.est { color: #9a6700; }
.chart { overflow-x: auto; }
.chart svg { display: block; width: 100%; height: auto; min-width: 560px; }
svg text { font: 12px system-ui, sans-serif; fill: #1f2328; } .axis { stroke: #afb8c1; }
.bars { display: grid; grid-template-columns: minmax(5em, max-content) 1fr 4.5em;
        gap: 6px 10px; align-items: center; }
.bars .label { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; max-width: 18em;
               text-align: right; }
.track { display: flex; height: 16px; }
.track i { display: block; height: 100%; }
.bars .value { font-variant-numeric: tabular-nums; }
.mix { display: flex; height: 8px; border-radius: 4px; overflow: hidden; margin: 6px 0 2px;
       background: #eaeef2; }
.mix i { display: block; height: 100%; }
.legend { margin: 0 0 0.6em; }
.legend span { display: inline-block; margin-right: 1em; white-space: nowrap; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em;
          vertical-align: -0.1em; border-radius: 2px; }
"""


def _num(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def _share(count: int, total: int) -> str:
    return f"{count / total:.1%}" if total else ""


def _nice(peak: int) -> int:
    """The smallest 1, 2 or 5 x 10^k at or above peak (at least 1): the top of an axis."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            if step * scale >= peak:
                return step * scale
        scale *= 10


def render_html(summary: Summary, *, top: int = 10, broken_down: int = 5, each: int = 5,
                generated: str = "") -> str:
    """The page: `top` rows per table, and a panel for each of the `broken_down` most blocked
    agents and hosts with its `each` top paths and URLs."""
    reasons = [row.key for row in summary.reasons.most_common()]
    colours = {reason: PALETTE[i % len(PALETTE)] for i, reason in enumerate(reasons)}
    meta = [", ".join(summary.sources), period_text(summary)]
    if summary.only is not None:
        meta.append(f"only {summary.only.text()}")
    if generated:
        meta.append(f"generated {generated}")
    cards = [("records", _num(summary.records)), ("blocks", _num(summary.blocks)),
             ("would-block", _num(summary.would_blocks)), ("delays", _num(summary.delays)),
             ("hosts blocked", distinct_text(summary.hosts)),
             ("agents blocked", distinct_text(summary.agents)),
             ("paths blocked", distinct_text(summary.paths)),
             ("URLs blocked", distinct_text(summary.urls))]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>robotsgate audit report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<header><h1>robotsgate audit report</h1>",
        f'<p class="meta">{" &middot; ".join(escape(part) for part in meta)}</p></header>',
        "<main>",
    ]
    if summary.skipped:
        parts.append(f'<p class="note">Skipped {_num(summary.skipped)} line(s) that are not '
                     f"audit records (first at {escape(summary.first_skipped or '')}).</p>")
    parts.append('<section class="cards">')
    for label, value in cards:
        ident = "total-" + label.lower().replace(" ", "-")
        parts.append(f'<div class="card" id="{ident}"><span class="num">{escape(value)}</span>'
                     f"{escape(label)}</div>")
    parts.append("</section>")

    width, buckets = summary.timeline.buckets(max_buckets=72)
    parts.append('<section class="grid" id="overview">')
    parts.append(_panel(f"Blocks over time (per {width_text(width)}, UTC)",
                        [f'<div class="chart">{_timeline_svg(buckets, width)}</div>'],
                        wide=True, ident="panel-timeline"))
    parts.append(_panel("Blocks per host and reason",
                        [_legend(reasons, colours), _hosts_bars(summary, top, reasons, colours)],
                        wide=True, ident="panel-hosts-chart"))
    blocks = summary.blocks
    parts.append(_panel("Blocks per reason", [
        *_table("table-reasons", summary.reasons, top, blocks, "reason", colours=colours),
        "<h4>Statuses answered</h4>",
        *_table("table-statuses", summary.statuses, top, blocks, "status")],
        ident="panel-reasons"))
    # Panels worth twelve columns, in an order that fills every row with three columns (1280
    # px: agents beside URLs, paths beside rules) and with four (1920 px: paths moves up).
    tables: list[tuple[str, str, TopCounts[Any], Callable[[Any], str], str, bool]] = [
        ("Top blocked hosts", "hosts", summary.hosts, str, "host", False),
        ("Top blocked agents", "agents", summary.agents, str, "agent", False),
        ("Top blocked URLs", "urls", summary.urls, str, "URL", True),
        ("Top blocked paths", "paths", summary.paths, path_text, "path", False),
        ("Top deciding rules", "rules", summary.rules, rule_text, "rule", True),
    ]
    if summary.purposes:  # only when bots declared purposes and were refused for them
        tables.append(("Usage refusals by purpose and host", "purposes", summary.purpose_hosts,
                       purpose_host_text, "purpose and host", False))
    if summary.signals:  # refusals for use, licences or prices
        tables.append(("Refusals by signal (usage, licences, prices)", "signals",
                       summary.signals, str, "signal", False))
    for title, ident, counts, name, noun, wide in tables:
        parts.append(_panel(title, _table(f"table-{ident}", counts, top, blocks, noun, name),
                            wide=wide, ident=f"panel-{ident}"))
    parts.append("</section>")
    # Bots named by nothing but their User-Agent all decide as `*`: their User-Agents tell them
    # apart. Delays are not blocks, so they are counted apart, in delays.
    parts.append('<h2 class="part">Bots by User-Agent, and delays</h2>')
    parts.append('<section class="grid" id="who">')
    parts.append(_panel("Top blocked User-Agents",
                        _table("table-user-agents", summary.user_agents, top, blocks,
                               "User-Agent"), ident="panel-user-agents"))
    delayed = [f'<p class="meta">{_num(summary.delays)} delays, '
               f"{summary.delay_ms / 1000:,.1f} s in all.</p>"] if summary.delays else []
    parts.append(_panel("Delayed hosts", delayed + _table(
        "table-delayed-hosts", summary.delayed_hosts, top, summary.delays, "host",
        unit="delays"), ident="panel-delayed-hosts"))
    parts.append("</section>")
    if summary.payments or summary.overcharges:
        parts += _spending(summary, top)
    if broken_down:
        for kind, breakdown in (("agent", summary.by_agent), ("host", summary.by_host)):
            parts += _breakdown(kind, breakdown, broken_down, each, blocks, colours)
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


def _spending(summary: Summary, top: int) -> list[str]:
    """Money spent per bot, per site and per UTC day, and the overcharges."""
    out = ['<h2 class="part">Money spent</h2>',
           f'<p class="meta" id="spent">{escape(spent_text(summary))}, {escape(SPENDING_NOTE)}.'
           "</p>", '<section class="grid" id="spending">']
    for title, ident, sums, rows, noun in (
            ("Spent per bot", "bots", summary.spent_bots, summary.spent_bots.top(top), "bot"),
            ("Spent per site", "sites", summary.spent_sites, summary.spent_sites.top(top),
             "site"),
            ("Spent per day (UTC)", "days", summary.spent_days,
             summary.spent_days.last(max(top, 31)), "day")):
        out.append(_panel(title, _sums_table(f"table-spent-{ident}", sums, rows, noun),
                          ident=f"panel-spent-{ident}"))
    if summary.overcharges:
        out.append(_panel("Overcharges", [
            f'<p class="note">{escape(OVERCHARGES_NOTE[0].upper() + OVERCHARGES_NOTE[1:])}.</p>',
            *_table("table-overcharges", summary.overcharges, top, summary.overcharges.total,
                    "overcharge", overcharge_text, unit="times")],
            wide=True, ident="panel-overcharges"))
    out.append("</section>")
    return out


def _sums_table(ident: str, sums: Sums, rows: Sequence[Sum], noun: str) -> list[str]:
    out = [f'<table id="{ident}">',
           '<thead><tr><th class="money">spent</th><th class="n times">payments</th><th>name</th>'
           "</tr></thead><tbody>"]
    if not rows:
        out.append('<tr><td class="money"></td><td class="n times"></td>'
                   '<td class="name">(none)</td></tr>')
    for row in rows:
        out.append(f'<tr><td class="money">{escape(money_text(row.currency, row.amount))}</td>'
                   f'<td class="n times">{row.times:,}</td>'
                   f'<td class="name">{escape(row.name)}</td>'
                   "</tr>")
    out.append("</tbody></table>")
    note = sums_note(sums, len(rows), noun)
    if note:
        out.append(f'<p class="note">{escape(note[0].upper() + note[1:])}.</p>')
    return out


def _panel(title: str, body: Sequence[str], *, wide: bool = False, ident: str = "") -> str:
    classes = "panel wide" if wide else "panel"
    ident_attr = f' id="{ident}"' if ident else ""
    return (f'<div class="{classes}"{ident_attr}><h2>{escape(title)}</h2>\n'
            + "\n".join(body) + "</div>")


def _table(ident: str, counts: TopCounts[Any], top: int, total: int, noun: str,
           name: Callable[[Any], str] = str, colours: dict[str, str] | None = None,
           unit: str = "blocks") -> list[str]:
    """A table of the top rows, counted in `unit`; `colours`, when given, puts a swatch before
    each name."""
    rows = counts.top(top)
    out = [f'<table id="{ident}">',
           f'<thead><tr><th class="n">{unit}</th><th class="share">share</th><th>name</th>'
           "</tr></thead><tbody>"]
    if not rows:
        out.append('<tr><td class="n"></td><td class="share"></td>'
                   f'<td class="name">{none_text(counts)}</td></tr>')
    peak = rows[0].count if rows else 0
    for row in rows:
        swatch = "" if colours is None else \
            f'<i class="swatch" style="background:{colours.get(row.key, PALETTE[-1])}"></i>'
        out.append(_row(row, total, peak, name, swatch))
    out.append("</tbody></table>")
    note = estimate_note(counts, rows, noun)
    if note:
        out.append(f'<p class="note">{escape(note[0].upper() + note[1:])}.</p>')
    return out


def _row(row: Count[Any], total: int, peak: int, name: Callable[[Any], str],
         swatch: str = "") -> str:
    share = _share(row.count, total)
    number = (f'<td class="n est" title="an estimate: at most {row.error:,} too high">'
              f"{count_text(row)}</td>" if row.error else f'<td class="n">{count_text(row)}</td>')
    # The bar behind the share is scaled to the table's first row, as the charts are.
    bar = f' style="--share:{row.count / peak:.1%}"' if peak else ""
    return (f'<tr>{number}<td class="share"{bar}>{share}</td>'
            f'<td class="name">{swatch}{escape(name(row.key))}</td></tr>')


def _breakdown(kind: str, breakdown: Breakdown, broken_down: int, each: int, blocks: int,
               colours: dict[str, str]) -> list[str]:
    heaviest = breakdown.top(broken_down)
    what = "paths and URLs" if kind == "agent" else "paths"
    out = [f'<h2 class="part">Top blocked {what} per {kind}</h2>']
    note = estimate_note(breakdown, heaviest, kind)
    if note:
        out.append(f'<p class="note">{escape(note[0].upper() + note[1:])}.</p>')
    out.append(f'<section class="grid" id="per-{kind}">')
    if not heaviest:
        out.append(f'<div class="panel"><p class="meta">No {kind}s blocked in this period.'
                   "</p></div>")
    for rank, row in enumerate(heaviest, start=1):
        detail = breakdown.details[row.key]
        ident = f"{kind}-{rank}"
        said = f"{count_text(row)} blocks"
        if blocks:
            said += f" &middot; {_share(row.count, blocks)} of all"
        if detail.paths.total != row.count:
            said += f" &middot; {what} of its last {detail.paths.total:,} only"
        mix = detail.reasons.most_common()
        out += [f'<div class="panel breakdown" id="{ident}" data-name="{escape(row.key)}">',
                f'<h3><span class="kind">{kind}</span> {escape(row.key)}</h3>',
                f'<p class="meta">{said}</p>',
                _mix(mix, colours, detail.reasons.total),
                '<p class="legend">' + "".join(
                    f'<span><i class="swatch" style="background:'
                    f'{colours.get(r.key, PALETTE[-1])}"></i>{escape(r.key)} {count_text(r)}'
                    "</span>" for r in mix) + "</p>",
                "<h4>Top paths</h4>",
                *_table(f"{ident}-paths", detail.paths, each, detail.paths.total, "path",
                        path_text)]
        if detail.urls is not None:
            out += ["<h4>Top URLs</h4>",
                    *_table(f"{ident}-urls", detail.urls, each, detail.urls.total, "URL")]
        out.append("</div>")
    out.append("</section>")
    return out


def _mix(rows: Sequence[Count[str]], colours: dict[str, str], total: int) -> str:
    segments = "".join(
        f'<i style="width:{row.count / total:.2%};background:{colours.get(row.key, PALETTE[-1])}"'
        f' title="{escape(row.key)}: {row.count:,}"></i>' for row in rows if total)
    return f'<div class="mix">{segments}</div>'


def _legend(reasons: Sequence[str], colours: dict[str, str]) -> str:
    items = "".join(f'<span><i class="swatch" style="background:{colours[r]}"></i>'
                    f"{escape(r)}</span>" for r in reasons)
    return f'<p class="legend">{items}</p>'


def _timeline_svg(buckets: Sequence[tuple[int, int]], width: int) -> str:
    if not buckets:
        return '<p id="timeline-chart">No blocks in this period.</p>'
    # Drawn about as wide as its panel is at 1280 and 1920 px, so the text is near 12 px.
    w, h, left, right, top, bottom = 800, 240, 48, 12, 20, 36
    plot_w, plot_h = w - left - right, h - top - bottom
    peak = _nice(max(count for _, count in buckets))
    step = plot_w / len(buckets)
    out = [f'<svg id="timeline-chart" role="img" viewBox="0 0 {w} {h}" '
           'xmlns="http://www.w3.org/2000/svg">',
           "<title>Blocks over time</title>"]
    for fraction in (0, 0.5, 1):
        y = top + plot_h * (1 - fraction)
        out.append(f'<line class="axis" x1="{left}" x2="{w - right}" y1="{y:.1f}" '
                   f'y2="{y:.1f}" stroke-dasharray="{0 if fraction == 0 else 3}"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f"{_num(peak * fraction)}</text>")
    labels = len(buckets) <= 36  # room for a number over each bar
    for i, (start, count) in enumerate(buckets):
        bar_h = plot_h * count / peak
        x = left + i * step
        y = top + plot_h - bar_h
        tip = f"{when_text(start, width)}: {count:,} blocks"
        out.append(f'<rect x="{x + step * 0.1:.1f}" y="{y:.1f}" width="{step * 0.8:.1f}" '
                   f'height="{bar_h:.1f}" fill="{PALETTE[0]}"><title>{escape(tip)}</title>'
                   "</rect>")
        if labels and count:
            out.append(f'<text class="value" x="{x + step / 2:.1f}" y="{y - 4:.1f}" '
                       f'text-anchor="middle">{_num(count)}</text>')
    ticks = sorted({0, len(buckets) // 2, len(buckets) - 1})
    for i in ticks:
        anchor = "start" if i == 0 else "end" if i == len(buckets) - 1 else "middle"
        x = left + i * step + (0 if anchor == "start" else step if anchor == "end" else step / 2)
        out.append(f'<text x="{x:.1f}" y="{h - bottom + 18}" text-anchor="{anchor}">'
                   f"{escape(when_text(buckets[i][0], width))}</text>")
    out.append("</svg>")
    return "\n".join(out)


def _hosts_bars(summary: Summary, top: int, reasons: Sequence[str],
                colours: dict[str, str]) -> str:
    """One bar per top host, split by reason (from the hosts broken down)."""
    hosts = summary.by_host.top(top)
    if not hosts:
        return '<p id="hosts-chart">No blocks in this period.</p>'
    peak = hosts[0].count
    out = ['<div class="bars" id="hosts-chart">']
    for row in hosts:
        mix = summary.by_host.details[row.key].reasons
        segments = []
        for reason in reasons:
            count = mix.get(reason, 0)
            if count:
                tip = f"{row.key}: {count:,} {reason}"
                segments.append(f'<i style="width:{count / peak:.2%};background:'
                                f'{colours[reason]}" title="{escape(tip)}"></i>')
        out.append(f'<span class="label" title="{escape(row.key)}">{escape(row.key)}</span>'
                   f'<span class="track">{"".join(segments)}</span>'
                   f'<span class="value">{count_text(row)}</span>')
    out.append("</div>")
    return "\n".join(out)

