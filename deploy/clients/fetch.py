"""Fetches URLs with one of Python's HTTP clients, configured by nothing but the environment.

    eval "$(scripts/proxy-env.sh)"
    python deploy/clients/fetch.py requests https://example.com/ https://example.com/private/x

CLIENT is requests, httpx, urllib or aiohttp; one JSON line per URL is printed: {"url",
"status", "body"}. Each call below is the library's plainest; what each reads from the
environment (all of them honour NO_PROXY too):

    requests  HTTP_PROXY/HTTPS_PROXY; REQUESTS_CA_BUNDLE (or else CURL_CA_BUNDLE) in place of
              certifi's CA list. SSL_CERT_FILE is not read.
    httpx     HTTP_PROXY/HTTPS_PROXY; SSL_CERT_FILE in place of certifi's CA list (both only
              while trust_env is True, its default).
    urllib    HTTP_PROXY/HTTPS_PROXY; SSL_CERT_FILE, through OpenSSL's default verify paths.
    aiohttp   nothing unless the session has trust_env=True: then HTTP_PROXY/HTTPS_PROXY. Its
              default SSL context takes SSL_CERT_FILE through OpenSSL's default verify paths,
              trust_env or not.
"""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Callable

TIMEOUT = 30  # seconds for one request


def with_requests(urls: list[str]) -> list[tuple[int, bytes]]:
    import requests

    return [(r.status_code, r.content) for r in (requests.get(u, timeout=TIMEOUT) for u in urls)]


def with_httpx(urls: list[str]) -> list[tuple[int, bytes]]:
    import httpx

    with httpx.Client(timeout=TIMEOUT) as client:
        return [(r.status_code, r.content) for r in (client.get(u) for u in urls)]


def with_urllib(urls: list[str]) -> list[tuple[int, bytes]]:
    out = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
                out.append((response.status, response.read()))
        except urllib.error.HTTPError as refused:  # urllib raises for a 4xx/5xx answer
            out.append((refused.code, refused.read()))
    return out


def with_aiohttp(urls: list[str]) -> list[tuple[int, bytes]]:
    import aiohttp

    async def fetch_all() -> list[tuple[int, bytes]]:
        timeout = aiohttp.ClientTimeout(total=TIMEOUT)
        async with aiohttp.ClientSession(trust_env=True, timeout=timeout) as session:
            out = []
            for url in urls:
                async with session.get(url) as response:
                    out.append((response.status, await response.read()))
            return out

    return asyncio.run(fetch_all())


CLIENTS: dict[str, Callable[[list[str]], list[tuple[int, bytes]]]] = {
    "requests": with_requests,
    "httpx": with_httpx,
    "urllib": with_urllib,
    "aiohttp": with_aiohttp,
}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in CLIENTS:
        print(f"usage: fetch.py {{{','.join(CLIENTS)}}} URL...", file=sys.stderr)
        return 2
    urls = argv[1:]
    for url, (status, body) in zip(urls, CLIENTS[argv[0]](urls), strict=True):
        print(json.dumps({"url": url, "status": status, "body": body.decode(errors="replace")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
