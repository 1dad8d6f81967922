"""Redis for the tests: the shared one on 127.0.0.1:6379, and private ones that a test may stop.

Tests that share the Redis on 6379 each use their own random key prefix and delete their keys
afterwards, and call ``require_shared_redis()`` first: without that Redis they fail saying how
to start one. A test that stops Redis starts its own ``redis-server`` on a free loopback port.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .machine import free_port, require_tool, stop_process

SHARED_URL = os.environ.get("ROBOTSGATE_TEST_REDIS", "redis://127.0.0.1:6379/0")
START_TIMEOUT = 10.0


def require_shared_redis(url: str = SHARED_URL) -> None:
    """Fail the test, saying how to start one, unless the shared Redis answers a PING."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
        return
    except redis.RedisError as exc:
        error = exc  # failed below, outside this handler: the report is the message alone
    finally:
        client.close()
    # Host and port only: the URL may carry a password.
    where = urlsplit(url)
    port = where.port or 6379
    pytest.fail(f"needs a Redis on {where.hostname}:{port} ({error}): install and start one "
                f"(apt-get install redis-server; redis-server --port {port} --save ''), or run "
                f"scripts/test.sh, which installs everything and starts it", pytrace=False)


def new_prefix() -> str:
    return f"robotsgate-test:{secrets.token_hex(8)}:"


def delete_prefix(url: str, prefix: str) -> None:
    """Delete every key under ``prefix`` (synchronous client: usable from any fixture)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def ping(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A private ``redis-server`` on a free port of 127.0.0.1, nothing kept on disk."""

    def __init__(self, workdir: Path, *, options: tuple[str, ...] = (),
                 port: int | None = None) -> None:
        """`options`: more redis-server arguments (such as --cluster-enabled yes); `port`: a
        free port of one's choosing (a cluster node needs one 10000 below another free one)."""
        self.binary = require_tool("redis-server")
        self.workdir = workdir
        self.options = options
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port() if port is None else port
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start (again, on the same port): an empty Redis, as after a restart without disk."""
        assert self.process is None or self.process.poll() is not None
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.workdir),
             "--logfile", str(self.workdir / "redis.log"), *self.options],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while not ping(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = self.workdir / "redis.log"
                pytest.fail(f"redis-server did not start on port {self.port}: "
                            f"{log.read_text() if log.exists() else ''}")
            time.sleep(0.02)

    def stop(self) -> None:
        proc = self.process
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGCONT)  # a paused Redis would not hear the TERM
        stop_process(proc)

    def kill(self) -> None:
        """SIGKILL: gone at once, nothing written, every connection reset."""
        proc = self.process
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)

    def pause(self) -> None:
        """SIGSTOP: Redis neither answers nor runs anything, but keeps what it was sent."""
        assert self.process is not None and self.process.poll() is None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT: Redis runs what it was sent meanwhile, late."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stored_keys(self, pattern: str = "*") -> list[bytes]:
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port)
        with contextlib.closing(client):
            return sorted(client.scan_iter(match=pattern))
