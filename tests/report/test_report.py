"""`robotsgate report`: the installed command on known audit logs, and the bounded counters it
sums them up with (robotsgate.report.counts.TopCounts, Space-Saving)."""

from __future__ import annotations

import gzip
import io
import json
import re
import subprocess
import sys
import tracemalloc
from collections import Counter
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from e2e import audit_sample
from e2e.machine import clean_env
from hypothesis import given, settings
from hypothesis import strategies as st

from robotsgate.report.counts import OTHERS, Breakdown, Sum, Sums, TopCounts
from robotsgate.report.html import render_html
from robotsgate.report.summary import Bounds, Only, read

ROBOTSGATE = Path(sys.executable).parent / "robotsgate"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROBOTSGATE), *args], capture_output=True, text=True, timeout=120,
                          env=clean_env())


def table(output: str, title: str) -> dict[str, int]:
    """The rows of one table of the report: name -> count."""
    lines = output.split(f"top {title}\n", 1)[1].split("\n\n", 1)[0].splitlines()
    rows = {}
    for line in lines:
        count, _share, name = line.strip().split(None, 2)
        rows[name] = int(count.replace(",", ""))
    return rows


def rows(output: str, title: str) -> list[tuple[str, str]]:
    """The rows of one top-level table, in order: (count as printed, name); notes left out."""
    lines = output.split(f"\ntop {title}\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return [(count, name) for count, _share, name in
            (line.strip().split(None, 2) for line in lines if not line.startswith("  ("))]


def breakdown(output: str, kind: str) -> dict[str, dict[str, Any]]:
    """The per-agent or per-host section: name -> blocks, paths and (agents) URLs, in order;
    an estimate's ~ left out."""
    section = re.split(rf"\ntop blocked [a-zA-Z ]+ per {kind} ", output, maxsplit=1)[1]
    section = section.split("\n\n", 1)[0]
    found: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] = {}
    rows_of: list[tuple[str, int]] = []
    for line in section.splitlines()[1:]:
        if line.startswith(f"  {kind} "):
            name, said = line[len(kind) + 3:].rsplit(": ", 1)
            current = found[name] = {"blocks": int(said.split()[0].replace(",", ""))}
        elif line.strip() in ("top paths", "top URLs"):
            rows_of = current[line.strip()[4:]] = []
        elif line.startswith("      ") and not line.strip().startswith("("):
            count, _share, name = line.strip().split(None, 2)
            rows_of.append((name, int(count.lstrip("~").replace(",", ""))))
    return found


# -- a known log ------------------------------------------------------------------------------


def record(agent: str, url: str, *, event: str = "block", reason: str = "disallowed",
           status: int = 403, minute: int = 0) -> dict[str, Any]:
    origin = re.match(r"[a-z]+://[^/?#]+", url)
    robots = f"{origin[0]}/robots.txt" if origin else f"https://{url.split(':')[0]}/robots.txt"
    return {"ts": f"2026-03-01T10:{minute:02d}:00.000+00:00", "event": event, "reason": reason,
            "status": status, "agent": agent, "user_agent": f"{agent}/1.0",
            "client": "127.0.0.1:50000", "method": "CONNECT" if origin is None else "GET",
            "url": url, "robots_url": robots, "robots_status": 200,
            "robots_fetched_at": "2026-03-01T09:59:00.000+00:00", "robots_sha256": "0" * 64,
            "group": "*", "rule": "Disallow: /" if reason == "disallowed" else None,
            "line": 2 if reason == "disallowed" else None, "delay_ms": 0, "mode": "enforce",
            "asked_delay_ms": None}


def known() -> list[dict[str, Any]]:
    """Three bots on three hosts; the counts below are worked out by hand from this."""
    out = [record("AlphaBot", "http://a.example/search?q=1") for _ in range(4)]
    out += [record("AlphaBot", "http://a.example/search?q=2") for _ in range(3)]
    out += [record("AlphaBot", "http://a.example/admin")]
    out += [record("AlphaBot", f"http://b.example:8080/private/x?sid={n}", reason="wait-too-long",
                   status=429) for n in (1, 2, 3)]
    out += [record("BetaBot", "http://a.example/admin") for _ in range(3)]
    out += [record("BetaBot", "http://a.example/search?q=1#results")]  # no fragment is sent
    out += [record("BetaBot", "https://c.example/feed", reason="robots-unavailable", status=503)
            for _ in range(2)]
    out += [record("GammaBot", "https://c.example", event="would-block")]
    out += [record("GammaBot", "c.example:443", event="would-block")]  # a CONNECT
    out += [record("GammaBot", "https://c.example/feed", event="would-block") for _ in range(5)]
    out += [{**record("AlphaBot", "http://a.example/slow"), "event": "delay",
             "reason": "crawl-delay", "status": None, "delay_ms": 500}]
    return out


