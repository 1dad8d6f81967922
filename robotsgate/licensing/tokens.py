"""Licences obtained from RSL licence servers (the Open License Protocol, an OAuth 2.0
extension), for a request whose licences name one and that nothing refuses first (judging.py).

A token is asked of `{server}/token` (the server as the operator configured it; never a
redirect), with the client's credentials as HTTP Basic, `grant_type=rsl`, `resource` (the
covering `<content>`'s url, made absolute: one licence per content, not per page) and `license`
(the `<license>` element asked under: the first that grants one of the bot's purposes). The
answer's `access_token` must be a token68 (it goes into a header as it is); `expires_in` (else
TOKEN_TTL, at most robots_cache_ttl) bounds its use, less TOKEN_MARGIN. A failure is remembered
for robots_error_ttl. Requests go by the same fetcher as the documents, so under the egress
policy, as the proxy. An origin that answers 401 with `WWW-Authenticate: License` drops the
token (forget), and the request is sent once more with a new one (robotsgate.mitm.licensing).

Its own module because a token is a credential, with its own lifetime and its own failures (the
server's OAuth errors), and never a fact about what a document says.
"""

import asyncio
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

import cachetools

from robotsgate.escape import escaped
from robotsgate.licensing.kept import LicenseFetcher, once
from robotsgate.licensing.servers import Credentials, server_key
from robotsgate.retrieval.fetch import FetchResult, fetch_user_agent

logger = logging.getLogger(__name__)

TOKEN_TTL = 300  # seconds a token is used when its server says nothing of its lifetime
TOKEN_MARGIN = 30  # a token is asked for again this long before it expires
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")  # RFC 9110 §11.2: what a credential may be


@dataclass(frozen=True, slots=True)
class LicenseToken:
    """A licence obtained from a licence server: presented as `Authorization: License ...`."""

    value: str = field(repr=False)
    server: str
    resource: str
    expires_at: float

    @property
    def header(self) -> str:
        return f"License {self.value}"


@dataclass(frozen=True, slots=True)
class NoToken:
    """A token request that failed, remembered for error_ttl."""

    kind: Literal["required", "unavailable"]  # refused by the server; or not reached
    error: str
    expires_at: float


def token_of(result: FetchResult, server: str, resource: str, now: float,
             cache_ttl: int, error_ttl: int) -> LicenseToken | NoToken:
    """What a licence server's answer to a token request means (RFC 6749 §5.1, §5.2)."""
    if result.status is None or result.outcome == "unreachable":
        return NoToken("unavailable", f"licence server {server}: {result.error}",
                       now + error_ttl)
    try:
        answer = json.loads(result.body)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return NoToken("required" if result.status < 500 else "unavailable",
                       f"licence server {server}: HTTP {result.status}, not a JSON object",
                       now + error_ttl)
    if result.status != 200:
        error = answer.get("error")
        said = f"{error}" if isinstance(error, str) else f"HTTP {result.status}"
        return NoToken("required", f"licence server {server} refused the licence: "
                                   f"{escaped(said[:200])}", now + error_ttl)
    value = answer.get("access_token")
    if not isinstance(value, str) or not _TOKEN68.fullmatch(value):
        return NoToken("required", f"licence server {server}: no usable access_token",
                       now + error_ttl)
    lifetime = answer.get("expires_in")
    seconds = lifetime if isinstance(lifetime, int) and lifetime > 0 else TOKEN_TTL
    return LicenseToken(value, server, resource, now + min(seconds, cache_ttl))


class LicenseServers:
    """Tokens per (licence server, resource), asked once however many requests wait for one,
    kept until they expire (a failure, for error_ttl)."""

    def __init__(self, fetcher: LicenseFetcher, clock: Callable[[], float],
                 credentials: Mapping[str, Credentials], *, cache_ttl: int, error_ttl: int,
                 contact: str, size: int) -> None:
        self._fetcher = fetcher
        self._clock = clock
        self._credentials = dict(credentials)
        self._cache_ttl = cache_ttl
        self._error_ttl = error_ttl
        self._contact = contact
        self._tokens: cachetools.LRUCache[tuple[str, str], LicenseToken | NoToken] = \
            cachetools.LRUCache(size)
        self._asking: dict[tuple[str, str], asyncio.Task[LicenseToken | NoToken]] = {}
        self.requests = 0  # token requests sent, for tests

    def credentials(self, server: str) -> Credentials | None:
        """The operator's credentials for `server` (robots_license_credentials); None: none."""
        return self._credentials.get(server_key(server))

    async def token(self, server: str, resource: str, xml: str,
                    credentials: Credentials) -> LicenseToken | NoToken:
        """A licence for `resource`, asked under the <license> `xml`: as kept, or asked now."""
        key = (server_key(server), resource)
        kept = self._tokens.get(key)
        margin = TOKEN_MARGIN if isinstance(kept, LicenseToken) else 0
        if kept is not None and kept.expires_at - margin > self._clock():
            return kept
        return await once(self._asking, key,
                          lambda: self._ask(key, server, resource, xml, credentials))

    def forget(self, token: LicenseToken) -> None:
        """A token the origin would not take (401, WWW-Authenticate: License): the next
        request asks for another."""
        key = (server_key(token.server), token.resource)
        if self._tokens.get(key) == token:
            del self._tokens[key]

    async def _ask(self, key: tuple[str, str], server: str, resource: str, xml: str,
                   credentials: Credentials) -> LicenseToken | NoToken:
        """The Open License Protocol's token request: POST {server}/token, the client's
        credentials as HTTP Basic (RFC 6749 §2.3.1), grant type rsl, the <license> asked under
        and the resource."""
        self.requests += 1
        form = {"grant_type": "rsl", "resource": resource}
        if xml:
            form["license"] = xml
        result = await self._fetcher.post_form(
            key[0] + "/token", form,  # the server as the operator configured it
            basic=(credentials.client_id, credentials.secret),
            user_agent=fetch_user_agent(None, self._contact))
        token = token_of(result, server, resource, self._clock(), self._cache_ttl,
                         self._error_ttl)
        if isinstance(token, NoToken) and credentials.secret in token.error:
            # The server's own words may repeat what it was sent: never into a log or record.
            token = replace(token, error=token.error.replace(credentials.secret, "[secret]"))
        if isinstance(token, NoToken):
            logger.warning("robotsgate: no licence for %s: %s", resource, token.error)
        self._tokens[key] = token
        return token
