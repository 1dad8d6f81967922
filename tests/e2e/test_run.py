"""`robotsgate run -- CMD`: real bots run behind the gate, sealed and not.

The origins live in network namespaces the tests make (tests/e2e/netns.py), at addresses of
their own: a bot's loopback is not where they are, sealed or not. The bots are real programs
(tests/e2e/bots.py): curl, requests, Node and Java that honour the proxy settings, and curl
--noproxy '*', Python's http.client and Node's fetch() that ignore them. Without sealing the
second kind reaches the origins (the hole, shown); sealed, it reaches nothing, as root and as
an ordinary user the test makes.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from . import bots
from .machine import REPO, clean_env, require_tool
from .netns import Namespace, User, as_user, namespace, ordinary_user, reachable
from .origins import Origin
from .proxy import Proxy
from .tls import CertAuthority

ROBOTS = "User-agent: *\nDisallow: /private/\n"
RUN_TIMEOUT = 240.0


@dataclass
class Ran:
    returncode: int
    bots: dict[str, dict[str, Any]]
    stdout: str
    stderr: str

    def status(self, name: str) -> int | None:
        return self.bots[name]["status"]


def run(workdir: Path, options: Sequence[str], command: Sequence[str], *,
        user: User | None = None, wrap: Sequence[str] = (), bot: User | None = None,
        env: dict[str, str] | None = None) -> Ran:
    """`robotsgate run OPTIONS -- COMMAND` from `workdir`, to its end: run by `user` (root when
    None), the bot run as `bot` (--user, by a root run)."""
    if bot is not None:
        options = ["--user", bot.name, *options]
    cmd = [sys.executable, "-m", "robotsgate", "run", *options, "--", *command]
    if bot is not None:
        cmd = reachable(cmd)
    env = clean_env({"PYTHONPATH": str(REPO), **(env or {})})
    if user is not None:
        cmd = as_user(user, cmd)
        env["HOME"] = str(user.home)
    done = subprocess.run([*wrap, *cmd], capture_output=True, text=True, cwd=workdir, env=env,
                          timeout=RUN_TIMEOUT)
    found: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            found = json.loads(line)
    return Ran(done.returncode, found, done.stdout, done.stderr)


def bots_command(named: Sequence[tuple[str, list[str]]], exit_status: int = 0) -> list[str]:
    return [sys.executable, str(bots.HERE), "--exit", str(exit_status), json.dumps(named)]


def workdir_for(tmp_path: Path, user: User | None = None) -> Path:
    """Where the run starts; a user's own, in a directory the user can reach (pytest's are
    root's alone), removed with the user's home."""
    if user is None:
        work = tmp_path / "work"
        work.mkdir()
        return work
    work = user.home / "work"
    work.mkdir()
    shutil.chown(work, user.uid, user.gid)
    return work


def own_proxy(work: Path, ns: Namespace, test_ca: CertAuthority) -> list[str]:
    """serve's options for the proxy a run starts: its files in `work`, the namespace's
    origins reachable and their CA trusted."""
    ca = work / "origins-ca.pem"
    shutil.copyfile(test_ca.ca_pem, ca)
    os.chmod(ca, 0o644)
    return ["--set", f"confdir={work / 'conf'}",
            "--set", f"robots_audit_log={work / 'audit.jsonl'}",
            "--set", f"robots_egress_allow={ns.address}",
            "--set", f"ssl_verify_upstream_trusted_ca={ca}"]


def audit(work: Path) -> list[dict[str, Any]]:
    path = work / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def site_ns() -> Iterator[Namespace]:
    require_tool("ip", package="iproute2")
    with namespace() as ns:
        yield ns


def tls_origin(ns: Namespace, test_ca: CertAuthority) -> Origin:
    cert, key = test_ca.issue(ns.address)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    return ns.origin(ROBOTS, tls=context)


@pytest.fixture
def sites(site_ns: Namespace, test_ca: CertAuthority) -> Iterator[tuple[Origin, Origin]]:
    """An http and an https origin in the namespace, robots.txt disallowing /private/."""
    plain, secure = site_ns.origin(ROBOTS), tls_origin(site_ns, test_ca)
    yield plain, secure
    plain.stop()
    secure.stop()


JAVA_BOT = """\
import java.net.*;
public class Bot {
    public static void main(String[] args) throws Exception {
        HttpURLConnection c = (HttpURLConnection) new URI(args[0]).toURL().openConnection();
        c.setConnectTimeout(20000);
        c.setReadTimeout(20000);
        System.out.println(c.getResponseCode());
    }
}
"""


def honouring(plain: Origin, secure: Origin,
              java: Path | None = None) -> list[tuple[str, list[str]]]:
    """Bots that honour the proxy settings, each asking for an allowed and a disallowed page."""
    named = []
    for name, make in (("curl", bots.curl), ("requests", bots.requests_get),
                       ("node", bots.node_proxy)):
        named += [(f"{name}-http", make(plain.url(f"/open/{name}"))),
                  (f"{name}-https", make(secure.url(f"/open/{name}"))),
                  (f"{name}-private", make(secure.url(f"/private/{name}")))]
    if java is not None:
        java_cmd = require_tool("java", package="default-jre-headless")
        named += [("java-https", [java_cmd, str(java), secure.url("/open/java")]),
                  ("java-private", [java_cmd, str(java), secure.url("/private/java")])]
    return named


def ignoring(plain: Origin) -> list[tuple[str, list[str]]]:
    """Bots that ignore the proxy settings, each asking for a page of its own."""
    return [("curl-direct", bots.curl_direct(plain.url("/direct/curl"))),
            ("python-direct", bots.python_direct(plain.url("/direct/python"))),
            ("node-direct", bots.node_direct(plain.url("/direct/node")))]


def direct_private(plain: Origin) -> tuple[str, list[str]]:
    """A bot that ignores the proxy, asking for a disallowed page."""
    return ("curl-direct-private", bots.curl_direct(plain.url("/private/direct")))


def assert_gated(ran: Ran, plain: Origin, secure: Origin, names: Sequence[str]) -> None:
    for name in names:
        assert ran.status(f"{name}-http") == 200, ran
        assert ran.status(f"{name}-https") == 200, ran
        assert ran.status(f"{name}-private") == 403, ran
        assert plain.saw(f"/open/{name}") and secure.saw(f"/open/{name}")
        assert not secure.saw(f"/private/{name}")


# --- a bot that honours the proxy ----------------------------------------------------------------


def test_run_gates_a_bot_and_passes_its_status_on_with_a_summary(
        tmp_path: Path, site_ns: Namespace, sites: tuple[Origin, Origin],
        test_ca: CertAuthority) -> None:
    plain, secure = sites
    work = workdir_for(tmp_path)
    java = work / "Bot.java"
    java.write_text(JAVA_BOT)
    ran = run(work, ["--agent", "SealBot", *own_proxy(work, site_ns, test_ca)],
              bots_command(honouring(plain, secure, java), exit_status=3))

    assert ran.returncode == 3, ran.stderr
    assert_gated(ran, plain, secure, ["curl", "requests", "node"])
    # Java reads JAVA_TOOL_OPTIONS: the proxy's properties and a trust store holding its CA.
    assert (ran.status("java-https"), ran.status("java-private")) == (200, 403), ran
    assert secure.saw("/open/java") and not secure.saw("/private/java")
    records = audit(work)
    assert {r["url"].rsplit("/", 1)[-1] for r in records} == {"curl", "requests", "node", "java"}
    assert {(r["agent"], r["agent_source"], r["reason"]) for r in records} == {
        ("SealBot", "option", "disallowed")}
    said = ran.stderr.splitlines()
    # What is in force is said before the bot runs, and one summary when it has ended.
    assert any("robotsgate: obeying robots.txt as SealBot" in line for line in said)
    [total] = [line for line in said if line.startswith("robotsgate run: ")]
    assert total == (f"robotsgate run: {Path(sys.executable).name} exited with status 3 after "
                     f"11 requests: 7 forwarded, 4 refused (disallowed 4) (as SealBot)"), total
    [host] = [line for line in said if line.startswith(f"  {site_ns.address}")]
    assert host.split(None, 1)[1] == "11 requests: 7 forwarded, 4 refused (disallowed 4)"
    assert f"  audit log: {work / 'audit.jsonl'}" in said


def test_a_running_proxy_is_told_the_bot_s_name_through_proxy_auth(
        tmp_path: Path, proxy: Any, site_ns: Namespace, sites: tuple[Origin, Origin]) -> None:
    plain, secure = sites
    gate: Proxy = proxy(trust_test_ca=True, proxyauth="any",
                        robots_egress_allow=[site_ns.address])
    work = workdir_for(tmp_path)
    ran = run(work, ["--proxy", gate.url, "--ca", str(gate.ca), "--agent", "NamedBot"],
              bots_command([("curl-private", bots.curl(secure.url("/private/a"))),
                            ("requests-private", bots.requests_get(plain.url("/private/b")))]))

    assert ran.returncode == 0, ran.stderr
    assert (ran.status("curl-private"), ran.status("requests-private")) == (403, 403), ran
    records = gate.wait_audit(2)
    assert {(r["agent"], r["agent_source"]) for r in records} == {("NamedBot", "proxyauth")}
    [total] = [line for line in ran.stderr.splitlines() if line.startswith("robotsgate run: ")]
    assert f"through http://NamedBot:***@127.0.0.1:{gate.port} as NamedBot, which counts " \
        f"them itself" in total


# --- the hole, and sealing -----------------------------------------------------------------------


def test_without_sealing_a_bot_that_ignores_the_proxy_reaches_the_origin_unseen(
        tmp_path: Path, site_ns: Namespace, sites: tuple[Origin, Origin],
        test_ca: CertAuthority) -> None:
    plain, _ = sites
    work = workdir_for(tmp_path)
    ran = run(work, ["--agent", "SealBot", *own_proxy(work, site_ns, test_ca)],
              bots_command([*ignoring(plain), direct_private(plain)]))

    assert ran.returncode == 0, ran.stderr
    for name in ("curl", "python", "node"):
        assert ran.status(f"{name}-direct") == 200, ran
        assert plain.saw(f"/direct/{name}")
    # Even a disallowed page, and nothing of it in the proxy's record: the hole --sealed closes.
    assert ran.status("curl-direct-private") == 200 and plain.saw("/private/direct")
    assert audit(work) == []
    assert "after 0 requests" in ran.stderr


def _sealed(tmp_path: Path, ns: Namespace, sites: tuple[Origin, Origin],
            test_ca: CertAuthority, user: User | None, bot: User | None = None) -> None:
    plain, secure = sites
    work = workdir_for(tmp_path, user)
    ran = run(work, ["--agent", "SealBot", "--sealed", *own_proxy(work, ns, test_ca)],
              bots_command([*honouring(plain, secure), *ignoring(plain), direct_private(plain)]),
              user=user, bot=bot)

    assert ran.returncode == 0, ran.stderr
    assert_gated(ran, plain, secure, ["curl", "requests", "node"])
    for name, said in (("curl", "Couldn't connect to server"),
                       ("python", "[Errno 101] Network is unreachable"),
                       ("node", "connect ENETUNREACH")):
        assert ran.status(f"{name}-direct") is None, ran
        assert said in ran.bots[f"{name}-direct"]["err"], ran
    assert ran.status("curl-direct-private") is None
    # Not one byte of theirs arrived: the origin's log is empty for them.
    assert [p for p in plain.paths() if p.startswith(("/direct/", "/private/"))] == []
    assert {r["url"].rsplit("/", 1)[-1] for r in audit(work)} == {"curl", "requests", "node"}


def test_sealed_by_root_a_bot_that_ignores_the_proxy_reaches_nothing(
        tmp_path: Path, site_ns: Namespace, sites: tuple[Origin, Origin],
        test_ca: CertAuthority) -> None:
    """Run by root, the bot runs as the user --user names."""
    with ordinary_user() as bot:
        _sealed(tmp_path, site_ns, sites, test_ca, user=None, bot=bot)


def test_sealed_as_an_ordinary_user_without_any_privilege(
        tmp_path: Path, site_ns: Namespace, sites: tuple[Origin, Origin],
        test_ca: CertAuthority) -> None:
    with ordinary_user() as user:
        _sealed(tmp_path, site_ns, sites, test_ca, user=user)


# A user namespace whose root is the machine's, with nobody mapped too (root writes the maps
# from outside, which a multi-line map needs), and whose user.max_user_namespaces is 0.
REFUSING = """\
import os, sys
ready, go = os.pipe(), os.pipe()
child = os.fork()
if child == 0:
    os.unshare(os.CLONE_NEWUSER)
    os.write(ready[1], b"x")
    os.read(go[0], 1)
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    with open("/proc/sys/user/max_user_namespaces", "w") as limit:
        limit.write("0")
    os.execvp(sys.argv[1], sys.argv[1:])
