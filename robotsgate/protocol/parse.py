"""robots.txt bytes -> a flat list of directive lines, with line numbers and warnings.

This is the tokenising half only (like Google's RobotsTxtParser emitting events); which lines form
groups, and what a rule means, is decided in robots.py per reading (readings.py). Everything
works on bytes so that whitespace, case folding and the 500 KiB cut mean exactly what they mean
on the wire.
"""

import re
from dataclasses import dataclass
from enum import StrEnum

# RFC 9309 §2.5: crawlers must parse at least 500 kibibytes; we parse exactly that much.
MAX_BYTES = 512_000
# Google's parser keeps at most 2083 * 8 - 1 bytes of a line (robots.cc, kMaxLineLen).
GOOGLE_MAX_LINE = 2083 * 8 - 1

_BOM = b"\xef\xbb\xbf"
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_SPACE_OR_TAB = re.compile(rb"[ \t]")


class Key(StrEnum):
    USER_AGENT = "user-agent"
    ALLOW = "allow"
    DISALLOW = "disallow"
    SITEMAP = "sitemap"
    CRAWL_DELAY = "crawl-delay"
    REQUEST_RATE = "request-rate"
    VISIT_TIME = "visit-time"
    HOST = "host"
    CONTENT_USAGE = "content-usage"  # AI usage preferences (usage.py)
    CONTENT_SIGNAL = "content-signal"
    LICENSE = "license"  # RSL: where the content's licence is (rsl.py)
    UNKNOWN = "unknown"
    BLANK = "blank"  # an empty line: only the 1994 reading gives it meaning


# (key, spellings). A key is recognised when the line's key *starts with* one of the spellings,
# case-insensitively, as Google's parser does; the first spelling is the correct one, the others
# are misspellings accepted with a warning. Order matters: "allow" must not see "disallow".
_SPELLINGS: tuple[tuple[Key, tuple[bytes, ...]], ...] = (
    (Key.USER_AGENT, (b"user-agent", b"useragent", b"user agent")),
    (Key.ALLOW, (b"allow",)),
    (Key.DISALLOW, (b"disallow", b"dissallow", b"dissalow", b"disalow", b"diasllow", b"disallaw")),
    (Key.SITEMAP, (b"sitemap", b"site-map")),
    (Key.CRAWL_DELAY, (b"crawl-delay", b"crawldelay", b"crawl delay")),
    (Key.REQUEST_RATE, (b"request-rate", b"requestrate", b"request rate")),
    (Key.VISIT_TIME, (b"visit-time", b"visittime", b"visit time")),
    (Key.HOST, (b"host",)),
    (Key.CONTENT_USAGE, (b"content-usage",)),
    (Key.CONTENT_SIGNAL, (b"content-signal",)),
    (Key.LICENSE, (b"license", b"licence")),
)


@dataclass(frozen=True, slots=True)
class Line:
    """One meaningful line of a robots.txt."""

    number: int  # 1-based
    key: Key
    name: str  # the key as written, for messages
    value: bytes  # comment removed, surrounding whitespace stripped


@dataclass(frozen=True, slots=True)
class ParseWarning:
    line: int  # 1-based; 0 for the file as a whole
    message: str


@dataclass(frozen=True, slots=True)
class Tokens:
    lines: tuple[Line, ...]
    warnings: tuple[ParseWarning, ...]


def tokenize(content: bytes, *, max_line: int | None = None) -> Tokens:
    """Split a robots.txt body into directive lines. Never raises on any input."""
    warnings: list[ParseWarning] = []
    if len(content) > MAX_BYTES:
        warnings.append(ParseWarning(0, f"body is {len(content):,} bytes; only the first "
                                        f"{MAX_BYTES:,} are read (RFC 9309 §2.5)"))
        content = content[:MAX_BYTES]
    # Skip a UTF-8 byte order mark, or the part of one that is there (Google does the same).
    skip = 0
    while skip < len(_BOM) and skip < len(content) and content[skip] == _BOM[skip]:
        skip += 1
    if skip:
        warnings.append(ParseWarning(1, "byte order mark skipped"))
        content = content[skip:]

    lines: list[Line] = []
    for number, raw in enumerate(_LINE_BREAK.split(content), start=1):
        if max_line is not None and len(raw) > max_line:
            warnings.append(ParseWarning(number, f"line longer than {max_line} bytes cut"))
            raw = raw[:max_line]
        line = _line(number, raw, warnings)
        if line is not None:
            lines.append(line)
    return Tokens(tuple(lines), tuple(warnings))


def _line(number: int, raw: bytes, warnings: list[ParseWarning]) -> Line | None:
    # A NUL ends the line: C parsers (Google's among them) never see past it.
    raw = raw.split(b"\0", 1)[0]
    if not raw.strip():
        return Line(number, Key.BLANK, "", b"")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        warnings.append(ParseWarning(number, "bytes that are not UTF-8"))
    text = raw.split(b"#", 1)[0].strip()
    if not text:
        return None  # a comment line: not blank, so it does not end a 1994 record
    sep = text.find(b":")
    if sep < 0:
        # A forgotten colon is accepted when whitespace separates exactly two words.
        space = _SPACE_OR_TAB.search(text)
        if space is None or _SPACE_OR_TAB.search(text[space.start() :].lstrip(b" \t")):
            warnings.append(ParseWarning(number, f"cannot read {_show(text)!s}: no ':' separator"))
            return None
        sep = space.start()
        warnings.append(ParseWarning(number, "missing ':' after the directive name"))
    name, value = text[:sep].strip(), text[sep + 1 :].strip()
    if not name:
        warnings.append(ParseWarning(number, "line starts with ':'; no directive name"))
        return None
    key = _key(number, name, warnings)
    return Line(number, key, name.decode("utf-8", "replace"), value)


def _key(number: int, name: bytes, warnings: list[ParseWarning]) -> Key:
    lowered = name.lower()
    for key, spellings in _SPELLINGS:
        for spelling in spellings:
            if lowered.startswith(spelling):
                if lowered != spellings[0]:
                    warnings.append(ParseWarning(
                        number, f"{_show(name)} read as {spellings[0].decode()!r}"))
                return key
    warnings.append(ParseWarning(number, f"unknown directive {_show(name)}"))
    return Key.UNKNOWN


def _show(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    return repr(text if len(text) <= 40 else text[:40] + "…")
