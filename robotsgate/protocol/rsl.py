"""RSL (Really Simple Licensing 1.0): where a site says under which licence its content may be
used, and for what.

robots.txt names the site's licence documents with `License:` lines (global, like Sitemap: they
belong to no group; an absolute URL, maybe on another host; they may repeat). Pure: no I/O.

A licence document (https://rslstandard.org/rsl, namespace https://rslstandard.org/rsl) is read
by read_rsl(body, url) into an RslDocument; RslDocument.terms(url) gives the Terms that apply to
one request URL; evaluate(terms, purposes) says, per robotsgate purpose (train-ai, search,
ai-input, or any other an operator names), whether the licences permit it, and which element
says so. Whether a licence must first be obtained from a licence server (Terms.servers), and at
what price (LicenseElement.payments), are facts returned here, not decided.

What the specification says, and what is done with it. Quotes marked (spec) are from
https://rslstandard.org/rsl (its element table and the `<rsl>` and `<content>` sections); what
is marked (secondary) is how two independent implementations read the section they cite, and is
to be checked against the specification's text.

- Document: "<rsl> is the root element of an RSL document ... contains one or more <content>
  elements" and its xmlns "Must be set to https://rslstandard.org/rsl" (spec). Another root or
  another namespace is not RSL: no terms. A root `<rsl>` in no namespace at all is read as RSL
  (a site that forgot the xmlns still said what it said), with a problem. An RSS 2.0 feed whose
  `<channel>` or `<item>`s hold `<rsl:content>` elements is read too: "RSL feeds must declare
  the RSL namespace on the root <rss> element and use the rsl: prefix to reference RSL elements
  (e.g., <rsl:content>)" (rslstandard.org/guide/file-format); the `<rsl:content>` children of
  the channel and of its items are read as those of `<rsl>`, and nothing else of the feed.
- `<content url>`: "The value must be either a full URL, or a path on the server (e.g.,
  /content/images/) that follows the URL-matching rules of the Robots Exclusion Protocol (RFC
  9309), including support for the special characters * ... and $" (spec). A path is compiled
  and matched as an Allow/Disallow pattern (readings.Reading.compile_pattern, match.LongestMatch)
  against the request's path and query. A full URL matches requests of the same origin (scheme,
  host, port; default ports dropped, case-insensitive) whose path matches its path, read the same
  way. The document's own URL plays no part: a licence may be served from another host than the
  content ("The URL may be on a different host than the robots.txt file", guide/robots-txt), and
  the caller asks a document only about the requests of the site that named it. A `<content>`
  without a usable url (missing, empty, neither a path nor a full URL) applies to nothing, with
  a problem.
- Several `<content>` match one URL: every one of them applies ("all applicable licences are
  evaluated together and a prohibition always wins, whether it sits in the same <license> or
  another one governing the same asset", §3.1.1, secondary). Terms.contents lists them most
  specific first, as RFC 9309 ranks patterns (the longest in octets; a tie in document order),
  so the first is the one to cite.
- `server`: "If this attribute is present, clients must obtain a license for this asset, even if
  the license is free" (spec). Terms.servers: not decided here.
- `<license>`: "Defines licensing terms, costs, and restrictions for a digital asset";
  `<permits>`: "Defines allowed
  uses granted by the license"; `<prohibits>`: "Defines prohibited uses or restrictions imposed
  by the license" (spec, element table). The type attribute says which vocabulary: usage, user
  or geo. Values are separated by spaces (§3.5/§3.6, secondary; commas are accepted too).
  Usage tokens are evaluated; user and geo values are kept as written (LicenseElement.conditions)
  because the proxy cannot know a bot's class of user or its country.
- `<payment type>`: kept as written, lower-cased; "If omitted, the license is assumed to be free"
  (§3.7, secondary), and a `<payment>` without a type is read as free.

Usage, per purpose (evaluate):
- A `<license>` grants a purpose when its `<permits type="usage">` names a token that covers it
  (USAGE_PURPOSES). A `<license>` without a `<permits type="usage">` grants every purpose it does
  not prohibit: nothing in the sections quoted makes the element required, and its
  example of a site-wide ban on AI uses (as a third party quotes it, secondary), `<license>
  <prohibits type="usage">ai-all</prohibits></license>`, would otherwise ban search as well. A
  `<permits type="usage">` is a list of what is granted: what it does not cover, that licence
  does not grant.
- A `<license>` prohibits a purpose when its `<prohibits type="usage">` names a token that covers
  it; a prohibition wins over any grant, in the same licence or another (§3.1.1, secondary).
- Several `<license>` elements (in one `<content>` or in several that apply): a purpose is
  PERMITTED when some licence grants it and none prohibits it; PROHIBITED when one prohibits it;
  NOT_GRANTED when none prohibits it and none grants it (every licence lists what it permits, and
  the purpose is not among them: the use is not licensed); UNSTATED when no licence applies at
  all (a `<content>` with no `<license>`). Ruling.value maps these onto usage.py's values:
  allowed, disallowed, disallowed, unknown.

Hostile input: read_rsl never raises on content. A body past MAX_BYTES is not parsed; one that
is not well-formed XML, or nests deeper than MAX_DEPTH, or has more than MAX_ELEMENTS elements or
MAX_CONTENTS `<content>` elements, gives no terms. Any DOCTYPE is refused outright, before its
internal subset is read: the parser (pyexpat, the expat under xml.etree.ElementTree) calls
StartDoctypeDeclHandler at the start of the declaration, and that handler stops the parse, so no
entity is ever declared, and so none can be expanded (a reference to an undeclared entity is a
well-formedness error), nor any external one fetched (pyexpat fetches none anyway: it has no
ExternalEntityRefHandler unless given one). Without the refusal, expat 2.5 reads
the declarations and expands them up to its amplification limits: it refuses a billion laughs,
but only after the work of reaching them, and lets through what stays below (12 KB of document
that expand to 7 MB of text, measured with xml.etree.ElementTree.fromstring).
"""

