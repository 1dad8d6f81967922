"""Paths for matching: extraction from a URL and percent-encoding normalisation.

Everything a matcher compares is an ASCII string: octets outside ASCII are percent-encoded as
UTF-8, so that "longest match in octets" is simply the length of the string.

Two forms of a path:
- normalize(): RFC 3986 normal form (§6.2.2): unreserved escapes decoded, other escapes in
  upper-case hex, characters that must be escaped escaped. Escaped reserved characters stay
  escaped.
- the match form (normal_path_of, rfc_pattern, literal_pattern): normal form, and then escapes of
  reserved characters that delimit nothing where they stand are decoded as well, on both sides,
  because a server reads both spellings as one: ':' '@' '[' ']' '!' "'" '(' ')' anywhere, and '/'
  in the query. RFC 9309 §2.2.2's own table needs this: /foo/bar?baz=https://foo.bar and
  /foo/bar?baz=https%3A%2F%2Ffoo.bar are one path to match. Kept escaped: '/' in the path
  (/a%2Fb is not /a/b), '?' and '#' (they end the path and the query), '%', and the sub-delims
  that servers and forms read as delimiters ('&' '=' '+' ';' ',') -- and '*' and '$', which are
  pattern syntax and compared escaped on both sides.
"""

import re
from collections.abc import Callable
from urllib.parse import urlsplit

_HEX = "0123456789ABCDEF"
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Characters left as they are in a normalised path: unreserved, reserved (RFC 3986 §2.2) and '%'.
# '*' and '$' are not here: they are special in patterns, so the literal characters are compared
# in their encoded form (%2A, %24) on both sides (RFC 9309 §2.2.3).
_KEEP = frozenset(_UNRESERVED | frozenset(b"%:/?#[]@!&'()+,;="))
# Escapes that normal form keeps as they are: upper-case hex of an octet that is not unreserved.
# Non-ASCII octets (%80-%FF) first: most escapes in real paths are UTF-8.
_KEPT_ESCAPE = r"[89A-F][0-9A-F]|[01][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[BCDF]"
# Something normalize() would change: a character outside the reserved and unreserved sets, or a
# '%' that does not start a kept escape (lower-case hex, %41 = A, a lone '%'). One expression
# that starts with a character class, so that re skips the ordinary characters in one fast scan.
# (?<!%) looks at the character just matched: anything but '%' is a change by itself; a '%' is
# one unless a kept escape follows.
_CHANGE = re.compile(
    rf"[^A-Za-z0-9\-._~:/?#\[\]@!&'()+,;=](?:(?<!%)|(?!{_KEPT_ESCAPE}))")
# What normalize() replaces: escapes, runs of non-ASCII, single characters outside _KEEP.
_SPECIAL_TEXT = re.compile(r"%[0-9A-Fa-f]{2}|[^\x00-\x7f]+|[^A-Za-z0-9\-._~:/?#\[\]@!&'()+,;=]")
_ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})")
# What normalize_bytes changes: escapes, and single octets outside _KEEP (a lone '%' included).
_SPECIAL = re.compile(rb"%[0-9A-Fa-f]{2}|[\x80-\xff]+|[^A-Za-z0-9\-._~:/?#\[\]@!&'()+,;=]")
# scheme://authority, the common shape of a full URL; anything else takes the general road.
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?;#]*([^#]*)", re.DOTALL)
_PATH_START = re.compile(r"[/?;]")


def path_of(url: str) -> str:
    """The path, params and query of `url` (a full URL or a path), without the fragment.

    Follows Google's GetPathParamsQuery so that every mode reads URLs the same way: the result
    always starts with '/'.
    """
    if url[:1] == "/" and url[1:2] != "/":  # already a path: the proxy's common case
        fragment = url.find("#")
        return url if fragment < 0 else url[:fragment]
    absolute = _ABSOLUTE.match(url)
    if absolute is not None:
        path = absolute[1]
        return path if path[:1] == "/" else "/" + path
    start = 2 if url.startswith("//") else 0
    early = _find_any(url, start)
    scheme_end = url.find("://", start)
    if scheme_end < 0 or (early >= 0 and early < scheme_end):
        scheme_end = start
    else:
        scheme_end += 3
    path_start = _find_any(url, scheme_end)
    if path_start < 0:
        return "/"
    hash_pos = url.find("#", start)
    if 0 <= hash_pos < path_start:
        return "/"
    path = url[path_start : hash_pos if hash_pos >= 0 else len(url)]
    return path if path.startswith("/") else "/" + path