os.read(ready[0], 1)
for name in ("uid_map", "gid_map"):
    with open(f"/proc/{child}/{name}", "w") as map_:
        map_.write("0 0 1\\n65534 65534 1\\n")
os.write(go[1], b"x")
sys.exit(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
"""


def test_where_the_kernel_refuses_namespaces_nothing_is_run(tmp_path: Path) -> None:
    """In a user namespace whose user.max_user_namespaces is 0 (as RHEL 7 ships it), no
    namespace can be made: the run says so and runs nothing, never an unsealed bot."""
    work = workdir_for(tmp_path)
    marker = work / "ran"
    ran = run(work, ["--sealed", "--user", "nobody", "--set", f"confdir={work / 'conf'}"],
              ["touch", str(marker)], wrap=[sys.executable, "-c", REFUSING])

    assert ran.returncode == 125, ran.stderr
    assert not marker.exists()
    [said] = [line for line in ran.stderr.splitlines() if line.startswith("robotsgate run:")]
    assert said.startswith("robotsgate run: cannot seal the bot: unshare(CLONE_NEWUSER | "
                           "CLONE_NEWNET | CLONE_NEWIPC): No space left on device: "
                           "user.max_user_namespaces is 0"), said
    assert "Nothing was run" in said


# --- the run's own statuses and signals ----------------------------------------------------------


def test_a_bot_killed_by_a_signal_gives_128_plus_it(tmp_path: Path) -> None:
    work = workdir_for(tmp_path)
    ran = run(work, ["--set", f"confdir={work / 'conf'}"], ["sh", "-c", "kill -TERM $$"])
    assert ran.returncode == 128 + signal.SIGTERM, ran.stderr
    assert "robotsgate run: sh was killed by SIGTERM (status 143) after 0 requests" in ran.stderr


SIGNALLED = """\
import signal, sys, time, pathlib
ready = pathlib.Path(sys.argv[1])
def handler(signum, frame):
    print("got", signal.Signals(signum).name, flush=True)
    sys.exit(42)
signal.signal(signal.SIGINT, handler)
ready.write_text("ready")
time.sleep(60)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_sent_to_the_run_reaches_the_bot_once(tmp_path: Path, signum: int) -> None:
    work = workdir_for(tmp_path)
    ready = work / "ready"
    cmd = [sys.executable, "-m", "robotsgate", "run", "--set", f"confdir={work / 'conf'}", "--",
           sys.executable, "-c", SIGNALLED, str(ready)]
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=work, env=clean_env({"PYTHONPATH": str(REPO)}))
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert ready.exists(), process.communicate(timeout=30)
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    if signum == signal.SIGINT:
        assert out.splitlines() == ["got SIGINT"], err  # once: the bot's handler exits
        assert process.returncode == 42, err
    else:
        assert process.returncode == 128 + signal.SIGTERM, err
    assert "robotsgate run: python" in err  # the summary, all the same


