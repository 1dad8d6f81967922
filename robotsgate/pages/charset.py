"""A page's bytes as text: its charset found as a browser would, never raising on content.

A byte-order mark, the Content-Type header's charset, or a `<meta charset>` near the top of the
page; failing those, UTF-8 when the bytes are UTF-8 and windows-1252 otherwise. Only the first
MAX_PAGE_BYTES of a page are ever decoded.
"""

import codecs
import contextlib
import email.message
import functools
from dataclasses import dataclass
from html.parser import HTMLParser

from robotsgate.pages.parser import HEAD_TAGS, StopParsing
from robotsgate.pages.signals import PageWarning

# Only this much of a page is read (and stripped); the rest passes through unread.
MAX_PAGE_BYTES = 2 * 1024 * 1024
# Where a <meta charset> is looked for when the Content-Type header names none.
CHARSET_SCAN_BYTES = 8192
# HTML: these labels mean windows-1252; UTF-7 is refused (it hides markup from filters).
_WINDOWS_1252 = frozenset({"ascii", "us-ascii", "iso-8859-1", "iso8859-1", "iso_8859-1",
                           "latin1", "latin-1", "l1", "cp819", "ibm819", "ansi_x3.4-1968",
                           "windows-1252", "x-cp1252", "cp1252"})
_REFUSED = frozenset({"utf-7", "utf7", "unicode-1-1-utf-7", "csunicode11utf7"})
_NO_BOM = {"utf-16": "utf-16-le", "utf-32": "utf-32-le"}
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


@dataclass(frozen=True, slots=True)
class HtmlText:
    """A page decoded for reading: its first MAX_PAGE_BYTES as text, in its declared charset."""

    text: str
    charset: str  # the Python codec it was decoded with
    bom: bytes  # a byte-order mark that preceded the text (kept when the page is rewritten)
    consumed: int  # bytes of the body that `text` holds (the BOM included)
    truncated: bool  # the body was longer than MAX_PAGE_BYTES: the rest was not read
    warnings: tuple[PageWarning, ...] = ()


def decode_html(body: bytes, content_type: str | None = None, *,
                max_bytes: int = MAX_PAGE_BYTES) -> HtmlText:
    """The first `max_bytes` of a page as text, in the charset it declares.

    A byte-order mark wins, then the Content-Type header's charset, then a <meta charset> (or
    http-equiv Content-Type) in the first CHARSET_SCAN_BYTES; with none of those, UTF-8 when the
    bytes are UTF-8, else windows-1252 (what browsers do). Never raises on content: bytes that do
    not decode are kept as lone surrogates, so that a rewritten page keeps them too.
    """
    warnings: list[PageWarning] = []
    bom, charset = _declared(body, content_type, warnings)
    truncated = len(body) > max_bytes
    raw = body[len(bom):max_bytes]
    if charset is None:
        try:
            return _decode(raw, "utf-8", "strict", bom, max_bytes, truncated, warnings)
        except UnicodeDecodeError:
            charset = "cp1252"
            warnings.append(PageWarning(None, "no charset declared and the page is not UTF-8: "
                                              "read as windows-1252"))
    try:
        return _decode(raw, charset, "surrogateescape", bom, max_bytes, truncated, warnings)
    except (UnicodeError, ValueError) as exc:  # a codec that will not read this page at all
        warnings.append(PageWarning(None, f"cannot read the page as {charset} ({exc}): read "
                                          f"as windows-1252"))
        return _decode(raw, "cp1252", "surrogateescape", bom, max_bytes, truncated, warnings)


def page_codec(body: bytes, content_type: str | None = None) -> str | None:
    """The Python codec decode_html reads this page with; None when the page declares none (then
    UTF-8 if its bytes are UTF-8, else windows-1252)."""
    return _declared(body, content_type, [])[1]


