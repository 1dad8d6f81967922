"""The clients of the end-to-end tests: curl, requests and httpx, each knowing only the proxy.

Each reaches origins only through its proxy settings (environment variables for curl,
``proxies=`` for requests, ``proxy=`` for httpx), trusts the proxy's CA, and never waits longer
than ``CLIENT_TIMEOUT``; each answers with the same ``Resp``.

The documented client recipes (deploy/clients/, README's HTTPS section) are run as a user runs
them: in the environment ``eval "$(scripts/proxy-env.sh ADDRESS CONFDIR)"`` leaves
(``recipe_env``), each URL answering one ``Fetched``.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import requests

from .machine import REPO, clean_env, require_tool
from .proxy import Proxy

CLIENT_TIMEOUT = 30.0  # seconds for any single client request


@dataclass
class Resp:
    """A response as any of the clients saw it (header names lower-cased)."""

    status: int
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")


def _join_headers(pairs: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pairs:
        key = name.lower()
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


def curl(
    proxy: Proxy,
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    data: bytes | None = None,
) -> Resp:
    """curl, pointed at the proxy through http_proxy/https_proxy and trusting the proxy's CA."""
    binary = require_tool("curl")
    env = clean_env({"http_proxy": proxy.url, "https_proxy": proxy.url, "HTTPS_PROXY": proxy.url})
    with tempfile.TemporaryDirectory(prefix="robotsgate-curl-") as d:
        head, body = Path(d) / "head", Path(d) / "body"
        cmd = [
            binary,
            "-sS",
            "--max-time",
            str(int(CLIENT_TIMEOUT)),
            "--suppress-connect-headers",
            "--cacert",
            str(proxy.ca),
            "-D",
            str(head),
            "-o",
            str(body),
        ]
        if method == "HEAD":
            cmd.append("-I")
        elif method != "GET" or data is not None:
            cmd += ["-X", method]
        if data is not None:
            cmd += ["--data-binary", "@-"]
        for name, value in (headers or {}).items():
            cmd += ["-H", f"{name}: {value}"]
        cmd.append(url)
        done = subprocess.run(
            cmd, input=data, capture_output=True, env=env, timeout=CLIENT_TIMEOUT + 10
        )
        assert done.returncode == 0, f"curl failed ({done.returncode}): {done.stderr!r}"
        blocks = [b for b in head.read_bytes().split(b"\r\n\r\n") if b.strip()]
        lines = blocks[-1].decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        pairs = []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            pairs.append((name.strip(), value.strip()))
        return Resp(status, _join_headers(pairs), body.read_bytes() if body.exists() else b"")


def requests_call(
    proxy: Proxy,
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    data: bytes | None = None,
) -> Resp:
    """requests with ``proxies=`` pointing at the proxy."""
    r = requests.request(
        method,
        url,
        headers=dict(headers or {}),
        data=data,
        proxies={"http": proxy.url, "https": proxy.url},
        verify=str(proxy.ca),
        timeout=CLIENT_TIMEOUT,
        allow_redirects=False,
    )
    return Resp(r.status_code, _join_headers(list(r.headers.items())), r.content)


def proxy_ssl_context(proxy: Proxy) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(proxy.ca))


def _httpx_settings(proxy: Proxy) -> dict[str, Any]:
    """What an httpx client, sync or async, needs to go through the proxy and nowhere else."""
    return {
        "proxy": proxy.url,
        "verify": proxy_ssl_context(proxy),
        "trust_env": False,
        "timeout": CLIENT_TIMEOUT,
    }


def httpx_client(proxy: Proxy, **kwargs: Any) -> httpx.Client:
    return httpx.Client(**_httpx_settings(proxy), **kwargs)


def httpx_async_client(proxy: Proxy, **kwargs: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(**_httpx_settings(proxy), **kwargs)


def httpx_call(
    proxy: Proxy,
    url: str,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    data: bytes | None = None,
) -> Resp:
    """httpx with ``proxy=`` pointing at the proxy."""
    with httpx_client(proxy) as client:
        r = client.request(method, url, headers=dict(headers or {}), content=data)
        return Resp(r.status_code, _join_headers(list(r.headers.multi_items())), r.content)


async def get_all_at_once(proxy: Proxy, urls: Sequence[str], *, timeout: float
                          ) -> list[httpx.Response]:
    """GET every URL at the same moment, each on a new connection of its own (none reused), all
    of it bounded by ``timeout`` seconds."""
    limits = httpx.Limits(max_connections=len(urls), max_keepalive_connections=0)
    async with httpx_async_client(proxy, limits=limits) as client:
        return await asyncio.wait_for(
            asyncio.gather(*(client.get(url) for url in urls)), timeout=timeout
        )


Client = Callable[..., Resp]
CLIENTS: dict[str, Client] = {"curl": curl, "requests": requests_call, "httpx": httpx_call}


def run_concurrently[T](calls: list[Callable[[], T]]) -> list[T]:
    """Run every call at once (each in a thread, released together); bounded in time.

    The first exception a call raised is raised here: a thread's own would only be printed, and
    a failure such as a missing client program would reach the test as an empty result.
    """
    results: list[T | None] = [None] * len(calls)
    errors: list[BaseException] = []
    start = threading.Barrier(len(calls))

    def run(i: int) -> None:
        start.wait(timeout=30)
        try:
            results[i] = calls[i]()
        except BaseException as exc:  # pytest.fail() raises a BaseException too
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
    assert not any(t.is_alive() for t in threads), "a client did not finish"
    return results  # type: ignore[return-value]  # every slot was filled: all threads ended


# --- the documented recipes ---------------------------------------------------------------------

CLIENT_RECIPES = REPO / "deploy" / "clients"
PROXY_ENV_SH = REPO / "scripts" / "proxy-env.sh"
RECIPE_TIMEOUT = 120.0  # seconds for one client run (a whole crawl, or a Go build and run)

# What makes one client or another trust a CA: none may leak in from the caller's environment.
CA_ENV_VARS = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "WGETRC",
)