import re
import xml.etree.ElementTree as ET
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Literal
from urllib.parse import urlsplit
from xml.parsers import expat

from robotsgate.protocol.match import LongestMatch
from robotsgate.protocol.readings import reading_of
from robotsgate.protocol.urls import normal_path_of
from robotsgate.protocol.usage import PreferenceValue

__all__ = [
    "MAX_BYTES",
    "MAX_CONTENTS",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_LICENSES",
    "NAMESPACE",
    "USAGE_PURPOSES",
    "Condition",
    "Content",
    "Evidence",
    "Grant",
    "License",
    "LicenseElement",
    "LicenseSource",
    "RslDocument",
    "Ruling",
    "Terms",
    "Unread",
    "covers",
    "evaluate",
    "prohibited",
    "read_rsl",
]

NAMESPACE = "https://rslstandard.org/rsl"

# The most of a document read: 512 KiB, a little more than robots.txt's 500 KiB (parse.py). Real
# licences are a few hundred bytes; a feed of a few hundred items fits.
MAX_BYTES = 512 * 1024
# Past these the document is refused whole (no terms), not cut: a cut could drop a prohibition.
MAX_DEPTH = 32  # RSL nests 5 deep (rsl/content/license/payment/amount), a feed 7
MAX_ELEMENTS = 20_000
MAX_CONTENTS = 1024  # each is tried on every request (terms()), one match each
# Licence documents read per robots.txt: the first this many distinct URLs its License: lines
# name. A site names one or a few; each is a fetch, by the proxy, from a host the site chose,
# so one robots.txt must not make it fetch more. The ones past it are not read, and a licence
# not read may prohibit what a bot crawls for: the caller refuses what they may govern.
MAX_LICENSES = 16

