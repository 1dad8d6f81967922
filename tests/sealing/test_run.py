"""`robotsgate run`'s parts without processes: its command line, the bot's environment, the
counts of its proxy and the summary made of them (tests/e2e/test_run.py runs the real thing)."""

import errno
import json
from pathlib import Path

import pytest
from mitmproxy import http
from mitmproxy.test import tflow

from robotsgate.cli.run_options import RunError, RunOptions, bot_user, serve_setting
from robotsgate.mitm.answers import answer
from robotsgate.mitm.flow import state
from robotsgate.mitm.tally import Counting
from robotsgate.outcomes import Reason
from robotsgate.sealing import summary
from robotsgate.sealing.environment import (
    CA_VARIABLES,
    PROXY_VARIABLES,
    ProxyAddress,
    child_environment,
)
from robotsgate.sealing.namespace import _WHY, SealRefusal

# --- the command line ----------------------------------------------------------------------------


def test_options_before_dashes_are_the_run_s_or_the_proxy_s_and_after_them_the_bot_s() -> None:
    options = RunOptions.parse(["--agent", "MyBot", "--set", "robots_mode=monitor", "--sealed",
                                "-p", "9000", "--", "python", "bot.py", "--agent", "x"])
    assert options.command == ("python", "bot.py", "--agent", "x")
    assert options.agent == "MyBot" and options.sealed and options.proxy is None
    assert options.serve_args == ("--set", "robots_mode=monitor", "-p", "9000")
    assert RunOptions.parse(["--agent=MyBot", "--", "true"]).agent == "MyBot"


@pytest.mark.parametrize(("argv", "said"), [
    (["python", "bot.py"], "put -- before the bot's command"),
    (["--agent", "MyBot", "--"], "no command after --"),
    (["--agent", "--", "true"], "--agent needs a value"),
    (["--agent", "My Bot", "--", "true"], "--agent 'My Bot': must be a product token"),
    (["--proxy", "socks5://127.0.0.1:1080", "--", "true"], "--proxy: 'socks5://127.0.0.1:1080' "
     "is not an http://HOST:PORT proxy URL"),
    (["--proxy", "http://127.0.0.1:8080", "--set", "robots_mode=monitor", "--", "true"],
     "--set: with --proxy the run starts no proxy"),
    (["--proxy", "http://OtherBot:pw@127.0.0.1:8080", "--agent", "MyBot", "--", "true"],
     "--agent MyBot and --proxy's user name 'OtherBot' name two bots"),
    (["--ca", "ca.pem", "--", "true"], "--ca names a running proxy's CA"),
    (["--agent", "MyBot", "--set", "robots_agent=Other", "--", "true"],
     "--agent and --set robots_agent(s) both name the bot"),
])
def test_a_mistake_is_refused_naming_the_option(argv: list[str], said: str) -> None:
    with pytest.raises(RunError) as refused:
        RunOptions.parse(argv)
    assert str(refused.value).startswith(said)


def test_a_running_proxy_is_given_the_bot_s_name_as_its_proxy_auth_user() -> None:
    options = RunOptions.parse(["--proxy", "http://gate.internal:3128", "--agent", "MyBot",
                                "--", "true"])
    assert options.proxy == ProxyAddress("gate.internal", 3128, "MyBot", "run")
    kept = RunOptions.parse(["--proxy", "http://MyBot:s3cret@gate:3128", "--agent", "MyBot",
                             "--", "true"])
    assert kept.proxy is not None and kept.proxy.password == "s3cret"
    assert kept.proxy.shown() == "http://MyBot:***@gate:3128"


def test_serve_s_settings_are_read_as_mitmdump_reads_them_the_last_one_winning() -> None:
    args = ["--set", "confdir=/a", "--set=robots_audit_log=x.jsonl", "--set", "confdir=/b"]
    assert (serve_setting(args, "confdir"),
            serve_setting(args, "robots_audit_log")) == ("/b", "x.jsonl")
    assert serve_setting(args, "robots_agent") is None


# --- the bot's environment -----------------------------------------------------------------------