KNOWN_PATHS = [("/search", 8), ("/feed", 7), ("/admin", 4), ("/private/x", 3), ("/", 1),
               ("(no path: a connection)", 1)]
KNOWN_URLS = [("https://c.example/feed", 7), ("http://a.example/search?q=1", 5),
              ("http://a.example/admin", 4), ("http://a.example/search?q=2", 3),
              ("http://b.example:8080/private/x?sid=1", 1),
              ("http://b.example:8080/private/x?sid=2", 1),
              ("http://b.example:8080/private/x?sid=3", 1), ("https://c.example", 1),
              ("c.example:443", 1)]
PER_AGENT = {
    "AlphaBot": {"blocks": 11,
                 "paths": [("/search", 7), ("/private/x", 3), ("/admin", 1)],
                 "URLs": [("http://a.example/search?q=1", 4), ("http://a.example/search?q=2", 3),
                          ("http://a.example/admin", 1),
                          ("http://b.example:8080/private/x?sid=1", 1),
                          ("http://b.example:8080/private/x?sid=2", 1),
                          ("http://b.example:8080/private/x?sid=3", 1)]},
    "GammaBot": {"blocks": 7,
                 "paths": [("/feed", 5), ("/", 1), ("(no path: a connection)", 1)],
                 "URLs": [("https://c.example/feed", 5), ("https://c.example", 1),
                          ("c.example:443", 1)]},
    "BetaBot": {"blocks": 6,
                "paths": [("/admin", 3), ("/feed", 2), ("/search", 1)],
                "URLs": [("http://a.example/admin", 3), ("https://c.example/feed", 2),
                         ("http://a.example/search?q=1", 1)]},
}
PER_HOST = {
    "a.example": {"blocks": 12, "paths": [("/search", 8), ("/admin", 4)]},
    "c.example": {"blocks": 9,
                  "paths": [("/feed", 7), ("/", 1), ("(no path: a connection)", 1)]},
    "b.example:8080": {"blocks": 3, "paths": [("/private/x", 3)]},
}


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_top_paths_and_urls_overall_per_agent_and_per_host(tmp_path: Path) -> None:
    log = write(tmp_path / "audit.jsonl", known())
    done = run("report", str(log), "--breakdown", "3x6")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "blocks: 24 (would-block: 7)   delays: 1" in out
    assert rows(out, "blocked paths") == [(str(n), name) for name, n in KNOWN_PATHS]
    assert rows(out, "blocked URLs") == [(str(n), name) for name, n in KNOWN_URLS]
    assert table(out, "blocked agents") == {"AlphaBot": 11, "GammaBot": 7, "BetaBot": 6}
    assert table(out, "blocked hosts") == {"a.example": 12, "c.example": 9, "b.example:8080": 3}
    assert breakdown(out, "agent") == PER_AGENT
    assert list(breakdown(out, "agent")) == ["AlphaBot", "GammaBot", "BetaBot"]
    assert breakdown(out, "host") == PER_HOST
    # A share in a breakdown is of that agent's blocks: 7 of AlphaBot's 11.
    assert re.search(r"^ +7 +63\.6%  /search$", out, re.MULTILINE)
    assert "distinct" not in out and "~" not in out  # a small log: every count is exact


def test_breakdown_is_bounded_by_its_option(tmp_path: Path) -> None:
    log = write(tmp_path / "audit.jsonl", known())
    two = run("report", str(log), "--breakdown", "2x1").stdout
    assert breakdown(two, "agent") == {
        "AlphaBot": {"blocks": 11, "paths": [("/search", 7)],
                     "URLs": [("http://a.example/search?q=1", 4)]},
        "GammaBot": {"blocks": 7, "paths": [("/feed", 5)], "URLs": [("https://c.example/feed", 5)]},
    }
    assert list(breakdown(two, "host")) == ["a.example", "c.example"]
    none = run("report", str(log), "--breakdown", "0")
    assert none.returncode == 0 and "per agent" not in none.stdout
    assert "per host" not in none.stdout and "top blocked URLs" in none.stdout


