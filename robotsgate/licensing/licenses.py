"""RSL licences in the proxy: the documents a robots.txt's `License:` lines name, fetched and
kept, and what they say of one request for the purposes its bot declared.

When. Only a request that could be refused for its use asks: a bot that declared purposes
(robots_purpose, robots_purposes), for a site whose robots.txt names licences, on a path that
robots.txt and its usage preferences allow. Every other request costs nothing here.

Fetched like robots.txt, by the same fetcher: the egress policy on every address dialled
(redirects included), its timeouts, a size cap (rsl_parse.MAX_BYTES; a longer document is not read).

Bounded per site, since a site chooses which host its licences are fetched from (a third party
included): robots.txt's first rsl.MAX_LICENSES (16) distinct documents are read, an answer's
first MAX_LINKED (8); and at most FETCHES (64) documents are fetched for one site
(the origin whose robots.txt, or answer, names them) in each robots_cache_ttl. Past the fetch
budget, a document is judged as last read however old, and one never read is not fetched. The
rule past either cap: a document not read may prohibit what the bot crawls for, so it counts
as unavailable (below): a request it may govern is refused, 503 license-unavailable, the
record's error saying which cap, unless a document that was read refuses it first. A site can
refuse its own bots that way, which it could by robots.txt as well; it cannot make the proxy
fetch more. The cache (DOCUMENTS) holds many sites' worth of documents.
As the proxy itself ("robotsgate (+contact)"), never with a bot's User-Agent: a licence is the
site's, the same for every bot, and is kept once per document URL, for robots_cache_ttl (a
shorter Cache-Control max-age wins), an unavailable one for robots_error_ttl. Each body fetched
goes to the evidence archive (robots_archive_dir) with robots.txt bodies, and its sha256 to the
audit record of each refusal it decided.

What a fetch means (fail closed wherever the document may say no):

- 200, an RSL document: its terms apply (robotsgate.protocol.rsl).
- 4xx, more than five redirects: the site serves no licence there. It says nothing.
- 200 with a body that reads as XML but not as RSL (another root element, another
  namespace), or that is not XML and was not sent as XML (an HTML page about a licence): not
  an RSL licence. It says nothing.
- 5xx, 429, a network error, a timeout, an address the egress policy refuses, a body cut or
  corrupt, and a document sent as XML (or starting like one) that cannot be read (past a cap,
  a DOCTYPE, not well-formed): unavailable. It may prohibit what the bot crawls for, so nothing
  it may govern is forwarded: 503 license-unavailable for robots_error_ttl, as for a robots.txt
  that cannot be fetched (RFC 9309 §2.3.1.4).

What is decided (judge), over every document named, for the request's URL:

- every declared purpose prohibited, or not granted, by some licence that applies: refused,
  403 license-prohibited, citing the document, its element and the robots.txt line naming it;
- else, a document unavailable: 503 license-unavailable;
- else, a licence that applies names a licence server (`<content server=...>`: "clients must
  obtain a license for this asset, even if the license is free"): one is obtained, when the
  operator gave credentials for that server (robots_license_credentials), and the request
  leaves with `Authorization: License <token>` in place of any the bot sent; otherwise 403
  license-required (no credentials, the server refused them or the licence: its OAuth error
  is named) or 503 license-unavailable (the server could not be reached);
- else forwarded. A purpose the licences do not speak of is not refused for it.

Licence servers (the Open License Protocol, an OAuth 2.0 extension): a token is asked of
`{server}/token` (the server as the operator configured it; never a redirect), with the
client's credentials as HTTP Basic, `grant_type=rsl`, `resource` (the covering `<content>`'s
url, made absolute: one licence per content, not per page) and `license` (the `<license>`
element asked under: the first that grants one of the bot's purposes). The answer's
`access_token` must be a token68 (it goes into a header as it is); `expires_in` (else
TOKEN_TTL, at most robots_cache_ttl) bounds its use, less TOKEN_MARGIN. A failure is remembered
for robots_error_ttl. Requests go by the same fetcher, so under the egress policy, as the proxy.
An origin that answers 401 with `WWW-Authenticate: License` drops the token (forget), and the
request is sent once more with a new one (robotsgate.mitm.licensing).
"""

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol
from urllib.parse import urlsplit

