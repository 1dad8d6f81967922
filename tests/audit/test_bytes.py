"""The audit never loses a record, whatever bytes a request carried.

mitmproxy decodes header values with "surrogateescape": a User-Agent byte that is not UTF-8 (0xFF)
reaches robotsgate as a lone surrogate ('\\udcff'), which a strict UTF-8 encode refuses.
"""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mitmproxy.test import tflow
from support.driver import driven

from robotsgate.audit.log import AuditLog
from robotsgate.audit.records import AuditRecord
from robotsgate.config.assemble import Clocks
from robotsgate.report.html import render_html
from robotsgate.report.summary import read
from robotsgate.report.text import render_text

ROBOTSGATE = Path(sys.executable).parent / "robotsgate"
BASE = AuditRecord(
    ts="2026-03-01T10:00:00.000+00:00", event="block", reason="disallowed", status=403,
    agent="MyBot", user_agent="MyBot/1.0", client="127.0.0.1:50000", method="GET",
    url="http://a.example/private/x", robots_url="http://a.example/robots.txt",
    robots_status=200, robots_fetched_at="2026-03-01T09:59:00.000+00:00",
    robots_sha256="0" * 64, group="MyBot", rule="Disallow: /private", line=3, delay_ms=0,
    mode="enforce")
# What mitmproxy makes of non-UTF-8 bytes, and of a broken UTF-8 sequence (E2 82 then 0xFF).
ODD = {"user_agent": "MyBot/1.0 \udcff\udcfe", "url": "http://a.example/private/\udce2\udc82",
       "rule": "Disallow: /priv\udcffate", "agent": "My\udcc3Bot"}


def lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return data.splitlines()


def write(path: Path, *records: AuditRecord) -> None:
    log = AuditLog(str(path))
    try:
        for record in records:
            log.write(record)
    finally:
        log.close()


@pytest.mark.parametrize("name", sorted(ODD))
def test_a_lone_surrogate_is_written_as_one_valid_json_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / "audit.jsonl"
    record = replace(BASE, **{name: ODD[name]})
    write(path, record, BASE)
    first, second = lines(path)
    first.decode("utf-8")  # strict: valid UTF-8
    assert b"\\udc" in first  # written as a JSON escape, readable as text
    assert json.loads(first)[name] == ODD[name]  # and read back as exactly what was seen
    assert json.loads(second) == json.loads(BASE.to_line())


def test_every_field_odd_at_once_still_makes_one_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write(path, replace(BASE, **ODD, group="\udcff", robots_url="http://\udcff/robots.txt",
                        page="http://a.example/\ud800", client="\udfff"))
    (only,) = lines(path)
    assert json.loads(only)["group"] == "\udcff"


def test_the_report_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write(path, replace(BASE, **ODD), replace(BASE, **ODD), BASE)
    with path.open("rb") as stream:
        summary = read([(str(path), stream)])
    assert summary.records == 3 and summary.blocks == 3 and summary.skipped == 0
    # Printed as the escape, on a UTF-8 terminal and in the UTF-8 page.
    assert summary.agents == {"My\\udcc3Bot": 2, "MyBot": 1}
    text = render_text(summary)
    page = render_html(summary)
    text.encode("utf-8")
    page.encode("utf-8")
    assert "Disallow: /priv\\udcffate" in text and "My\\udcc3Bot" in page


def test_robotsgate_report_command_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    write(path, replace(BASE, **ODD), BASE)
    html = tmp_path / "report.html"
    done = subprocess.run([str(ROBOTSGATE), "report", str(path), "--html", str(html)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "records:   2 " in done.stdout and "skipped" not in done.stdout
    assert "My\\udcc3Bot" in done.stdout
    assert "Disallow: /priv\\udcffate" in html.read_text(encoding="utf-8")


# Any code point, surrogates often: hypothesis leaves them out of characters() and text() unless
# asked for category Cs alone, and text() over a mixed alphabet all but never picks them.
ANY_TEXT = st.lists(st.one_of(st.characters(), st.characters(categories=["Cs"]))).map("".join)


@settings(max_examples=300, deadline=None)
@given(user_agent=ANY_TEXT, url=ANY_TEXT)
@example(user_agent="Bot/1.0 \udcff", url="http://a.example/\ud83d\ude00\ud800")
def test_any_string_makes_one_json_line(tmp_path_factory: pytest.TempPathFactory,
                                        user_agent: str, url: str) -> None:
    path = tmp_path_factory.mktemp("audit") / "audit.jsonl"
    write(path, replace(BASE, user_agent=user_agent, url=url))
    (line,) = lines(path)
    line.decode("utf-8")
    record = json.loads(line)
    # JSON strings are UTF-16: a high surrogate followed by a low one reads back as the pair.
    assert record["user_agent"] == utf16(user_agent)
    assert record["url"] == utf16(url)


def utf16(text: str) -> str:
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


# -- through the addon ----------------------------------------------------------------------------


async def test_a_block_for_a_user_agent_with_a_non_utf8_byte_is_recorded(tmp_path: Path) -> None:
    robots = httpx.Response(200, content=b"User-agent: *\nDisallow: /private\n")
    audit = tmp_path / "audit.jsonl"
    with driven(clocks=Clocks(clock=lambda: 1_700_000_000.0),
                transport=httpx.MockTransport(lambda request: robots),
                robots_audit_log=str(audit)) as addon:
        flow = tflow.tflow()
        flow.request.url = "http://example.com/private/x"
        flow.request.headers["User-Agent"] = "MyBot/1.0 \udcff"  # sent as the byte 0xFF
        assert flow.request.headers.fields[-1][1].endswith(b"\xff")
        await addon.request(flow)
    assert flow.response is not None and flow.response.status_code == 403
    assert flow.response.headers["X-Robotsgate-Reason"] == "disallowed"
    (line,) = lines(audit)
    record = json.loads(line)
    assert (record["reason"], record["user_agent"]) == ("disallowed", "MyBot/1.0 \udcff")