def _find_any(text: str, start: int) -> int:
    match = _PATH_START.search(text, start)
    return match.start() if match else -1


# A URL (or a path) whose path is already in match form: nothing outside the reserved and
# unreserved sets, and no escapes but upper-case ones that stay as they are in both the path
# and the query (UTF-8 ones, most often: not %2F, not those of unreserved or data characters).
# The common case, read with one regular expression; possessive repeats, so that a URL that is
# not of this kind fails at once instead of backtracking.
_NORMAL_URL = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9+.\-]*+://[^/?;#]*+|(?!//))"
    r"(/[A-Za-z0-9\-._~:/?\[\]@!&'()+,;=]*+"
    r"(?:%(?:[89A-F][0-9A-F]|[01][0-9A-F]|2[02-6A-C]|3[B-F]|5[CE]|60|7[BCDF])"
    r"[A-Za-z0-9\-._~:/?\[\]@!&'()+,;=]*+)*+)"
    r"(?:#.*)?",
    re.DOTALL)


def normal_path_of(url: str) -> str:
    """The match form of path_of(url), in one step when the path needs no change."""
    plain = _NORMAL_URL.fullmatch(url)
    if plain is not None:
        return plain[1]
    path = path_of(url)
    change = _CHANGE_PATH.search(path)
    if change is None:  # in normal form, and no data character escaped but perhaps '/'
        return path if path.find("%2F") < 0 else _normal_to_match(path)
    if _CHANGE.search(path, change.start()) is None:  # normal form, data characters escaped
        return _normal_to_match(path)
    query = path.find("?")
    if query < 0:
        return _SPECIAL_TEXT.sub(_path_text, path)
    return _SPECIAL_TEXT.sub(_path_text, path[:query]) + "?" + _query_form(path[query + 1:])



