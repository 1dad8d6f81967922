"""Start-up through a real `mitmdump -s addon.py`: what it says it does, and what it refuses.

A mistyped option name or a bad value (a port included) ends mitmdump as it starts, exit status
2, with one line that names the option (and, for a name, the one probably meant), no traceback,
no "proxy listening" line before it, and no audit log left behind; `robotsgate serve` the same;
a good start says in one line which agent, mode, semantics, audit log, store and metrics are in
force.
"""

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .machine import REPO, clean_env, free_port, require_tool
from .origins import Origin
from .proxy import Proxy, mitmdump_command, mitmdump_env, run_mitmdump


@pytest.mark.parametrize(("name", "meant"), [
    ("robot_agent", "robots_agent"),
    ("robots-agent", "robots_agent"),
    ("robots_agnet", "robots_agent"),
    ("ROBOTS_MODE", "robots_mode"),
])
def test_a_misspelled_option_stops_the_start_naming_the_one_meant(
        name: str, meant: str, tmp_path: Path) -> None:
    code, output = run_mitmdump(tmp_path, {name: "TrialBot", "robots_audit_log": tmp_path / "a"})

    assert code == 2, output
    [line] = _said(output)
    assert line.endswith(f"robotsgate: unknown option {name}; did you mean {meant}?")
    _refused_in_one_line(output)
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize(("option", "value", "said"), [
    ("robots_mode", "enforcee", "robots_mode must be one of enforce, monitor; got 'enforcee'"),
    ("robots_cache_ttl", "soon", "not an integer: soon"),
    ("robots_cache_ttl", "0", "robots_cache_ttl must be a whole number from 1 to 86400; got 0"),
    ("robots_agent", "My Bot", "robots_agent: must be a product token"),
    ("robots_audit_log", "/nonexistent-dir/audit.jsonl", "robots_audit_log: cannot open"),
    # Past the audit log, which is opened by then: the start leaves it behind no more.
    ("robots_signing_key", "/nonexistent-dir/key.pem", "robots_signing_key: cannot read"),
    ("robots_archive_dir", "/proc/no-such-dir", "robots_archive_dir: cannot use"),
    ("robots_redis", "redis://127.0.0.1:6379/first", "database must be a number"),
])
def test_a_bad_value_stops_the_start_in_one_line_before_listening(
        option: str, value: str, said: str, tmp_path: Path) -> None:
    options = {"robots_audit_log": tmp_path / "a.jsonl", option: value}
    code, output = run_mitmdump(tmp_path, options)

    assert code == 2, output
    [line] = _said(output)
    assert said in line and option in line
    _refused_in_one_line(output)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["conf"]  # nothing written


def test_a_port_outside_0_to_65535_stops_the_start(tmp_path: Path) -> None:
    """mitmproxy itself would listen on 99999 modulo 65536 (34463)."""
    command = mitmdump_command(free_port(), tmp_path / "conf", {
        "robots_audit_log": str(tmp_path / "audit.jsonl")})
    command[command.index("--listen-port") + 1] = "99999"
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                          env=mitmdump_env(), timeout=60)
    output = done.stdout + done.stderr

    assert done.returncode == 2, output
    [line] = _said(output)
    assert line.endswith("robotsgate: listen_port must be a port number from 0 to 65535; got "
                         "99999")
    _refused_in_one_line(output)
    assert not (tmp_path / "audit.jsonl").exists()