def test_only_one_agent_or_one_host(tmp_path: Path) -> None:
    log = write(tmp_path / "audit.jsonl", known())
    beta = run("report", str(log), "--agent", "betabot")  # product tokens: any case
    assert beta.returncode == 0, beta.stderr
    assert "only:      agent betabot" in beta.stdout
    assert "records:   6   blocks: 6 " in beta.stdout
    assert table(beta.stdout, "blocked agents") == {"BetaBot": 6}
    assert table(beta.stdout, "blocked paths") == dict(PER_AGENT["BetaBot"]["paths"])
    # Without a port: the host on any port; with one: that port only.
    b_any = run("report", str(log), "--host", "B.example")
    assert table(b_any.stdout, "blocked hosts") == {"b.example:8080": 3}
    assert table(b_any.stdout, "blocked agents") == {"AlphaBot": 3}
    none = run("report", str(log), "--host", "b.example:9999")
    assert none.returncode == 2 and "no audit records matching host b.example:9999" in \
        none.stderr
    both = run("report", str(log), "--host", "c.example", "--agent", "GammaBot")
    assert "records:   7 " in both.stdout and "only:      agent GammaBot, host c.example" in \
        both.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--host", "http://a.example/"], "--host wants a host"),
    (["--agent", " "], "--agent wants a product token"),
    (["--breakdown", "5x"], "is not N or NxM"),
    (["--breakdown", "3x0"], "must be at least 1"),
])
def test_bad_filters_and_breakdowns_exit_2(args: list[str], message: str,
                                           tmp_path: Path) -> None:
    log = write(tmp_path / "audit.jsonl", known())
    done = run("report", str(log), *args)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_help_describes_the_new_options() -> None:
    done = run("report", "--help")
    help_text = " ".join(done.stdout.split())
    for said in ("--breakdown N[xM]", "--agent TOKEN", "--host HOST", "Space-Saving",
                 "without their query", "query included", "10,000"):
        assert said in help_text, said


# -- more distinct URLs than are kept -----------------------------------------------------------


def test_the_heavy_hitters_of_a_log_with_more_urls_than_are_kept(tmp_path: Path) -> None:
    """30,000 URLs seen once, three times as many as a table keeps, and two seen often: one
    from the start, one only once the table was long full. Both are reported, first."""
    records = []
    for n in range(30_000):
        records.append(record("TailBot", f"http://t.example/tail/{n}"))
        if n % 100 == 0:
            records.append(record("EarlyBot", "http://t.example/early?x=1"))
        if n >= 20_000 and n % 50 == 0:
            records.append(record("LateBot", "http://t.example/late"))
    log = write(tmp_path / "audit.jsonl", records)
    done = run("report", str(log), "--top", "3")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    urls = rows(out, "blocked URLs")
    assert [name for _, name in urls] == ["http://t.example/early?x=1", "http://t.example/late"]
    # The early one was kept from the start: exact. The late one came in at the smallest count
    # kept: an estimate, an upper bound no more than the stated error too high.
    assert urls[0][0] == "300"
    late = urls[1][0]
    assert late.startswith("~")
    note = re.search(r"\(over 10,000 distinct URLs, so the heaviest are kept: one not kept was "
                     r"blocked at most (\d+) times?; ~ marks an estimate, at most (\d+) too "
                     r"high\)", out)
    assert note, out
    floor, error = int(note[1]), int(note[2])
    assert 200 <= int(late[1:]) <= 200 + error and floor <= 30_000 // 10_000
    # A row is listed only when it is surely above every URL not kept: no URL of the tail is.
    assert [name for _, name in rows(out, "blocked paths")] == ["/early", "/late"]
    assert table(out, "blocked agents") == {"TailBot": 30_000, "LateBot": 200, "EarlyBot": 300}
    host = breakdown(out, "host")["t.example"]
    assert host["blocks"] == 30_500
    assert [name for name, _ in host["paths"]] == ["/early", "/late"]


def hostile(n: int) -> list[bytes]:
    """n block records, each with a host, agent, URL, rule and reason of its own."""
    return [json.dumps(record(f"Bot{i}", f"http://h{i}.example/p/{i}?q={i}")
                       | {"reason": f"r{i % 5000}", "rule": f"Disallow: /p/{i}",
                          "status": 400 + i % 5000}).encode() + b"\n"
            for i in range(n)]