def test_the_run_s_own_failures_have_statuses_of_their_own(tmp_path: Path) -> None:
    work = workdir_for(tmp_path)
    conf = ["--set", f"confdir={work / 'conf'}"]
    no_dashes = subprocess.run([sys.executable, "-m", "robotsgate", "run", "true"],
                               capture_output=True, text=True, cwd=work, timeout=60)
    assert no_dashes.returncode == 125
    assert no_dashes.stderr.startswith("robotsgate run: put -- before the bot's command")

    missing = run(work, conf, ["no-such-bot-anywhere"])
    assert missing.returncode == 127, missing.stderr
    assert "robotsgate run: no-such-bot-anywhere: command not found" in missing.stderr

    bad = run(work, [*conf, "--set", "robots_mode=enforcee"], ["touch", str(work / "ran")])
    assert bad.returncode == 125, bad.stderr
    assert "robots_mode must be one of enforce, monitor" in bad.stderr
    assert "robotsgate run: the proxy did not start" in bad.stderr
    assert not (work / "ran").exists()

    agent = run(work, ["--agent", "Not A Token"], ["true"])
    assert agent.returncode == 125
    assert "--agent 'Not A Token': must be a product token" in agent.stderr


# --- capture: bots that ignore the proxy, gated all the same ----------------------------------


