"""The byte check that spares most pages a decode and a parse: False only when the page's own
bytes cannot hold a robots signal for these agents.

Every signal a page can carry is in one of two places (robotsgate.pages.tree reads them):

- a comment whose text begins with "robots" or "/robots" (a section tag), anywhere;
- the attributes of a `<meta>` (robots, the agent's own names, tdm-reservation, tdm-policy), a
  `<link>` (an RSL licence, `rsl+xml`) or a `<script>` (an RSL licence embedded in the page,
  `type="application/rsl+xml"`), where a character reference may spell any letter.

So the page is lower-cased once and searched for "robots", each one found counting only after a
comment's opening, and a regular expression takes the attributes of each `<meta>`, `<link>` and
`<script>` start tag, ended where the HTML tokenizer ends it; the names are looked for in those
alone. However many names the agent answers to, that is three passes over the page, and the word
"compatible" in its text (most bots' User-Agent names it), a `&#39;`, or a page about robots.txt
no longer send it to the parser.

Reading the page's structure from its bytes holds only where each ASCII byte of the page is that
character of its text wherever it stands: UTF-8, EUC and the one-byte charsets, not Shift_JIS,
GBK or Big5, whose second bytes include ASCII letters. A page in one of those is searched whole
for every name, as a text can spell them. A page whose bytes do not spell its ASCII as ASCII
(UTF-16, UTF-32, EBCDIC, ISO-2022 escapes, HZ, whose "~" and a line break vanish from between
two letters) is always read.
"""

import functools
import re
from collections.abc import Iterable

from robotsgate.pages.charset import CHARSET_SCAN_BYTES, codec_of_label, page_codec

# What every signal in a tag spells (lower-cased), or a character reference that could spell
# part of one: "&#" for any character, and the named references that stand for an ASCII
# character a name may hold (HTML's named references for ASCII letters: only &fjlig;, "fj").
_IN_TAGS = (b"robots", b"&#", b"tdm-", b"rsl+xml", b"&plus;")
_NAMED = {"_": (b"&lowbar;", b"&underbar;"), ".": (b"&period;",), "+": (b"&plus;",)}

# The charsets whose bytes can be searched for a name as ASCII, but not read for structure: each
# ASCII character of the text is its own byte, and no bytes vanish between two of them, yet an
# ASCII byte may be the second byte of a character (tests/pages/test_prefilter.py proves both of
# every one). Any other charset that is not transparent (_transparent) has its pages read.
_SEARCHED_WHOLE = frozenset({"shift_jis", "cp932", "gbk",
                             "gb18030", "big5", "big5hkscs", "cp950", "cp949", "johab"})

_WS = rb"\t\n\f\r "
# A <meta>, <link> or <script> start tag, as the HTML tokenizer reads it (HTML Living Standard
# §13.2.5): the tag name, then attributes, each a name (which may begin with '=' and may hold
# quotes) and maybe '=' and a value: double-quoted, single-quoted (either runs to its own quote,
# '>' and all) or unquoted (to white space or '>'). Possessive throughout: one reading, as the
# tokenizer has. The match takes only "<meta" (or "<link", "<script"), so that every one of the
# page starts a match of its own, even inside what another looks like; the rest of the tag, to
# the '>' that ends it, is the second group, or None when it does not end (a quote that never
# closes, no '>').
_TAG = re.compile(
    rb"<(?:meta|link|script)(?=[" + _WS + rb"/>])(?=("
    rb"(?:[" + _WS + rb"/]"
    rb"|[^" + _WS + rb"/>][^" + _WS + rb"/>=]*+"
    rb"(?:[" + _WS + rb"]*+=[" + _WS + rb"]*+"
    rb"(?:\"[^\"]*+\"|'[^']*+'|[^" + _WS + rb">\"'][^" + _WS + rb">]*+|(?=>))"
    rb"|(?![" + _WS + rb"]*+=)))*+>)?)")
