"""robots.txt retrieval over HTTP (RFC 9309 §2.3), with httpx.

The fetcher only retrieves and classifies; it keeps no state. What a result means for requests
(allow all, disallow all, keep a stale copy) is decided by the gate.
"""

import asyncio
import contextlib
import re
import socket
import ssl
import zlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from robotsgate.egress.policy import Refused
from robotsgate.egress.resolver import Resolver, Unresolved
from robotsgate.protocol import MAX_BYTES
from robotsgate.protocol.hosts import canonical_host

ACCEPT_TEXT = "text/plain, */*;q=0.5"  # robots.txt

# RFC 9309 §2.3.1.2: follow at least five consecutive redirects.
MAX_REDIRECTS = 5
_MAX_AGE = re.compile(r"(?:^|[,\s])max-age\s*=\s*\"?(\d+)", re.IGNORECASE)

# ok: a body to parse; missing: 4xx, or no robots.txt reachable through redirects -- no
# restrictions; unreachable: 5xx, 429, network error -- complete disallow.
FetchOutcome = Literal["ok", "missing", "unreachable"]


@dataclass(frozen=True, slots=True)
class FetchResult:
    outcome: FetchOutcome
    robots_url: str  # the URL asked for; its rules apply to its origin wherever it redirected
    final_url: str  # where the body came from
    status: int | None  # the last HTTP status; None when no answer came
    body: bytes = b""  # at most MAX_BYTES
    headers: tuple[tuple[str, str], ...] = ()
    max_age: int | None = None  # Cache-Control max-age, seconds
    error: str | None = None  # why it is "unreachable" or "missing", in words


def classify(status: int) -> FetchOutcome:
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


def fetch_user_agent(token: str | None, contact: str = "") -> str:
    """The User-Agent robots.txt is fetched with: the bot's product token (the proxy's own name
    when none is configured), and the operator's contact URL (RFC 9309 §2.2.1: crawlers name
    themselves, with a page about them). Never a byte a bot chose."""
    name = token or "robotsgate"
    return f"{name} (+{contact})" if contact else name


class EgressRefused(httpcore.ConnectError):
    """The address a robots.txt fetch (or one of its redirects) would connect to is one bots
    may not reach."""


