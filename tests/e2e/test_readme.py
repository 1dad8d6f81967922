"""The README's walk-through, run: what it shows is what a real proxy answers and records.

The README's "Five minutes with it" section is read, its site rebuilt on a real origin, and
its curl commands run through a real `mitmdump -s addon.py`; the answers and the audit record
must be the ones printed there (with the origin's real address in place of 127.0.0.1:8000).
"""

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .machine import REPO, clean_env, free_port, require_tool
from .origins import Origin
from .proxy import Proxy

SECTION = "## Five minutes with it"


def walk_through() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return text[start:end]


def shown_after(section: str, command: str) -> list[str]:
    """The lines a README code block shows after `$ <command>`, up to the next `$` or fence."""
    lines = section.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"$ {command}"))
    shown = []
    for line in lines[at + 1:]:
        if line.startswith(("$ ", "```")):
            break
        shown.append(line)
    return shown


def test_the_walk_through_shows_what_the_proxy_answers(
        origin: Callable[..., Origin], proxy: Callable[..., Proxy]) -> None:
    require_tool("curl")
    section = walk_through()
    # The site: the robots.txt the README's printf writes, and its two pages.
    [printf] = re.findall(r"printf '([^']*)' > robots.txt", section)
    site = origin(robots=printf.encode().decode("unicode_escape"))
    site.route("/", body="hello\n")
    site.route("/private/page.html", body="secret\n")
    here = f"{site.host}:{site.port}"
    # The proxy as the README starts it: every option it sets, and only those (the site's
    # address allowed as the README allows 127.0.0.1:8000, nothing else of loopback).
    [serve] = [line for line in section.splitlines() if line.startswith("$ scripts/serve.sh")]
    options = dict(re.findall(r"--set (\w+)=(\S+)", serve))
    assert set(options) == {"robots_agent", "robots_egress_allow"}, serve
    gate = proxy(**{name: value.replace("127.0.0.1:8000", here)
                    for name, value in options.items()})

    def run(command: str) -> list[str]:
        argv = command.replace("127.0.0.1:8080", f"127.0.0.1:{gate.port}") \
            .replace("127.0.0.1:8000", here).split()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True)
        return done.stdout.replace("\r\n", "\n").replace(here, "127.0.0.1:8000").splitlines()

    allowed = "curl -x http://127.0.0.1:8080 http://127.0.0.1:8000/"
    assert run(allowed) == shown_after(section, allowed)

    refused = "curl -i -x http://127.0.0.1:8080 http://127.0.0.1:8000/private/page.html"
    got, shown = run(refused), shown_after(section, refused)
    # Every line shown is in the answer, in the same order (the README leaves some headers out).
    lines = iter(got)
    missing = [line for line in shown if not any(line == seen for seen in lines)]
    assert missing == [], "\n".join(got)
    # The body is exactly what the README shows.
    assert got[got.index("") + 1:] == shown[shown.index("") + 1:]

    assert site.paths() == ["/robots.txt", "/"], "the disallowed page reached the site"

    # The audit record: every field the README shows, with the value it shows.
    [shown_record] = shown_after(section, "tail -1 robots-audit.jsonl")
    fields: dict[str, Any] = {}
    for name, value in re.findall(r'"(\w+)":("[^"]*"|\d+|null)', shown_record):
        fields[name] = json.loads(value)
    [record] = [r for r in gate.audit() if r["event"] == "block"]
    varying = {"ts", "user_agent", "client", "robots_fetched_at", "robots_sha256"}
    for name, value in fields.items():
        assert name in record, name
        if name not in varying:
            assert record[name] == json.loads(json.dumps(value).replace(
                "127.0.0.1:8000", here)), name
    assert record["robots_sha256"].startswith(
        re.search(r'"robots_sha256":"([0-9a-f]+)', shown_record)[1])  # type: ignore[index]

    # The tools it shows, as shown (from a checkout: .venv/bin), on this proxy's audit log.
    tools = [line[2:].split("  #")[0].strip() for line in section.splitlines()
             if line.startswith("$ .venv/bin/robotsgate ")]
    assert [tool.split()[1] for tool in tools] == ["report", "check"]
    for tool in tools:
        argv = tool.replace("robots-audit.jsonl", str(gate.audit_path)) \
            .replace("127.0.0.1:8000", here).split()
        done = subprocess.run([str(REPO / argv[0]), *argv[1:]], capture_output=True,
                              text=True, timeout=60, cwd=REPO)
        if argv[1] == "report":
            assert done.returncode == 0, done.stderr
            assert "Disallow: /private/" in done.stdout
        else:  # disallowed: exit 1, and the rule that says so
            assert done.returncode == 1, done.stderr
            assert "Disallow: /private/ (line 2)" in done.stdout


def test_the_walk_through_starts_the_proxy_as_shown(tmp_path: Path) -> None:
    """`scripts/serve.sh` with the README's options prints the lines the README shows (but for
    the times, and the paths of this checkout and of the directory it was started in)."""
    section = walk_through()
    command = next(line for line in section.splitlines()
                   if line.startswith("$ scripts/serve.sh"))
    shown = shown_after(section, command[2:])
    port = free_port()
    argv = [str(REPO / "scripts" / "serve.sh"), *command.split()[2:],
            "--set", f"confdir={tmp_path / 'conf'}"]
    env = clean_env({"ROBOTSGATE_PORT": str(port)})
    with subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        seen: list[str] = []
        try:
            for line in process.stdout:  # bounded: serve.sh has said all by its fourth line
                seen.append(line.rstrip("\n"))
                if len(seen) == len(shown):
                    break
        finally:
            process.terminate()

    def untimed(line: str) -> str:
        # Nor the proxy's id in its audit chain: its host name and a random part.
        line = re.sub(r"chained as proxy \S+-[0-9a-f]{8},", "chained as proxy ID,", line)
        return re.sub(r"^\[\d\d:\d\d:\d\d\.\d{3}\] ", "", line)
    expected = [untimed(line).replace("/home/me/robotsgate/robots-audit.jsonl",
                                      str(tmp_path / "robots-audit.jsonl"))
                .replace("/home/me/robotsgate", str(REPO)).replace(":8080", f":{port}")
                for line in shown]
    assert [untimed(line) for line in seen] == expected
    assert all(re.match(r"^\[\d\d:\d\d:\d\d\.\d{3}\] ", line) for line in shown)