def test_a_port_in_use_for_metrics_leaves_no_audit_log(tmp_path: Path) -> None:
    """The audit log is opened before the metrics port is listened on: a start that fails
    there removes the log it created (an empty log reads as a proxy that ran and saw nothing:
    `robotsgate report` said "no audit records")."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        code, output = run_mitmdump(tmp_path, {"robots_audit_log": tmp_path / "a.jsonl",
                                               "robots_metrics_port": taken.getsockname()[1]})
    assert code == 2, output
    [line] = _said(output)
    assert "robots_metrics_port: cannot listen on 127.0.0.1:" in line
    _refused_in_one_line(output)
    assert not (tmp_path / "a.jsonl").exists()
    report = subprocess.run([str(ROBOTSGATE), "report", str(tmp_path / "a.jsonl")],
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 2 and "cannot read" in report.stderr


def test_a_misspelled_option_beside_another_script_stops_the_start_once_it_runs(
        tmp_path: Path) -> None:
    """With another script loaded after robotsgate's, a name nothing declared is known only
    when they all have (mitmproxy's running event, after it listens): still one line, exit
    status 2, and the audit log this start created removed."""
    script = tmp_path / "other.py"
    script.write_text("def load(loader):\n    loader.add_option('other_x', str, '', 'x')\n")
    command = mitmdump_command(free_port(), tmp_path / "conf", {
        "robots_audit_log": str(tmp_path / "audit.jsonl"), "ssl_insecur": "true"})
    command += ["-s", str(script)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                          env=mitmdump_env(), timeout=60)
    output = done.stdout + done.stderr

    assert done.returncode == 2, output
    [line] = _said(output)
    assert line.endswith("robotsgate: unknown option ssl_insecur; did you mean ssl_insecure?")
    assert "Traceback" not in output and "obeying robots.txt" not in output
    assert not (tmp_path / "audit.jsonl").exists()


def _said(output: str) -> list[str]:
    """robotsgate's own lines (mitmdump puts a time before each)."""
    return [line for line in output.splitlines() if "robotsgate:" in line]


def _refused_in_one_line(output: str) -> None:
    """Nothing but robotsgate's line says so: no traceback, no start-up summary, no "proxy
    listening" line before it, and not mitmproxy's own "Error logged during startup" either."""
    assert "Traceback" not in output and "obeying robots.txt" not in output
    assert "listening at" not in output and "Error logged" not in output


def test_a_good_start_says_what_is_in_force(tmp_path: Path) -> None:
    proxy = Proxy(tmp_path, {"robots_agent": "TrialBot", "robots_mode": "monitor",
                             "robots_redis": "redis://:secret@127.0.0.1:6379/0",
                             "robots_egress_allow": "127.0.0.1:8000",
                             "robots_egress_deny": "private"})
    try:
        deadline = time.monotonic() + 10  # logged as it starts running, just after listening
        while "obeying robots.txt" not in proxy.output() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proxy.stop()
    output = proxy.output()
    [line] = [line for line in output.splitlines() if "obeying robots.txt" in line]
    assert "as TrialBot (robots_agent)" in line and "mode monitor" in line
    assert "semantics rfc9309" in line
    assert f"audit log {proxy.audit_path.resolve()}" in line
    assert "Redis redis://:***@127.0.0.1:6379/0" in line and "secret" not in output
    assert "metrics off" in line
    assert line.endswith("; bots may reach 127.0.0.1:8000; bots may not reach private either")


ROBOTSGATE = Path(sys.executable).parent / "robotsgate"


def test_robotsgate_serve_runs_the_installed_proxy_keeping_relative_paths(
        tmp_path: Path, origin: Callable[..., Origin]) -> None:
    site = origin(robots="User-agent: *\nDisallow: /private\n")
    port = free_port()
    workdir = tmp_path / "here"
    workdir.mkdir()
    # Run from elsewhere than the checkout, with a relative audit path: it lands in workdir.
    [blocked, allowed], output = _through_serve(
        workdir, port, [], [["-o", "/dev/null", "-w", "%{http_code}", site.url("/private/x")],
                            ["-o", "/dev/null", "-w", "%{http_code}", site.url("/public")]])
    assert (blocked.stdout, allowed.stdout) == ("403", "200"), output
    [record] = [json.loads(line) for line in (workdir / "audit.jsonl").read_text().splitlines()]
    assert record["url"] == site.url("/private/x")
    assert f"audit log {workdir / 'audit.jsonl'}" in output
    # Quiet about individual flows: the audit log is the record.
    assert "/public" not in output and "/private/x" not in output
    assert "client connect" not in output and "HTTP Request" not in output
    assert not site.saw("/private/x")


def test_robotsgate_serve_takes_mitmdump_flags_its_addons_declare(
        tmp_path: Path, origin: Callable[..., Origin]) -> None:
    """`-s` (the script loader's) and `--modify-headers` (modifyheaders') are declared by
    mitmdump's addons as they load, not by mitmproxy's core options: serve's start-up check
    knows them as mitmdump does, and the script and the option work beside robotsgate."""
    site = origin(robots="User-agent: *\nDisallow: /private\n")
    script = tmp_path / "mark.py"
    script.write_text("def response(flow):\n    flow.response.headers['x-marked'] = 'yes'\n")
    [answered], output = _through_serve(
        tmp_path, free_port(), ["-s", str(script), "--modify-headers", "/~q/x-asked/by-option"],
        [["-D", "-", "-o", "/dev/null", site.url("/public")]])
    assert "200" in answered.stdout.splitlines()[0], output
    assert "x-marked: yes" in answered.stdout.lower(), output
    assert site.saw("/public")
    assert [request.headers.get("x-asked") for request in site.seen
            if request.path == "/public"] == ["by-option"], output


def test_robotsgate_serve_refuses_a_bad_value_in_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(ROBOTSGATE), "serve", "--listen-port", str(free_port()), "--set",
         f"confdir={tmp_path}", "--set", "robots_mode=enforcee"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, env=clean_env({}))
    assert result.returncode == 2, result
    output = result.stdout + result.stderr
    assert "robotsgate: robots_mode must be one of enforce, monitor; got 'enforcee'" in output
    _refused_in_one_line(output)
    assert not (tmp_path / "robots-audit.jsonl").exists()