def with_hosts(work: Path, names: dict[str, str]) -> list[str]:
    """A command prefix: run in a mount namespace whose /etc/hosts also has `names` (the test's
    sites), for the proxy's resolver (and the bots', which read it first)."""
    hosts = work / "hosts"
    hosts.write_text(Path("/etc/hosts").read_text() + "".join(
        f"{address} {name}\n" for name, address in names.items()))
    os.chmod(hosts, 0o644)
    unshare = require_tool("unshare", package="util-linux")
    return [unshare, "--mount", "--propagation", "private", "sh", "-c",
            f"mount --bind '{hosts}' /etc/hosts && exec \"$@\"", "sh"]


ELSEWHERE = "198.18.0.10"  # a benchmarking address (RFC 2544): never dialled here
CAPTURE_ROBOTS = "User-agent: *\nDisallow: /private/\nCrawl-delay: 1\n"


def test_captured_every_bot_is_gated_whatever_it_reads(
        tmp_path: Path, site_ns: Namespace, test_ca: CertAuthority) -> None:
    """--capture: bots that ignore the proxy settings reach the gate all the same (mitmproxy's
    TUN mode): disallowed pages 403, allowed ones paced by Crawl-delay at the origin, all in the
    audit log; DNS answered by the gate's resolver; a second name for the same address decided
    as its own host; a name at another address refused; QUIC and other UDP refused."""
    address = site_ns.address
    cert, key = test_ca.issue("site-a.test", "site-b.test", address)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    plain = site_ns.origin(CAPTURE_ROBOTS)
    secure = site_ns.origin(CAPTURE_ROBOTS, tls=context)
    try:
        work = workdir_for(tmp_path)
        # other.test: an address bots may reach, but not the one the bot connects to (nothing
        # is ever sent there: the request is refused first).
        names = {"site-a.test": address, "site-b.test": address, "other.test": ELSEWHERE}
        a, b = f"site-a.test:{plain.port}", f"site-b.test:{plain.port}"
        https_a = f"https://site-a.test:{secure.port}"
        named = [
            ("curl-direct", bots.curl_direct(f"http://{a}/open/curl")),
            ("curl-direct-private", bots.curl_direct(f"http://{a}/private/curl")),
            ("python-direct", bots.python_direct(plain.url("/open/python"))),  # an IP literal
            ("python-direct-private", bots.python_direct(plain.url("/private/python"))),
            ("node-direct", bots.node_direct(f"{https_a}/open/node")),
            ("node-direct-private", bots.node_direct(f"{https_a}/private/node")),
            ("resolving", bots.resolving(f"http://{b}/open/resolving")),
            ("resolving-private", bots.resolving(f"http://{b}/private/resolving")),
            ("other-name", ["curl", "--noproxy", "*", "-sS", "-o", "/dev/null", "-w",
                            "%{http_code}", "-H", f"Host: other.test:{plain.port}",
                            f"http://{a}/open/other"]),
            ("curl-proxy", bots.curl(f"http://{a}/open/proxied")),
            # A name whose address bots may not reach (loopback): no answer but REFUSED.
            ("resolving-refused", bots.resolving(f"http://localhost:{plain.port}/")),
            ("quic", bots.udp(address, 443)),
            ("udp", bots.udp(address, 9999)),
        ]
        with ordinary_user() as bot:
            ran = run(work, ["--agent", "CaptureBot", "--capture",
                             *own_proxy(work, site_ns, test_ca),
                             "--set", f"robots_egress_allow={ELSEWHERE}"],
                      bots_command(named), wrap=with_hosts(work, names), bot=bot)
    finally:
        plain.stop()
        secure.stop()

    assert ran.returncode == 0, ran.stderr
    for name in ("curl", "python", "node", "resolving"):
        assert ran.status(f"{name}-direct" if name != "resolving" else name) == 200, ran
        assert ran.status(f"{name}-direct-private" if name != "resolving"
                          else "resolving-private") == 403, ran
    assert ran.status("curl-proxy") == 200, ran
    assert f"resolved {address}" in ran.bots["resolving"]["err"]
    # Another name at another address: the connection does not bear the Host header out.
    assert ran.status("other-name") == 400, ran
    assert ran.status("quic") is None and ran.status("udp") is None
    assert "no address for localhost: rcode 5" in ran.bots["resolving-refused"]["err"], ran
    seen = [*plain.seen, *secure.seen]
    assert not [s for s in seen if s.path.startswith("/private/") or s.path == "/open/other"]
    # robots.txt fetched once per host it was decided for, by its name (or address).
    assert sorted(s.host for s in seen if s.path == "/robots.txt") == sorted(
        [a, b, f"site-a.test:{secure.port}", f"{address}:{plain.port}"])
    # Allowed requests to one host spaced by its Crawl-delay at the origin, captured or not.
    arrivals = sorted(s.arrived for s in plain.seen
                      if s.path in ("/open/curl", "/open/proxied") and s.host == a)
    assert len(arrivals) == 2 and arrivals[1] - arrivals[0] >= 1.0
    records = audit(work)
    blocked = {r["url"] for r in records if r["event"] == "block"}
    assert {f"http://{a}/private/curl", f"http://{address}:{plain.port}/private/python",
            f"{https_a}/private/node", f"http://{b}/private/resolving"} <= blocked
    [mismatch] = [r for r in records if r["reason"] == "host-mismatch"]
    assert mismatch["error"] == f"other.test is at {ELSEWHERE}; the bot connected to " \
                               f"{address}"
    queries = [(r["url"], r["address"], r["method"]) for r in records if r["event"] == "dns"]
    assert queries == [("dns://site-b.test/A", address, "DNS")] * 2  # the resolving bot's two
    [refused] = [r for r in records if r["url"] == "dns://localhost/A"]
    assert (refused["event"], refused["reason"]) == ("block", "destination")
    assert "a loopback address" in refused["error"]
    assert {r["url"] for r in records if r["reason"] == "protocol"} == {
        f"quic://{address}:443", f"udp://{address}:9999"}
    assert {r["agent"] for r in records} == {"CaptureBot"}
    assert "connections refused whole: 2 (quic 1, udp 1)" in ran.stderr