def test_the_bot_s_environment_names_the_proxy_and_its_ca_for_every_reader() -> None:
    given = {"PATH": "/bin", "NO_PROXY": "*", "no_proxy": "internal", "HTTPS_PROXY": "http://x:1",
             "PIP_CERT": "/etc/ssl/certs/ca-certificates.crt", "JAVA_TOOL_OPTIONS": "-Xmx1g"}
    env = child_environment(given, ProxyAddress("127.0.0.1", 8081, "MyBot", "p w"),
                            Path("/conf/ca.pem"), Path("/run/trust.p12"))
    assert env["PATH"] == "/bin"
    assert "NO_PROXY" not in env and "no_proxy" not in env
    assert {env[name] for name in PROXY_VARIABLES} == {"http://MyBot:p%20w@127.0.0.1:8081"}
    assert {env[name] for name in CA_VARIABLES} == {"/conf/ca.pem"}
    assert {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
            "GIT_SSL_CAINFO", "PIP_CERT"} <= set(CA_VARIABLES)
    assert env["NODE_USE_ENV_PROXY"] == "1"
    assert env["JAVA_TOOL_OPTIONS"].split() == [
        "-Xmx1g", "-Dhttp.proxyHost=127.0.0.1", "-Dhttp.proxyPort=8081",
        "-Dhttps.proxyHost=127.0.0.1", "-Dhttps.proxyPort=8081", "-Dhttp.nonProxyHosts=",
        "-Djavax.net.ssl.trustStore=/run/trust.p12", "-Djavax.net.ssl.trustStoreType=PKCS12"]
    assert "HTTPS_PROXY" in given and given["HTTPS_PROXY"] == "http://x:1"  # not changed


def test_a_proxy_url_is_read_with_its_credentials_and_an_ipv6_host() -> None:
    address = ProxyAddress.parse("http://[::1]:3128")
    assert address == ProxyAddress("::1", 3128) and address.url() == "http://[::1]:3128"
    assert ProxyAddress.parse("http://gate").port == 80
    assert ProxyAddress.parse("http://u%40x:p%3A@gate:1").at("127.0.0.1", 9).url() == \
        "http://u%40x:p%3A@127.0.0.1:9"
    with pytest.raises(ValueError, match="has no path"):
        ProxyAddress.parse("http://gate:1/path")


# --- the counts and the summary ------------------------------------------------------------------


def _count(tally: Counting, flow: http.HTTPFlow, *, error: bool = False) -> None:
    (tally.error if error else tally.response)(flow)


def test_the_proxy_counts_each_request_once_by_what_became_of_it(tmp_path: Path) -> None:
    tally = Counting(tmp_path / "tally.json")
    forwarded = tflow.tflow(resp=True)
    delayed = tflow.tflow(resp=True)
    state(delayed).delay_ms = 1500
    refused = tflow.tflow()
    answer(refused, Reason.DISALLOWED, "no")
    failed = tflow.tflow(err=True)
    tunnel = tflow.tflow()
    tunnel.request.method = "CONNECT"
    refused_tunnel = tflow.tflow()
    refused_tunnel.request.method = "CONNECT"
    refused_tunnel.request.host = "private.example"
    answer(refused_tunnel, Reason.DESTINATION, "no")
    for flow in (forwarded, delayed, refused, tunnel, refused_tunnel):
        _count(tally, flow)
    _count(tally, failed, error=True)
    _count(tally, forwarded, error=True)  # an error after its response: counted once
    tally.done()

    counted = summary.Tally.parse((tmp_path / "tally.json").read_text())
    assert counted.hosts == {
        "address": summary.HostCounts(requests=4, forwarded=2, delayed=1, failed=1,
                                      refused={"disallowed": 1}),
        "private.example": summary.HostCounts(requests=1, refused={"destination": 1})}
    assert not (tmp_path / "tally.json.partial").exists()


