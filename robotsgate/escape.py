r"""Bytes a bot or a site chose, made safe to show: every control character escaped.

A request path, a User-Agent or a robots.txt line can hold terminal escape sequences (clear the
screen, move the cursor, retitle the window), CR and LF (a forged row of a report, a header
line of its own), or bidirectional overrides that make text read in another order. Wherever
robotsgate prints such text (report, check) or writes it into a header of its own, it goes
through `escaped`: C0 and C1 controls, DEL, the line and paragraph separators and the bidi
controls become `\xNN` / `\uNNNN`, and a byte that was not UTF-8 (a lone surrogate, as
mitmproxy decodes it) becomes `\udcNN`, as the audit log writes it and the report prints it.
"""

import re

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
                     r"\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escaped(text: str) -> str:
    """`text` with every unsafe character escaped; the same object when there is none."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text