# --- the doors a network namespace leaves open ----------------------------------------------------


@dataclass
class Doors:
    """Ways out of a network namespace that are not the network: a Unix stream socket and a
    Unix datagram socket on the filesystem, listening outside (as D-Bus's, Docker's or a
    database's do), and a file of root's. Each records what reached it."""

    stream: Path
    datagram: Path
    roots: Path
    queue: int  # a System V message queue any user may write to
    arrived: list[bytes]

    def escaping(self) -> list[str]:
        return bots.escaping(str(self.stream), str(self.datagram), str(self.roots), self.queue)

    def queued(self) -> int:
        """How many messages the queue holds (msgctl IPC_STAT: struct msqid_ds's msg_qnum)."""
        state = ctypes.create_string_buffer(256)
        assert _LIBC.msgctl(self.queue, 2, state) == 0
        # x86_64 and aarch64: ipc_perm (48 bytes), msg_stime, msg_rtime, msg_ctime,
        # __msg_cbytes, then msg_qnum.
        return int.from_bytes(state.raw[48 + 8 * 4:48 + 8 * 5], "little")


_LIBC = ctypes.CDLL(None, use_errno=True)


def session_keyring() -> str:
    """This process's session keyring's serial, as the escaping bot reads its own."""
    keyctl = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
    return str(_LIBC.syscall(keyctl, 0, -3, 0))


