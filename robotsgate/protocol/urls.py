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
# Something normalize() would change: an escape with lower-case hex, an escape of an unreserved
# character (%41 = A, %2D = -, ...), a lone '%', or a character outside the reserved and
# unreserved sets. Upper-case escapes of other octets (%E3%83%AD) are already normal.
_ODD = re.compile(r"[^A-Za-z0-9\-._~:/?#\[\]@!&'()+,;=]")
# Split in two so that each gets the regular expression engine's fast scan: a character class,
# and escapes, which all start with a literal '%'.
_BAD = re.compile(r"[^A-Za-z0-9\-._~:/?#\[\]@!&'()+,;=%]")
_ESCAPE_CHANGES = re.compile(
    r"%(?:[a-f][0-9A-Fa-f]|[0-9A-F][a-f]|2[DE]|3[0-9]|4[1-9A-F]|5[0-9AF]|6[1-9A-F]|7[0-9AE]"
    r"|(?![0-9A-Fa-f]{2}))")
_ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})")
# What normalize_bytes changes: escapes, and single octets outside _KEEP (a lone '%' included).
_SPECIAL = re.compile(rb"%[0-9A-Fa-f]{2}|[\x80-\xff]+|[^A-Za-z0-9\-._~:/?#\[\]@!&'()+,;=]")
_PERCENT = tuple(b"%%%02X" % byte for byte in range(256))
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


def _utf8(text: str) -> bytes:
    # surrogatepass: a URL handed to us as str may hold lone surrogates; never raise on them.
    return text.encode("utf-8", "surrogatepass")


def normalize(text: str) -> str:
    """RFC 9309 normal form of a path (see normalize_bytes)."""
    # The common case, already in normal form: first the cheap test (one character class, no
    # '%' and nothing outside the reserved and unreserved sets), then the exact one.
    if not _ODD.search(text) or not (_BAD.search(text) or _ESCAPE_CHANGES.search(text)):
        return text
    return normalize_bytes(_utf8(text))


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
    return b"".join([_PERCENT[byte] for byte in text])


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
