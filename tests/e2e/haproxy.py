"""HAProxy running the shipped configuration (deploy/haproxy/robotsgate.cfg) in front of given
workers: used by tests/e2e/test_scaling.py and scripts/bench_fleet.py."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from .machine import REPO, free_port, require_tool

CONFIG = REPO / "deploy" / "haproxy" / "robotsgate.cfg"


class HAProxy:
    """The shipped configuration, listening on `port`, its servers the given workers."""

    def __init__(self, workdir: Path, workers: list[int]) -> None:
        self.ca: Path | None = None
        text = CONFIG.read_text()
        servers = re.findall(r"^    server .*$", text, re.MULTILINE)
        assert len(servers) == 2, "the shipped config names two workers"
        self.port = free_port()
        text = text.replace("bind 127.0.0.1:8080", f"bind 127.0.0.1:{self.port}")
        shipped = "\n".join(servers)
        text = text.replace(shipped, "\n".join(
            f"    server worker{port} 127.0.0.1:{port} check" for port in workers))
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "haproxy.cfg"
        config.write_text(text)
        binary = require_tool("haproxy", package="haproxy")
        check = subprocess.run([binary, "-c", "-f", str(config)], capture_output=True, text=True,
                               timeout=30)
        assert check.returncode == 0, check.stdout + check.stderr
        self.process = subprocess.Popen([binary, "-db", "-f", str(config)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        pytest.fail("haproxy did not listen")

    @property
    def url(self) -> str:  # what curl() is given as the proxy
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