@pytest.fixture
def doors() -> Iterator[Doors]:
    import tempfile
    import threading

    place = Path(tempfile.mkdtemp(prefix="rg-doors-"))
    os.chmod(place, 0o755)
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stream.bind(str(place / "stream.sock"))
    stream.listen()
    datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    datagram.bind(str(place / "datagram.sock"))
    for name in ("stream.sock", "datagram.sock"):
        os.chmod(place / name, 0o777)  # any user may connect: the door is open
    roots = place / "roots"
    roots.write_text("root's\n")
    os.chmod(roots, 0o644)
    queue = _LIBC.msgget(0, 0o1000 | 0o666)  # IPC_PRIVATE, IPC_CREAT
    assert queue >= 0
    arrived: list[bytes] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = stream.accept()
                with connection:
                    arrived.append(connection.recv(100))

    def receive() -> None:
        with contextlib.suppress(OSError):
            while True:
                arrived.append(datagram.recv(100))

    threads = [threading.Thread(target=accept, daemon=True),
               threading.Thread(target=receive, daemon=True)]
    for thread in threads:
        thread.start()
    try:
        yield Doors(place / "stream.sock", place / "datagram.sock", roots, queue, arrived)
    finally:
        _LIBC.msgctl(queue, 0, None)  # IPC_RMID
        for sock in (stream, datagram):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        shutil.rmtree(place, ignore_errors=True)


