"""End to end, the operator's tools: /metrics of a running proxy, the evidence archive, audit log
rotation (SIGHUP and by size), `robotsgate check` agreeing with the proxy, and the HTML report in
a real browser (Debian's headless Chromium): its numbers, and its layout at 1280, 1920 and 500 px
(screenshots in artifacts/report-1280.png and report-1920.png)."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from html import unescape
from pathlib import Path
from typing import Any

import httpx

from . import audit_sample
from .clients import httpx_call
from .machine import REPO, clean_env, free_port, require_tool
from .origins import Origin
from .proxy import Proxy

OriginFactory = Callable[..., Origin]
ProxyFactory = Callable[..., Proxy]

UA = "ToolBot/1.0"
ROBOTS = "User-agent: *\nDisallow: /private\n"
OTHER_ROBOTS = "User-agent: *\nDisallow: /other\n"
ROBOTSGATE = Path(sys.executable).parent / "robotsgate"
ARTIFACTS = REPO / "artifacts"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def get(proxy: Proxy, url: str) -> int:
    return httpx_call(proxy, url, headers={"User-Agent": UA}).status


def wait_for_output(proxy: Proxy, text: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in proxy.output():
        assert time.monotonic() < deadline, f"{text!r} not in\n{proxy.output()}"
        time.sleep(0.05)


def scrape(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", trust_env=False, timeout=10).text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


# -- metrics ------------------------------------------------------------------------------------


def test_metrics_of_a_running_proxy_count_known_traffic(
    origin: OriginFactory, proxy: ProxyFactory
) -> None:
    site = origin("127.0.0.1", robots=ROBOTS)
    down = origin("127.0.0.2")
    down.set_robots("overloaded", status=503)
    missing = origin("127.0.0.3")  # 404 for robots.txt: no restrictions
    port = free_port()
    gate = proxy(robots_metrics_port=port)
    # mitmdump loads its script in a task of its own: wait until the addon is up.
    wait_for_output(gate, f"robotsgate: metrics on http://127.0.0.1:{port}/metrics")

    statuses = [get(gate, site.url(f"/private/{n}")) for n in range(3)]
    statuses += [get(gate, site.url(f"/public/{n}")) for n in range(4)]
    statuses += [get(gate, down.url("/x")) for _ in range(2)]
    statuses += [get(gate, missing.url("/anything"))]
    assert statuses == [403] * 3 + [200] * 4 + [503] * 2 + [200]

    m = scrape(port)

    def value(name: str, **labels: str) -> float:
        return m.get((name, frozenset(labels.items())), 0.0)

    assert value("robotsgate_decisions_total", result="blocked", reason="disallowed") == 3
    assert value("robotsgate_decisions_total", result="blocked",
                 reason="robots-unavailable") == 2
    assert value("robotsgate_decisions_total", result="forwarded", reason="allowed") == 5
    assert value("robotsgate_robots_fetches_total", outcome="ok") == 1
    assert value("robotsgate_robots_fetches_total", outcome="missing") == 1
    # The unreachable robots.txt is remembered for robots_error_ttl: fetched once.
    assert value("robotsgate_robots_fetches_total", outcome="unreachable") == 1
    assert value("robotsgate_robots_cache_misses_total") == 3
    assert value("robotsgate_robots_cache_hits_total") == 7
    assert value("robotsgate_wait_seconds_count") == 5
    assert value("robotsgate_robots_fetches_in_flight") == 0
    # The audit log says the same.
    blocks = [r for r in gate.audit() if r["event"] == "block"]
    assert len(blocks) == 5


def test_metrics_listen_on_loopback_only_by_default(proxy: ProxyFactory) -> None:
    port = free_port()
    gate = proxy(robots_metrics_port=port)
    wait_for_output(gate, f"robotsgate: metrics on http://127.0.0.1:{port}/metrics")
    assert scrape(port)  # 127.0.0.1 answers
    try:
        httpx.get(f"http://127.0.0.2:{port}/metrics", trust_env=False, timeout=5)
    except httpx.ConnectError:
        pass
    else:
        raise AssertionError("the metrics port answered on 127.0.0.2")


# -- the evidence archive -----------------------------------------------------------------------


def test_archive_holds_one_copy_per_distinct_body(
    origin: OriginFactory, proxy: ProxyFactory, tmp_path: Path
) -> None:
    one = origin("127.0.0.1", robots=ROBOTS)
    two = origin("127.0.0.2", robots=ROBOTS)  # the same body, another origin
    three = origin("127.0.0.3", robots=OTHER_ROBOTS)
    archive = tmp_path / "archive"
    gate = proxy(robots_archive_dir=str(archive))

    assert [get(gate, one.url("/private/a")), get(gate, two.url("/private/b")),
            get(gate, three.url("/other/c")), get(gate, one.url("/private/d"))] == [403] * 4

    assert sorted(p.name for p in archive.iterdir()) == sorted(
        [sha256(ROBOTS), f"{sha256(ROBOTS)}.json", sha256(OTHER_ROBOTS),
         f"{sha256(OTHER_ROBOTS)}.json"])
    for record in gate.wait_audit(4):
        body = (archive / record["robots_sha256"]).read_bytes()
        assert f"Disallow: {record['rule'].split(': ', 1)[1]}" in body.decode()
    meta = json.loads((archive / f"{sha256(OTHER_ROBOTS)}.json").read_text())
    assert meta["url"] == three.robots_url and meta["status"] == 200
    assert ["content-type", "text/plain; charset=utf-8"] in meta["headers"]
    # The first of the two origins with the shared body is the one the sidecar names.
    assert json.loads((archive / f"{sha256(ROBOTS)}.json").read_text())["url"] == one.robots_url
    # And the command that shows a block's evidence.
    shown = subprocess.run([str(ROBOTSGATE), "show", sha256(OTHER_ROBOTS), "--archive",
                            str(archive)], capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0 and shown.stdout.endswith(OTHER_ROBOTS)


# -- audit log rotation -------------------------------------------------------------------------


def test_sighup_reopens_the_audit_log(origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy()
    wait_for_output(gate, "SIGHUP reopens the audit log")
    assert get(gate, site.url("/private/1")) == 403
    gate.wait_audit(1)
    rotated = gate.audit_path.with_name("audit.jsonl.1")
    gate.audit_path.rename(rotated)  # what logrotate does first
    assert get(gate, site.url("/private/2")) == 403  # still written to the renamed file
    assert gate.process is not None
    gate.process.send_signal(signal.SIGHUP)
    wait_for_output(gate, "reopened")
    assert get(gate, site.url("/private/3")) == 403
    assert gate.process.poll() is None  # SIGHUP did not stop it
    urls = [json.loads(line)["url"] for line in rotated.read_text().splitlines()]
    assert urls == [site.url("/private/1"), site.url("/private/2")]
    assert [r["url"] for r in gate.wait_audit(1)] == [site.url("/private/3")]


def test_audit_log_rotates_by_size(origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots=ROBOTS)
    gate = proxy(robots_audit_max_bytes=1500, robots_audit_keep=2)
    for n in range(12):
        assert get(gate, site.url(f"/private/{n:02d}")) == 403
    files = [gate.audit_path.with_name(name)
             for name in ("audit.jsonl.2", "audit.jsonl.1", "audit.jsonl")]
    urls = [json.loads(line)["url"] for f in files for line in f.read_text().splitlines()]
    # Oldest dropped, the rest in order, no line split between files.
    assert urls == [site.url(f"/private/{n:02d}") for n in range(12 - len(urls), 12)]
    assert all(f.stat().st_size <= 1500 for f in files)
    assert not gate.audit_path.with_name("audit.jsonl.3").exists()


# -- check agrees with the proxy ----------------------------------------------------------------


def test_check_answers_what_the_proxy_answers(origin: OriginFactory, proxy: ProxyFactory) -> None:
    robots = ("User-agent: ToolBot\nDisallow: /private\nAllow: /private/open\n"
              "Disallow: /*.pdf$\n\nUser-agent: *\nDisallow: /\n")
    site = origin(robots=robots)
    gate = proxy()
    for path in ("/private/x", "/private/open/y", "/doc.pdf", "/doc.pdf?x", "/public",
                 "/%70rivate/x"):
        answer = httpx_call(gate, site.url(path), headers={"User-Agent": UA})
        done = subprocess.run([str(ROBOTSGATE), "check", site.url(path), "--agent", UA],
                              capture_output=True, text=True, timeout=30, env=clean_env())
        assert (done.returncode, answer.status) in ((0, 200), (1, 403)), (path, done.stdout)
        if answer.status == 403:
            rule = re.search(r"^rule:\s+(.*) \(line (\d+)\)$", done.stdout, re.MULTILINE)
            assert rule is not None
            assert (rule[1], rule[2]) == (answer.header("X-Robotsgate-Rule"),
                                          answer.header("X-Robotsgate-Line"))


# -- the HTML report in a browser ---------------------------------------------------------------


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    browser = require_tool("chromium", "chromium-browser")
    with tempfile.TemporaryDirectory(prefix="robotsgate-chromium-") as profile:
        return subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, timeout=120)


def cells(dom: str, table_id: str) -> dict[str, int]:
    body = dom.split(f'<table id="{table_id}">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<td class="n[^"]*"[^>]*>~?([\d,]+)</td><td class="share"[^>]*>[^<]*'
                      r'</td><td class="name">(?:<i [^>]*></i>)?([^<]*)</td>', body)
    return {unescape(name): int(count.replace(",", "")) for count, name in rows}


def test_html_report_shows_the_numbers_in_a_browser(tmp_path: Path) -> None:
    log = audit_sample.write(tmp_path / "audit.jsonl")
    page = tmp_path / "report.html"
    done = subprocess.run([str(ROBOTSGATE), "report", str(log), "--html", str(page)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

    rendered = chromium("--dump-dom", page.as_uri())
    dom = rendered.stdout
    assert "robotsgate audit report" in dom, rendered.stderr
    for ident, number in (("total-records", audit_sample.RECORDS),
                          ("total-blocks", audit_sample.BLOCKS),
                          ("total-would-block", audit_sample.WOULD_BLOCK),
                          ("total-delays", audit_sample.DELAYS),
                          ("total-hosts-blocked", len(audit_sample.HOSTS)),
                          ("total-urls-blocked", audit_sample.BLOCKS)):  # no URL twice
        assert re.search(rf'id="{ident}"><span class="num">{number}</span>', dom), ident
    assert cells(dom, "table-hosts") == audit_sample.HOSTS
    assert cells(dom, "table-agents") == audit_sample.AGENTS
    assert cells(dom, "table-reasons") == audit_sample.REASONS
    assert cells(dom, "table-rules") == {audit_sample.RULE: 7}
    assert cells(dom, "table-paths")["/private/0"] == 1
    # Bots told apart by their User-Agents; delays per host, counted as delays.
    assert cells(dom, "table-user-agents") == {f"{agent}/1.0": n
                                               for agent, n in audit_sample.AGENTS.items()}
    assert cells(dom, "table-delayed-hosts") == {"a.example": audit_sample.DELAYS}
    assert re.search(r'id="table-delayed-hosts">\s*<thead><tr><th class="n">delays</th>', dom)
    # The most blocked agent's own paths and URLs, and the most blocked host's.
    assert 'id="agent-1" data-name="MyBot"' in dom and 'id="host-1" data-name="a.example"' in dom
    # Five of its six URLs, seen once each: the first five seen.
    assert cells(dom, "agent-1-urls") == {f"http://a.example/private/{n}": 1 for n in range(5)}
    assert cells(dom, "host-2-paths") == {"/page/0": 1, "/page/1": 1, "/page/2": 1}
    # The charts carry the same numbers: one bar per hour, labelled with its count...
    timeline = dom.split('id="timeline-chart"', 1)[1].split("</svg>", 1)[0]
    assert timeline.count("<rect") == 24
    tips = dict(re.findall(r"<title>([\d-]+ [\d:]+): (\d+) blocks</title>", timeline))
    assert {k: int(v) for k, v in tips.items() if v != "0"} == audit_sample.TIMELINE
    assert sorted(map(int, re.findall(r'class="value"[^>]*>(\d+)</text>', timeline))) == [1, 2,
                                                                                         3, 5]
    # ...and per host, split by reason.
    hosts = dom.split('id="hosts-chart"', 1)[1].split("</div>", 1)[0]
    assert re.findall(r'class="value">(\d+)</span>', hosts) == ["7", "3", "1"]
    assert "a.example: 7 disallowed" in hosts and "b.example:8080: 3 robots-unavailable" in hosts


# Measures the page as laid out and writes what it found into the DOM, for --dump-dom. The
# report itself runs no script (its Content-Security-Policy forbids them): the test measures
# a copy of it without that policy. A panel's `inner` is the right edge of its widest table,
# bars or chart (the timeline's box, which scrolls inside it on a narrow screen).
PROBE = """<script>
const box = e => { const b = e.getBoundingClientRect();
                   return {left: b.left, right: b.right, top: b.top, width: b.width}; };