def test_the_summary_says_the_run_then_each_host_by_requests_and_the_audit_log() -> None:
    tally = summary.Tally.parse(json.dumps({"hosts": {
        "b.example": {"requests": 2, "forwarded": 2},
        "a.example": {"requests": 5, "forwarded": 3, "delayed": 2,
                      "refused": {"disallowed": 1, "robots-unavailable": 1}},
        "\x1b[2Jevil": {"requests": 1, "failed": 1}}}))
    text = summary.render(tally, command="mybot", status=summary.status_said(-15),
                          agent="MyBot", audit_log="/var/log/a.jsonl",
                          connections={"udp": 2, "tcp": 1})
    assert text.splitlines() == [
        "robotsgate run: mybot was killed by SIGTERM (status 143) after 8 requests: "
        "5 forwarded (2 delayed), 2 refused (disallowed 1, robots-unavailable 1), 1 failed "
        "(as MyBot)",
        "  a.example    5 requests: 3 forwarded (2 delayed), 2 refused (disallowed 1, "
        "robots-unavailable 1)",
        "  b.example    2 requests: 2 forwarded, 0 refused",
        "  \\x1b[2Jevil  1 request: 0 forwarded, 0 refused, 1 failed",
        "  connections refused whole: 3 (udp 2, tcp 1): nothing in them could be decided",
        "  audit log: /var/log/a.jsonl"]


def test_hosts_past_the_first_twenty_are_summed_in_one_line() -> None:
    tally = summary.Tally({f"h{i:02}": summary.HostCounts(requests=1, forwarded=1)
                           for i in range(25)})
    lines = summary.render(tally, command="bot", status="exited with status 0", agent=None,
                           audit_log=None, connections={}).splitlines()
    assert len(lines) == 1 + 20 + 1
    assert lines[-1] == "  and 5 more hosts: 5 requests: 5 forwarded, 0 refused"
    assert "(as each request's User-Agent named it)" in lines[0]


def test_connections_refused_whole_are_read_from_the_audit_records() -> None:
    records = [{"event": "block", "reason": "protocol", "method": "UDP"},
               {"event": "would-block", "reason": "protocol", "method": "TCP"},
               {"event": "block", "reason": "disallowed", "method": "GET"},
               {"event": "delay", "reason": "crawl-delay", "method": "GET"}]
    assert summary.connections_refused(records) == {"udp": 1, "tcp": 1}


@pytest.mark.parametrize(("returncode", "status"), [(0, 0), (3, 3), (-2, 130), (-9, 137)])
def test_a_bot_s_status_is_a_shell_s(returncode: int, status: int) -> None:
    assert summary.exit_status(returncode) == status


def test_each_refusal_of_the_kernel_is_explained() -> None:
    assert "kernel.apparmor_restrict_unprivileged_userns=1" in _WHY[errno.EPERM]
    assert "kernel.unprivileged_userns_clone=0" in _WHY[errno.EPERM]
    assert "user.max_user_namespaces is 0" in _WHY[errno.ENOSPC]
    assert SealRefusal("unshare", "Operation not permitted").said() == \
        "cannot seal the bot: unshare: Operation not permitted"


# --- whom a sealed bot runs as --------------------------------------------------------------------


def _options(*argv: str) -> RunOptions:
    return RunOptions.parse([*argv, "--", "true"])


def test_run_by_root_a_sealed_bot_is_never_root() -> None:
    nobody = bot_user(_options("--sealed", "--user", "nobody"), 0, {})
    assert nobody is not None and nobody.name == "nobody" and nobody.uid != 0
    assert bot_user(_options("--capture", "--user", str(nobody.uid)), 0, {}) == nobody
    # sudo's caller, when no --user is given
    assert bot_user(_options("--sealed"), 0, {"SUDO_UID": str(nobody.uid)}) == nobody
    for environ in ({}, {"SUDO_UID": "0"}, {"SUDO_UID": "not a number"}):
        with pytest.raises(RunError, match="name an unprivileged user for it with --user NAME"):
            bot_user(_options("--sealed"), 0, environ)
    with pytest.raises(RunError, match="--user root: the bot's user must not be root"):
        bot_user(_options("--sealed", "--user", "root"), 0, {})
    with pytest.raises(RunError, match="--user no-such-user-here: no such user"):
        bot_user(_options("--sealed", "--user", "no-such-user-here"), 0, {})


def test_a_bot_runs_as_its_caller_unless_root_runs_it_sealed() -> None:
    assert bot_user(_options(), 0, {}) is None  # not sealed: run as the caller, as env does
    assert bot_user(_options("--sealed"), 1000, {}) is None  # sealed, as the caller
    with pytest.raises(RunError, match="--user nobody: only root runs a bot as another user"):
        bot_user(_options("--sealed", "--user", "nobody"), 1000, {})
    with pytest.raises(RunError, match="--user nobody: only a sealed bot"):
        _options("--user", "nobody")
