"""The audit summary as one self-contained HTML page: inline CSS and SVG charts, nothing else.

No script, no external file, no network: the page carries a Content-Security-Policy that forbids
loading anything, so it opens the same from a mail attachment or an air-gapped laptop. Every
string from the log (URLs, agents, rules are what bots and sites sent) is escaped.
"""

from collections import Counter
from collections.abc import Sequence
from html import escape

from robotsgate.report import Summary, rule_text, when_text, width_text

# Distinguishable colours (Okabe-Ito), one per reason, in order of frequency.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442",
           "#000000", "#999999")
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.15em; margin-top: 2em; }
.meta { color: #555; } .cards { display: flex; gap: 1em; flex-wrap: wrap; margin: 1.5em 0; }
.card { border: 1px solid #ccc; border-radius: 6px; padding: 0.6em 1em; min-width: 8em; }
.card .num { display: block; font-size: 1.6em; font-weight: 600; }
table { border-collapse: collapse; width: 100%; } td, th { padding: 0.2em 0.6em; }
th { text-align: left; border-bottom: 1px solid #999; } td.n { text-align: right; width: 6em; }
tr:nth-child(even) td { background: #f4f4f4; } td { word-break: break-all; }
svg text { font: 12px system-ui, sans-serif; fill: #222; } .axis { stroke: #999; }
.legend span { display: inline-block; margin-right: 1.2em; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em;
          vertical-align: -0.1em; }
"""


def _num(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def _nice(peak: int) -> int:
    """The smallest 1, 2 or 5 x 10^k at or above peak (at least 1): the top of an axis."""
    scale = 1
    while True:
        for step in (1, 2, 5):
            if step * scale >= peak:
                return step * scale
        scale *= 10


def render_html(summary: Summary, *, top: int = 10, generated: str = "") -> str:
    reasons = [reason for reason, _ in summary.reasons.most_common()]
    colours = {reason: PALETTE[i % len(PALETTE)] for i, reason in enumerate(reasons)}
    period = (f"{when_text(summary.first)} to {when_text(summary.last)} UTC"
              if summary.first is not None and summary.last is not None else "no records")
    cards = [("records", summary.records), ("blocks", summary.blocks),
             ("would-block", summary.would_blocks), ("delays", summary.delays),
             ("hosts blocked", len(summary.hosts)), ("agents blocked", len(summary.agents))]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>robotsgate audit report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>robotsgate audit report</h1>",
        f'<p class="meta">{escape(", ".join(summary.sources))} &middot; {escape(period)}'
        + (f" &middot; generated {escape(generated)}" if generated else "") + "</p>",
    ]
    if summary.skipped:
        parts.append(f'<p class="meta">Skipped {_num(summary.skipped)} line(s) that are not '
                     f"audit records (first at {escape(summary.first_skipped or '')}).</p>")
    parts.append('<div class="cards">')
    for label, value in cards:
        ident = "total-" + label.replace(" ", "-")
        parts.append(f'<div class="card" id="{ident}"><span class="num">{_num(value)}</span>'
                     f"{escape(label)}</div>")
    parts.append("</div>")

    width, buckets = summary.timeline.buckets(max_buckets=72)
    parts += [f"<h2>Blocks over time (per {escape(width_text(width))}, UTC)</h2>",
              _timeline_svg(buckets, width)]
    parts += ["<h2>Blocks per host and reason</h2>", _legend(reasons, colours),
              _hosts_svg(summary, top, reasons, colours)]
    parts += ["<h2>Blocks per reason</h2>",
              _bars_svg(summary.reasons.most_common(), colours, "reasons-chart")]
    parts += _table("Top blocked hosts", "hosts", summary.hosts.most_common(top), summary.blocks)
    parts += _table("Top blocked agents", "agents", summary.agents.most_common(top),
                    summary.blocks)
    parts += _table("Top deciding rules", "rules",
                    [(rule_text(k), n) for k, n in summary.rules.most_common(top)],
                    summary.blocks)
    parts += _table("Reasons", "reasons", summary.reasons.most_common(), summary.blocks)
    parts += _table("Statuses answered", "statuses",
                    [(str(k), n) for k, n in summary.statuses.most_common()], summary.blocks)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _table(title: str, ident: str, rows: Sequence[tuple[str, int]], total: int) -> list[str]:
    out = [f"<h2>{escape(title)}</h2>", f'<table id="table-{ident}">',
           '<tr><th class="n">blocks</th><th class="n">share</th><th>name</th></tr>']
    if not rows:
        out.append('<tr><td class="n">0</td><td class="n"></td><td>(none)</td></tr>')
    for name, count in rows:
        share = f"{count / total:.1%}" if total else ""
        out.append(f'<tr><td class="n">{_num(count)}</td><td class="n">{share}</td>'
                   f"<td>{escape(name)}</td></tr>")
    out.append("</table>")
    return out


def _legend(reasons: Sequence[str], colours: dict[str, str]) -> str:
    items = "".join(f'<span><i class="swatch" style="background:{colours[r]}"></i>'
                    f"{escape(r)}</span>" for r in reasons)
    return f'<p class="legend">{items}</p>'


def _timeline_svg(buckets: Sequence[tuple[int, int]], width: int) -> str:
    if not buckets:
        return '<p id="timeline-chart">No blocks in this period.</p>'
    w, h, left, right, top, bottom = 960, 280, 56, 12, 20, 40
    plot_w, plot_h = w - left - right, h - top - bottom
    peak = _nice(max(count for _, count in buckets))
    step = plot_w / len(buckets)
    out = [f'<svg id="timeline-chart" role="img" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">',
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


def _hosts_svg(summary: Summary, top: int, reasons: Sequence[str],
               colours: dict[str, str]) -> str:
    hosts = summary.hosts.most_common(top)
    if not hosts:
        return '<p id="hosts-chart">No blocks in this period.</p>'
    per_host: dict[str, Counter[str]] = {host: Counter() for host, _ in hosts}
    for (host, reason), count in summary.host_reasons.items():
        if host in per_host:
            per_host[host][reason] += count
    label_w, row_h, w = 260, 28, 960
    plot_w = w - label_w - 70
    h = row_h * len(hosts) + 10
    peak = hosts[0][1]
    out = [f'<svg id="hosts-chart" role="img" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           'xmlns="http://www.w3.org/2000/svg">', "<title>Blocks per host and reason</title>"]
    for row, (host, total) in enumerate(hosts):
        y = 5 + row * row_h
        name = host if len(host) <= 36 else host[:35] + "…"
        out.append(f'<text x="{label_w - 8}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end">'
                   f"{escape(name)}</text>")
        x = float(label_w)
        for reason in reasons:
            count = per_host[host][reason]
            if not count:
                continue
            seg = plot_w * count / peak
            tip = f"{host}: {count:,} {reason}"
            out.append(f'<rect x="{x:.1f}" y="{y + 4}" width="{seg:.1f}" height="{row_h - 8}" '
                       f'fill="{colours[reason]}"><title>{escape(tip)}</title></rect>')
            x += seg
        out.append(f'<text class="value" x="{x + 6:.1f}" y="{y + row_h / 2 + 4:.1f}">'
                   f"{_num(total)}</text>")
    out.append("</svg>")
    return "\n".join(out)


def _bars_svg(rows: Sequence[tuple[str, int]], colours: dict[str, str], ident: str) -> str:
    if not rows:
        return f'<p id="{ident}">No blocks in this period.</p>'
    label_w, row_h, w = 260, 28, 960
    plot_w = w - label_w - 70
    h = row_h * len(rows) + 10
    peak = rows[0][1]
    out = [f'<svg id="{ident}" role="img" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           'xmlns="http://www.w3.org/2000/svg">']
    for row, (name, count) in enumerate(rows):
        y = 5 + row * row_h
        seg = plot_w * count / peak
        out.append(f'<text x="{label_w - 8}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end">'
                   f"{escape(name)}</text>")
        out.append(f'<rect x="{label_w}" y="{y + 4}" width="{seg:.1f}" height="{row_h - 8}" '
                   f'fill="{colours.get(name, PALETTE[0])}"><title>{escape(name)}: {count:,}'
                   "</title></rect>")
        out.append(f'<text class="value" x="{label_w + seg + 6:.1f}" '
                   f'y="{y + row_h / 2 + 4:.1f}">{_num(count)}</text>')
    out.append("</svg>")
    return "\n".join(out)
