"""The commands the documentation site shows, run as shown: each page's block is read from the
page, and only what cannot be the same on a test machine is replaced (the site's address by a
real origin's, ports by free ones, /opt and /srv by temporary directories).

The README's commands are run by test_readme.py, the HTTPS page's by test_clients.py, the
scaling page's units and HAProxy configuration by test_deploy.py and test_scaling.py.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from .machine import REPO, clean_env, free_port, require_tool
from .origins import Origin
from .proxy import Proxy

DOCS = REPO / "docs"
ROBOTSGATE = Path(sys.executable).parent / "robotsgate"
ROBOTS = "User-agent: *\nDisallow: /private\n"
STARTED = "obeying robots.txt"


def block(page: str, language: str, index: int = 0) -> str:
    """The `index`-th fenced block of `language` on a page, its continued lines joined."""
    text = (DOCS / page).read_text()
    blocks = re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)
    return str(blocks[index]).replace("\\\n", " ")


def curl_status(proxy_port: int, url: str) -> str:
    done = subprocess.run([require_tool("curl"), "-s", "-o", "/dev/null", "-w", "%{http_code}",
                           "-x", f"http://127.0.0.1:{proxy_port}", url],
                          capture_output=True, text=True, timeout=30, env=clean_env())
    return done.stdout


def wait_for(path: Path, text: str, process: subprocess.Popen[bytes], timeout: float = 30.0,
             count: int = 1) -> str:
    """The output in `path` once it holds `text` `count` times (fails if the process ends)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        said = path.read_text(errors="replace") if path.exists() else ""
        if said.count(text) >= count:
            return said
        assert process.poll() is None, said
        time.sleep(0.05)
    raise AssertionError(f"no {text!r} in {path}:\n{said}")