# What a comment opens with, before the "robots" or "/robots" of a section tag: "<!--", and the
# bogus comments "<!..." and "</ ..." (tree._COMMENT_OPENINGS).
_COMMENT_OPENINGS = (b"<!--", b"<!", b"</")
# Bytes skipped back from "robots" to its comment's opening: the text's white space there is
# ASCII white space (Python's, \x1c-\x1f included) or some non-ASCII character (NBSP, U+3000,
# ...), whose bytes are all above 0x7f in a charset this is used for.
_SPACE = frozenset(b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ") | frozenset(range(0x80, 0x100))


def can_have_signals(body: bytes, content_type: str | None, agents: Iterable[str]) -> bool:
    """False when the page's own bytes cannot hold a robots signal for these agents (the names
    whose META apply to it, lower-cased). X-Robots-Tag headers are not looked at here."""
    if body.startswith((b"\xff\xfe", b"\xfe\xff")) or body.find(0x1B) >= 0:
        return True  # UTF-16 by its byte-order mark; ESC: an ISO-2022 escape
    names = _names(frozenset(agents))
    if names is None:
        return True
    lowered = body.lower()
    codec = None if _declares_transparent(lowered, content_type) else \
        page_codec(body, content_type)
    if codec is not None and not _transparent(codec):
        if codec not in _SEARCHED_WHOLE:
            return True  # its bytes do not spell its text's ASCII as ASCII (UTF-16, EBCDIC, HZ)
        return max(map(lowered.find, names)) >= 0  # the whole text, for every name
    if _may_open_section(lowered):
        return True
    tags = _tags(lowered)
    return tags is None or max(map(tags.find, names)) >= 0


@functools.lru_cache(maxsize=64)  # a proxy meets few agents' name sets
def _names(agents: frozenset[str]) -> tuple[bytes, ...] | None:
    """Everything to look for in the tags for these agents; None for a name that is not ASCII,
    which no byte search can stand for."""
    found = list(_IN_TAGS)
    for agent in agents:
        if not agent:
            continue
        if not agent.isascii():
            return None
        found.append(agent.lower().encode("ascii"))
        for character in set(agent) & set(_NAMED):
            found.extend(_NAMED[character])
        if "fj" in agent.lower():
            found.append(b"&fjlig;")
    return tuple(dict.fromkeys(found))


def _may_open_section(lowered: bytes) -> bool:
    """Whether some "robots" of the page follows a comment's opening (and maybe a '/'), white
    space between: tree.may_have_section_tags, on the bytes."""
    found = lowered.find(b"robots")
    if found >= 0 and lowered.endswith((b"<!", b"<!-")):
        return True  # lexbor reads such an end as a comment holding the text before it
    while found >= 0:
        at = _back_over_space(lowered, found)
        if lowered.endswith(_COMMENT_OPENINGS, 0, at):
            return True
        if at > 0 and lowered[at - 1] == 0x2F and \
                lowered.endswith(_COMMENT_OPENINGS, 0, _back_over_space(lowered, at - 1)):
            return True  # "<!-- /robots"
        found = lowered.find(b"robots", found + 1)
    return False


def _back_over_space(lowered: bytes, at: int) -> int:
    while at > 0 and lowered[at - 1] in _SPACE:
        at -= 1
    return at


def _tags(lowered: bytes) -> bytes | None:
    """The attributes of every <meta>, <link> and <script> start tag of the page, joined by NUL
    (which no name holds); None when one does not end, and the page must be read to know what
    it holds."""
    found = [tag[1] for tag in _TAG.finditer(lowered)]
    if None in found:
        return None
    return b"\0".join(found)


# A <meta charset> attribute's value as html.parser reads it (charset.py's <meta charset> scan):
# its `\\s` is Python's white space over latin-1 text.
_SPACE_LATIN1 = rb"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0"
_CHARSET_VALUE = re.compile(rb"[" + _SPACE_LATIN1 + rb"]*=+[" + _SPACE_LATIN1 +
                            rb"]*(\"[^\"]*\"|'[^']*'|[^>" + _SPACE_LATIN1 + rb"]*)")


def _declares_transparent(lowered: bytes, content_type: str | None) -> bool:
    """True when the page is surely read in a transparent codec, found without the <meta
    charset> scan's parse (most pages say `<meta charset="utf-8">`, or nothing): every charset
    the page could be declaring is one, or unknown (read as the default, which is). False: ask
    charset.page_codec."""
    if lowered.startswith(b"\xef\xbb\xbf"):
        return True  # UTF-8 by its byte-order mark
    if content_type and "charset" in content_type.lower():
        return False  # the header's: page_codec finds it cheaply
    end = CHARSET_SCAN_BYTES
    if lowered.find(b"http-equiv", 0, end) >= 0:
        return False  # a Content-Type in content="...", which character references may spell
    at = lowered.find(b"charset", 0, end)
    while at >= 0:
        value = _CHARSET_VALUE.match(lowered, at + 7, end)
        if value is not None:
            label = value[1]
            if label.find(b"&") >= 0:
                return False  # a character reference, which the scan decodes
            codec = codec_of_label(label.decode("latin-1"))
            if codec is not None and not _transparent(codec):
                return False
        at = lowered.find(b"charset", at + 1, end)
    return True


@functools.lru_cache(maxsize=64)
def _transparent(codec: str) -> bool:
    """Whether every ASCII byte of a page in this codec is that character of its text wherever
    it stands: never the second byte of a character, never moved by a shift sequence."""
    every = bytes(range(0x80))
    try:
        if every.decode(codec, "surrogateescape") != every.decode("ascii"):
            return False
        for shifted in (b"~{!\"~}", b"+AHI-", b"\x1b$B!\"\x1b(B"):  # HZ, UTF-7, ISO-2022
            if shifted.decode(codec, "surrogateescape") != shifted.decode("ascii"):
                return False
        for lead in range(0x80, 0x100):
            for byte in range(0x80):
                if not bytes((lead, byte)).decode(codec, "surrogateescape").endswith(chr(byte)):
                    return False
    except (LookupError, UnicodeError, ValueError):
        return False
    return True