def tried(ran: Ran) -> dict[str, str]:
    said: dict[str, str] = json.loads(ran.bots["escaping"]["err"].strip().splitlines()[-1])
    return said


def test_a_sealed_bot_finds_no_other_way_out(tmp_path: Path, doors: Doors) -> None:
    """Run by an ordinary user, the bot is that user: Unix sockets are refused it (EPERM, the
    system-call filter), and the run's memory, which holds the bridge to the proxy, is not its
    to write (the run is undumpable). Nothing reached the doors."""
    with ordinary_user() as user:
        work = workdir_for(tmp_path, user)
        ran = run(work, ["--sealed", "--set", f"confdir={work / 'conf'}"],
                  bots_command([("escaping", doors.escaping())]), user=user)

    assert ran.returncode == 0, ran.stderr
    said = tried(ran)
    assert said.pop("session-keyring") != session_keyring()  # a keyring of its own
    assert said == {"unix-stream": "EPERM", "unix-datagram": "EPERM", "unix-raw-pair": "EPERM",
                    "ipc-queue": "EINVAL", "root-file": "EACCES", "run-memory": "EACCES"}, ran
    assert doors.arrived == [] and doors.queued() == 0


def test_sealed_by_root_the_bot_is_the_user_it_is_given(tmp_path: Path, doors: Doors) -> None:
    """Run by root with --user, the bot is that user outside its namespace (root inside it,
    mapped to the user): root's files are not its."""
    work = workdir_for(tmp_path)
    with ordinary_user() as bot:
        ran = run(work, ["--sealed", "--set", f"confdir={work / 'conf'}"],
                  bots_command([("escaping", doors.escaping()),
                                ("ids", ["sh", "-c", "cat /proc/self/uid_map >&2"])]), bot=bot)
        uid = bot.uid

    assert ran.returncode == 0, ran.stderr
    said = tried(ran)
    assert said.pop("session-keyring") != session_keyring()  # a keyring of its own
    assert said == {"unix-stream": "EPERM", "unix-datagram": "EPERM", "unix-raw-pair": "EPERM",
                    "ipc-queue": "EINVAL", "root-file": "EACCES", "run-memory": "EACCES"}, ran
    assert ran.bots["ids"]["err"].split() == ["0", str(uid), "1"]
    assert doors.roots.read_text() == "root's\n" and doors.arrived == []
    assert doors.queued() == 0


