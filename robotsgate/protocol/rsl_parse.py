"""Reading an RSL document or feed (rsl.py says what one holds) from the bytes a site served:
never trusted, so never raising, and bounded in what it reads and builds.

Its own module because its concern is the XML and its hostility (sizes, depth, DOCTYPEs,
encodings, typographic quotes), which nothing downstream of an RslDocument needs to know.

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
from typing import Literal
from xml.parsers import expat

from robotsgate.protocol.match import LongestMatch
from robotsgate.protocol.readings import reading_of
from robotsgate.protocol.rsl import (
    NAMESPACE,
    USAGE_PURPOSES,
    Condition,
    Content,
    LicenseElement,
    RslDocument,
    origin_of,
)

__all__ = ["MAX_BYTES", "MAX_CONTENTS", "MAX_DEPTH", "MAX_ELEMENTS", "read_rsl"]

# The most of a document read: 512 KiB, a little more than robots.txt's 500 KiB (parse.py). Real
# licences are a few hundred bytes; a feed of a few hundred items fits.
MAX_BYTES = 512 * 1024
# Past these the document is refused whole (no terms), not cut: a cut could drop a prohibition.
MAX_DEPTH = 32  # RSL nests 5 deep (rsl/content/license/payment/amount), a feed 7
MAX_ELEMENTS = 20_000
MAX_CONTENTS = 1024  # each is tried on every request (terms()), one match each

_TYPES = frozenset({"usage", "user", "geo"})
_TOKEN_SPLIT = re.compile(r"[\s,]+")
_ABSOLUTE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^/?#]*)([^#]*)", re.DOTALL)
_RFC9309 = reading_of("rfc9309")


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
            origin = origin_of(absolute[1])
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
