"""`robotsgate check`'s look at a site's RSL licences: each document its robots.txt names is
fetched and read (robotsgate.protocol.rsl), and what it says of the URL is shown per purpose.

The proxy does not enforce them: check shows them so that an operator can see what a site's
licence says of what their bots crawl for.
"""

import ssl
from typing import Any

import httpx

from robotsgate.protocol.rsl import MAX_BYTES, License, evaluate, read_rsl
from robotsgate.protocol.usage import CATEGORIES

MAX_REDIRECTS = 5


async def read_licences(licenses: tuple[License, ...], url: str, purposes: frozenset[str], *,
                        timeout: float, verify: ssl.SSLContext | bool,
                        user_agent: str) -> list[dict[str, Any]]:
    """Per License line: its document fetched and read, and what it says of `url` for each of
    `purposes` (the categories train-ai, search and ai-input when none is declared)."""
    asked = sorted(purposes) or list(CATEGORIES)
    found: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=timeout, verify=verify, follow_redirects=True,
                                 max_redirects=MAX_REDIRECTS, trust_env=False,
                                 headers={"User-Agent": user_agent}) as client:
        for license in licenses:
            facts: dict[str, Any] = {"url": license.url, "line": license.line, "error": None,
                                     "problems": [], "applies": None, "purposes": {}}
            found.append(facts)
            if not license.url.lower().startswith(("https://", "http://")):
                facts["error"] = "not a full URL: nothing to fetch"
                continue
            try:
                body = await _get(client, license.url)
            except (httpx.HTTPError, ValueError) as exc:
                facts["error"] = str(exc) or type(exc).__name__
                continue
            document = read_rsl(body, license.url)
            facts["problems"] = list(document.problems)
            terms = document.terms(url)
            if terms is None:
                continue
            content = terms.content
            facts["applies"] = {"content": content.url, "line": content.line,
                                "servers": list(terms.servers)}
            facts["purposes"] = {finding.purpose: {"answer": str(finding.answer),
                                                   "evidence": finding.evidence.cite()}
                                 for finding in evaluate(terms, asked)}
    return found


async def _get(client: httpx.AsyncClient, url: str) -> bytes:
    """The document's body, at most MAX_BYTES + 1 bytes of it (read_rsl refuses a longer one);
    ValueError for an answer that is not 200."""
    async with client.stream("GET", url) as response:
        if response.status_code != 200:
            raise ValueError(f"HTTP {response.status_code}")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_BYTES:
                break
    return bytes(body[:MAX_BYTES + 1])
