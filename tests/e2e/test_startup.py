"""Start-up through a real `mitmdump -s addon.py`: what it says it does, and what it refuses.

A mistyped option name or a bad value ends mitmdump before it listens, with one line that names
the option (and, for a name, the one probably meant) and no traceback; a good start says in one
line which agent, mode, semantics, audit log, store and metrics are in force.
"""

import time
from pathlib import Path

import pytest

from .proxy import Proxy, run_mitmdump


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
    assert f"unknown option {name}; did you mean {meant}?" in output
    assert "listening" not in output and "Traceback" not in output


@pytest.mark.parametrize(("option", "value", "said"), [
    ("robots_mode", "enforcee", "robots_mode must be one of enforce, monitor; got 'enforcee'"),
    ("robots_cache_ttl", "soon", "not an integer: soon"),
    ("robots_cache_ttl", "0", "robots_cache_ttl must be a whole number from 1 to 86400; got 0"),
    ("robots_agent", "My Bot", "robots_agent: must be a product token"),
    ("robots_audit_log", "/nonexistent-dir/audit.jsonl", "robots_audit_log: cannot open"),
])
def test_a_bad_value_stops_the_start_in_one_line_before_listening(
        option: str, value: str, said: str, tmp_path: Path) -> None:
    options = {"robots_audit_log": tmp_path / "a.jsonl", option: value}
    code, output = run_mitmdump(tmp_path, options)

    assert code == 2, output
    assert said in output
    assert "listening" not in output and "Traceback" not in output
    [line] = [line for line in output.splitlines() if line.startswith("robotsgate:")]
    assert option in line


def test_a_good_start_says_what_is_in_force(tmp_path: Path) -> None:
    proxy = Proxy(tmp_path, {"robots_agent": "TrialBot", "robots_mode": "monitor",
                             "robots_redis": "redis://:secret@127.0.0.1:6379/0"})
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
