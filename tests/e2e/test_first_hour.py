"""What a person meets in the first hour, through the real proxy, scripts and browser: a bot
that is asked for proxy credentials is told what to do, scripts/serve.sh says what it is doing
while it sets itself up, and the site's options table reads in a 1280 px window."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from html import unescape
from pathlib import Path

from .machine import REPO, clean_env, require_tool
from .origins import Origin
from .proxy import Proxy

ProxyFactory = Callable[..., Proxy]


def _curl(gate: Proxy, url: str, *args: str) -> tuple[str, str]:
    done = subprocess.run([require_tool("curl"), "-s", "-D", "-", "-x", gate.url, *args, url],
                          capture_output=True, text=True, timeout=30, env=clean_env())
    head, _, body = done.stdout.partition("\n\n")  # text mode: CRLF read as LF
    return head, body


def test_a_bot_without_credentials_is_told_how_to_give_them(
        origin: Callable[..., Origin], proxy: ProxyFactory) -> None:
    """mitmproxy's own 407 page said only "407 Proxy Authentication Required"."""
    site = origin(robots="User-agent: *\nDisallow: /private\n")
    gate = proxy(proxyauth="any")

    head, body = _curl(gate, site.url("/"))
    assert head.startswith("HTTP/1.1 407") and "proxy-authenticate: basic" in head.lower()
    assert "http://NAME:PASSWORD@PROXY-HOST:PORT" in body
    assert "the user name names the bot" in body and "HTTPS_PROXY" in body
    assert site.paths() == []  # never forwarded, robots.txt not even fetched

    # Once it does as told, it is the bot its user name names.
    head, _ = _curl(gate, site.url("/"), "--proxy-user", "MyBot:anything")
    assert head.startswith("HTTP/1.1 200")


def test_a_bot_whose_credentials_are_refused_is_told_so_and_no_secret_is_shown(
        origin: Callable[..., Origin], proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nDisallow: /private\n")
    gate = proxy(proxyauth="alice:s3cret-word")

    head, body = _curl(gate, site.url("/"), "--proxy-user", "alice:wrong")
    assert head.startswith("HTTP/1.1 407")
    assert "were not taken" in body and "Ask this proxy's operator" in body
    assert "s3cret-word" not in body and "alice" not in body

    # A CONNECT refused the same way is told the same (curl does not show it: read raw).
    host, port = site.url("/").split("/")[2].rsplit(":", 1)
    with socket.create_connection(("127.0.0.1", gate.port), timeout=10) as raw:
        raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        answer = raw.recv(65536)
        length = re.search(rb"content-length: (\d+)", answer, re.IGNORECASE)
        assert length, answer
        while len(answer.partition(b"\r\n\r\n")[2]) < int(length[1]):
            more = raw.recv(65536)
            assert more, answer
            answer += more
    assert answer.startswith(b"HTTP/1.1 407") and b"NAME:PASSWORD" in answer
    assert site.paths() == []


def test_serve_sh_says_what_it_does_while_it_sets_itself_up(tmp_path: Path) -> None:
    """The first scripts/serve.sh creates .venv and installs robotsgate (some 40 s) before the
    proxy says anything: it says so first. Run on a copy of the checkout's script beside a
    .venv that cannot be made (no python3.12 on PATH), so that nothing is installed."""
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    for name in ("serve.sh", "setup.sh"):
        shutil.copy(REPO / "scripts" / name, checkout / "scripts" / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "cat", "env", "uname", "id"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, bin_dir / tool)
    done = subprocess.run([str(checkout / "scripts" / "serve.sh")], cwd=checkout,
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": str(bin_dir), "HOME": str(tmp_path)})
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert said.splitlines()[0].startswith("serve.sh: setting up .venv"), said


# Measures the options table as laid out, for --dump-dom: whether the page scrolls sideways,
# how many lines each option's name takes, and the narrowest meaning column.
PROBE = """<script>
const table = document.querySelector('.md-typeset table');
const wrap = table.parentElement;
const rows = [...table.querySelectorAll('tbody tr')];
const found = {
  client: document.documentElement.clientWidth,
  scroll: document.documentElement.scrollWidth,
  table: table.getBoundingClientRect().width, room: wrap.clientWidth,
  names: rows.map(tr => [tr.cells[0].innerText,
                         tr.cells[0].querySelector('code').getClientRects().length]),
  defaults: rows.map(tr => [tr.cells[1].innerText, tr.cells[1].getClientRects().length,
                            (tr.cells[1].querySelector('code') || tr.cells[1])
                              .getClientRects().length]),
  meaning: Math.min(...rows.map(tr => tr.cells[2].getBoundingClientRect().width)),
};
const out = document.createElement('pre');
out.id = 'geometry';
out.textContent = JSON.stringify(found);
document.body.append(out);
</script>"""


def test_the_sites_options_table_reads_at_1280_px(tmp_path: Path) -> None:
    """Every option's name on one line (they were broken inside words: robots_agen|t), the
    table within the window, and a meaning column wide enough to read; a screenshot in
    artifacts/options-1280.png."""
    from robotsgate.config.options import OPTIONS

    from .test_tooling import ARTIFACTS, chromium

    site = tmp_path / "site"
    built = subprocess.run([str(Path(sys.executable).parent / "mkdocs"), "build", "--strict",
                            "--site-dir", str(site)], cwd=REPO, capture_output=True,
                           text=True, timeout=300, env=clean_env({"NO_MKDOCS_2_WARNING": "1"}))
    assert built.returncode == 0, built.stderr
    page = site / "operating" / "options" / "index.html"
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    done = chromium("--dump-dom", "--window-size=1280,1000", probe.as_uri())
    found = re.search(r'<pre id="geometry">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found, done.stderr
    at = json.loads(unescape(found[1]))

    assert at["scroll"] <= at["client"] and at["table"] <= at["room"] + 1, at
    assert [name for name, _ in at["names"]] == [spec.name for spec in OPTIONS]
    assert [name for name, lines in at["names"] if lines != 1] == []
    assert [value for value, _, lines in at["defaults"] if lines != 1] == []
    assert at["meaning"] >= 480, at["meaning"]
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "options-1280.png"
    shot.unlink(missing_ok=True)
    chromium(f"--screenshot={shot}", "--window-size=1280,2000", "--hide-scrollbars",
             page.as_uri())
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