class _Guarded(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to an address the egress policy allows:
    the one the resolver classified, not what the name resolves to a moment later. TLS still
    names the host (httpcore passes the URL's host as the server name)."""

    def __init__(self, resolver: Resolver) -> None:
        self._resolver = resolver
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        answer = await self._resolver.resolve(canonical_host(host), port)
        if isinstance(answer, Refused):
            raise EgressRefused(f"{host} is at {answer.describe()}, which is not reachable "
                                f"through this proxy")
        if isinstance(answer, Unresolved):
            raise httpcore.ConnectError(answer.error)
        return await self._inner.connect_tcp(answer, port, timeout=timeout,
                                             local_address=local_address,
                                             socket_options=socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        raise EgressRefused("robots.txt is never fetched over a Unix socket")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _GuardedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, verify: ssl.SSLContext | bool, resolver: Resolver,
                 limits: httpx.Limits) -> None:
        super().__init__(verify=verify)
        # httpx builds its pool with httpcore's default network backend and has no argument
        # for another: the same pool, built again with ours.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry, network_backend=_Guarded(resolver))


class Fetcher:
    """Fetches robots.txt files. One httpx client (and its connection pool) per fetcher.

    With a `resolver`, every connection (redirects included) goes only to an address its
    egress policy allows; through an upstream `proxy`, the proxy connects instead.

    At most `concurrency` fetches are in flight, each with a connection of its own (the pool
    holds as many): the others wait their turn, and a fetch's timeout starts when it starts.
    Waiting for the proxy's own resources is never a site's failure (which would be remembered
    for robots_error_ttl): a thousand new sites at once are fetched in turns, each judged by its
    own answer.
    """

    def __init__(self, *, timeout: float, verify: ssl.SSLContext | bool = True,
                 proxy: str | None = None, transport: httpx.AsyncBaseTransport | None = None,
                 resolver: Resolver | None = None, concurrency: int = 256) -> None:
        self._timeout = timeout
        self._turns = asyncio.Semaphore(concurrency)
        # A connection for every fetch in flight, so none waits for the pool (whose wait would
        # count in its timeout); a few kept alive, as robots.txt is fetched once a day a site.
        limits = httpx.Limits(max_connections=concurrency,
                              max_keepalive_connections=min(concurrency, 20))
        if transport is None and proxy is None and resolver is not None:
            transport = _GuardedTransport(verify, resolver, limits)
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout), verify=verify, proxy=proxy, transport=transport,
            limits=limits,
            follow_redirects=False, trust_env=False,
            # Only what _read_capped can decompress within its bound.
            headers={"Accept-Encoding": "gzip, deflate"})

    async def aclose(self) -> None:
        await self._client.aclose()

    async def fetch(self, robots_url: str, user_agent: str | None = None, *,
                    limit: int = MAX_BYTES, accept: str = ACCEPT_TEXT) -> FetchResult:
        """Never raises for network or server trouble: that is an "unreachable" result.
        `user_agent`: the proxy's (robotsgate.retrieval.fetch.user_agent), never a bot's. `limit`:
        the most of the body read (robots.txt's 500 KiB); `accept`: the Accept header. The same
        fetch, under the same egress policy, brings the proxy's other documents (RSL licences,
        robotsgate.licences)."""
        user_agent = user_agent or fetch_user_agent(None)
        async with self._turns:  # the queue is the proxy's: not timed
            return await self._fetch(robots_url, user_agent, limit, accept)

    async def post_form(self, url: str, form: dict[str, str], *, basic: tuple[str, str],
                        user_agent: str, limit: int = 64 * 1024) -> FetchResult:
        """An HTML form POSTed with HTTP Basic credentials (an OAuth 2.0 token request), under
        the same egress policy, turns and timeouts as every fetch; never a redirect followed
        (a credential is for the URL it was configured for). Never raises for network or
        server trouble: outcome "unreachable", with the error in words."""

        async def post() -> FetchResult:
            async with self._client.stream(
                    "POST", url, data=form, auth=basic,
                    headers={"User-Agent": user_agent, "Accept": "application/json"}) as response:
                body = await _read_capped(response, limit)
                return FetchResult(classify(response.status_code), url, url,
                                   response.status_code, body,
                                   tuple(response.headers.multi_items()),
                                   error=f"HTTP {response.status_code}")

        async with self._turns:
            return await self._bounded(url, post)

    async def _fetch(self, robots_url: str, user_agent: str, limit: int,
                     accept: str) -> FetchResult:
        return await self._bounded(
            robots_url, lambda: self._follow(robots_url, user_agent, limit, accept))

    async def _bounded(self, url: str, call: Callable[[], Awaitable[FetchResult]]
                       ) -> FetchResult:
        """`call`'s result, or "unreachable" with why: network and server trouble never raise.
        httpx's timeout is per operation; this bounds the whole exchange, so a server that
        trickles bytes or redirects slowly cannot hold requests for longer."""
        try:
            async with asyncio.timeout(self._timeout * 2):
                return await call()
        except TimeoutError:
            return FetchResult("unreachable", url, url, None,
                               error=f"timed out after {self._timeout * 2:g} s")
        except (httpx.HTTPError, OSError, ssl.SSLError, ValueError) as exc:
            return FetchResult("unreachable", url, url, None,
                               error=describe(exc, url, self._timeout))

    async def _follow(self, robots_url: str, user_agent: str, limit: int,
                      accept: str) -> FetchResult:
        headers = {"User-Agent": user_agent, "Accept": accept}
        url = robots_url
        for _ in range(MAX_REDIRECTS + 1):
            async with self._client.stream("GET", url, headers=headers) as response:
                status = response.status_code
                location = response.headers.get("location")
                if 300 <= status < 400 and location:
                    url = urljoin(url, location)
                    continue
                outcome = classify(status)
                headers_seen = tuple(response.headers.multi_items())
                if outcome != "ok":
                    return FetchResult(outcome, robots_url, url, status, b"", headers_seen,
                                       max_age(response.headers.get("cache-control")),
                                       f"HTTP {status}")
                try:
                    body = await _read_capped(response, limit)
                except Exception as exc:
                    # Whatever goes wrong reading the body (a cut or corrupt stream, zlib, the
                    # network) is an answer the gate remembers for robots_error_ttl; an
                    # exception would make every waiting request fetch again.
                    return FetchResult("unreachable", robots_url, url, status, b"", headers_seen,
                                       error=_words(exc, url, self._timeout))
                return FetchResult("ok", robots_url, url, status, body, headers_seen,
                                   max_age(response.headers.get("cache-control")))
        # RFC 9309 §2.3.1.2: not reached within five redirects -> may be treated as unavailable.
        return FetchResult("missing", robots_url, url, None,
                           error=f"more than {MAX_REDIRECTS} redirects")