const found = {
  client: document.documentElement.clientWidth,
  scroll: document.documentElement.scrollWidth,
  height: document.documentElement.scrollHeight,
  cards: [...document.querySelectorAll('.card')].map(box),
  panels: [...document.querySelectorAll('.panel')].map(p => ({
    id: p.id, grid: p.parentElement.id, ...box(p),
    inner: Math.max(...[...p.querySelectorAll('table, .chart, .bars')].map(e => box(e).right),
                    0)})),
};
const out = document.createElement('pre');
out.id = 'geometry';
out.textContent = JSON.stringify(found);
document.body.append(out);
</script>"""


def busy_log(path: Path) -> Path:
    """A day of blocks over a dozen hosts and eight agents, a few of each far ahead of the rest
    as in real logs, and a much blocked URL that has nowhere to wrap: every panel full."""
    pick = random.Random(7)  # the same log every time
    hosts = [f"www.site{n}.example" for n in range(12)]
    agents = [f"{kind}Bot{n or ''}" for n in range(2)
              for kind in ("Crawler", "Indexer", "Archiver", "Scanner")]
    reasons = ("disallowed", "robots-unavailable", "wait-too-long", "crawl-delay-too-long")
    ranked = [1 / (rank + 1) for rank in range(40)]  # Zipf: the first twice the second...
    busier = [1 + 3 * math.sin(math.pi * hour / 24) ** 2 for hour in range(24)]  # by day
    lines = []
    for n in range(2400):
        host = pick.choices(hosts, ranked[:12])[0]
        if n % 80 == 7:
            host, target = hosts[0], "/" + "x" * 280
        else:
            target = f"/private/section{pick.choices(range(40), ranked)[0]}/item" + \
                (f"?page={pick.randrange(5)}" if n % 2 else "")
        lines.append(json.dumps({
            "ts": f"2026-03-01T{pick.choices(range(24), busier)[0]:02d}:{n % 60:02d}:00Z",
            "event": "block",
            "reason": pick.choices(reasons, ranked[:4])[0], "status": 403,
            "agent": pick.choices(agents, ranked[:8])[0], "url": f"https://{host}{target}",
            "robots_url": f"https://{host}/robots.txt", "rule": "Disallow: /private",
            "line": 2}))
    path.write_text("\n".join(lines) + "\n")
    return path


def measure(page: Path, width: int) -> dict[str, Any]:
    probe = page.with_name(f"probe-{width}.html")
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text())
    probe.write_text(html.replace("</body>", PROBE + "</body>"))
    done = chromium("--dump-dom", f"--window-size={width},1000", probe.as_uri())
    found = re.search(r'<pre id="geometry">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found, done.stderr
    geometry: dict[str, Any] = json.loads(unescape(found[1]))
    return geometry


def test_html_report_fills_a_wide_window_and_fits_a_narrow_one(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = subprocess.run([str(ROBOTSGATE), "report", str(busy_log(tmp_path / "audit.jsonl")),
                           "--html", str(page)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    ARTIFACTS.mkdir(exist_ok=True)
    for width, columns in ((1280, 3), (1920, 4)):
        at = measure(page, width)
        client, panels = at["client"], at["panels"]
        assert at["scroll"] <= client, f"{width} px: the page is wider than the window"
        # The panels reach from one side of the window to the other, in `columns` columns,
        # every row of the overview full (no panel row ends short of the right edge).
        overview = [p for p in panels if p["grid"] == "overview"]
        assert min(p["left"] for p in panels) <= 32 and max(p["right"] for p in panels) >= \
            client - 32, (width, panels)
        assert len({round(p["left"]) for p in overview}) == columns, (width, overview)
        for top in {p["top"] for p in overview}:
            assert max(p["right"] for p in overview if p["top"] == top) >= client - 32, \
                (width, top, overview)
        # The totals in one row, and no panel squeezed to make room.
        assert len({round(card["top"]) for card in at["cards"]}) == 1, (width, at["cards"])
        assert min(p["width"] for p in panels) >= 360, (width, panels)
        # Nothing sticks out of its panel, not even a 281-character path with nowhere to wrap.
        for panel in panels:
            assert panel["inner"] <= panel["right"] + 1, (width, panel)
        shot = ARTIFACTS / f"report-{width}.png"
        shot.unlink(missing_ok=True)
        taken = chromium(f"--screenshot={shot}", f"--window-size={width},{min(at['height'], 8000)}",
                         "--hide-scrollbars", page.as_uri())
        assert shot.exists() and shot.stat().st_size > 10_000, taken.stderr
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        print(f"screenshot of the report at {width} px: {shot}")
    # A phone: one column, nothing wider than the screen.
    narrow = measure(page, 500)
    assert narrow["scroll"] <= narrow["client"]
    assert len({round(p["left"]) for p in narrow["panels"]}) == 1, narrow["panels"]
    assert all(p["inner"] <= p["right"] + 1 for p in narrow["panels"])


SIGNALS_ROBOTS = """User-agent: *
Disallow: /private/
Content-Usage: /cu/ train-ai=n
Content-Signal: /cs/ ai-train=no
Allow: /