def test_sealed_by_root_without_a_user_the_bot_is_sudo_s_caller_or_not_run(
        tmp_path: Path) -> None:
    """Never root over the machine's files: the user who called sudo (SUDO_UID), or nothing
    run at all, with the option to give."""
    work = workdir_for(tmp_path)
    marker = work / "ran"
    refused = run(work, ["--sealed", "--set", f"confdir={work / 'conf'}"],
                  ["touch", str(marker)])
    assert refused.returncode == 125
    assert "name an unprivileged user for it with --user NAME" in refused.stderr
    assert not marker.exists()

    with ordinary_user() as caller:
        ran = run(work, ["--sealed", "--set", f"confdir={work / 'conf'}"],
                  bots_command([("ids", ["sh", "-c", "cat /proc/self/uid_map >&2"])]),
                  env={"SUDO_UID": str(caller.uid)}, wrap=reachable([]))
        uid = caller.uid
    assert ran.returncode == 0, ran.stderr
    assert ran.bots["ids"]["err"].split() == ["0", str(uid), "1"]


def test_captured_a_request_is_sent_again_signed_when_its_origin_asks(
        tmp_path: Path, site_ns: Namespace, test_ca: CertAuthority) -> None:
    """Signing applies to a captured bot as through the proxy variables: an origin's 401 with
    Accept-Signature has the request sent once more, signed, and the bot gets that answer."""
    from .origins import Reply, Seen

    cert, key = test_ca.issue("site-a.test", site_ns.address)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    secure = site_ns.origin("User-agent: *\nAllow: /\n", tls=context)

    def members(seen: Seen) -> Reply:
        if "signature-input" not in seen.headers:
            return Reply(401, "sign, please\n",
                         {"Accept-Signature": 'sig2=("@authority" "@method");tag="web-bot-auth"'})
        return Reply(200, "welcome, verified bot\n")

    secure.answer("/members", members)
    try:
        work = workdir_for(tmp_path)
        signing = work / "signing.pem"
        made = subprocess.run([sys.executable, "-m", "robotsgate", "keygen", str(signing)],
                              capture_output=True, text=True, timeout=60,
                              env=clean_env({"PYTHONPATH": str(REPO)}))
        assert made.returncode == 0, made.stderr
        os.chmod(work, 0o755)
        url = f"https://site-a.test:{secure.port}/members"
        with ordinary_user() as bot:
            ran = run(work, ["--agent", "CaptureBot", "--capture",
                             *own_proxy(work, site_ns, test_ca),
                             "--set", f"robots_signing_key={signing}",
                             "--set", "robots_signature_agent=https://bots.example/.well-known/"
                                      "http-message-signatures-directory",
                             "--set", "robots_signing_asked=*"],
                      bots_command([("signed", bots.curl_direct(url))]),
                      wrap=with_hosts(work, {"site-a.test": site_ns.address}), bot=bot)
    finally:
        secure.stop()

    assert ran.returncode == 0, ran.stderr
    assert ran.status("signed") == 200, ran
    first, again = [s for s in secure.seen if s.path == "/members"]
    assert "signature-input" not in first.headers and "@method" in again.headers["signature-input"]
    [record] = [r for r in audit(work) if r["event"] == "signature"]
    assert (record["reason"], record.get("error")) == ("signature-asked", None), record
