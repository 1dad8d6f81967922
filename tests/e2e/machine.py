"""What the end-to-end tests need of the machine they run on.

The repository's root, free loopback ports, an environment with no proxy settings in it, and the
programs the tests run: a test that needs a program this machine lacks fails saying which one
and how to get it, rather than failing somewhere inside the test. A program a test started is
stopped in bounded time (``stop_process``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Everything in a caller's environment that could send a client around (or to another) proxy,
# or make it trust another CA.
PROXY_ENV_VARS = (
    "NO_PROXY",
    "no_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
)

def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any proxy setting, and with ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in PROXY_ENV_VARS}
    env.update(extra or {})
    return env


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def require_tool(name: str, *aliases: str, package: str | None = None) -> str:
    """The path of program ``name`` (or of one of its ``aliases``) on PATH.

    Without it the test fails at once, naming the program and the Debian package that has it
    (``package``, by default the program's own name): tests here are never skipped.
    """
    for candidate in (name, *aliases):
        found = shutil.which(candidate)
        if found is not None:
            return found
    pytest.fail(f"needs {name} on PATH: install it (apt-get install {package or name}), or run "
                f"scripts/test.sh, which installs everything", pytrace=False)


def stop_process(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 10 s; nothing if it has already ended."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
