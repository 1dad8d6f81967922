"""RSL licences in the proxy: the documents a robots.txt's `License:` lines name, fetched and
kept, and what they say of one request for the purposes its bot declared.

When. Only a request that could be refused for its use asks: a bot that declared purposes
(robots_purpose, robots_purposes), for a site whose robots.txt names licences, on a path that
robots.txt and its usage preferences allow. Every other request costs nothing here.

Fetched like robots.txt, by the same fetcher: the egress policy on every address dialled
(redirects included), its timeouts, a size cap (rsl_parse.MAX_BYTES; a longer document is
not read).

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

What is decided of a request is judging.py's (judge); a licence obtained from a licence server
is tokens.py's; how a fetch is shared and kept is kept.py's, with tdmrep.py's file. This module
holds the documents themselves: which are read, from where, within which budget.
"""

import hashlib
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace

import cachetools

from robotsgate.escape import escaped
from robotsgate.licensing.judging import (
    LicenseDocument,
    LicenseRefusal,
    judge,
)
from robotsgate.licensing.kept import Documents, Kind, LicenseFetcher, once, sent_as
from robotsgate.licensing.servers import Credentials
from robotsgate.licensing.tokens import LicenseServers, LicenseToken
from robotsgate.protocol.rsl import MAX_LICENSES, License, LicenseSource, RslDocument, Unread
from robotsgate.protocol.rsl_parse import MAX_BYTES, read_rsl
from robotsgate.retrieval.archive import RobotsArchive
from robotsgate.retrieval.fetch import FetchResult

logger = logging.getLogger(__name__)

ACCEPT = "application/rsl+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"
DOCUMENTS = 1024  # licence documents kept: sites share few (one per site, or one per publisher)
FETCHES = 4 * MAX_LICENSES  # licence documents fetched per site per robots_cache_ttl
# Licences one answer may name that are read: each is a fetch in the proxy's own queue. Those
# past it are not read, and count as unavailable (a licence not read may prohibit what the bot
# crawls for), unless one that was read refuses first.
MAX_LINKED = 8
assert DOCUMENTS >= MAX_LICENSES * 16  # a capped site's documents fit, many times over


def fetchable(url: str) -> bool:
    """Whether a License: line's URL is one to fetch (lint reports the others)."""
    return url[:8].lower() == "https://" or url[:7].lower() == "http://"


def _looks_xml(result: FetchResult) -> bool:
    """Sent as XML, or starting like XML: a document meant to be read as one."""
    kind = next((value for name, value in result.headers if name.lower() == "content-type"), "")
    head = result.body[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return "xml" in kind.lower() or head.startswith((b"<?xml", b"<rsl"))


def _said(document: RslDocument, meant_as_xml: bool) -> tuple[Kind, RslDocument | None, str]:
    """What a document read says: unavailable when it cannot be read and was meant as XML (it
    may prohibit what the bot crawls for), missing when it holds no terms (XML of another
    vocabulary, or not XML and not meant as it), else ok."""
    problems = "; ".join(document.problems)
    if document.unreadable and meant_as_xml:
        return "unavailable", None, f"not readable as RSL: {problems}"
    if not document.contents:
        return "missing", None, f"no RSL terms: {problems}"
    return "ok", document, ""


class Licensing(Documents[RslDocument, LicenseDocument]):
    """Licence documents, fetched once each (however many requests wait for one) and kept."""

    def __init__(self, fetcher: LicenseFetcher, clock: Callable[[], float], *,
                 cache_ttl: int = 86_400, error_ttl: int = 60, contact: str = "",
                 archive: RobotsArchive | None = None, size: int = DOCUMENTS,
                 credentials: Mapping[str, Credentials] | None = None) -> None:
        super().__init__(fetcher, clock, LicenseDocument, cache_ttl=cache_ttl,
                         error_ttl=error_ttl, contact=contact, size=size, limit=MAX_BYTES,
                         accept=ACCEPT)
        self._archive = archive
        # Per site: (when its window began, documents fetched in it). Sites past the size are
        # forgotten first by least recent use (and so begin a new window).
        self._spent: cachetools.LRUCache[str, tuple[float, int]] = cachetools.LRUCache(size * 4)
        self._servers = LicenseServers(fetcher, clock, credentials or {}, cache_ttl=cache_ttl,
                                       error_ttl=error_ttl, contact=contact, size=size * 4)

    @property
    def token_requests(self) -> int:
        """Token requests sent to licence servers, for tests."""
        return self._servers.requests

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
        credentials = self._servers.credentials(found.server)
        if credentials is None:
            return replace(found, error="no credentials for this licence server "
                                        "(robots_license_credentials)")
        token = await self._servers.token(found.server, found.resource or "",
                                          found.license_xml, credentials)
        if isinstance(token, LicenseToken):
            return token
        return replace(found, kind=token.kind, error=token.error)

    def forget(self, token: LicenseToken) -> None:
        """A token the origin would not take (401, WWW-Authenticate: License): the next
        request asks for another."""
        self._servers.forget(token)

    async def document(self, url: str, site: str) -> LicenseDocument:
        """The document at `url`, as kept or fetched now for `site` (the origin that names
        it, whose fetch budget a fetch spends)."""
        kept = self._kept.get(url)
        now = self._clock()
        if kept is not None and kept.expires_at > now:
            return kept
        if url not in self._inflight and not self._spend(site, now):
            # Past the site's budget: as last read, however old; never read, not fetched.
            return kept or LicenseDocument(
                url, "unavailable", None, None, None, now, now,
                f"not fetched: {FETCHES} licence documents were fetched for {site} in "
                f"the last {self._cache_ttl} s, the most in robots_cache_ttl")
        return await once(self._inflight, url, lambda: self._fetch(url))

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
        result = await self._get(url)
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

    def body(self, url: str, result: FetchResult) -> tuple[Kind, RslDocument | None, str | None]:
        kind, document, error = _said(read_rsl(result.body, url),
                                      sent_as(result, "xml", (b"<?xml", b"<rsl"), 512))
        return kind, document, error or None


def embedded(page: str, xml: str, now: float) -> tuple[License, LicenseDocument]:
    """A licence embedded in a page (`<script type="application/rsl+xml">`), read as a fetched
    document is read, with its limits (rsl_parse.MAX_BYTES, the element caps, no DOCTYPE) and its
    judgement: XML that cannot be read is unavailable (it may prohibit what the bot crawls
    for), XML of another vocabulary says nothing. Its URL is the page's."""
    body = xml.encode("utf-8", "surrogatepass")
    sha256 = hashlib.sha256(body).hexdigest()
    kind, document, error = _said(read_rsl(body, page), meant_as_xml=True)
    return License(page, None, "html-script"), LicenseDocument(
        page, kind, document, None, sha256, now, now, error or None)


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