@dataclass(frozen=True)
class Fetched:
    """One URL as a client run by its recipe got it."""

    url: str
    status: int
    body: str


class ClientFailed(Exception):
    """A client run by its recipe ended in an error; the message holds what it said."""


def recipe_env(proxy: Proxy, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment after ``eval "$(scripts/proxy-env.sh 127.0.0.1:PORT CONFDIR)"``.

    Starts from this process's environment without any proxy or CA setting, so that what the
    script exports is all a client has to go on; ``extra`` is added before the script runs.
    """
    base = {k: v for k, v in clean_env(extra).items() if k not in CA_ENV_VARS}
    done = subprocess.run(
        ["bash", "-c", 'eval "$("$0" "$1" "$2")" && env -0', str(PROXY_ENV_SH),
         f"127.0.0.1:{proxy.port}", str(proxy.confdir)],
        env=base, capture_output=True, timeout=30,
    )
    assert done.returncode == 0, f"proxy-env.sh failed: {done.stderr!r}"
    pairs = (entry.partition("=") for entry in done.stdout.decode().split("\0") if entry)
    return {name: value for name, _, value in pairs}


def without(env: Mapping[str, str], names: Sequence[str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in names}


def run_json_client(cmd: Sequence[str], env: Mapping[str, str]) -> list[Fetched]:
    """Run a client that prints one JSON line {"url", "status", "body"} per URL."""
    done = subprocess.run(list(cmd), env=dict(env), capture_output=True, text=True, cwd=REPO,
                          timeout=RECIPE_TIMEOUT)
    if done.returncode != 0:
        raise ClientFailed(f"{' '.join(cmd[:2])} exited {done.returncode}: {done.stderr}")
    return [Fetched(**json.loads(line)) for line in done.stdout.splitlines()]


def curl_recipe(env: Mapping[str, str], urls: Sequence[str]) -> list[Fetched]:
    """curl as a user runs it: the proxy from https_proxy/http_proxy, the CA from
    CURL_CA_BUNDLE."""
    binary = require_tool("curl")
    out = []
    with tempfile.TemporaryDirectory(prefix="robotsgate-curl-") as d:
        body = Path(d) / "body"
        for url in urls:
            done = subprocess.run(
                [binary, "-sS", "--max-time", str(int(CLIENT_TIMEOUT)), "-o", str(body),
                 "-w", "%{http_code}", url],
                env=dict(env), capture_output=True, text=True, timeout=CLIENT_TIMEOUT + 10)
            if done.returncode != 0:
                raise ClientFailed(f"curl exited {done.returncode}: {done.stderr}")
            out.append(Fetched(url, int(done.stdout), body.read_text(errors="replace")))
    return out


def wget_recipe(env: Mapping[str, str], urls: Sequence[str]) -> list[Fetched]:
    """wget as a user runs it: the proxy from https_proxy/http_proxy, the CA from the wgetrc
    that WGETRC names (``--content-on-error`` keeps the body of a refusal)."""
    binary = require_tool("wget")
    out = []
    with tempfile.TemporaryDirectory(prefix="robotsgate-wget-") as d:
        body = Path(d) / "body"
        for url in urls:
            done = subprocess.run(
                [binary, "--server-response", "--content-on-error", "--tries=1",
                 f"--timeout={int(CLIENT_TIMEOUT)}", "-O", str(body), url],
                env=dict(env), capture_output=True, text=True, timeout=CLIENT_TIMEOUT + 10)
            statuses = re.findall(r"^\s*HTTP/\S+ (\d{3})", done.stderr, re.MULTILINE)
            # 8: the server answered with an error status, which is an answer all the same.
            if done.returncode not in (0, 8) or not statuses:
                raise ClientFailed(f"wget exited {done.returncode}: {done.stderr}")
            out.append(Fetched(url, int(statuses[-1]), body.read_text(errors="replace")))
    return out