# RSL usage token -> the robotsgate purposes it covers; None: every purpose. The definitions
# (§3.4.1.1, secondary): `all`, "any automated processing", AI training and search included;
# `ai-all`, every AI use: ai-train, ai-input and ai-index (and AI uses not enumerated, which no
# purpose here can be known to be); `ai-train`, training or fine-tuning AI models; `ai-input`,
# input to AI models at inference (RAG, grounding, AI summaries); `ai-index`, building an index
# for AI applications: neither AI input at inference nor search, so it covers a purpose of its
# own name only, and decides none of train-ai, ai-input, search; `search`, building a search
# index and giving search results, AI-generated summaries excluded.
# robotsgate's purposes are the AI-preference categories (usage.py): train-ai is RSL's ai-train,
# ai-input and search are RSL's of the same name.
# Besides the table, every token covers the purpose of its own name (an operator may name
# ai-index, ai-train, or a token of an extension vocabulary, as a purpose); nothing else
# interprets a token the table does not have ("MUST NOT be interpreted unless the processor
# recognises them", §3.4.1, secondary).
USAGE_PURPOSES: Mapping[str, frozenset[str] | None] = MappingProxyType({
    "all": None,
    "ai-all": frozenset({"train-ai", "ai-input", "ai-index", "ai-train"}),
    "ai-train": frozenset({"train-ai"}),
    "ai-input": frozenset({"ai-input"}),
    "ai-index": frozenset({"ai-index"}),
    "search": frozenset({"search"}),
})

_TYPES = frozenset({"usage", "user", "geo"})
_TOKEN_SPLIT = re.compile(r"[\s,]+")
_ABSOLUTE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^/?#]*)([^#]*)", re.DOTALL)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_RFC9309 = reading_of("rfc9309")


# Where a site names a licence: a robots.txt `License:` line, an answer's `Link` header field, a
# page's `<link rel="license">`; or where it gives one: a page's `<script
# type="application/rsl+xml">`, the licence embedded in the page.
LicenseSource = Literal["robots.txt", "link-header", "html-link", "html-script"]


@dataclass(frozen=True, slots=True)
class License:
    """Where a site names an RSL licence: the URL as written (resolved, for a page's), and the
    robots.txt line."""

    url: str
    line: int | None  # 1-based, in robots.txt; None: named by a page or its answer
    source: LicenseSource = "robots.txt"


@dataclass(frozen=True, slots=True)
class Unread:
    """The licence documents a site named past a cap (MAX_LICENSES for robots.txt): not read."""

    first: License  # the first of them, where it was named
    count: int  # how many distinct documents, that one included
    named: int  # how many the site named in all
    cap: int  # how many were read


def covers(token: str, purpose: str) -> bool:
    """Whether the usage `token` speaks of `purpose` (USAGE_PURPOSES, or the same name)."""
    if token == purpose:
        return True
    purposes = USAGE_PURPOSES.get(token, frozenset())
    return purposes is None or purpose in purposes


def _covering(tokens: tuple[str, ...], purpose: str) -> str | None:
    """The first of `tokens` that covers `purpose`."""
    return next((token for token in tokens if covers(token, purpose)), None)


@dataclass(frozen=True, slots=True)
class Condition:
    """A `<permits>` or `<prohibits>` of type user or geo, as written: not evaluated here."""

    element: Literal["permits", "prohibits"]
    type: str  # "user" or "geo"
    value: str  # the element's text, stripped
    line: int


@dataclass(frozen=True, slots=True)
class LicenseElement:
    """One `<license>` of a `<content>`."""

    index: int  # 1-based, among its content's <license> elements
    line: int  # 1-based, where the element starts
    # The usage tokens of its <permits type="usage"> elements, lower-cased, in order; None: it
    # has none (it then grants every usage it does not prohibit).
    permits: tuple[str, ...] | None
    prohibits: tuple[str, ...]  # those of its <prohibits type="usage">
    payments: tuple[str, ...]  # <payment type> values, lower-cased; ("free",) when none
    conditions: tuple[Condition, ...] = ()  # user and geo, as written
    # The element as XML (RSL's namespace the default one): what a licence server is sent when
    # a licence is asked for (the Open License Protocol's `license` parameter).
    xml: str = field(default="", repr=False, compare=False)

    def grants(self, purpose: str) -> str | None:
        """The <permits> token that grants `purpose`; "" when the licence lists no usage (it
        grants everything it does not prohibit); None when it does not grant it."""
        if self.permits is None:
            return ""
        return _covering(self.permits, purpose)

    def forbids(self, purpose: str) -> str | None:
        """The <prohibits> token that prohibits `purpose`; None when none does."""
        return _covering(self.prohibits, purpose)