def _words(exc: Exception, url: str, timeout: float) -> str:
    return str(exc) if isinstance(exc, BodyError) else describe(exc, url, timeout)


def describe(exc: BaseException, url: str, timeout: float) -> str:
    """Why a fetch got no answer, in the words an operator acts on.

    httpx wraps the cause twice (httpx -> httpcore -> the OSError or SSLError), and its own
    message can hide it ("All connection attempts failed" for a refused connection), so the
    chain is searched for the cause that says what to fix.
    """
    host = urlsplit(url).hostname or url
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain and len(chain) < 8:
        chain.append(link)
        link = link.__cause__ or link.__context__
    for cause in chain:
        if isinstance(cause, EgressRefused):
            return str(cause)
        if isinstance(cause, ssl.SSLCertVerificationError):
            # The reason openssl gives ("self-signed certificate", "hostname mismatch") and the
            # code people search for.
            return (f"TLS certificate of {host} not trusted: "
                    f"{cause.verify_message or cause.reason} (CERTIFICATE_VERIFY_FAILED); a "
                    f"site with a CA of its own is trusted through "
                    f"ssl_verify_upstream_trusted_ca")
        if isinstance(cause, ssl.SSLError):
            return f"TLS handshake with {host} failed: {cause.reason or cause}"
        if isinstance(cause, socket.gaierror):
            return f"DNS lookup of {host} failed: {cause.strerror or cause}"
        if isinstance(cause, ConnectionRefusedError):
            return f"connection to {host} refused"
        if isinstance(cause, ConnectionResetError):
            return f"connection reset by {host}"
    if isinstance(exc, httpx.TimeoutException):
        step = {httpx.ConnectTimeout: "connecting", httpx.ReadTimeout: "waiting for an answer",
                httpx.WriteTimeout: "sending the request",
                httpx.PoolTimeout: "waiting for a connection"}.get(type(exc), "")
        return f"timed out after {timeout:g} s" + (f" {step}" if step else "")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.LocalProtocolError):
        return f"not a valid HTTP answer from {host}: {exc}"
    return f"{type(exc).__name__}: {exc}"


class BodyError(ValueError):
    """A body that cannot be read whole: cut short, corrupt, or in an encoding not asked for."""


async def _read_capped(response: httpx.Response, limit: int = MAX_BYTES) -> bytes:
    """The first `limit` bytes of the decoded body; nothing past that is read or decompressed.

    Decompression is ours, not httpx's: httpx inflates each network chunk whole, and one 50 KB
    chunk of a gzip bomb is 50 MB. zlib's max_length keeps every step within the cap.

    Whole or not at all: a compressed body that ends early or fails its checks raises BodyError,
    never returns the part that was read (the missing part may be the Disallow). A body cut by
    the cap is not "ended early": the cap is where reading stops, as RFC 9309 §2.5 allows.
    """
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("identity", ""):
        inflater = None
    elif encoding in ("gzip", "x-gzip", "deflate"):
        inflater = _Inflater("deflate" if encoding == "deflate" else "gzip")
    else:
        raise BodyError(f"sent with Content-Encoding {encoding!r}, not asked for")
    chunks: list[bytes] = []
    size = 0
    async with contextlib.aclosing(_raw_body(response)) as body:
        async for raw in body:
            data = raw if inflater is None else inflater.feed(raw, limit - size)
            chunks.append(data)
            size += len(data)
            if size >= limit:  # capped: the rest is neither read nor inflated
                return b"".join(chunks)[:limit]
    if inflater is not None:
        inflater.finish()
    return b"".join(chunks)