import cachetools

from robotsgate import outcomes
from robotsgate.escape import escaped
from robotsgate.licensing.servers import Credentials, server_key
from robotsgate.outcomes import Reason
from robotsgate.protocol.rsl import (
    MAX_LICENSES,
    License,
    LicenseSource,
    RslDocument,
    Terms,
    Unread,
)
from robotsgate.protocol.rsl_parse import MAX_BYTES, read_rsl
from robotsgate.protocol.rsl_rulings import Grant, Ruling, evaluate
from robotsgate.retrieval.archive import RobotsArchive
from robotsgate.retrieval.fetch import FetchResult, fetch_user_agent

logger = logging.getLogger(__name__)

ACCEPT = "application/rsl+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"
DOCUMENTS = 1024  # licence documents kept: sites share few (one per site, or one per publisher)
FETCHES = 4 * MAX_LICENSES  # licence documents fetched per site per robots_cache_ttl
# Licences one answer may name that are read: each is a fetch in the proxy's own queue. Those
# past it are not read, and count as unavailable (a licence not read may prohibit what the bot
# crawls for), unless one that was read refuses first.
MAX_LINKED = 8
assert DOCUMENTS >= MAX_LICENSES * 16  # a capped site's documents fit, many times over

Kind = Literal["ok", "missing", "unavailable"]


class LicenseFetcher(Protocol):
    async def fetch(self, robots_url: str, user_agent: str | None = None, *,
                    limit: int = ..., accept: str = ...) -> FetchResult: ...

    async def post_form(self, url: str, form: dict[str, str], *, basic: tuple[str, str],
                        user_agent: str, limit: int = ...) -> FetchResult: ...


# -- licence servers --------------------------------------------------------------------------

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
class _NoToken:
    """A token request that failed, remembered for error_ttl."""

    kind: Literal["required", "unavailable"]  # refused by the server; or not reached
    error: str
    expires_at: float


def _token_of(result: FetchResult, server: str, resource: str, now: float,
              cache_ttl: int, error_ttl: int) -> "LicenseToken | _NoToken":
    """What a licence server's answer to a token request means (RFC 6749 §5.1, §5.2)."""
    if result.status is None or result.outcome == "unreachable":
        return _NoToken("unavailable", f"licence server {server}: {result.error}",
                        now + error_ttl)
    try:
        answer = json.loads(result.body)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return _NoToken("required" if result.status < 500 else "unavailable",
                        f"licence server {server}: HTTP {result.status}, not a JSON object",
                        now + error_ttl)
    if result.status != 200:
        error = answer.get("error")
        said = f"{error}" if isinstance(error, str) else f"HTTP {result.status}"
        return _NoToken("required", f"licence server {server} refused the licence: "
                                    f"{escaped(said[:200])}", now + error_ttl)
    value = answer.get("access_token")
    if not isinstance(value, str) or not _TOKEN68.fullmatch(value):
        return _NoToken("required", f"licence server {server}: no usable access_token",
                        now + error_ttl)
    lifetime = answer.get("expires_in")
    seconds = lifetime if isinstance(lifetime, int) and lifetime > 0 else TOKEN_TTL
    return LicenseToken(value, server, resource, now + min(seconds, cache_ttl))


@dataclass(frozen=True, slots=True)
class LicenseDocument:
    """One licence document as last fetched."""

    url: str
    kind: Kind  # ok: RSL terms; missing: it says nothing; unavailable: not known
    document: RslDocument | None  # kind ok
    status: int | None  # the last HTTP status; None when no answer came
    sha256: str | None  # of the body read (ok, and a body that could not be read)
    fetched_at: float
    expires_at: float
    error: str | None = None  # why it is missing or unavailable, in words