@dataclass(frozen=True, slots=True)
class Content:
    """One `<content>`: the url as written, its licence server, its licences."""

    index: int  # 1-based, among the document's <content> elements
    line: int
    url: str  # as written (stripped)
    server: str | None  # the licence server's URL, as written; None: none named
    licenses: tuple[LicenseElement, ...]
    # The compiled url: the origin a full URL names (None: a path, any origin), its path pattern
    # in match form, and its matcher. None: the url cannot be matched (a problem says why).
    _origin: str | None = field(default=None, repr=False, compare=False)
    _pattern: str = field(default="", repr=False, compare=False)
    _matcher: LongestMatch | None = field(default=None, repr=False, compare=False)

    def matches(self, origin: str | None, path: str) -> bool:
        """Whether the url covers a request of `origin` (None: not known) and match-form
        `path` (urls.normal_path_of)."""
        if self._matcher is None:
            return False
        if self._origin is not None and self._origin != origin:
            return False
        return self._matcher.winner(path) is not None


@dataclass(frozen=True, slots=True)
class Terms:
    """The `<content>` elements that apply to one request URL, most specific first."""

    contents: tuple[Content, ...]

    @property
    def content(self) -> Content:
        """The most specific: the one to cite."""
        return self.contents[0]

    @property
    def servers(self) -> tuple[str, ...]:
        """The licence servers of the applying contents: from each, a licence must be obtained
        before access, free or not (spec). () when none is named."""
        return tuple(dict.fromkeys(c.server for c in self.contents if c.server))

    @property
    def licenses(self) -> tuple[tuple[Content, LicenseElement], ...]:
        """Every licence that applies, with its content, in the order of `contents`."""
        return tuple((content, license) for content in self.contents
                     for license in content.licenses)


@dataclass(frozen=True, slots=True)
class RslDocument:
    """A parsed RSL document (or feed): its contents, and what could not be read."""

    url: str  # where the document was read from, as given
    contents: tuple[Content, ...] = ()
    problems: tuple[str, ...] = ()
    feed: bool = False  # an RSS feed with <rsl:content> elements
    # Not read at all (past a cap, a DOCTYPE, not well-formed, an encoding that cannot be
    # read): what it says is not known, which is not the same as saying nothing. A document
    # that reads well but is not RSL (another root) is not unreadable.
    unreadable: bool = False

    def terms(self, url: str) -> Terms | None:
        """The contents whose url covers `url` (a full URL, or a path with its query); None when
        none does. Several apply together (§3.1.1), most specific first (RFC 9309's ranking:
        the longest pattern in octets; a tie in document order)."""
        if not self.contents:
            return None
        path = normal_path_of(url)
        origin = _origin(url)
        found = [content for content in self.contents if content.matches(origin, path)]
        if not found:
            return None
        found.sort(key=lambda content: (-len(content._pattern), content.index))
        return Terms(tuple(found))


class Grant(StrEnum):
    PERMITTED = "permitted"  # a licence grants it, none prohibits it
    PROHIBITED = "prohibited"  # a licence prohibits it
    NOT_GRANTED = "not-granted"  # none prohibits it, none grants it: not licensed
    UNSTATED = "unstated"  # no licence applies


_VALUES = {Grant.PERMITTED: PreferenceValue.ALLOWED,
           Grant.PROHIBITED: PreferenceValue.DISALLOWED,
           Grant.NOT_GRANTED: PreferenceValue.DISALLOWED,
           Grant.UNSTATED: PreferenceValue.UNKNOWN}


@dataclass(frozen=True, slots=True)
class Evidence:
    """The element that decided: for an audit record."""

    content: Content
    license: LicenseElement | None  # None: the content has no licence (UNSTATED)
    element: Literal["permits", "prohibits"] | None  # None: a licence that lists no usage
    token: str | None  # the usage token that decided; None: no token did

    def cite(self) -> str:
        """ '<content url="/"> #1 (line 2), <license> #1 (line 3): <prohibits type="usage">
        ai-all' """
        where = f'<content url="{self.content.url}"> #{self.content.index} ' \
                f"(line {self.content.line})"
        if self.license is None:
            return f"{where}: no <license>"
        where += f", <license> #{self.license.index} (line {self.license.line})"
        if self.element is None:
            return f'{where}: no <permits type="usage">'
        if self.token is None:
            listed = " ".join(self.license.permits or ())
            return f'{where}: <permits type="usage"> {listed}'.rstrip()
        return f'{where}: <{self.element} type="usage"> {self.token}'


