"""End to end, the audit log as evidence: a real `mitmdump -s addon.py` with a signing key made by
`robotsgate keygen` writes a chained, signed log across a logrotate-style rotation and its own
shutdown; `robotsgate verify`, holding only the published public key, vouches for all of it, and
names the line of each edit made afterwards."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .clients import httpx_call
from .machine import clean_env
from .origins import Origin, Reply, Seen
from .proxy import Proxy, run_mitmdump

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


# -- no secret is ever printed ------------------------------------------------------------------

SECRET = "hunter2-e2e-Zq"


@pytest.mark.parametrize(("entry", "said"), [
    (f"https://licenses.example/olp={SECRET}", "entry 2 (licence server licenses.example) is "
                                               "not SERVER=CLIENT_ID:SECRET"),
    (f"https://licenses.example/olp:newsbot:{SECRET}", "entry 2 (licence server "
                                                       "licenses.example) is not SERVER="),
    (f"newsbot:{SECRET}", 'entry 2 (no licence server URL before "=") is not SERVER='),
    (f"https://newsbot:{SECRET}@licenses.example=newsbot:{SECRET}",
     "entry 2 (licence server licenses.example): the licence server's URL must not hold"),
    (f"https://licenses.example=newsbot:@{SECRET}", "entry 2 (licence server "
                                                    "licenses.example): cannot read the secret"),
])
def test_a_malformed_credentials_entry_stops_the_start_naming_it_never_its_secret(
        entry: str, said: str, tmp_path: Path) -> None:
    code, output = run_mitmdump(tmp_path, {
        "robots_license_credentials": ["https://good.example=ok:fine", entry],
        "robots_audit_log": tmp_path / "audit.jsonl"})
    assert code not in (0, None), output
    assert f"robots_license_credentials: {said}" in output, output
    assert SECRET not in output and "newsbot" not in output, output
    audit = tmp_path / "audit.jsonl"
    assert not audit.exists() or SECRET not in audit.read_text()


def test_the_secret_is_in_no_message_log_or_record_of_a_running_proxy(
        tmp_path: Path, https_origin: Callable[..., Origin],
        proxy: Callable[..., Proxy]) -> None:
    """A licence server that refuses the client and repeats, in its error, the credentials it
    was sent: neither the bot's answer, nor the proxy's output, nor the audit log holds them."""
    server = https_origin()

    def refuse(seen: Seen) -> Reply:
        said = base64.b64decode(seen.headers["authorization"].split()[1]).decode()
        return Reply(401, json.dumps({"error": f"invalid_client: {said}"}).encode(),
                     {"Content-Type": "application/json"})

    server.answer("/olp/token", refuse)
    site = https_origin()
    site.set_robots(f"User-agent: *\nAllow: /\nLicense: {site.url('/license.xml')}\n")
    site.route("/license.xml", body=(
        f'<rsl xmlns="https://rslstandard.org/rsl"><content url="/" '
        f'server="{server.url("/olp")}"><license><permits type="usage">search</permits>'
        f'</license></content></rsl>').encode(), headers={"Content-Type": "application/rsl+xml"})
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    gate = proxy(robots_purpose="search", trust_test_ca=True, robots_license_credentials=[
        f"{server.url('/olp')}=newsbot:@{secret_file}",
        f"https://other.example=bot2:{SECRET}"])
    refused = httpx_call(gate, site.url("/a"))
    assert refused.status == 403 and refused.header("X-Robotsgate-Reason") == "license-required"
    assert "invalid_client" in refused.text and "[secret]" in refused.text
    assert server.count("/olp/token") == 1
    gate.stop()
    said = refused.text + json.dumps(refused.headers) + gate.output() + \
        gate.audit_path.read_text()
    assert SECRET not in said
    [record] = [r for r in gate.audit() if r["reason"] == "license-required"]
    assert "[secret]" in record["error"]