@dataclass(frozen=True, slots=True)
class LicenseRefusal:
    """Why a request is refused for what a site's licences say, and the evidence."""

    kind: Literal["prohibited", "unavailable", "required"]
    url: str  # the licence document's URL, as robots.txt wrote it (a page's: resolved)
    line: int | None  # its License: line in robots.txt; None: a page named it
    purposes: tuple[str, ...]  # the declared purposes, sorted
    rulings: tuple[Ruling, ...] = ()  # prohibited: per purpose, the element that refuses it
    sha256: str | None = None  # of the document that decided
    server: str | None = None  # required: the licence server named
    error: str | None = None  # unavailable: why
    source: LicenseSource = "robots.txt"  # where the site named it
    # required: the asset a licence is asked for (the covering <content>'s url, made absolute)
    # and the <license> element asked under (what the Open License Protocol sends).
    resource: str | None = None
    license_xml: str = ""

    def where(self, robots_url: str) -> str:
        """Where the site named the licence, in words."""
        if self.source == "link-header":
            return "named by the answer's Link header"
        if self.source == "html-link":
            return 'named by the page\'s <link rel="license">'
        if self.source == "html-script":
            return 'embedded in the page: <script type="application/rsl+xml">'
        return f"robots.txt line {self.line}: {robots_url}"

    @property
    def cite(self) -> str:
        """The element that decided, as the audit's rule: for several purposes, the first."""
        if self.rulings:
            return self.rulings[0].evidence.cite()
        if self.server is not None:
            return f'<content server="{self.server}">'
        return ""

    def explain(self) -> str:
        """ "train-ai prohibited by <content url="/"> #1 (line 2), ...: <prohibits ...>" """
        return "; ".join(f"{ruling.purpose} {_WORDS[ruling.answer]} by "
                         f"{ruling.evidence.cite()}" for ruling in self.rulings)


_WORDS = {Grant.PROHIBITED: "prohibited", Grant.NOT_GRANTED: "not granted"}
REASONS = {"prohibited": Reason.LICENSE_PROHIBITED, "required": Reason.LICENSE_REQUIRED,
           "unavailable": Reason.LICENSE_UNAVAILABLE}


def license_answer(refusal: LicenseRefusal, *, agent: str, robots_url: str,
                   withheld: int | None = None) -> tuple[str, dict[str, str]]:
    """The text and headers of the proxy's answer to a request its site's licences refuse (or,
    `withheld`, to a response with that status, whose page named the licence)."""
    purposes = ", ".join(refusal.purposes)
    headers = {"X-Robotsgate-Purposes": purposes,
               "X-Robotsgate-License": escaped(refusal.url)}
    if refusal.kind != "unavailable":
        headers["X-Robotsgate-Rule"] = escaped(refusal.cite)  # what the site wrote
    if refusal.line is not None:
        headers["X-Robotsgate-Line"] = str(refusal.line)
    text = outcomes.text(REASONS[refusal.kind], purposes=purposes, explain=refusal.explain(),
                         license=refusal.url, where=refusal.where(robots_url), agent=agent,
                         server=refusal.server, error=refusal.error or "not obtained",
                         withheld="" if withheld is None else
                         f"The origin's answer (HTTP {withheld}) was withheld.\n")
    return text, headers


def judge(named: Iterable[tuple[License, LicenseDocument]], urls: Collection[str],
          purposes: Collection[str]) -> LicenseRefusal | None:
    """What the documents say of a request at `urls` (its URL, and the one the server may
    really serve when it differs: a purpose refused at either is refused) for `purposes`
    (declared, not empty). See the module's docstring for the order of the answers."""
    wanted = tuple(sorted(purposes))
    refused: dict[str, tuple[Ruling, License, LicenseDocument]] = {}
    unavailable: tuple[License, LicenseDocument] | None = None
    required: tuple[License, LicenseDocument, tuple[str, str, str]] | None = None
    for license, doc in named:
        if doc.kind == "unavailable":
            unavailable = unavailable or (license, doc)
            continue
        if doc.document is None:
            continue
        for url in urls:
            terms = doc.document.terms(url)
            if terms is None:
                continue
            for ruling in evaluate(terms, wanted):
                if ruling.answer in (Grant.PROHIBITED, Grant.NOT_GRANTED):
                    before = refused.get(ruling.purpose)
                    # A prohibition is the stronger evidence: it is cited over "not granted".
                    if before is None or (before[0].answer is Grant.NOT_GRANTED and
                                          ruling.answer is Grant.PROHIBITED):
                        refused[ruling.purpose] = (ruling, license, doc)
            if terms.servers and required is None:
                required = (license, doc, _asked_under(terms, wanted, url))
    if len(refused) == len(wanted):
        first = refused[wanted[0]]
        return LicenseRefusal("prohibited", first[1].url, first[1].line, wanted,
                              tuple(refused[purpose][0] for purpose in wanted), first[2].sha256,
                              source=first[1].source)
    if unavailable is not None:
        license, doc = unavailable
        return LicenseRefusal("unavailable", license.url, license.line, wanted,
                              sha256=doc.sha256, error=doc.error, source=license.source)
    if required is not None:
        license, doc, (server, resource, xml) = required
        return LicenseRefusal("required", license.url, license.line, wanted, sha256=doc.sha256,
                              server=server, source=license.source, resource=resource,
                              license_xml=xml)
    return None