@contextmanager
def running(argv: list[str], cwd: Path, env: dict[str, str], out: Path
            ) -> Iterator[subprocess.Popen[bytes]]:
    """A process group (a shell and what it starts), stopped as a whole."""
    with out.open("wb") as sink:
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=sink,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield process
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_the_tools_page_commands_answer_as_it_says(
        tmp_path: Path, origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    """check, lint and report as the tools page shows them, example.com being a real origin and
    robots-audit.jsonl the audit log of a proxy that blocked one request."""
    site = origin(robots=ROBOTS + "Dissallow: /old\n")
    gate = proxy(robots_agent="MyBot")
    assert curl_status(gate.port, site.url("/private/x")) == "403"
    gate.wait_audit(1)
    shutil.copy(gate.audit_path, tmp_path / "robots-audit.jsonl")
    here = f"http://{site.host}:{site.port}"
    commands = [line.split("  #")[0].strip() for line in block("operating/tools.md", "sh")
                .splitlines()]
    assert [command.split()[1] for command in commands] == ["check", "lint", "report",
                                                             "options"]
    done = {}
    for command in commands:
        argv = shlex.split(command.replace("https://example.com", here))
        done[argv[1]] = subprocess.run([str(ROBOTSGATE), *argv[1:]], cwd=tmp_path,
                                       capture_output=True, text=True, timeout=60,
                                       env=clean_env())
    # check: MyBot would not get it, and why (exit 1: disallowed).
    assert done["check"].returncode == 1, done["check"].stderr
    assert "Disallow: /private (line 2)" in done["check"].stdout
    # lint: the misspelling, at its line.
    assert f"{here}/robots.txt:3: misspelling:" in done["lint"].stdout, done["lint"]
    # report: the week's blocks, and the page it writes.
    assert done["report"].returncode == 0, done["report"].stderr
    assert site.url("/private/x") in done["report"].stdout
    assert "Disallow: /private" in (tmp_path / "week.html").read_text()
    # options: those about the audit log, each with its default.
    assert done["options"].returncode == 0, done["options"].stderr
    assert re.findall(r"^(robots_\w+)  \(default", done["options"].stdout, re.MULTILINE) == [
        "robots_audit_failure", "robots_audit_log", "robots_audit_max_bytes",
        "robots_audit_keep", "robots_audit_checkpoint"]


def test_the_options_pages_config_yaml_is_what_the_proxy_runs_with(
        tmp_path: Path, origin: Callable[..., Origin]) -> None:
    """The options page's config.yaml, in the proxy's confdir, sets what it says: a bot named
    by its address range and one by its proxy user, and no private address reachable."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "config.yaml").write_text(block("operating/options.md", "yaml"))
    gate = Proxy(tmp_path, {"robots_egress_allow": []})
    try:
        said = wait_for(gate.stdout_path, STARTED, gate.process)  # type: ignore[arg-type]
        # The private-address refusal in force: the loopback site is not reached.
        site = origin(robots=ROBOTS)
        assert curl_status(gate.port, site.url("/")) == "403"
        assert site.seen == []
    finally:
        gate.stop()
    [line] = [line for line in said.splitlines() if STARTED in line]
    assert "2 client mappings first (robots_agents)" in line, line
    assert line.endswith("; bots may not reach private either"), line
    [record] = gate.audit()
    assert record["reason"] == "destination"


def test_the_start_up_line_is_the_one_the_proxy_page_shows(tmp_path: Path) -> None:
    shown = block("operating/proxy.md", "").strip()
    audit_log = tmp_path / "srv" / "robots-audit.jsonl"
    audit_log.parent.mkdir()
    port = free_port()
    out = tmp_path / "out"
    with running([str(ROBOTSGATE), "serve", "--listen-port", str(port), "--set",
                  f"confdir={tmp_path / 'conf'}", "--set", "robots_agent=MyBot", "--set",
                  f"robots_audit_log={audit_log}"], tmp_path, clean_env(), out) as process:
        said = wait_for(out, STARTED, process)
    [line] = [line for line in said.splitlines() if STARTED in line]
    # The proxy's id in its audit chain is its host name and a random part.
    line = re.sub(r"chained as proxy \S+-[0-9a-f]{8},", "chained as proxy HOST-1a2b3c4d,", line)
    assert re.sub(r"^\[[\d:.]+\] ", "", line) == \
        shown.replace("/srv/robots-audit.jsonl", str(audit_log))


def test_the_install_page_installs_a_package_that_serves(
        tmp_path: Path, origin: Callable[..., Origin]) -> None:
    """The install page's three lines, /opt/robotsgate a temporary venv and /path/to/robotsgate
    a copy of this checkout: the package installed (not this checkout) starts the proxy and
    gates. The venv finds the dependencies in this one's site-packages (a .pth line), as if pip
    had installed them, so the test does not download mitmproxy again; robotsgate itself is
    built and installed."""
    checkout = tmp_path / "robotsgate"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, checkout / name)
    venv = tmp_path / "opt"
    lines = block("getting-started/install.md", "sh", 1).splitlines()
    make, install, serve = (shlex.split(line.split("  #")[0].replace(
        "/opt/robotsgate", str(venv)).replace("/path/to/robotsgate", str(checkout)))
        for line in lines)
    assert make[:3] == ["python3.12", "-m", "venv"], lines
    subprocess.run([sys.executable, *make[1:]], check=True, timeout=120)
    ours = next(p for p in map(Path, sys.path) if p.name == "site-packages" and
                str(p).startswith(sys.prefix))
    [site_packages] = venv.glob("lib/python3*/site-packages")
    (site_packages / "dependencies.pth").write_text(f"{ours}\n")
    installed = subprocess.run([*install, "--no-deps", "-q"], capture_output=True, text=True,
                               timeout=600)
    assert installed.returncode == 0, installed.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import robotsgate; print(robotsgate.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert where.startswith(str(site_packages)), where

    site = origin(robots=ROBOTS)
    port = free_port()
    out = tmp_path / "out"
    with running([*serve, "--listen-port", str(port), "--set", f"confdir={tmp_path / 'conf'}",
                  "--set", "robots_egress_allow=127.0.0.0/8"], tmp_path, clean_env(),
                 out) as process:
        said = wait_for(out, STARTED, process)
        statuses = curl_status(port, site.url("/private/x")), curl_status(port, site.url("/"))
    assert "as MyBot (robots_agent)" in said
    assert statuses == ("403", "200")
    assert site.paths() == ["/robots.txt", "/"]


def test_the_fleet_pages_three_proxies_share_one_redis(
        tmp_path: Path, origin: Callable[..., Origin]) -> None:
    """The fleet page's block, run by bash as shown but for the ports (Redis's and the three
    proxies'), the checkout's path, a HOME of its own (the shared confdir), and the site's
    address (the page allows the five-minute page's site on loopback): three proxies, one
    robots.txt fetch for all of them."""
    require_tool("redis-server")
    redis_port, ports = free_port(), [free_port() for _ in range(3)]
    pidfile = tmp_path / "redis.pid"
    site = origin(robots=ROBOTS + "Crawl-delay: 1\n")
    address = site.url("/").split("/")[2]
    script = block("operating/fleet.md", "sh") \
        .replace("--port 6379", f"--port {redis_port} --pidfile {pidfile}") \
        .replace("127.0.0.1:6379", f"127.0.0.1:{redis_port}") \
        .replace("8081 8082 8083", " ".join(map(str, ports))) \
        .replace("scripts/serve.sh", str(REPO / "scripts" / "serve.sh")) \
        .replace("robots_egress_allow=127.0.0.1:8000", f"robots_egress_allow={address}")
    assert script.count(str(redis_port)) == 2, script
    assert f"robots_egress_allow={address} &" in script, script  # as the page shows it
    env = clean_env({"HOME": str(tmp_path)})
    out = tmp_path / "out"
    try:
        with running(["bash", "-c", script + "wait\n"], tmp_path, env, out) as process:
            said = wait_for(out, STARTED, process, count=3, timeout=60)
            statuses = [curl_status(port, site.url(f"/page/{port}")) for port in ports]
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGTERM)
    assert said.count(f"Redis redis://127.0.0.1:{redis_port}/0") == 3, said
    assert statuses == ["200"] * 3
    assert len(site.robots_fetches()) == 1  # one fetch for the three proxies
    # One schedule for the three: the second and third request each waited for the one before.
    records = [json.loads(line) for port in ports
               for line in (tmp_path / f"audit-{port}.jsonl").read_text().splitlines()]
    assert [record["event"] for record in records] == ["delay", "delay"], records