@dataclass(frozen=True, slots=True)
class Ruling:
    """What the applying licences say of one purpose, and the element that says it."""

    purpose: str
    answer: Grant
    evidence: Evidence

    @property
    def value(self) -> PreferenceValue:
        """As a usage preference (usage.py): permitted is allowed, prohibited and not granted
        are disallowed, unstated is unknown."""
        return _VALUES[self.answer]


def _finding(terms: Terms, purpose: str) -> Ruling:
    licenses = terms.licenses
    if not licenses:
        return Ruling(purpose, Grant.UNSTATED, Evidence(terms.content, None, None, None))
    for content, license in licenses:  # a prohibition wins (§3.1.1)
        token = license.forbids(purpose)
        if token is not None:
            return Ruling(purpose, Grant.PROHIBITED,
                           Evidence(content, license, "prohibits", token))
    for content, license in licenses:
        token = license.grants(purpose)
        if token is not None:
            return Ruling(purpose, Grant.PERMITTED,
                           Evidence(content, license, "permits" if token else None,
                                    token or None))
    content, license = licenses[0]
    return Ruling(purpose, Grant.NOT_GRANTED, Evidence(content, license, "permits", None))


def evaluate(terms: Terms, purposes: Collection[str]) -> tuple[Ruling, ...]:
    """Per purpose (sorted), what the licences of `terms` say of it."""
    return tuple(_finding(terms, purpose) for purpose in sorted(set(purposes)))


def prohibited(terms: Terms, purposes: Collection[str]) -> tuple[Ruling, ...]:
    """The purposes the licences do not license (prohibited, or not granted), with evidence;
    () when every one is permitted or unstated."""
    return tuple(finding for finding in evaluate(terms, purposes)
                 if finding.answer in (Grant.PROHIBITED, Grant.NOT_GRANTED))


# -- reading ----------------------------------------------------------------------------------


class _Refused(Exception):
    """The document is not read at all: the message says why."""


def _tag(name: str) -> str:
    """expat's "namespace}local" -> ElementTree's "{namespace}local"."""
    return "{" + name if "}" in name else name


def _parse(body: bytes) -> tuple[ET.Element, dict[ET.Element, int]]:
    """The element tree of `body`, and the line each element starts on. Raises _Refused, or
    expat.ExpatError when `body` is not well-formed XML."""
    builder = ET.TreeBuilder()
    lines: dict[ET.Element, int] = {}
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    depth = count = 0

    def start(name: str, attributes: dict[str, str]) -> None:
        nonlocal depth, count
        depth += 1
        count += 1
        if depth > MAX_DEPTH:
            raise _Refused(f"line {parser.CurrentLineNumber}: elements nested deeper than "
                           f"{MAX_DEPTH}: not read")
        if count > MAX_ELEMENTS:
            raise _Refused(f"more than {MAX_ELEMENTS} elements: not read")
        element = builder.start(_tag(name), {_tag(k): v for k, v in attributes.items()})
        lines[element] = parser.CurrentLineNumber

    def end(name: str) -> None:
        nonlocal depth
        depth -= 1
        builder.end(_tag(name))

    def doctype(name: str, *_: object) -> None:
        raise _Refused(f"line {parser.CurrentLineNumber}: a DOCTYPE declaration ({name}): "
                       f"refused, no DTD or entity is read")

    def entity(name: str, *_: object) -> None:  # only a DTD declares one: never reached
        raise _Refused(f"an entity declaration ({name}): refused")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    parser.Parse(body, True)
    return builder.close(), lines


