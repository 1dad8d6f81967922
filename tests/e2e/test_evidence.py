"""End to end, the audit log as evidence: a real `mitmdump -s addon.py` with a signing key made by
`robotsgate keygen` writes a chained, signed log across a logrotate-style rotation and its own
shutdown; `robotsgate verify`, holding only the published public key, vouches for all of it, and
names the line of each edit made afterwards."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .clients import httpx_call
from .machine import clean_env
from .origins import Origin
from .proxy import Proxy

ROBOTSGATE = Path(sys.executable).parent / "robotsgate"
ROBOTS = "User-agent: *\nDisallow: /private\n"


def robotsgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROBOTSGATE), *args], capture_output=True, text=True, timeout=60,
                          env=clean_env())


def wait_for(proxy: Proxy, text: str) -> None:
    deadline = time.monotonic() + 10
    while text not in proxy.output():
        assert time.monotonic() < deadline, proxy.output()
        time.sleep(0.05)


def test_a_signed_log_verifies_and_every_edit_is_named(
        tmp_path: Path, origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    key, public = tmp_path / "signing.pem", tmp_path / "public.json"
    made = robotsgate("keygen", str(key))
    assert made.returncode == 0, made.stderr
    public.write_text(made.stdout)
    keyid = json.loads(made.stdout)["keys"][0]["kid"]

    site = origin(robots=ROBOTS)
    gate = proxy(robots_signing_key=str(key), robots_audit_checkpoint=3)
    wait_for(gate, "SIGHUP reopens the audit log")
    assert f"checkpoints signed by key {keyid}" in gate.output()
    for n in range(5):
        assert httpx_call(gate, site.url(f"/private/{n}")).status == 403
    gate.wait_audit(6)  # 5 records and the checkpoint after the third
    rotated = gate.audit_path.with_name("audit.jsonl.1")
    gate.audit_path.rename(rotated)
    assert gate.process is not None
    gate.process.send_signal(signal.SIGHUP)  # as logrotate does: the old file is closed
    wait_for(gate, "reopened")
    for n in range(5, 9):
        assert httpx_call(gate, site.url(f"/private/{n}")).status == 403
    gate.stop()  # its last checkpoint covers what it wrote last

    old, new = [json.loads(line) for line in rotated.read_text().splitlines()], \
        [json.loads(line) for line in gate.audit_path.read_text().splitlines()]
    assert [r["event"] for r in old] == ["block"] * 3 + ["checkpoint"] + ["block"] * 2 + \
        ["checkpoint"]
    assert [r["event"] for r in new] == ["block"] * 3 + ["checkpoint"] + ["block"] + \
        ["checkpoint"]
    assert [r["seq"] for r in old + new] == list(range(1, 14))
    files = [str(rotated), str(gate.audit_path)]
    done = robotsgate("verify", *files, "--key", str(public))
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
    assert "verified: 13 line(s), 13 chained, 13 vouched for" in done.stderr

    lines = gate.audit_path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"/private/6", b"/private/7")
    gate.audit_path.write_bytes(b"".join(lines))
    done = robotsgate("verify", *files, "--key", str(public))
    assert done.returncode == 1
    assert done.stdout == f"{gate.audit_path}:2: changed: record 9 of proxy {new[0]['proxy']} " \
                          f"is not the one the next names\n"

    lines = rotated.read_bytes().splitlines(keepends=True)
    rotated.write_bytes(b"".join(lines[:1] + lines[2:]))  # record 2 gone
    done = robotsgate("verify", *files, "--key", str(public))
    assert done.returncode == 1
    assert f"{rotated}:2: removed: record 2 of proxy" in done.stdout
