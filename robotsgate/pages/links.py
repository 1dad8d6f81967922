"""Links resolved as a browser resolves them: the WHATWG URL standard, with the page's encoding.

The URL parsing itself is ada (ada-url), a WHATWG-conformant parser: tabs and newlines dropped,
leading and trailing spaces and controls trimmed, `\\` read as `/` in http(s) URLs, dot segments
and percent-encoding as a browser does them. One part of the standard ada leaves to its caller:
in a special URL (http, https...) parsed for a document, the query is percent-encoded in the
document's encoding, not UTF-8 (a windows-1252 page's `?q=é` is requested as `?q=%E9`). That
part is done here, before ada sees the link: the query's characters outside ASCII are encoded in
the page's charset (those it cannot encode as `&#N;`, as the standard's encoder does) and
percent-encoded.
"""

import codecs

import ada_url

# A URL parser "strips any leading and trailing C0 control or space" before reading.
_C0_OR_SPACE = "".join(chr(code) for code in range(0x21))
# Schemes whose query takes the document's encoding (the standard: special, but not ws/wss).
_DOCUMENT_ENCODED = frozenset({"http", "https", "ftp", "file"})


def resolve(base: str, href: str, charset: str = "utf-8") -> str | None:
    """`href` resolved against `base` as a browser would for a page in `charset`; None when it
    is no URL (the link cannot be followed)."""
    try:
        resolved: str = ada_url.join_url(base, href)
    except (ValueError, UnicodeError):  # UnicodeError: a lone surrogate, no character
        return None
    if _url_encoding(charset) == "utf-8" or resolved.partition(":")[0] not in _DOCUMENT_ENCODED:
        return resolved
    encoded = _encode_query(href, charset)
    if encoded is href:
        return resolved
    try:
        again: str = ada_url.join_url(base, encoded)
    except (ValueError, UnicodeError):
        return None
    return again


def _encode_query(href: str, charset: str) -> str:
    """`href` with the non-ASCII characters of its query percent-encoded in `charset` (the
    same object when there is nothing to do)."""
    cleaned = href.strip(_C0_OR_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")
    # The query runs from the first "?" to the first "#" after it; a "#" before any "?" means
    # there is no query.
    question = cleaned.find("?")
    hash_mark = cleaned.find("#")
    if question < 0 or 0 <= hash_mark < question:
        return href
    end = hash_mark if hash_mark > question else len(cleaned)
    query = cleaned[question + 1:end]
    if query.isascii():
        return href
    parts = []
    for char in query:
        if char.isascii():
            parts.append(char)
            continue
        try:
            data = char.encode(charset)
        except UnicodeEncodeError:
            # "percent-encode after encoding": a character the encoding lacks is "&#N;",
            # written as "%26%23N%3B".
            parts.append(f"%26%23{ord(char)}%3B")
            continue
        parts.append("".join(f"%{byte:02X}" for byte in data))
    return cleaned[:question + 1] + "".join(parts) + cleaned[end:]


def _url_encoding(charset: str) -> str:
    """The encoding a page's URLs take: its own, but UTF-8 for UTF-16 (the standard's "output
    encoding") and UTF-32."""
    try:
        name = codecs.lookup(charset).name
    except LookupError:
        return "utf-8"
    return "utf-8" if name.startswith(("utf-8", "utf-16", "utf-32")) else name
