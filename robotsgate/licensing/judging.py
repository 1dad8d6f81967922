"""What a site's RSL licence documents, as last fetched (licenses.py), say of one request for
the purposes its bot declared: forwarded, or refused with the evidence, or to be licensed first
by a licence server (tokens.py); and the proxy's answer to a refusal.

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

Its own module because it is a pure function of the documents: no fetch, no clock, what the
proxy and `robotsgate check` both decide by.
"""

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from robotsgate import outcomes
from robotsgate.escape import escaped
from robotsgate.licensing.kept import Kind
from robotsgate.outcomes import Reason
from robotsgate.protocol.rsl import License, LicenseSource, RslDocument, Terms
from robotsgate.protocol.rsl_rulings import Grant, Ruling, evaluate


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
