"""robots.txt retrieval over HTTP (RFC 9309 §2.3), with httpx.

The fetcher only retrieves and classifies; it keeps no state. What a result means for requests
(allow all, disallow all, keep a stale copy) is decided by the gate.
"""

import asyncio
import re
import ssl
import zlib
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin

import httpx

from robotsgate.protocol import MAX_BYTES

# RFC 9309 §2.3.1.2: follow at least five consecutive redirects.
MAX_REDIRECTS = 5
_MAX_AGE = re.compile(r"(?:^|[,\s])max-age\s*=\s*\"?(\d+)", re.IGNORECASE)

# ok: a body to parse; missing: 4xx, or no robots.txt reachable through redirects -- no
# restrictions; unreachable: 5xx, 429, network error -- complete disallow.
Outcome = Literal["ok", "missing", "unreachable"]


@dataclass(frozen=True, slots=True)
class FetchResult:
    outcome: Outcome
    robots_url: str  # the URL asked for; its rules apply to its origin wherever it redirected
    final_url: str  # where the body came from
    status: int | None  # the last HTTP status; None when no answer came
    body: bytes = b""  # at most MAX_BYTES
    headers: tuple[tuple[str, str], ...] = ()
    max_age: int | None = None  # Cache-Control max-age, seconds
    error: str | None = None  # why it is "unreachable" or "missing", in words


def classify(status: int) -> Outcome:
    if 200 <= status < 300:
        return "ok"
    if status == 429 or status >= 500:
        return "unreachable"
    if 400 <= status < 500:
        return "missing"
    return "unreachable"  # 1xx or anything odd: no usable answer


def max_age(cache_control: str | None) -> int | None:
    if not cache_control:
        return None
    if "no-store" in cache_control.lower() or "no-cache" in cache_control.lower():
        return 0
    found = _MAX_AGE.search(cache_control)
    return int(found[1]) if found else None


class Fetcher:
    """Fetches robots.txt files. One httpx client (and its connection pool) per fetcher."""

    def __init__(self, *, timeout: float, verify: ssl.SSLContext | bool = True,
                 proxy: str | None = None, transport: httpx.AsyncBaseTransport | None = None
                 ) -> None:
        self._timeout = timeout
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout), verify=verify, proxy=proxy, transport=transport,
            follow_redirects=False, trust_env=False,
            headers={"Accept": "text/plain, */*;q=0.5",
                     # Only what _read_capped can decompress within its bound.
                     "Accept-Encoding": "gzip, deflate"})

    async def aclose(self) -> None:
        await self._client.aclose()

    async def fetch(self, robots_url: str, user_agent: str | None) -> FetchResult:
        """Never raises for network or server trouble: that is an "unreachable" result."""
        try:
            # httpx's timeout is per operation; this bounds the whole fetch, so a server that
            # trickles bytes or redirects slowly cannot hold requests for longer.
            async with asyncio.timeout(self._timeout * 2):
                return await self._follow(robots_url, user_agent)
        except TimeoutError:
            return FetchResult("unreachable", robots_url, robots_url, None,
                               error=f"timed out after {self._timeout:g} s")
        except (httpx.HTTPError, OSError, ssl.SSLError, ValueError) as exc:
            return FetchResult("unreachable", robots_url, robots_url, None,
                               error=f"{type(exc).__name__}: {exc}")

    async def _follow(self, robots_url: str, user_agent: str | None) -> FetchResult:
        headers = {"User-Agent": user_agent} if user_agent else {}
        url = robots_url
        for _ in range(MAX_REDIRECTS + 1):
            async with self._client.stream("GET", url, headers=headers) as response:
                status = response.status_code
                location = response.headers.get("location")
                if 300 <= status < 400 and location:
                    url = urljoin(url, location)
                    continue
                outcome = classify(status)
                body = await _read_capped(response) if outcome == "ok" else b""
                return FetchResult(
                    outcome, robots_url, url, status, body,
                    tuple(response.headers.multi_items()),
                    max_age(response.headers.get("cache-control")),
                    None if outcome == "ok" else f"HTTP {status}")
        # RFC 9309 §2.3.1.2: not reached within five redirects -> may be treated as unavailable.
        return FetchResult("missing", robots_url, url, None,
                           error=f"more than {MAX_REDIRECTS} redirects")


async def _read_capped(response: httpx.Response) -> bytes:
    """The first MAX_BYTES of the decoded body; nothing past that is read or decompressed.

    Decompression is ours, not httpx's: httpx inflates each network chunk whole, and one 50 KB
    chunk of a gzip bomb is 50 MB. zlib's max_length keeps every step within the cap.
    """
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("gzip", "x-gzip"):
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        inflater = zlib.decompressobj()
    elif encoding in ("identity", ""):
        inflater = None
    else:
        raise ValueError(f"robots.txt sent with Content-Encoding {encoding!r}, not asked for")
    if response.is_stream_consumed:  # a transport that hands over whole, decoded bodies
        return response.content[:MAX_BYTES]
    chunks: list[bytes] = []
    size = 0
    async for raw in response.aiter_raw():
        data = raw if inflater is None else inflater.decompress(raw, MAX_BYTES - size)
        chunks.append(data)
        size += len(data)
        if size >= MAX_BYTES:
            break
    return b"".join(chunks)[:MAX_BYTES]