def read_rsl(body: bytes, url: str) -> RslDocument:
    """Parse an RSL document or feed read from `url`. Never raises on content: what cannot be
    read is said in `problems`, and a document that cannot be read at all has no contents."""
    if len(body) > MAX_BYTES:
        return RslDocument(url, (), (f"{len(body)} bytes, more than the {MAX_BYTES} read: "
                                     f"not read",), unreadable=True)
    try:
        root, lines = _parse(body)
    except _Refused as refusal:
        return RslDocument(url, (), (str(refusal),), unreadable=True)
    except expat.ExpatError as error:
        return RslDocument(url, (), (_not_xml(body, error),), unreadable=True)
    except (LookupError, ValueError) as error:
        # pyexpat asks Python's codecs for an encoding expat does not know itself (anything but
        # UTF-8, UTF-16, ISO-8859-1 and US-ASCII): an unknown name, a multi-byte or a non-text
        # codec raises instead of failing the parse.
        return RslDocument(url, (), (f"not XML: its declared encoding cannot be read "
                                     f"({type(error).__name__}: {error})",), unreadable=True)
    return _Reader(lines).document(root, url)


# Typographic quotes where XML needs straight ones: what a licence copied from a word processor or
# a web page's prose holds (XML 1.0 §2.3: AttValue is quoted with '"' or "'").
_CURLY = ("\u201c", "\u201d", "\u2018", "\u2019", "\u201e", "\u00ab", "\u00bb")


def _not_xml(body: bytes, error: expat.ExpatError) -> str:
    """Why a body is not well-formed XML, where (line and column, both from 1), and the usual
    cause when it is one: typographic quotes around an attribute's value."""
    column = error.offset + 1  # expat counts columns from 0
    said = f"not XML: {expat.ErrorString(error.code)} at line {error.lineno}, column {column}"
    lines = body.decode("utf-8", "replace").splitlines()
    line = lines[error.lineno - 1] if 0 < error.lineno <= len(lines) else ""
    # expat's column counts bytes: a quote is looked for around it, not at it.
    if any(quote in line for quote in _CURLY):
        said += (" (typographic quotes \u201c \u201d where XML needs straight ones: "
                 "type=\"usage\", not type=\u201cusage\u201d)")
    return said


