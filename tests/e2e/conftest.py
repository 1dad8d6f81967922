"""Fixtures for the end-to-end tests: real origins, a real mitmdump, real clients.

Clients reach origins only through proxy settings (environment variables for curl, ``proxies=``
for requests, ``proxy=`` for httpx); every wait is bounded so no test can hang.
"""

from __future__ import annotations

import contextlib
import ssl
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .clients import CLIENTS, Client
from .machine import PROXY_ENV_VARS
from .origins import Origin, serving
from .proxy import ADDON, Proxy
from .tls import CertAuthority, make_test_ca


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing from the caller's environment may send a client around (or to another) proxy."""
    for name in PROXY_ENV_VARS:
        monkeypatch.delenv(name, raising=False)


# The suites about what may leave run against `robotsgate serve` too: its master leaves out the
# mitmdump addons nothing asked for, and every guarantee must hold with them gone.
SERVE_TOO = frozenset({"test_attacks", "test_bypass", "test_what_leaves", "test_proxy"})


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "proxy" in metafunc.fixturenames and \
            metafunc.module.__name__.rsplit(".", 1)[-1] in SERVE_TOO:
        metafunc.parametrize("proxy_kind", ["mitmdump", "serve"], indirect=True)


@pytest.fixture
def proxy_kind(request: pytest.FixtureRequest) -> str:
    """How the proxy of a test is started: `mitmdump -s addon.py`, or `robotsgate serve`."""
    return str(getattr(request, "param", "mitmdump"))


@pytest.fixture
def proxy(tmp_path: Path, test_ca: CertAuthority, proxy_kind: str
          ) -> Iterator[Callable[..., Proxy]]:
    """Factory: ``proxy(robots_mode="monitor", ...)`` starts mitmdump with those ``--set``s.

    ``trust_test_ca=True`` makes it trust the test CA for upstream TLS
    (``ssl_verify_upstream_trusted_ca``); ``nofile`` lowers its limit of open descriptors;
    ``addon`` is the script mitmdump loads instead of addon.py (robotsgate's addons built
    another way, e.g. with a clock of the test's).
    """
    started: list[Proxy] = []

    def start(*, trust_test_ca: bool = False, nofile: int | None = None,
              addon: Path = ADDON, **options: Any) -> Proxy:
        if trust_test_ca:
            options["ssl_verify_upstream_trusted_ca"] = str(test_ca.ca_pem)
        p = Proxy(tmp_path / f"proxy{len(started)}", options, nofile=nofile,
                  serve=proxy_kind == "serve", addon=addon)
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()


# --- origins -----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def test_ca() -> Iterator[CertAuthority]:
    with tempfile.TemporaryDirectory(prefix="robotsgate-e2e-ca-") as d:
        yield make_test_ca(Path(d))


def _origins(tls: Callable[[], ssl.SSLContext] | None) -> Iterator[Callable[..., Origin]]:
    """An origin fixture's factory: each origin speaks TLS with a context of its own from ``tls``
    (None: plain HTTP), and every one is stopped when the test ends."""
    with contextlib.ExitStack() as started:

        def start(host: str = "127.0.0.1", robots: str | bytes | None = None) -> Origin:
            return started.enter_context(
                serving(robots, host, tls=tls() if tls is not None else None))

        yield start


@pytest.fixture
def origin() -> Iterator[Callable[..., Origin]]:
    """Factory: ``origin(host="127.0.0.1", robots=None)`` starts a plain HTTP origin."""
    yield from _origins(tls=None)


@pytest.fixture
def https_origin(test_ca: CertAuthority) -> Iterator[Callable[..., Origin]]:
    """Factory: like ``origin`` but speaking TLS with a certificate from the test CA."""
    yield from _origins(tls=test_ca.server_context)


@pytest.fixture(params=sorted(CLIENTS))
def client(request: pytest.FixtureRequest) -> Client:
    """Each of curl, requests and httpx in turn."""
    return CLIENTS[request.param]