async def _raw_body(response: httpx.Response) -> AsyncGenerator[bytes]:
    """The body's bytes as they were sent, before any Content-Encoding is undone."""
    if not response.is_stream_consumed:
        async for raw in response.aiter_raw():
            yield raw
        return
    # A transport that hands over whole bodies (httpx's MockTransport, in tests and tools): httpx
    # has decoded it already, its own way (the first gzip member only, a cut stream unnoticed,
    # no cap). Its stream still holds the bytes as sent, so they are read again and decoded here
    # like any other body.
    seen = False
    if isinstance(response.stream, httpx.AsyncByteStream):
        async for raw in response.stream:
            seen = seen or bool(raw)
            yield raw
    if not seen and response.content:
        raise BodyError("the body was read before robotsgate could check its encoding")


class _Inflater:
    """Undoes gzip or deflate step by step, never producing more than it is given room for.

    gzip: every member, one after the other (RFC 1952 §2.2: a gzip file is a series of
    members); bytes after a member that do not start another one are corruption, not an end.
    deflate: with a zlib header (RFC 9110 §8.4.1.2) or without one, as many servers send it.
    """

    def __init__(self, kind: Literal["gzip", "deflate"]) -> None:
        self._kind = kind
        self._zlib: zlib._Decompress | None = None  # deflate: None until its first 2 bytes
        self._head = b""  # deflate: bytes held until there are two to tell zlib from raw
        self._members = 0  # gzip members started
        self._member_out = 0  # bytes the current member has decoded to so far
        self._started = False  # any byte received

    def feed(self, data: bytes, room: int) -> bytes:
        """What `data` decodes to, at most `room` (> 0) bytes; past that, nothing is kept."""
        self._started = self._started or bool(data)
        if self._zlib is None:
            data = self._first(data)
        out: list[bytes] = []
        try:
            while data and room > 0 and self._zlib is not None:
                if self._zlib.eof:
                    self._next_member()
                chunk = self._zlib.decompress(data, room)  # room > 0: max_length 0 is no limit
                out.append(chunk)
                self._member_out += len(chunk)
                room -= len(chunk)
                data = self._zlib.unused_data if self._zlib.eof else self._zlib.unconsumed_tail
        except zlib.error as exc:
            raise BodyError(self._corrupt(exc)) from None
        return b"".join(out)

    def finish(self) -> None:
        """The body has ended: raise BodyError unless the compressed stream ended with it."""
        if not self._started:
            return  # an empty body: nothing was compressed, nothing is missing
        if self._zlib is None or not self._zlib.eof:
            raise BodyError(f"{self._kind} body truncated")

    def _first(self, data: bytes) -> bytes:
        if self._kind == "gzip":
            self._next_member()
            return data
        self._head += data
        if len(self._head) < 2:
            return b""  # too early to tell zlib from raw deflate
        self._zlib = zlib.decompressobj(_deflate_wbits(self._head))
        data, self._head = self._head, b""
        return data

    def _next_member(self) -> None:
        if self._kind == "deflate" and self._zlib is not None:
            raise BodyError("corrupt deflate body: bytes after the end of its stream")
        self._members += 1
        self._member_out = 0
        self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip header and trailer checked

    def _corrupt(self, exc: zlib.error) -> str:
        if self._kind == "gzip" and self._members > 1 and self._member_out == 0:
            # Most likely no member at all: padding or junk after the last one.
            return (f"corrupt gzip body: the bytes after member {self._members - 1} are not "
                    f"another member ({exc})")
        return f"corrupt {self._kind} body: {exc}"


def _deflate_wbits(head: bytes) -> int:
    """zlib-wrapped (RFC 1950) when the first two bytes are a zlib header, else raw (RFC 1951).

    "deflate" means zlib-wrapped, but many servers send raw deflate: like curl and browsers, try
    the zlib header first and fall back to raw deflate.
    """
    try:
        zlib.decompressobj().decompress(head[:2])
    except zlib.error:
        return -zlib.MAX_WBITS
    return zlib.MAX_WBITS