class _Reader:
    def __init__(self, lines: dict[ET.Element, int]) -> None:
        self.lines = lines
        self.problems: list[str] = []

    def problem(self, element: ET.Element, text: str) -> None:
        self.problems.append(f"line {self.lines.get(element, 0)}: {text}")

    def document(self, root: ET.Element, url: str) -> RslDocument:
        feed = False
        if root.tag == f"{{{NAMESPACE}}}rsl":
            ns = NAMESPACE
            elements = list(root)
        elif root.tag == "rsl":
            ns = ""
            self.problem(root, f"<rsl> without the RSL namespace ({NAMESPACE}): read as RSL")
            elements = list(root)
        elif root.tag == "rss":
            ns, feed = NAMESPACE, True
            elements = [element for channel in root.findall("channel")
                        for element in [*channel, *(e for item in channel.findall("item")
                                                    for e in item)]]
        elif root.tag.endswith("}rsl"):
            return RslDocument(url, (), (f"<rsl> in the namespace {root.tag[1:-4]!r}, not "
                                         f"{NAMESPACE}: not RSL",))
        else:
            return RslDocument(url, (), (f"the root element is <{root.tag}>, not <rsl>: not "
                                         f"RSL",))
        tag = f"{{{ns}}}content" if ns else "content"
        found = [element for element in elements if element.tag == tag]
        if not found:
            what = "<rsl:content> in the feed's channel or items" if feed else "<content>"
            return RslDocument(url, (), (*self.problems, f"no {what}: no terms"), feed)
        if len(found) > MAX_CONTENTS:
            return RslDocument(url, (), (*self.problems, f"{len(found)} <content> elements, "
                                         f"more than {MAX_CONTENTS}: not read"), feed,
                               unreadable=True)
        contents = tuple(self.content(element, index, ns)
                         for index, element in enumerate(found, 1))
        return RslDocument(url, contents, tuple(self.problems), feed)

    def content(self, element: ET.Element, index: int, ns: str) -> Content:
        line = self.lines.get(element, 0)
        url = (element.get("url") or "").strip()
        server = (element.get("server") or "").strip() or None
        licenses = tuple(self.license(child, n, ns) for n, child
                         in enumerate(element.findall(f"{{{ns}}}license" if ns else "license"),
                                      1))
        if not licenses:
            self.problem(element, f"<content> #{index} has no <license>: it licenses nothing")
        compiled = self.compile(element, index, url)
        if compiled is None:
            return Content(index, line, url, server, licenses)
        origin, pattern = compiled
        return Content(index, line, url, server, licenses, origin, pattern,
                       LongestMatch([(pattern, True)]))

    def compile(self, element: ET.Element, index: int, url: str) -> tuple[str | None, str] | None:
        """(origin or None, path pattern in match form); None when `url` cannot be matched."""
        if not url:
            what = "an empty url" if "url" in element.attrib else "no url attribute"
            self.problem(element, f"<content> #{index} has {what}: it applies to nothing")
            return None
        absolute = _ABSOLUTE.match(url)
        if absolute is not None:
            origin = _origin(absolute[1])
            if origin is None:
                self.problem(element, f"<content> #{index} url {url!r} names no host: it "
                                      f"applies to nothing")
                return None
            path = absolute[2] or "/"
            path = path if path.startswith("/") else "/" + path
        elif url.startswith(("/", "*")):
            origin, path = None, url
        else:
            self.problem(element, f"<content> #{index} url {url!r} is neither a path nor a "
                                  f"full URL: it applies to nothing")
            return None
        pattern = _RFC9309.compile_pattern(path.encode("utf-8", "surrogatepass"))
        return origin, pattern

    def license(self, element: ET.Element, index: int, ns: str) -> LicenseElement:
        permits: list[str] | None = None
        prohibits: list[str] = []
        payments: list[str] = []
        conditions: list[Condition] = []
        prefix = f"{{{ns}}}" if ns else ""
        for child in element:
            name = child.tag.removeprefix(prefix) if child.tag.startswith(prefix) else None
            if name == "payment":
                payments.append((child.get("type") or "free").strip().lower() or "free")
            elif name in ("permits", "prohibits"):
                kind = (child.get("type") or "").strip().lower()
                text = (child.text or "").strip()
                if kind not in _TYPES:
                    what = f"with type {kind!r} (not usage, user or geo)" if kind \
                        else "without a type"
                    self.problem(child, f"<{name}> {what}: ignored")
                elif kind != "usage":
                    which: Literal["permits", "prohibits"] = \
                        "permits" if name == "permits" else "prohibits"
                    conditions.append(Condition(which, kind, text, self.lines.get(child, 0)))
                else:
                    tokens = self.tokens(child, name, text)
                    if name == "permits":
                        permits = [*(permits or []), *tokens]
                    else:
                        prohibits += tokens
        return LicenseElement(index, self.lines.get(element, 0),
                              None if permits is None else tuple(permits), tuple(prohibits),
                              tuple(payments) or ("free",), tuple(conditions),
                              _xml(element, ns))

    def tokens(self, element: ET.Element, name: str, text: str) -> list[str]:
        tokens = [token.lower() for token in _TOKEN_SPLIT.split(text) if token]
        if not tokens:
            self.problem(element, f'an empty <{name} type="usage">: it names no usage')
        for token in tokens:
            if token not in USAGE_PURPOSES:
                self.problem(element, f"usage {token!r} is not one of RSL 1.0's "
                                      f"({', '.join(USAGE_PURPOSES)}): it speaks only of a "
                                      f"purpose of that name")
        return tokens


def _xml(element: ET.Element, ns: str) -> str:
    """`element` written out, RSL's namespace as the default one where every element is in it."""
    try:
        return ET.tostring(element, encoding="unicode", default_namespace=ns or None)
    except ValueError:  # an element of another namespace inside it: prefixes, then
        return ET.tostring(element, encoding="unicode")


def _origin(url: str) -> str | None:
    """scheme://host[:port] of a full URL, lower-cased, the default port dropped; None for a
    path, or a URL whose authority cannot be read."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if not scheme or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    shown = "" if port is None or port == _DEFAULT_PORTS.get(scheme) else f":{port}"
    return f"{scheme}://{host}{shown}"
