"""RSL (Really Simple Licensing 1.0): where a site says under which licence its content may be
used, and for what.

robots.txt names the site's licence documents with `License:` lines (global, like Sitemap: they
belong to no group; an absolute URL, maybe on another host; they may repeat). Pure: no I/O.

A licence document (https://rslstandard.org/rsl, namespace https://rslstandard.org/rsl) is read
by rsl_parse.read_rsl(body, url) into an RslDocument; RslDocument.terms(url) gives the Terms that
apply to one request URL; rsl_rulings.evaluate(terms, purposes) says, per robotsgate purpose
(train-ai, search, ai-input, or any other an operator names), whether the licences permit it,
and which element says so. Whether a licence must first be obtained from a licence server
(Terms.servers), and at what price (LicenseElement.payments), are facts returned here, not
decided.

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
This module holds what a document says once read (the elements, which requests they cover, and
the names a site gives its licences by); reading one from hostile bytes is rsl_parse.py's, with
its limits, and what the licences say of a purpose is rsl_rulings.py's: three readers, three
modules, each against the part of the specification it follows.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from robotsgate.protocol.match import LongestMatch
from robotsgate.protocol.urls import normal_path_of, url_parts

__all__ = [
    "MAX_LICENSES",
    "NAMESPACE",
    "USAGE_PURPOSES",
    "Condition",
    "Content",
    "License",
    "LicenseElement",
    "LicenseSource",
    "RslDocument",
    "Terms",
    "Unread",
    "covers",
    "origin_of",
]

NAMESPACE = "https://rslstandard.org/rsl"

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

_DEFAULT_PORTS = {"http": 80, "https": 443}


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
        origin = origin_of(url)
        found = [content for content in self.contents if content.matches(origin, path)]
        if not found:
            return None
        found.sort(key=lambda content: (-len(content._pattern), content.index))
        return Terms(tuple(found))



def origin_of(url: str) -> str | None:
    """scheme://host[:port] of a full URL, lower-cased, the default port dropped; None for a
    path, or a URL whose authority cannot be read."""
    parts = url_parts(url)
    if parts is None:
        return None
    scheme, host, port, _ = parts
    if ":" in host:
        host = f"[{host}]"
    shown = "" if port is None or port == _DEFAULT_PORTS.get(scheme) else f":{port}"
    return f"{scheme}://{host}{shown}"