def url_parts(url: str) -> tuple[str, str, int | None, str] | None:
    """A full URL as urllib.parse.urlsplit reads it: its scheme (lower-cased), host (lower-cased,
    an IPv6 address without its brackets), port (None: none written) and path with its query
    ("/" when it has none), the fragment dropped; None when it names no scheme or no host, or
    has a port that cannot be read. Where the proxy names a page's origin and path (RSL's
    <content> urls, the page memory's keys), one reading of the authority for both."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if not scheme or not host:
        return None
    path = parts.path or "/"
    return scheme, host, port, f"{path}?{parts.query}" if parts.query else path


def match_form(text: str) -> str:
    """What the matcher compares (see the module's docstring): up to the first '?' a path, after
    it a query, each in normal form with the escapes of data characters decoded."""
    query = text.find("?")
    if query < 0:
        return _path_form(text)
    return _path_form(text[:query]) + "?" + _query_form(text[query + 1:])


# Escapes of reserved characters that delimit nothing where they stand, so that a server reads
# the escape and the character alike. Anywhere in a path or a query: ':' and '@' (pchar with no
# role after the authority), '[' and ']' (they only delimit an IP literal in the authority),
# '!' "'" '(' ')' (sub-delims no common server or form reads as delimiters). In the query also
# '/' (RFC 3986 §3.4: query = *( pchar / "/" / "?" ); the table of RFC 9309 §2.2.2). Not '?':
# an escaped '?' in the path must stay distinct from the '?' that starts the query, and a
# pattern cannot always say which of the two it is in.
_DATA = frozenset(b":@[]!'()")
_QUERY_DATA = _DATA | frozenset(b"/")
# As _CHANGE, for each region: the escapes kept as they are exclude the data characters'.
_CHANGE_PATH = re.compile(
    r"[^A-Za-z0-9\-._~:/?#\[\]@!&'()+,;=](?:(?<!%)"
    r"|(?![89A-F][0-9A-F]|[01][0-9A-F]|2[02-6A-CF]|3[B-F]|5[CE]|60|7[BCDF]))")
_CHANGE_QUERY = re.compile(
    r"[^A-Za-z0-9\-._~:/?#\[\]@!&'()+,;=](?:(?<!%)"
    r"|(?![89A-F][0-9A-F]|[01][0-9A-F]|2[02-6A-C]|3[B-F]|5[CE]|60|7[BCDF]))")


def _region_forms(data: frozenset[int]) -> dict[str, str]:
    forms = dict(_TEXT_FORMS)
    for byte in data:
        high, low = _HEX[byte >> 4], _HEX[byte & 15]
        for form in {high + low, high.lower() + low, high + low.lower(), (high + low).lower()}:
            forms["%" + form] = chr(byte)
    return forms


# The same, as (escape, character) pairs, for text already in normal form.
_PATH_DATA_ESCAPES = tuple((f"%{byte:02X}", chr(byte)) for byte in sorted(_DATA))
_QUERY_DATA_ESCAPES = tuple((f"%{byte:02X}", chr(byte)) for byte in sorted(_QUERY_DATA))


def _normal_to_match(normal: str) -> str:
    """match_form() of a path already in normal form: decode the data characters' escapes."""
    query = normal.find("?")
    if query < 0 or normal.find("%2F", query) < 0:  # nothing that differs between the regions
        return _decode_data(normal, _PATH_DATA_ESCAPES)
    return (_decode_data(normal[:query], _PATH_DATA_ESCAPES) + "?"
            + _decode_data(normal[query + 1:], _QUERY_DATA_ESCAPES))


def _path_form(text: str) -> str:
    return _region_form(text, _CHANGE_PATH, _PATH_DATA_ESCAPES, _path_text)


def _query_form(text: str) -> str:
    return _region_form(text, _CHANGE_QUERY, _QUERY_DATA_ESCAPES, _query_text)


def _region_form(text: str, change_in_region: re.Pattern[str],
                 escapes: tuple[tuple[str, str], ...],
                 text_form: Callable[[re.Match[str]], str]) -> str:
    """`text`, a path or a query, in match form: the region's own expression of a change, the
    escapes of its data characters, and its form of what _SPECIAL_TEXT finds."""
    change = change_in_region.search(text)
    if change is None:
        return text
    if _CHANGE.search(text, change.start()) is None:
        return _decode_data(text, escapes)
    return _SPECIAL_TEXT.sub(text_form, text)


def _decode_data(normal: str, escapes: tuple[tuple[str, str], ...]) -> str:
    """`normal` (in normal form already) with the escapes of data characters decoded.

    In normal form every '%' starts an escape (a literal one is %25), so "%3A" in it can only
    be the escape %3A; and no character put in its place can make a new one.
    """
    for escape, char in escapes:
        if escape in normal:
            normal = normal.replace(escape, char)
    return normal


def _path_text(found: re.Match[str]) -> str:
    text = found[0]
    known = _PATH_FORMS.get(text)  # an escape, or one ASCII character
    return known if known is not None else _escaped_run(text)


def _query_text(found: re.Match[str]) -> str:
    text = found[0]
    known = _QUERY_FORMS.get(text)
    return known if known is not None else _escaped_run(text)


def _escaped_run(text: str) -> str:
    """A run of non-ASCII characters, percent-encoded as UTF-8."""
    return "%" + text.encode("utf-8", "surrogatepass").hex("%").upper()


def normalize(text: str) -> str:
    """RFC 9309 normal form of a path (see normalize_bytes); raw non-ASCII is read as UTF-8."""
    if not _CHANGE.search(text):
        return text
    return _SPECIAL_TEXT.sub(_normal_text, text)


def _normal_text(found: re.Match[str]) -> str:
    text = found[0]
    known = _TEXT_FORMS.get(text)  # an escape, or one ASCII character
    if known is not None:
        return known
    # A run of non-ASCII (surrogatepass: a str may hold lone surrogates; never raise on them).
    return "%" + text.encode("utf-8", "surrogatepass").hex("%").upper()


def normalize_bytes(raw: bytes) -> str:
    """RFC 9309 normal form of a path or of a literal part of a pattern.

    Escapes of unreserved characters are decoded (%41 -> A), other escapes get upper-case hex,
    every other octet outside the reserved and unreserved sets is escaped (raw UTF-8 included),
    and the literal characters '*' and '$' become %2A and %24.
    """
    return _SPECIAL.sub(_normal_form, raw).decode("ascii")


def _normal_form(found: re.Match[bytes]) -> bytes:
    text = found[0]
    if text[0] == 0x25 and len(text) == 3:  # an escape
        value = int(text[1:], 16)
        return bytes((value,)) if value in _UNRESERVED else b"%" + text[1:].upper()
    # A run of UTF-8 (one call for the whole run), or one octet; a lone '%' becomes %25.
    return b"%" + text.hex("%").upper().encode("ascii")


def _text_forms() -> dict[str, str]:
    """Every escape (in any case of hex) and every ASCII character outside _KEEP -> normal form.

    '%' is in _KEEP as the start of an escape; alone (not followed by two hex digits) it is %25.
    """
    forms = {chr(byte): f"%{byte:02X}" for byte in range(128) if byte not in _KEEP or byte == 0x25}
    for byte in range(256):
        high, low = _HEX[byte >> 4], _HEX[byte & 15]
        normal = chr(byte) if byte in _UNRESERVED else "%" + high + low
        for form in {high + low, high.lower() + low, high + low.lower(), (high + low).lower()}:
            forms["%" + form] = normal
    return forms


_TEXT_FORMS = _text_forms()
# ... and in match form, for each region: the data characters' escapes decoded too.
_PATH_FORMS = _region_forms(_DATA)
_QUERY_FORMS = _region_forms(_QUERY_DATA)


def rfc_pattern(value: bytes) -> str:
    """A rule's value in match form: '*' stays the wildcard, a final '$' the anchor.

    Where a part of the pattern will meet the path decides its form ('/' and %2F are one in the
    query, two in the path). The part before the first '*' starts at the start of the path: up
    to its first '?' it is in the path, after it in the query. A part after a '*' may land in
    either (a '*' may run over the '?'), and is read as query: '/*%2Faccount' also stops
    /x?next=/account, and /x%2Faccount is stopped by the server's reading of it (/x/account), so
    a Disallow loses nothing; what it costs is that it also stops /x/account itself.
    """
    anchored = value.endswith(b"$")
    if anchored:
        value = value[:-1]
    first, *rest = value.split(b"*")
    parts = [match_form(normalize_bytes(first))]
    parts += [_query_form(normalize_bytes(part)) for part in rest]
    return "*".join(parts) + ("$" if anchored else "")


def literal_pattern(value: bytes) -> str:
    """A 1994 rule: a plain prefix, '*' and '$' included as characters; in match form."""
    return match_form(normalize_bytes(value))


def google_escape(text: bytes) -> str:
    """Google's MaybeEscapePattern: upper-case the hex of escapes, escape octets >= 0x80.

    Nothing is decoded: Google compares %41 and A as different.
    """
    if text.isascii() and 0x25 not in text:  # "%" as an int: `bytes in bytes` raises inside
        return text.decode("ascii")
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        byte = text[i]
        if byte == 0x25 and _ESCAPE.match(text, i):
            out.append("%" + text[i + 1 : i + 3].decode().upper())
            i += 3
            continue
        out.append("%" + _HEX[byte >> 4] + _HEX[byte & 15] if byte >= 0x80 else chr(byte))
        i += 1
    return "".join(out)


# Where a server may see another path than the one written: dot segments, doubled slashes,
# ;params, backslashes, and escapes of what stands as it is in match form (unreserved characters,
# reserved characters but '?' and '#') or of a backslash. None of these in a path means there is
# no other form to check: the other escapes (%20, %C3%A9, %3F, %25...) decode to octets that
# match form escapes again, as decide() already reads them.
_SUSPECT = re.compile(
    r"/\.|//|;|\\|%(?:2[16-9B-Fb-f]|3[0-9ABDabd]|4[0-9A-Fa-f]|5[0-9A-DFa-df]|6[1-9A-Fa-f]"
    r"|7[0-9AEae])")
_TARGET_END = re.compile(r"[?#]")
_ANY_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_PARAMS = re.compile(r";[^/]*")
_SLASHES = re.compile(r"/{2,}")
# An escaped ';' is a character of the segment, not the start of a parameter (Tomcat and the
# servlet containers strip parameters before they decode): it stands in for ';' until the end.
_DECODED_SEMICOLON = "\ue03b"


def _server_octets() -> dict[str, str]:
    """Every escape, in any case of hex -> the octet it encodes (as a Latin-1 character)."""
    octets: dict[str, str] = {}
    for byte in range(256):
        high, low = _HEX[byte >> 4], _HEX[byte & 15]
        octet = _DECODED_SEMICOLON if byte == 0x3B else chr(byte)
        for form in {high + low, high.lower() + low, high + low.lower(), (high + low).lower()}:
            octets["%" + form] = octet
    return octets


_SERVER_OCTETS = _server_octets()
# Octets (Latin-1 characters) -> the match form of a decoded path. Left as they are: unreserved
# and reserved characters, but '?' and '#' (they would end the path), '%' (it would start an
# escape), '*' and '$' (pattern syntax, compared escaped); every other octet is escaped again in
# upper-case hex, raw UTF-8 included.
_RE_EXPRESS = {chr(byte): f"%{byte:02X}" for byte in range(256)
               if byte not in _UNRESERVED and chr(byte) not in ":/@!&'()+,;=[]"}
_RE_EXPRESS[_DECODED_SEMICOLON] = ";"
_TO_RE_EXPRESS = re.compile(r"[^A-Za-z0-9\-._~:/@!&'()+,;=\[\]]")


def server_equivalent(path: str) -> str:
    """The path as a lenient server would resolve it, for deciding what it will really serve.

    nginx, Apache and the big frameworks (Django, Rails, Express, werkzeug) percent-decode the
    whole path before they route it, so every escape in the path is decoded, once
    (/%70rivate, /wiki/Special%3ARandom, /%40admin, /x/..%2Fprivate; %2541 is the text %41,
    not A); then backslashes are read as slashes, ';params' removed from segments
    (/private;x=1/a), runs of slashes collapsed (//private), and dot segments resolved
    (/a/../private, /%2e%2e/private) as RFC 3986 §5.2.4 does. The result is expressed again in
    match form: octets that cannot stand as they are ('?', '#', '%', a space, a control, '*',
    '$', non-ASCII) are escaped again in upper-case hex, so decide() reads it as it is.

    Octets are octets: overlong or invalid UTF-8 (%C0%AE) is not decoded to anything, '+' is
    a plus sign (only forms read it as a space, and only in the query). The query is kept as it
    is: servers do not route on it, and its escaped delimiters (%26, %3D) are data to the
    application; the data characters in it are read alike by the match form already.
    Returns `path` itself when there is nothing to resolve.
    """
    suspect = _SUSPECT.search(path)
    if suspect is None:
        return path
    end = _TARGET_END.search(path)
    cut = len(path) if end is None else end.start()
    if cut <= suspect.start():
        return path  # escapes in the query only (?u=https%3A%2F%2F...): the path is plain
    target, rest = path[:cut], path[cut:]
    if not target.isascii():  # raw UTF-8: one Latin-1 character per octet, like decoded escapes
        target = target.encode("utf-8", "surrogatepass").decode("latin-1")
    if "%" in target:
        target = _ANY_ESCAPE.sub(_server_octet, target)
    if "\\" in target:
        target = target.replace("\\", "/")
    if ";" in target:
        target = _PARAMS.sub("", target)
    if "//" in target:
        target = _SLASHES.sub("/", target)
    if "/." in target:
        target = _remove_dot_segments(target)
    if _TO_RE_EXPRESS.search(target):
        target = _TO_RE_EXPRESS.sub(_re_expressed, target)
    return (target or "/") + rest


def _server_octet(found: re.Match[str]) -> str:
    return _SERVER_OCTETS[found[0]]


def _re_expressed(found: re.Match[str]) -> str:
    return _RE_EXPRESS[found[0]]


def _remove_dot_segments(path: str) -> str:
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
        elif segment == ".":
            if last:
                output.append("")
        else:
            output.append(segment)
    return "/".join(output)
