"""Paths for matching: extraction from a URL and percent-encoding normalisation.

Everything a matcher compares is an ASCII string: octets outside ASCII are percent-encoded as
UTF-8, so that "longest match in octets" is simply the length of the string.
"""

import re

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


# A URL (or a path) whose path is already in normal form: nothing outside the reserved and
# unreserved sets and no escapes. The common case, read with one regular expression; possessive
# repeats, so that a URL that is not of this kind fails at once instead of backtracking.
_NORMAL_URL = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9+.\-]*+://[^/?;#]*+|(?!//))(/[A-Za-z0-9\-._~:/?\[\]@!&'()+,;=]*+)"
    r"(?:#.*)?",
    re.DOTALL)


def normal_path_of(url: str) -> str:
    """normalize(path_of(url)), in one step when the path needs no change."""
    plain = _NORMAL_URL.fullmatch(url)
    return plain[1] if plain is not None else normalize(path_of(url))


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


def rfc_pattern(value: bytes) -> str:
    """A rule's value in RFC 9309 normal form: '*' stays the wildcard, a final '$' the anchor."""
    anchored = value.endswith(b"$")
    if anchored:
        value = value[:-1]
    return "*".join(normalize_bytes(part) for part in value.split(b"*")) + ("$" if anchored else "")


def literal_pattern(value: bytes) -> str:
    """A 1994 rule: a plain prefix, '*' and '$' included as characters."""
    return normalize_bytes(value)


def google_escape(text: bytes) -> str:
    """Google's MaybeEscapePattern: upper-case the hex of escapes, escape octets >= 0x80.

    Nothing is decoded: Google compares %41 and A as different.
    """
    if text.isascii() and b"%" not in text:
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


# Where a server may see another path than the one written: escapes, dot segments, doubled
# slashes, ;params. None of these in a path means there is no other form to check.
_SUSPECT = re.compile(r"%|/\.|//|;|\\")
# Unreserved characters, and '/' and '\' (%2F, %5C), which servers such as nginx decode before
# they resolve the path: /x/..%2Fprivate is /private there.
_UNRESERVED_ESCAPE = re.compile(
    r"%(?:2[DEdeFf]|3[0-9]|4[1-9A-Fa-f]|5[0-9AaCcFf]|6[1-9A-Fa-f]|7[0-9AaEe])")
_PARAMS = re.compile(r";[^/]*")
_SLASHES = re.compile(r"/{2,}")


def server_equivalent(path: str) -> str:
    """The path as a lenient server would resolve it, for deciding what it will really serve.

    Unreserved escapes and %2F, %5C decoded (/%70rivate, /x/..%2Fprivate are /private),
    ';params' removed from segments (/private;x=1/a), runs of slashes collapsed (//private),
    backslashes read as slashes, and dot segments resolved (/a/../private, /./private) as
    RFC 3986 §5.2.4 does. The query is kept as it is. Returns `path` itself when there is
    nothing to resolve.
    """
    if not _SUSPECT.search(path):
        return path
    target, mark, query = path.partition("?")
    target = _UNRESERVED_ESCAPE.sub(lambda m: chr(int(m[0][1:], 16)), target)
    target = _SLASHES.sub("/", _PARAMS.sub("", target.replace("\\", "/")))
    resolved = _remove_dot_segments(target) or "/"
    return resolved + mark + query


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