def _declared(body: bytes, content_type: str | None, warnings: list[PageWarning]
              ) -> tuple[bytes, str | None]:
    """(the byte-order mark, the codec) the page declares: a byte-order mark, then the
    Content-Type header's charset, then a <meta charset> in the first CHARSET_SCAN_BYTES."""
    for mark, name in _BOMS:
        if body.startswith(mark):
            return mark, name
    label = _header_charset(content_type)
    charset = _codec(label, "the Content-Type header", warnings) if label else None
    if charset is None:
        prefix = body[:CHARSET_SCAN_BYTES]
        # A <meta charset> or <meta http-equiv> spells its attribute's name out: without one,
        # the prefix is not parsed at all.
        lowered = prefix.lower()
        if lowered.find(b"charset") < 0 and lowered.find(b"http-equiv") < 0:
            return b"", None
        label = _meta_charset(prefix)
        charset = _codec(label, "<meta charset>", warnings)
        if charset is not None and charset.startswith("utf-16"):
            charset = "utf-8"  # HTML: a page readable as ASCII to find this is not UTF-16
    return b"", charset


@functools.lru_cache(maxsize=256)
def codec_of_label(label: str) -> str | None:
    """The codec a <meta charset> label names, as decode_html takes it; None: read as the
    default."""
    charset = _codec(label, "<meta charset>", [])
    return "utf-8" if charset is not None and charset.startswith("utf-16") else charset


def _decode(raw: bytes, charset: str, errors: str, bom: bytes, max_bytes: int, truncated: bool,
            warnings: list[PageWarning]) -> HtmlText:
    decoder = codecs.getincrementaldecoder(charset)(errors)
    # A cut page may end inside a character: the decoder keeps those bytes back.
    text = decoder.decode(raw, final=not truncated)
    pending = decoder.getstate()[0] if truncated else b""
    if truncated:
        warnings.append(PageWarning(None, f"only the first {max_bytes} bytes were read"))
    return HtmlText(text, charset, bom, len(bom) + len(raw) - len(pending), truncated,
                    tuple(warnings))


@functools.lru_cache(maxsize=256)  # a site serves few distinct Content-Types
def _header_charset(content_type: str | None) -> str | None:
    if not content_type:
        return None
    message = email.message.Message()
    message["content-type"] = content_type
    try:
        charset = message.get_content_charset()
    except (ValueError, LookupError):
        return None
    return charset if isinstance(charset, str) and charset else None


def _codec(label: str | None, where: str, warnings: list[PageWarning]) -> str | None:
    if label is None:
        return None
    name = label.strip().strip("'\"").lower()
    if name in _WINDOWS_1252:
        return "cp1252"
    if name in _REFUSED:
        warnings.append(PageWarning(None, f"charset {label!r} in {where} refused"))
        return None
    try:
        codec = codecs.lookup(name).name
        b"a".decode(codec, "ignore")  # bytes-to-bytes codecs (base64, zlib...) are no charsets
    except (LookupError, UnicodeError, ValueError):
        warnings.append(PageWarning(None, f"unknown charset {label!r} in {where}"))
        return None
    # Without a byte-order mark (one would have been seen first), HTML reads these as LE.
    return _NO_BOM.get(codec, codec)


class _CharsetParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.charset: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "meta":
            values = {name: value or "" for name, value in attrs}
            if values.get("charset", "").strip():
                self.charset = values["charset"].strip()
            elif values.get("http-equiv", "").strip().lower() == "content-type":
                self.charset = _header_charset(values.get("content"))
            if self.charset:
                raise StopParsing
        elif tag == "body" or tag not in HEAD_TAGS:
            raise StopParsing

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            raise StopParsing


def _meta_charset(prefix: bytes) -> str | None:
    parser = _CharsetParser()
    # latin-1 maps every byte to one character: ASCII markup reads the same in any
    # ASCII-compatible charset, which is all a <meta charset> can be written in.
    with contextlib.suppress(StopParsing):
        parser.feed(prefix.decode("latin-1"))
    return parser.charset
