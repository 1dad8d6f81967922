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


# -- runs: two runs of the proxy write one chain --------------------------------------------------

def _chain_of(proxy: Proxy) -> str:
    wait_for(proxy, "SIGHUP reopens the audit log")
    [said] = [line for line in proxy.output().splitlines() if "chained as proxy " in line]
    return said.split("chained as proxy ", 1)[1].split(",", 1)[0]


def test_two_runs_write_one_chain_and_a_run_taken_out_or_a_checkpoint_pasted_is_named(
        tmp_path: Path, origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    key, public = tmp_path / "signing.pem", tmp_path / "public.json"
    made = robotsgate("keygen", str(key))
    assert made.returncode == 0, made.stderr
    public.write_text(made.stdout)
    site = origin(robots=ROBOTS)
    log = tmp_path / "logs" / "audit.jsonl"
    log.parent.mkdir()

    ids = []
    for first, count in ((0, 3), (3, 2)):  # two runs, one after the other, on one file
        gate = proxy(robots_signing_key=str(key), robots_audit_log=str(log))
        ids.append(_chain_of(gate))
        for n in range(first, first + count):
            assert httpx_call(gate, site.url(f"/private/{n}")).status == 403
        gate.stop()  # its last checkpoint
    assert ids[0] == ids[1], "the second run began a chain of its own"
    written = log.read_bytes()
    records = [json.loads(line) for line in written.splitlines()]
    assert [(r["event"], r["seq"], r.get("start")) for r in records] == [
        ("block", 1, "new"), ("block", 2, None), ("block", 3, None), ("checkpoint", 4, None),
        ("block", 5, "same-file"), ("block", 6, None), ("checkpoint", 7, None)]
    done = robotsgate("verify", str(log), "--key", str(public))
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
    covered = f"covered: 1 file(s) ({log}), 7 line(s), from {records[0]['ts']} to "
    assert covered in done.stderr
    assert ": 1 chain(s), 2 run(s), 2 checkpoint(s) (2 verified)" in done.stderr

    # Every line of the first run taken out, its checkpoint included.
    lines = written.splitlines(keepends=True)
    log.write_bytes(b"".join(lines[4:]))
    done = robotsgate("verify", str(log), "--key", str(public))
    assert done.returncode == 1
    assert done.stdout == (f"{log}:1: removed: records 1 to 4 of proxy {ids[0]}, before this "
                           f"line: this run of it began after record 4 in this file (a whole "
                           f"run, or more, was taken out)\n")

    # A genuine checkpoint of another proxy's run, signed by the same key, pasted in.
    other = proxy(robots_signing_key=str(key))
    assert httpx_call(other, site.url("/private/other")).status == 403
    other.stop()
    pasted = other.audit_path.read_bytes().splitlines(keepends=True)[-1]
    assert json.loads(pasted)["event"] == "checkpoint"
    log.write_bytes(b"".join([*lines[:5], pasted, *lines[5:]]))
    done = robotsgate("verify", str(log), "--key", str(public))
    assert done.returncode == 1
    assert done.stdout == (f"{log}:6: removed: record 1 of proxy {_chain_of(other)}, which this "
                           f"checkpoint follows in its own file: the lines before it were "
                           f"removed, or it was copied from another log\n")