@pytest.mark.parametrize(("args", "env", "said"), [
    (["--listen-port", "99999"], {},
     "robotsgate serve: --listen-port must be a port number from 0 to 65535; got 99999"),
    (["-p", "70000"], {},
     "robotsgate serve: --listen-port must be a port number from 0 to 65535; got 70000"),
    (["--set", "listen_port=abc"], {},
     "robotsgate serve: listen_port must be a port number from 0 to 65535; got 'abc'"),
    ([], {"ROBOTSGATE_PORT": "abc"},
     "robotsgate serve: ROBOTSGATE_PORT must be a port number from 0 to 65535; got 'abc'"),
    ([], {"ROBOTSGATE_PORT": "99999"},
     "robotsgate serve: ROBOTSGATE_PORT must be a port number from 0 to 65535; got '99999'"),
    (["--listen-port", "abc"], {},
     "robotsgate serve: argument --listen-port/-p: invalid int value: 'abc'"),
])
def test_robotsgate_serve_refuses_a_port_that_is_no_port_in_one_line(
        tmp_path: Path, args: list[str], env: dict[str, str], said: str) -> None:
    """A traceback, exit status 1, before; mitmdump would listen on 99999 modulo 65536."""
    result = subprocess.run([str(ROBOTSGATE), "serve", *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60, env=clean_env(env))
    assert (result.returncode, result.stdout, result.stderr) == (2, "", said + "\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("args", "said"), [
    (["--set", "ssl_insecur=true"], "robotsgate: unknown option ssl_insecur; did you mean "
                                    "ssl_insecure?"),
    (["--listen-prot", "1"], "robotsgate serve: unrecognized arguments: --listen-prot; did you "
                             "mean --listen-port?"),
])
def test_robotsgate_serve_refuses_what_mitmproxy_would_let_pass(
        tmp_path: Path, args: list[str], said: str) -> None:
    result = subprocess.run(
        [str(ROBOTSGATE), "serve", "--listen-port", str(free_port()), "--set",
         f"confdir={tmp_path}", *args], cwd=tmp_path, capture_output=True, text=True,
        timeout=60, env=clean_env({}))
    assert result.returncode == 2, result
    assert said in result.stdout + result.stderr
    assert "usage:" not in result.stderr and "listening at" not in result.stdout


