"""Where a page says its RSL licence is: the `Link` header field (RFC 8288) and `<link>` in the
head, each `rel="license"` with `type="application/rsl+xml"` (RSL 1.0: "RSL licenses can also
be linked via HTTP Link headers or HTML <link> elements"); or the licence itself, embedded in the
head with `<script type="application/rsl+xml">` (is_rsl_type; robotsgate.pages.tree reads its
text).

Only links typed as RSL are read: `rel="license"` alone usually names a page for people (a
Creative Commons deed), which is no licence document to fetch.

The Link grammar (RFC 8288 §3):

    Link       = #link-value
    link-value = "<" URI-Reference ">" *( OWS ";" OWS link-param )
    link-param = token BWS [ "=" BWS ( token / quoted-string ) ]

`rel` is a space-separated list of relation types, compared case-insensitively (§2.1.1); a
parameter given twice counts the first time only (§3.3, for rel; §3.4.1 for type). Read
leniently, never raising: an unquoted value runs to the next ";" or "," (written
`type=application/rsl+xml` is common, though "/" is no token character); a link-value that
breaks the grammar is skipped up to the next comma outside a quoted string and outside <...>,
and the others are still read. The URI references are returned as
written; the caller resolves them against the response's URL (its context, §3.2).
"""

import re

from robotsgate.pages.links import resolve
from robotsgate.pages.signals import PageSignals

RSL_TYPE = "application/rsl+xml"
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# An unquoted value, read leniently: up to the next ";" or "," (`type=application/rsl+xml` is
# written so, though "/" is no token character).
_BARE = re.compile(r"[^;,\s\"]+")
_SPACE = " \t"
MAX_FIELD = 8192  # characters of one Link field line read; links past them are not


def rsl_links(field: str) -> tuple[str, ...]:
    """The URI references of one Link field value that name an RSL licence, in order."""
    return tuple(uri for uri, params in link_values(field[:MAX_FIELD])
                 if "license" in params.get("rel", "").lower().split()
                 and params.get("type", "").strip().lower() == RSL_TYPE)


def is_rsl_link(rel: str | None, type_: str | None) -> bool:
    """Whether an HTML `<link>`'s rel and type attributes name an RSL licence."""
    return rel is not None and "license" in rel.lower().split() and \
        (type_ or "").strip().lower() == RSL_TYPE


def is_rsl_type(type_: str | None) -> bool:
    """Whether an HTML `<script>`'s type attribute says it holds an RSL licence (RSL: a licence
    embedded in a page, `<script type="application/rsl+xml">`)."""
    return (type_ or "").strip().lower() == RSL_TYPE


def page_licenses(signals: PageSignals, url: str) -> tuple[str, ...]:
    """A page's RSL licences (`signals.licenses`), resolved as a browser resolves the page's
    links: against its <base href>, else `url` (the page's own)."""
    base = (resolve(url, signals.base, signals.charset) if signals.base else None) or url
    return tuple(dict.fromkeys(filter(None, (resolve(base, href, signals.charset)
                                             for href in signals.licenses))))


def link_values(field: str) -> list[tuple[str, dict[str, str]]]:
    """(URI reference, parameters with lower-cased names) per link-value of `field`."""
    found: list[tuple[str, dict[str, str]]] = []
    at, end = 0, len(field)
    while at < end:
        while at < end and field[at] in " \t,":
            at += 1
        if at >= end:
            break
        close = field.find(">", at) if field[at] == "<" else -1
        if close < 0:
            at = _next_value(field, at)
            continue
        uri = field[at + 1:close].strip(_SPACE)
        at = close + 1
        params: dict[str, str] = {}
        broken = False
        while True:
            at = _skip_space(field, at)
            if at >= end or field[at] != ";":
                break
            at = _skip_space(field, at + 1)
            name = _TOKEN.match(field, at)
            if name is None:
                broken = True
                break
            at = _skip_space(field, name.end())
            value = ""
            if at < end and field[at] == "=":
                at = _skip_space(field, at + 1)
                if at < end and field[at] == '"':
                    value, at = _quoted(field, at)
                else:
                    bare = _BARE.match(field, at)
                    if bare is None:
                        broken = True
                        break
                    value, at = bare.group(), bare.end()
            params.setdefault(name.group().lower(), value)
        if broken or (at < end and field[at] != ","):
            at = _next_value(field, at)
            continue
        found.append((uri, params))
    return found


def _skip_space(field: str, at: int) -> int:
    while at < len(field) and field[at] in _SPACE:
        at += 1
    return at


def _quoted(field: str, at: int) -> tuple[str, int]:
    """The quoted-string that starts at `at` (its escapes undone), and where it ends; an
    unterminated one runs to the end."""
    chars: list[str] = []
    at += 1
    while at < len(field):
        char = field[at]
        if char == "\\" and at + 1 < len(field):
            chars.append(field[at + 1])
            at += 2
            continue
        if char == '"':
            return "".join(chars), at + 1
        chars.append(char)
        at += 1
    return "".join(chars), at


def _next_value(field: str, at: int) -> int:
    """Past the next comma that is outside a quoted string and outside <...>."""
    quoted = angled = False
    while at < len(field):
        char = field[at]
        if quoted:
            if char == "\\":
                at += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char == "<":
            angled = True
        elif char == ">":
            angled = False
        elif char == "," and not angled:
            return at + 1
        at += 1
    return at