License: {license}
"""
LICENSE_XML = b"""<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/lic/"><license><prohibits type="usage">ai-train</prohibits></license></content>
</rsl>"""
PAGE_LICENSE_XML = b"""<rsl xmlns="https://rslstandard.org/rsl">
  <content url="/"><license><prohibits type="usage">ai-all</prohibits></license></content>
</rsl>"""
HTML_TYPE = {"Content-Type": "text/html; charset=utf-8"}


def _html(head: str) -> str:
    return f"<!doctype html><html><head><title>t</title>{head}</head><body>words</body></html>"


# Every signal a site can give, each on a path of its own: (path, status, body, headers).
SIGNAL_CASES: list[tuple[str, str | bytes, dict[str, str]]] = [
    ("/plain", "plain", {}),
    ("/private/x", "", {}),  # robots.txt Disallow
    ("/cu/x", "", {}),  # robots.txt Content-Usage
    ("/cs/x", "", {}),  # robots.txt Content-Signal
    ("/lic/x", "", {}),  # robots.txt License: prohibits ai-train
    ("/tdm-file/x", "mined", {}),  # tdmrep.json reserves
    ("/tdm-file/said-0", "mined", {"tdm-reservation": "0"}),  # ... the header supersedes it
    ("/h-cu", "x", {"Content-Usage": "train-ai=n"}),
    ("/h-tdm", "x", {"tdm-reservation": "1"}),
    ("/h-tdm-0", "x", {"tdm-reservation": "0"}),
    ("/meta-0", _html('<meta name="tdm-reservation" content="0">'),
     {**HTML_TYPE, "tdm-reservation": "1"}),
    ("/meta-1", _html('<meta name="tdm-reservation" content="1">'), HTML_TYPE),
    ("/noai-h", "x", {"X-Robots-Tag": "noai"}),
    ("/noai-meta", _html('<meta name="robots" content="noai">'), HTML_TYPE),
    ("/noimageai-meta", _html('<meta name="robots" content="noimageai">'), HTML_TYPE),
    ("/link-h", "x", {"Link": '</page-license.xml>; rel="license"; '
                              'type="application/rsl+xml"'}),
    ("/link-el", _html('<link rel="license" type="application/rsl+xml" '
                       'href="/page-license.xml">'), HTML_TYPE),
    ("/inline", _html('<script type="application/rsl+xml">' + PAGE_LICENSE_XML.decode()
                      + "</script>"), HTML_TYPE),
    ("/curly", _html('<script type="application/rsl+xml">'
                     + PAGE_LICENSE_XML.decode().replace('type="usage"', "type=\u201cusage\u201d")
                     + "</script>"), HTML_TYPE),
]


def test_check_and_the_proxy_agree_on_every_signal(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin()
    site.set_robots(SIGNALS_ROBOTS.format(license=site.url("/license.xml")))
    site.route("/license.xml", body=LICENSE_XML, headers={"Content-Type": "application/rsl+xml"})
    site.route("/page-license.xml", body=PAGE_LICENSE_XML,
               headers={"Content-Type": "application/rsl+xml"})
    site.route("/.well-known/tdmrep.json",
               body=b'[{"location": "/tdm-file/", "tdm-reservation": 1}]',
               headers={"Content-Type": "application/json"})
    for path, body, headers in SIGNAL_CASES:
        site.route(path, body=body, headers=headers)
    gate = proxy(robots_agent="TrainBot", robots_purpose="train-ai")

    answers = {}
    for path, _, _ in SIGNAL_CASES:
        got = httpx_call(gate, site.url(path), headers={"User-Agent": "TrainBot/1.0"})
        done = subprocess.run(
            [str(ROBOTSGATE), "check", site.url(path), "--agent", "TrainBot",
             "--purpose", "train-ai", "--json"],
            capture_output=True, text=True, timeout=60, env=clean_env())
        facts = json.loads(done.stdout)
        proxy_said = ("forward", None) if got.header("X-Robotsgate-Reason") is None else \
            (got.status, got.header("X-Robotsgate-Reason"))
        check_said = ("forward", None) if facts["proxy_answer"] == "forward" else \
            (facts["proxy_answer"], facts["reason"])
        assert check_said == proxy_said, (path, done.stdout)
        assert done.returncode == (0 if proxy_said[0] == "forward" else 1), path
        assert facts["allowed"] is (proxy_said[0] == "forward"), path
        if proxy_said[0] == "forward" and facts.get("answer") is not None:
            assert facts["answer"]["usage"] == got.header("X-Robotsgate-Usage"), path
        answers[path] = proxy_said
    # What each signal makes of a training bot (the cases are not all forwarded, nor all
    # refused: both sides were really exercised).
    assert answers == {
        "/plain": ("forward", None), "/private/x": (403, "disallowed"),
        "/cu/x": (403, "usage-preference"), "/cs/x": (403, "usage-preference"),
        "/lic/x": (403, "license-prohibited"), "/tdm-file/x": (403, "usage-preference"),
        "/tdm-file/said-0": ("forward", None), "/h-cu": (403, "usage-preference"),
        "/h-tdm": (403, "usage-preference"), "/h-tdm-0": ("forward", None),
        "/meta-0": ("forward", None), "/meta-1": (403, "usage-preference"),
        "/noai-h": (403, "usage-preference"), "/noai-meta": (403, "usage-preference"),
        "/noimageai-meta": ("forward", None), "/link-h": (403, "license-prohibited"),
        "/link-el": (403, "license-prohibited"), "/inline": (403, "license-prohibited"),
        "/curly": (503, "license-unavailable")}