def test_robotsgate_serve_says_which_port_is_taken_and_what_to_do(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [str(ROBOTSGATE), "serve", "--listen-port", str(port), "--set",
             f"confdir={tmp_path}"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
            env=clean_env({}))
    assert result.returncode == 2
    assert f"127.0.0.1:{port} is in use" in result.stderr and "--listen-port" in result.stderr
    assert "--mode" not in result.stderr  # mitmproxy's own hint, which is not robotsgate's


def test_mitmdump_on_every_interface_without_proxyauth_warns(tmp_path: Path) -> None:
    port = free_port()
    command = mitmdump_command(port, tmp_path / "conf", {
        "robots_audit_log": str(tmp_path / "audit.jsonl")})
    command[command.index("--listen-host") + 1] = "0.0.0.0"
    with subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=mitmdump_env(), text=True) as process:
        assert process.stdout is not None
        lines = []
        try:
            for line in process.stdout:
                lines.append(line)
                if "SIGHUP reopens" in line:
                    break
        finally:
            process.terminate()
    output = "".join(lines)
    assert f"listening on every interface (port {port}) without proxyauth" in output


def test_robotsgate_loaded_twice_stops_the_start(tmp_path: Path) -> None:
    """Two gates in one proxy would decide every request twice, two audit chains in one log:
    addon.py and robotsgate/addon.py register under one addon name, and mitmproxy refuses the
    second (it did when addon.py held `addons = [RobotsGate()]`; it must now that the script
    holds the hooks itself)."""
    command = mitmdump_command(free_port(), tmp_path / "conf", {
        "robots_audit_log": str(tmp_path / "audit.jsonl")})
    command += ["-s", str(REPO / "robotsgate" / "addon.py")]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                          env=mitmdump_env(), timeout=60)
    output = done.stdout + done.stderr

    assert done.returncode == 1, output
    assert "An addon called 'robotsgate' already exists" in output
    assert "Error logged during startup, exiting" in output
    assert "obeying robots.txt" not in output


def test_robotsgate_serve_help_says_what_it_does() -> None:
    result = subprocess.run([str(ROBOTSGATE), "serve", "--help"], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 0
    assert "usage: robotsgate serve [mitmdump options]" in result.stdout
    assert "--listen-port 8080" in result.stdout


def _through_serve(workdir: Path, port: int, args: list[str], fetches: list[list[str]]
                   ) -> tuple[list["subprocess.CompletedProcess[str]"], str]:
    """`robotsgate serve` on `port`, run in `workdir` with a relative audit log and `args`, and a
    curl through it for each of `fetches` (curl's arguments); what each got, and what serve
    said."""
    command = [str(ROBOTSGATE), "serve", "--listen-port", str(port),
               "--set", f"confdir={workdir / 'conf'}", "--set", "robots_audit_log=audit.jsonl",
               "--set", "robots_egress_allow=127.0.0.0/8", *args]  # the test's site: loopback
    with subprocess.Popen(command, cwd=workdir, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=clean_env({})) as proc:
        try:
            _wait_for_port(port, proc)
            env = clean_env({"http_proxy": f"http://127.0.0.1:{port}"})
            got = [subprocess.run([require_tool("curl"), "-s", *fetch], env=env,
                                  capture_output=True, text=True, timeout=30)
                   for fetch in fetches]
        finally:
            proc.terminate()
            output = proc.communicate(timeout=30)[0].decode(errors="replace")
    return got, output


def _wait_for_port(port: int, proc: "subprocess.Popen[bytes]") -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"robotsgate serve exited {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    pytest.fail("robotsgate serve did not listen")


def test_an_unreachable_redis_is_said_at_start_up_not_at_the_first_request(
        tmp_path: Path) -> None:
    proxy = Proxy(tmp_path, {"robots_redis": f"redis://127.0.0.1:{free_port()}/0"})
    try:
        deadline = time.monotonic() + 10
        while "is unreachable" not in proxy.output() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proxy.stop()
    assert "is unreachable" in proxy.output() and "answering 503" in proxy.output()