def retained(lines: list[bytes], bounds: Bounds) -> tuple[int, Any]:
    """The memory a summary of these lines holds once read, and the summary."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        summary = read([("log", io.BytesIO(b"".join(lines)))], bounds=bounds)
        return tracemalloc.get_traced_memory()[0] - before, summary
    finally:
        tracemalloc.stop()


def test_memory_stays_bounded_whatever_the_log() -> None:
    bounds = Bounds(keys=500, broken_down=20, each=10)
    small_lines, big_lines = hostile(2_000), hostile(20_000)
    small, _ = retained(small_lines, bounds)
    big, summary = retained(big_lines, bounds)
    del small_lines, big_lines
    # Ten times the distinct keys, the same memory: nothing grows with the log.
    assert big < small * 1.3, (small, big)
    assert summary.blocks == 20_000
    for counts in (summary.hosts, summary.agents, summary.paths, summary.urls, summary.rules,
                   summary.reasons, summary.statuses):
        assert len(counts) == 500 and not counts.exact
    for broken_down in (summary.by_host, summary.by_agent):
        assert len(broken_down) == len(broken_down.details) == 20
        assert all(len(d.paths) <= 10 and len(d.urls or ()) <= 10
                   for d in broken_down.details.values())


# -- the counter --------------------------------------------------------------------------------


def test_top_counts_is_a_counter_while_within_capacity() -> None:
    counts: TopCounts[str] = TopCounts(3)
    for key in "abacab":
        counts.add(key)
    assert counts == {"a": 3, "b": 2, "c": 1} and counts.exact and counts.floor == 0
    assert [(row.key, row.count, row.error) for row in counts.top(2)] == [("a", 3, 0),
                                                                         ("b", 2, 0)]
    counts.add("d")  # a fourth key: "c", the smallest, makes room, and "d" inherits its 1
    assert counts == {"a": 3, "b": 2, "d": 2} and not counts.exact
    assert counts.error("d") == 1 and counts.floor == 2
    # "d" (seen 1 to 2 times) is not surely above a key not kept ("c", at most 2), "a" is.
    assert [row.key for row in counts.top()] == ["a"]


@settings(max_examples=300, deadline=None)
@given(stream=st.lists(st.integers(0, 40), max_size=400), capacity=st.integers(1, 12))
def test_top_counts_bounds_every_count(stream: list[int], capacity: int) -> None:
    counts: TopCounts[int] = TopCounts(capacity)
    for key in stream:
        counts.add(key)
    true = Counter(stream)
    assert len(counts) == min(capacity, len(true))
    assert sum(counts.values()) == counts.total == len(stream)
    if len(true) <= capacity:
        assert counts == true and counts.exact
    for key, count in counts.items():
        assert count - counts.error(key) <= true[key] <= count
    floor = counts.floor
    assert all(true[key] <= floor for key in true if key not in counts)
    assert floor <= len(stream) // capacity
    assert all(row.count - row.error > floor for row in counts.top())


def test_a_breakdown_drops_the_detail_of_a_key_it_drops() -> None:
    hosts = Breakdown(capacity=2, each=5, urls=False)
    hosts.count("a").paths.add("/x")
    hosts.count("a").paths.add("/x")
    hosts.count("b").paths.add("/y")
    hosts.count("c").paths.add("/z")  # "b" had the smallest count
    assert set(hosts.details) == set(hosts) == {"a", "c"}
    assert hosts.details["a"].paths == {"/x": 2} and hosts.details["c"].paths == {"/z": 1}
    assert hosts.error("c") == 1  # what came before it is not in its detail: said so


def test_only_matches_agents_in_any_case_and_hosts_on_any_port() -> None:
    rec = record("MyBot", "http://b.example:8080/x")
    assert Only(agent="mybot").wants(rec) and not Only(agent="OtherBot").wants(rec)
    assert Only(host="b.example").wants(rec) and Only(host="b.example:8080").wants(rec)
    assert not Only(host="b.example:80").wants(rec) and not Only(host="b.exam").wants(rec)
    v6 = record("MyBot", "http://[::1]:8080/x")
    assert Only(host="[::1]").wants(v6) and not Only(host="[::2]").wants(v6)
    with pytest.raises(ValueError, match="--host wants a host"):
        Only(host="a.example/path")


# -- the page -----------------------------------------------------------------------------------


def html_rows(page: str, table_id: str) -> list[tuple[str, int]]:
    body = page.split(f'<table id="{table_id}">', 1)[1].split("</table>", 1)[0]
    found = re.findall(r'<td class="n[^"]*"[^>]*>~?([\d,]+)</td><td class="share"[^>]*>[^<]*'
                       r'</td><td class="name">(?:<i [^>]*></i>)?([^<]*)</td>', body)
    return [(unescape(name), int(count.replace(",", ""))) for count, name in found]


def test_the_page_has_the_same_tables(tmp_path: Path) -> None:
    log = write(tmp_path / "audit.jsonl", known())
    out = tmp_path / "report.html"
    assert run("report", str(log), "--breakdown", "3x6", "--html", str(out)).returncode == 0
    page = out.read_text()
    assert html_rows(page, "table-paths") == KNOWN_PATHS
    assert html_rows(page, "table-urls") == KNOWN_URLS
    for kind, expected in (("agent", PER_AGENT), ("host", PER_HOST)):
        for rank, (name, numbers) in enumerate(expected.items(), start=1):
            assert f'id="{kind}-{rank}" data-name="{name}"' in page
            assert html_rows(page, f"{kind}-{rank}-paths") == numbers["paths"]
            if kind == "agent":
                assert html_rows(page, f"{kind}-{rank}-urls") == numbers["URLs"]
            else:  # a host's URLs would mostly repeat its paths
                assert f'id="{kind}-{rank}-urls"' not in page
    assert 'id="total-urls-blocked"><span class="num">9</span>' in page


def test_the_page_says_which_counts_are_estimates(tmp_path: Path) -> None:
    lines = [json.dumps(record("TailBot", f"http://t.example/{n}")).encode() + b"\n"
             for n in range(50)]
    lines[49:49] = [json.dumps(record("TailBot", "http://t.example/hot")).encode() + b"\n"] * 9
    summary = read([("log", io.BytesIO(b"".join(lines)))],
                   bounds=Bounds(keys=10, broken_down=5, each=10))
    page = render_html(summary)
    assert 'id="total-urls-blocked"><span class="num">10+</span>' in page
    assert re.search(r'<td class="n est" title="an estimate: at most \d+ too high">~\d+</td>'
                     r'<td class="share"[^>]*>[^<]*</td><td class="name">http://t.example/hot<',
                     page)
    assert "Over 10 distinct URLs, so the heaviest are kept" in page


def test_report_html_is_one_self_contained_page(tmp_path: Path) -> None:
    log = audit_sample.write(tmp_path / "audit.jsonl")
    out = tmp_path / "report.html"
    done = run("report", str(log), "--html", str(out))
    assert done.returncode == 0 and f"html report: {out}" in done.stdout
    page = out.read_text()
    assert page.count("<svg") == 1 and 'id="hosts-chart"' in page
    assert not re.search(r"""\b(src|href)\s*=|<script|<link|@import|url\(""", page, re.I)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "max-width: 1000px" not in page and "grid-template-columns" in page


def test_report_escapes_what_bots_sent(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    records = audit_sample.records()
    records[0]["url"] = "http://a.example/<script>alert(1)</script>"
    records[0]["agent"] = "<img src=x onerror=alert(1)>"
    records[1]["agent"] = 'x" onmouseover="alert(1)'
    records[2]["url"] = "http://a.example/a?<b>=&amp;"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "report.html"
    assert run("report", str(log), "--html", str(out)).returncode == 0
    page = out.read_text()
    assert "<img" not in page and "<script" not in page and "<b>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "/&lt;script&gt;alert(1)&lt;/script&gt;" in page  # as a path and in URLs
    assert 'data-name="x&quot; onmouseover=&quot;alert(1)"' in page
    assert 'onmouseover="' not in page


def test_bots_named_by_their_user_agent_are_told_apart(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    records = [{**record("*", f"http://a.example/{n}"), "user_agent": agent}
               for n, agent in enumerate(["CrawlerX/1.0", "CrawlerX/1.1", "python-requests/2"])]
    records += [record("*", "http://a.example/d", event="delay", reason="crawl-delay")]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = run("report", str(log))
    assert table(done.stdout, "blocked agents") == {"*": 3}
    assert table(done.stdout, "blocked User-Agents") == {
        "CrawlerX/1.0": 1, "CrawlerX/1.1": 1, "python-requests/2": 1}
    assert table(done.stdout, "delayed hosts") == {"a.example": 1}
    only = run("report", str(log), "--user-agent", "crawlerx")
    assert "blocks: 2 " in only.stdout
    assert "only:      User-Agent with 'crawlerx'" in only.stdout
    # Asked by a token no record has: the agents there are, and how to tell the others apart.
    missing = run("report", str(log), "--agent", "CrawlerX")
    assert missing.returncode == 2
    assert "agents in the log: *" in missing.stderr and "--user-agent" in missing.stderr


def test_one_block_is_one_block(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    log.write_text(json.dumps(record("SoloBot", "http://a.example/x")) + "\n")
    done = run("report", str(log))
    assert "agent SoloBot: 1 block\n" in done.stdout


def test_the_terminal_report_shows_control_characters_escaped(tmp_path: Path) -> None:
    # A bot's path that clears the screen and retitles the window, one that forges a row, a
    # site's rule that rings the bell, an agent name with a bidi override.
    log = tmp_path / "audit.jsonl"
    records = [record("Bot\u202e", "http://a.example/\x1b[2J\x1b]0;owned\x07x"),
               record("Bot", "http://a.example/a\r\n     99  50.0%  forged"),
               {**record("Bot", "http://a.example/b"), "rule": "Disallow: /b\x07"},
               record("Bot", "http://a.example/c", event="withheld", reason="usage-preference")]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = run("report", str(log))
    assert done.returncode == 0
    out = done.stdout
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202e]", out), repr(out)
    assert "/\\x1b[2J\\x1b]0;owned\\x07x" in out
    assert "/a\\x0d\\x0a     99  50.0%  forged" in out  # on its own row, not a row of its own
    assert "Disallow: /b\\x07" in out and "Bot\\u202e" in out
    assert "blocks: 4" in out  # an answer withheld is a refusal too


# -- as before: the totals, the timeline, periods, several logs, progress, errors ----------------


def test_report_tables_show_the_numbers_of_a_known_log(tmp_path: Path) -> None:
    log = audit_sample.write(tmp_path / "audit.jsonl", garbage=True)
    done = run("report", str(log))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert (f"records:   {audit_sample.RECORDS}   blocks: {audit_sample.BLOCKS} "
            f"(would-block: {audit_sample.WOULD_BLOCK})   delays: {audit_sample.DELAYS} "
            "(4.0 s in all)") in out
    assert f"skipped:   1 line that is not an audit record (first at {log}:4)" in out
    assert table(out, "blocked hosts") == audit_sample.HOSTS
    assert table(out, "blocked agents") == audit_sample.AGENTS
    assert table(out, "reasons") == audit_sample.REASONS
    assert table(out, "statuses answered") == {str(k): v for k, v in audit_sample.STATUSES.items()}
    assert table(out, "deciding rules") == {audit_sample.RULE: 7}
    timeline = out.split("blocks over time (per 1 hour, UTC)\n", 1)[1].splitlines()
    assert len(timeline) == 24
    counts = {line[2:18]: int(line[18:28]) for line in timeline}
    assert {k: v for k, v in counts.items() if v} == audit_sample.TIMELINE
    assert done.stderr == ""  # no progress bar when stderr is not a terminal


def test_report_since_and_until(tmp_path: Path) -> None:
    log = audit_sample.write(tmp_path / "audit.jsonl")
    done = run("report", str(log), "--since", "2026-03-01T10:30", "--until", "2026-03-02")
    assert done.returncode == 0
    assert table(done.stdout, "blocked hosts") == {"b.example:8080": 3, "a.example": 2}
    assert "records:   9 " in done.stdout
    nothing = run("report", str(log), "--since", "1h")  # the sample is from the past
    assert nothing.returncode == 2 and "no audit records in" in nothing.stderr


def test_report_of_several_logs_adds_them_up(tmp_path: Path) -> None:
    one = audit_sample.write(tmp_path / "audit.jsonl.1")
    two = audit_sample.write(tmp_path / "audit.jsonl")
    done = run("report", str(one), str(two), "--top", "1")
    assert table(done.stdout, "blocked hosts") == {"a.example": 14}


def test_report_progress_bar_on_request(tmp_path: Path) -> None:
    log = audit_sample.write(tmp_path / "audit.jsonl")
    done = run("report", str(log), "--progress", "always")
    assert done.returncode == 0
    assert done.stderr.rstrip().endswith("100% (0.0 of 0.0 MB)")
    assert "reading ##############################" in done.stderr


@pytest.mark.parametrize("args", [
    ["report", "/nonexistent/audit.jsonl"],
    ["report", "AUDIT", "--since", "yesterday-ish"],
    ["report", "AUDIT", "--top", "0"],
    ["report", "AUDIT", "--html", "/nonexistent/dir/out.html"],
])
def test_report_errors_exit_2(args: list[str], tmp_path: Path) -> None:
    log = audit_sample.write(tmp_path / "audit.jsonl")
    done = run(*[str(log) if a == "AUDIT" else a for a in args])
    assert done.returncode == 2
    assert done.stderr.strip()


def test_usage_refusals_by_purpose_and_by_host(tmp_path: Path) -> None:
    usage = [dict(record("TrainBot", "http://a.example/x", reason="usage-preference"),
                  purposes="train-ai") for _ in range(3)]
    usage += [dict(record("Both", "http://b.example/y", reason="usage-preference"),
                   purposes="ai-input, train-ai")]
    log = write(tmp_path / "audit.jsonl", known() + usage)
    done = run("report", str(log))
    assert done.returncode == 0, done.stderr
    assert table(done.stdout, "usage refusals by purpose") == {"train-ai": 4, "ai-input": 1}
    assert table(done.stdout, "usage refusals by purpose and host") == {
        "train-ai  a.example": 3, "ai-input  b.example": 1, "train-ai  b.example": 1}
    # Without usage refusals, no such table.
    plain = run("report", str(write(tmp_path / "plain.jsonl", known()))).stdout
    assert "usage refusals" not in plain
    page = tmp_path / "report.html"
    assert run("report", str(log), "--html", str(page)).returncode == 0
    assert 'id="table-purposes"' in page.read_text() and 'id="table-signals"' in page.read_text()


def test_usage_refusals_by_signal(tmp_path: Path) -> None:
    stated = [("Content-Usage: train-ai=n", 4), ("Content-Usage: train-ai=n", None),
              ("Content-Signal: ai-train=no", 7), ("tdm-reservation: 1", None),
              ('<meta name="tdm-reservation" content="1">', None), ("X-Robots-Tag: noai", None),
              ("X-Robots-Tag: noimageai", None), ('<meta name="robots" content="noai">', None),
              (None, None)]
    usage = [dict(record("TrainBot", "http://a.example/x", reason="usage-preference"),
                  purposes="train-ai", rule=rule, line=line) for rule, line in stated]
    done = run("report", str(write(tmp_path / "audit.jsonl", known() + usage)))
    assert done.returncode == 0, done.stderr
    assert table(done.stdout, "refusals by signal (usage, licences, prices)") == {
        "robots.txt Content-Usage": 1, "Content-Usage header": 1,
        "robots.txt Content-Signal": 1, "tdm-reservation header": 1,
        "tdm-reservation META": 1, "X-Robots-Tag noai": 2, "robots META noai": 1,
        "(nothing stated: robots_usage_unknown=refuse)": 1}


def test_licence_and_price_refusals_by_signal_and_purpose(tmp_path: Path) -> None:
    refused = [("license-prohibited", 4), ("license-prohibited", None),
               ("license-unavailable", 4), ("price-refused", None),
               ("budget-exhausted", None), ("x402-unsupported", None)]
    records = [dict(record("TrainBot", "http://a.example/x", reason=reason),
                    purposes="train-ai", line=line) for reason, line in refused]
    done = run("report", str(write(tmp_path / "audit.jsonl", known() + records)))
    assert done.returncode == 0, done.stderr
    assert table(done.stdout, "refusals by signal (usage, licences, prices)") == {
        "RSL licence (robots.txt License)": 2, "RSL licence (Link header or <link>)": 1,
        "402 crawler-price": 2, "402 x402": 1}
    # Licence refusals are for a purpose; prices are not.
    assert table(done.stdout, "usage refusals by purpose") == {"train-ai": 3}
    # Prices alone, with no purpose declared, still show by signal.
    prices = [record("Bot", "http://a.example/x", reason="price-refused")]
    alone = run("report", str(write(tmp_path / "prices.jsonl", known() + prices))).stdout
    assert table(alone, "refusals by signal (usage, licences, prices)") == \
        {"402 crawler-price": 1}



# -- money -------------------------------------------------------------------------------------


def payment(bot: str | None, url: str, price: str | None, *, day: int = 1, hour: int = 10,
            written: str | None = None, overcharged: bool = False) -> dict[str, Any]:
    """A payment record as the proxy writes it: agent * (bots named by their User-Agent)."""
    paid = {**record("*", url, event="payment", reason="crawler-charged"), "status": None,
            "ts": f"2026-03-{day:02d}T{hour:02d}:00:00.000+00:00", "price": price,
            "charged_as_written": written if written is not None else price,
            "origin_status": 200, "error": None}
    if bot is not None:  # a log written before payment records named their bot has none
        paid["bot"] = bot
    if overcharged:
        paid["error"] = f"overcharged: it charged {written!r}, more than agreed"
    return paid


def spending() -> list[dict[str, Any]]:
    """Worked out by hand below: two bots, three sites, two days, two currencies."""
    return [
        payment("RedBot", "https://a.example/paid/1", "USD 0.01"),
        payment("RedBot", "https://a.example/paid/2", "USD 0.01", hour=23),
        payment("RedBot", "https://b.example/paid/1", "USD 5.00", day=2, written="USD 5.00",
                overcharged=True),
        payment("BlueBot", "https://b.example/paid/2", "EUR 0.50", day=2),
        # In another currency than the USD 0.02 agreed: the price agreed stays counted.
        payment("BlueBot", "https://c.example/paid/1", "USD 0.02", day=2, written="EUR 5.00",
                overcharged=True),
        payment(None, "https://c.example/paid/2", "USD 0.03", day=2),  # its agent: *
        # Nothing charged (no crawler-charged), or no answer: nothing spent.
        payment("RedBot", "https://a.example/paid/3", None, day=2),
        {**record("*", "https://b.example/paid/3", event="withheld", reason="overcharged",
                  status=402), "bot": "RedBot", "price": "USD 0.01"},
    ]


def money_rows(output: str, title: str) -> list[tuple[str, int, str]]:
    """The rows of one table of the money spent: (amount, payments, name)."""
    section = output.split("\nmoney spent (", 1)[1].split(f"\n  {title}\n", 1)[1]
    found = []
    for line in section.splitlines():
        if not line.startswith("    ") or line.strip().startswith("("):
            break
        currency, amount, times, _noun, name = line.split(None, 4)
        found.append((f"{currency} {amount}", int(times.replace(",", "")), name))
    return found


def test_money_spent_per_bot_site_and_day_with_its_currency(tmp_path: Path) -> None:
    log = write(tmp_path / "audit.jsonl", known() + spending())
    done = run("report", str(log), "--html", str(tmp_path / "report.html"))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "spent:     EUR 0.50, USD 5.07 in 6 payments; overcharges: 2\n" in out
    assert money_rows(out, "per bot") == [
        ("EUR 0.50", 1, "BlueBot"),
        ("USD 5.02", 3, "RedBot"), ("USD 0.03", 1, "*"), ("USD 0.02", 1, "BlueBot")]
    assert money_rows(out, "per site") == [
        ("EUR 0.50", 1, "b.example"),
        ("USD 5.00", 1, "b.example"), ("USD 0.05", 2, "c.example"),
        ("USD 0.02", 2, "a.example")]
    assert money_rows(out, "per day (UTC)") == [
        ("USD 0.02", 2, "2026-03-01"), ("EUR 0.50", 1, "2026-03-02"),
        ("USD 5.05", 3, "2026-03-02")]
    assert rows(out, "overcharges (each such site is paid no more until "
                     "robots_forgive_overcharge names it; what it wrote is in the audit "
                     "record's charged_as_written)") == [
        ("1", "b.example  RedBot  charged 'USD 5.00'"),
        ("1", "c.example  BlueBot  charged 'EUR 5.00'")]
    # The refusal for an overcharge is a refusal like any other.
    assert table(out, "reasons")["overcharged"] == 1
    # The page has the same numbers.
    page = (tmp_path / "report.html").read_text()
    spent = re.search(r'<table id="table-spent-bots">(.*?)</table>', page, re.S)
    assert spent is not None
    assert re.findall(r'<td class="money">([^<]+)</td><td class="n times">(\d+)</td>'
                      r'<td class="name">([^<]+)</td>', unescape(spent[1])) == [
        ("EUR 0.50", "1", "BlueBot"), ("USD 5.02", "3", "RedBot"), ("USD 0.03", "1", "*"),
        ("USD 0.02", "1", "BlueBot")]
    assert 'id="table-spent-sites"' in page and 'id="table-spent-days"' in page
    assert "c.example  BlueBot  charged &#x27;EUR 5.00&#x27;" in page
    assert "EUR 0.50, USD 5.07 in 6 payments" in page


def test_money_spent_by_one_bot_named_by_its_user_agent(tmp_path: Path) -> None:
    log = write(tmp_path / "audit.jsonl", known() + spending())
    done = run("report", str(log), "--agent", "redbot")
    assert done.returncode == 0, done.stderr
    assert "spent:     USD 5.02 in 3 payments; overcharges: 1\n" in done.stdout
    assert money_rows(done.stdout, "per bot") == [("USD 5.02", 3, "RedBot")]


def test_a_log_without_payments_shows_no_money() -> None:
    summary = read([("known", io.BytesIO(b"".join(json.dumps(r).encode() + b"\n"
                                                   for r in known())))])
    assert summary.payments == 0 and not summary.overcharges
    assert "Money spent" not in render_html(summary)


def test_sums_stay_exact_past_their_capacity() -> None:
    sums = Sums(2)
    for name, currency, amount in [("a", "USD", 10), ("b", "USD", 20), ("a", "USD", 1),
                                   ("c", "USD", 5), ("d", "EUR", 7), ("a", "EUR", 3),
                                   ("c", "USD", 5)]:
        sums.add(name, currency, amount)
    assert sums.totals() == {"EUR": 10, "USD": 41}
    assert sums.merged == 4
    assert sums.top() == [Sum(OTHERS, "EUR", 10, 2), Sum("b", "USD", 20, 1),
                          Sum("a", "USD", 11, 2), Sum(OTHERS, "USD", 10, 2)]
    days = Sums(10)
    for day in ("2026-03-03", "2026-03-01", "2026-03-02"):
        days.add(day, "USD", 1)
    assert [row.name for row in days.last(2)] == ["2026-03-02", "2026-03-03"]


def test_rotated_logs_compressed_by_logrotate_are_read_as_they_are(tmp_path: Path) -> None:
    plain = write(tmp_path / "audit.jsonl", known())
    packed = tmp_path / "audit.jsonl.2.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    done = run("report", str(plain), str(packed))
    assert done.returncode == 0, done.stderr
    assert "blocks: 48 (would-block: 14)" in done.stdout  # the known log twice
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed.read_bytes()[:-20])  # a rotation still being written
    failed = run("report", str(cut))
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert "cannot read a compressed log" in failed.stderr
