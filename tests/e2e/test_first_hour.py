"""What a person meets in the first hour, through the real proxy and scripts: a bot that is
asked for proxy credentials is told what to do, and scripts/serve.sh says what it is doing
while it sets itself up."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Callable
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
        answer = b""
        while b"\n\n" not in answer.replace(b"\r", b"") or not answer.endswith(b"\n"):
            more = raw.recv(65536)
            if not more:
                break
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
