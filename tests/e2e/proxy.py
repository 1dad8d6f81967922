"""The proxy under test: a real ``mitmdump -s addon.py`` (or ``robotsgate serve``) on a free port
of 127.0.0.1.

``Proxy`` runs one with its own confdir and audit log until it is stopped; ``run_mitmdump`` runs
one that is expected to exit by itself (a configuration it must refuse).
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from .machine import REPO, clean_env, free_port, stop_process

ADDON = REPO / "addon.py"
# The origins of these tests listen on loopback addresses, which robotsgate refuses to send bots
# to unless told (robots_egress_allow); a test that checks that refusal sets its own value.
LOOPBACK = ("127.0.0.0/8", "::1")
MITMDUMP = Path(sys.executable).parent / "mitmdump"

START_TIMEOUT = 20.0  # seconds for mitmdump to accept connections


def mitmdump_command(port: int, confdir: Path, options: Mapping[str, Any], *,
                     serve: bool = False, addon: Path = ADDON) -> list[str]:
    """`mitmdump -s addon.py` (or another entry point, `addon`), or (`serve`) `robotsgate
    serve`, which loads the same addon into its lean master."""
    if serve and addon != ADDON:
        raise ValueError("robotsgate serve loads its own addon")
    options = {"robots_egress_allow": LOOPBACK, **options}
    start = [sys.executable, "-m", "robotsgate", "serve"] if serve else \
        [str(MITMDUMP), "-s", str(addon)]
    cmd = [
        *start,
        "--listen-host",
        "127.0.0.1",
        "--listen-port",
        str(port),
        "--set",
        f"confdir={confdir}",
    ]
    for name, value in options.items():
        # A list or tuple is a sequence option: one --set per entry.
        for item in value if isinstance(value, list | tuple) else [value]:
            cmd += ["--set", f"{name}={item}"]
    return cmd


def mitmdump_env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return clean_env({"PYTHONPATH": f"{REPO}{os.pathsep}{path}" if path else str(REPO)})


class Proxy:
    """A running ``mitmdump -s addon.py`` on 127.0.0.1."""

    def __init__(self, workdir: Path, options: Mapping[str, Any], *,
                 nofile: int | None = None, serve: bool = False, addon: Path = ADDON) -> None:
        self.workdir = workdir
        self.serve = serve
        self.addon = addon  # the script mitmdump loads (-s)
        self.nofile = nofile  # the process's limit of open descriptors, when lowered
        self.confdir = workdir / "conf"
        self.confdir.mkdir(parents=True, exist_ok=True)
        self.audit_path = workdir / "audit.jsonl"
        self.stdout_path = workdir / "mitmdump.out"
        self.stderr_path = workdir / "mitmdump.err"
        self.options = {"robots_audit_log": str(self.audit_path), **options}
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ca(self) -> Path:
        return self.confdir / "mitmproxy-ca-cert.pem"

    def output(self) -> str:
        parts = []
        for p in (self.stdout_path, self.stderr_path):
            if p.exists():
                parts.append(p.read_text(errors="replace"))
        return "\n".join(parts)

    def _start(self) -> None:
        for _attempt in range(3):
            self.port = free_port()
            cmd = mitmdump_command(self.port, self.confdir, self.options, serve=self.serve,
                                   addon=self.addon)
            with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
                self.process = subprocess.Popen(
                    cmd, stdout=out, stderr=err, cwd=REPO, env=mitmdump_env(),
                    preexec_fn=self._limit if self.nofile else None,
                )
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    break
                # mitmdump's own word that it listens: a connection alone could reach another
                # server that took the port first (this machine's network stack may hand a
                # port out again while a SO_REUSEADDR listener holds it), and then mitmdump
                # has exited with "address already in use".
                if f"listening at 127.0.0.1:{self.port}" not in self.output():
                    time.sleep(0.05)
                    continue
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                        pass
                except OSError:
                    time.sleep(0.05)
                    continue
                if self.ca.exists() and self.process.poll() is None:
                    return
                time.sleep(0.05)
            output = self.output()
            self.stop()
            if "address already in use" in output.lower():
                continue  # lost the race for the free port; try another
            pytest.fail(
                f"mitmdump did not start (exit {self.process.returncode}) with "
                f"{' '.join(cmd)}\n{output}"
            )
        pytest.fail(f"mitmdump could not bind a port:\n{self.output()}")

    def _limit(self) -> None:
        assert self.nofile is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    def descriptors(self) -> int:
        """How many descriptors the process has open now."""
        assert self.process is not None
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def stop(self) -> None:
        stop_process(self.process)

    def audit(self) -> list[dict[str, Any]]:
        """Every audit record written so far (each line must be one whole JSON object)."""
        if not self.audit_path.exists():
            return []
        text = self.audit_path.read_text()
        if text and not text.endswith("\n"):
            # A record is written in one flushed write; allow for one being written right now.
            time.sleep(0.2)
            text = self.audit_path.read_text()
        records = []
        for line in text.splitlines():
            assert line.strip(), f"empty line in audit log: {text!r}"
            record = json.loads(line)
            assert isinstance(record, dict), line
            records.append(record)
        return records

    def wait_audit(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The audit records once there are at least ``count`` (bounded wait)."""
        deadline = time.monotonic() + timeout
        records = self.audit()
        while len(records) < count and time.monotonic() < deadline:
            time.sleep(0.05)
            records = self.audit()
        assert len(records) >= count, f"expected {count} audit records, got {records}"
        return records


def run_mitmdump(
    tmp_path: Path, options: Mapping[str, Any], timeout: float = 30.0
) -> tuple[int | None, str]:
    """Run mitmdump that is expected to exit by itself; (exit code or None if it kept running,
    combined output)."""
    port = free_port()
    confdir = tmp_path / "conf"
    confdir.mkdir(parents=True, exist_ok=True)
    cmd = mitmdump_command(port, confdir, options)
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
        env=mitmdump_env(),
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=10)
        return None, out.decode(errors="replace")