def _asked_under(terms: Terms, purposes: Collection[str], url: str) -> tuple[str, str, str]:
    """(licence server, resource, <license> XML) for a licence to be obtained: the most
    specific <content> that names a server, the url it covers made absolute against the
    request's, and its first <license> that grants one of `purposes` (else its first)."""
    content = next(content for content in terms.contents if content.server)
    elements = content.licenses
    chosen = next((element for element in elements
                   if any(element.grants(purpose) is not None for purpose in purposes)),
                  elements[0] if elements else None)
    # A path is the request's origin's ("//other.example/" included: RSL reads it as a path);
    # a full URL matched only if it names that origin (Content.matches).
    parts = urlsplit(url)
    resource = f"{parts.scheme}://{parts.netloc}{content.url}" if content.url.startswith("/") \
        else content.url
    return (content.server or "", resource, chosen.xml if chosen is not None else "")


def fetchable(url: str) -> bool:
    """Whether a License: line's URL is one to fetch (lint reports the others)."""
    return url[:8].lower() == "https://" or url[:7].lower() == "http://"


def _looks_xml(result: FetchResult) -> bool:
    """Sent as XML, or starting like XML: a document meant to be read as one."""
    kind = next((value for name, value in result.headers if name.lower() == "content-type"), "")
    head = result.body[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return "xml" in kind.lower() or head.startswith((b"<?xml", b"<rsl"))


class Licensing:
    """Licence documents, fetched once each (however many requests wait for one) and kept."""

    def __init__(self, fetcher: LicenseFetcher, clock: Callable[[], float], *,
                 cache_ttl: int = 86_400, error_ttl: int = 60, contact: str = "",
                 archive: RobotsArchive | None = None, size: int = DOCUMENTS,
                 credentials: Mapping[str, Credentials] | None = None) -> None:
        self._fetcher = fetcher
        self._clock = clock
        self._cache_ttl = cache_ttl
        self._error_ttl = error_ttl
        self._contact = contact
        self._archive = archive
        self._kept: cachetools.LRUCache[str, LicenseDocument] = cachetools.LRUCache(size)
        self._inflight: dict[str, asyncio.Task[LicenseDocument]] = {}
        # Per site: (when its window began, documents fetched in it). Sites past the size are
        # forgotten first by least recent use (and so begin a new window).
        self._spent: cachetools.LRUCache[str, tuple[float, int]] = cachetools.LRUCache(size * 4)
        self.fetches = 0  # documents fetched, for tests
        self._credentials = dict(credentials or {})
        self._tokens: cachetools.LRUCache[tuple[str, str], LicenseToken | _NoToken] = \
            cachetools.LRUCache(size * 4)
        self._asking: dict[tuple[str, str], asyncio.Task[LicenseToken | _NoToken]] = {}
        self.token_requests = 0  # for tests

    @property
    def error_ttl(self) -> int:
        """Seconds an unavailable document is remembered: the Retry-After of its 503s."""
        return self._error_ttl

    async def judge(self, licenses: tuple[License, ...], urls: Collection[str],
                    purposes: Collection[str], *, site: str,
                    unread: Unread | None = None,
                    given: Iterable[tuple[License, LicenseDocument]] = ()
                    ) -> LicenseRefusal | LicenseToken | None:
        """The refusal, or the licence to present (a licence server named, and obtained), or
        None: nothing to do. `site`: the origin that named the licences (its fetch budget);
        `unread`: the documents it named past a cap, which count as unavailable; `given`:
        documents read already (embedded in a page), judged with those fetched."""
        named = [(license, await self.document(license.url, site))
                 for license in _distinct(licenses)]
        if unread is not None:
            now = self._clock()
            named.append((unread.first, LicenseDocument(
                unread.first.url, "unavailable", None, None, None, now, now,
                f"{unread.named:,} licence documents named, only the first {unread.cap} "
                f"read: this one and {unread.count - 1:,} more are not")))
        named += given
        found = judge(named, urls, purposes)
        if found is None or found.kind != "required" or found.server is None:
            return found
        credentials = self._credentials.get(server_key(found.server))
        if credentials is None:
            return replace(found, error="no credentials for this licence server "
                                        "(robots_license_credentials)")
        token = await self._token(found.server, found.resource or "", found.license_xml,
                                  credentials)
        if isinstance(token, LicenseToken):
            return token
        return replace(found, kind=token.kind, error=token.error)

    def forget(self, token: LicenseToken) -> None:
        """A token the origin would not take (401, WWW-Authenticate: License): the next
        request asks for another."""
        key = (server_key(token.server), token.resource)
        if self._tokens.get(key) == token:
            del self._tokens[key]

    async def _token(self, server: str, resource: str, xml: str,
                     credentials: Credentials) -> LicenseToken | _NoToken:
        key = (server_key(server), resource)
        kept = self._tokens.get(key)
        margin = TOKEN_MARGIN if isinstance(kept, LicenseToken) else 0
        if kept is not None and kept.expires_at - margin > self._clock():
            return kept
        task = self._asking.get(key)
        if task is None:
            task = asyncio.create_task(self._ask(key, server, resource, xml, credentials))
            self._asking[key] = task
            task.add_done_callback(lambda _: self._asking.pop(key, None))
        return await asyncio.shield(task)

    async def _ask(self, key: tuple[str, str], server: str, resource: str, xml: str,
                   credentials: Credentials) -> LicenseToken | _NoToken:
        """The Open License Protocol's token request: POST {server}/token, the client's
        credentials as HTTP Basic (RFC 6749 §2.3.1), grant type rsl, the <license> asked under
        and the resource."""
        self.token_requests += 1
        form = {"grant_type": "rsl", "resource": resource}
        if xml:
            form["license"] = xml
        result = await self._fetcher.post_form(
            key[0] + "/token", form,  # the server as the operator configured it
            basic=(credentials.client_id, credentials.secret),
            user_agent=fetch_user_agent(None, self._contact))
        token = _token_of(result, server, resource, self._clock(), self._cache_ttl,
                          self._error_ttl)
        if isinstance(token, _NoToken) and credentials.secret in token.error:
            # The server's own words may repeat what it was sent: never into a log or record.
            token = replace(token, error=token.error.replace(credentials.secret, "[secret]"))
        if isinstance(token, _NoToken):
            logger.warning("robotsgate: no licence for %s: %s", resource, token.error)
        self._tokens[key] = token
        return token

    async def document(self, url: str, site: str) -> LicenseDocument:
        """The document at `url`, as kept or fetched now for `site` (the origin that names
        it, whose fetch budget a fetch spends)."""
        kept = self._kept.get(url)
        now = self._clock()
        if kept is not None and kept.expires_at > now:
            return kept
        task = self._inflight.get(url)
        if task is None:
            if not self._spend(site, now):
                # Past the site's budget: as last read, however old; never read, not fetched.
                return kept or LicenseDocument(
                    url, "unavailable", None, None, None, now, now,
                    f"not fetched: {FETCHES} licence documents were fetched for {site} in "
                    f"the last {self._cache_ttl} s, the most in robots_cache_ttl")
            task = asyncio.create_task(self._fetch(url))
            self._inflight[url] = task
            task.add_done_callback(lambda _: self._inflight.pop(url, None))
        # shield: a client that goes away must not cancel the fetch the others wait for.
        return await asyncio.shield(task)

    def _spend(self, site: str, now: float) -> bool:
        """Whether `site` may have one more document fetched in its window (robots_cache_ttl
        from its first fetch), counted if so."""
        start, count = self._spent.get(site, (now, 0))
        if now - start >= self._cache_ttl:
            start, count = now, 0
        if count >= FETCHES:
            if count == FETCHES:  # said once per window
                logger.warning("robotsgate: %d licence documents fetched for %s in %d s: no "
                               "more until %d s from now; its bots' requests that a document "
                               "never read may govern are refused (license-unavailable)",
                               FETCHES, escaped(site), self._cache_ttl,
                               int(start + self._cache_ttl - now))
                self._spent[site] = (start, count + 1)
            return False
        self._spent[site] = (start, count + 1)
        return True

    async def _fetch(self, url: str) -> LicenseDocument:
        self.fetches += 1
        # One byte past the cap, so that read_rsl sees a longer document as too long (a cut one
        # could lose a prohibition) instead of as a document cut short.
        result = await self._fetcher.fetch(url, fetch_user_agent(None, self._contact),
                                           limit=MAX_BYTES + 1, accept=ACCEPT)
        doc = self._read(url, result)
        if doc.kind == "unavailable":
            logger.warning("robotsgate: the licence %s could not be read (%s): requests of bots "
                           "with declared purposes to the sites naming it are refused for the "
                           "next %d s", url, doc.error, self._error_ttl)
        if self._archive is not None and doc.sha256 is not None:
            # Before it decides anything: no refusal without its evidence.
            await self._archive.keep(doc.sha256, result, doc.fetched_at)
        self._kept[url] = doc
        return doc

    def _read(self, url: str, result: FetchResult) -> LicenseDocument:
        now = self._clock()
        ttl = self._cache_ttl if result.max_age is None else min(self._cache_ttl,
                                                                 result.max_age)
        if result.outcome == "missing":
            return LicenseDocument(url, "missing", None, result.status, None, now, now + ttl,
                                   result.error)
        if result.outcome == "unreachable":
            return LicenseDocument(url, "unavailable", None, result.status, None, now,
                                   now + self._error_ttl, result.error)
        sha256 = hashlib.sha256(result.body).hexdigest()
        document = read_rsl(result.body, url)
        problems = "; ".join(document.problems)
        if document.unreadable and _looks_xml(result):
            return LicenseDocument(url, "unavailable", None, result.status, sha256, now,
                                   now + self._error_ttl, f"not readable as RSL: {problems}")
        if not document.contents:
            return LicenseDocument(url, "missing", None, result.status, sha256, now, now + ttl,
                                   f"no RSL terms: {problems}")
        return LicenseDocument(url, "ok", document, result.status, sha256, now, now + ttl)


def embedded(page: str, xml: str, now: float) -> tuple[License, LicenseDocument]:
    """A licence embedded in a page (`<script type="application/rsl+xml">`), read as a fetched
    document is read, with its limits (rsl_parse.MAX_BYTES, the element caps, no DOCTYPE) and its
    judgement: XML that cannot be read is unavailable (it may prohibit what the bot crawls
    for), XML of another vocabulary says nothing. Its URL is the page's."""
    body = xml.encode("utf-8", "surrogatepass")
    sha256 = hashlib.sha256(body).hexdigest()
    document = read_rsl(body, page)
    problems = "; ".join(document.problems)
    license = License(page, None, "html-script")
    if document.unreadable:
        return license, LicenseDocument(page, "unavailable", None, None, sha256, now, now,
                                        f"not readable as RSL: {problems}")
    if not document.contents:
        return license, LicenseDocument(page, "missing", None, None, sha256, now, now,
                                        f"no RSL terms: {problems}")
    return license, LicenseDocument(page, "ok", document, None, sha256, now, now)


def linked(urls: Iterable[str], source: LicenseSource
           ) -> tuple[tuple[License, ...], Unread | None]:
    """The licences an answer names (`source`: its Link header, its <link>s) that are read,
    and those past MAX_LINKED, which are not: the proxy's and check's reading alike."""
    distinct = tuple(dict.fromkeys(urls))
    named = tuple(License(url, None, source) for url in distinct[:MAX_LINKED])
    if len(distinct) <= MAX_LINKED:
        return named, None
    return named, Unread(License(distinct[MAX_LINKED], None, source),
                         len(distinct) - MAX_LINKED, len(distinct), MAX_LINKED)


def _distinct(licenses: Iterable[License]) -> list[License]:
    """Each document once (the first line naming it), fetchable ones only."""
    seen: dict[str, License] = {}
    for license in licenses:
        if fetchable(license.url) and license.url not in seen:
            seen[license.url] = license
    return list(seen.values())
