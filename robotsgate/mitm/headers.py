"""Headers read on every page, in one pass over the raw fields (Headers.get() scans them all,
lower-casing every name, once per header asked for), and the rewrites robotsgate makes to
requests' and pages' headers."""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mitmproxy import http

# The response headers robotsgate sets, replacing any the origin sent.
_OURS = frozenset({b"x-robots-tag", b"x-robotsgate-delay-ms"})


@dataclass(slots=True)
class ResponseHeaders:
    """What robotsgate reads of a response's headers, in one pass over its fields."""

    content_type: str | None
    content_encoding: str | None
    x_robots_tag: list[str]  # every value, unfolded
    ours: bool  # a header robotsgate sets is there already (the origin sent one)

    @classmethod
    def of(cls, fields: Sequence[tuple[bytes, bytes]]) -> "ResponseHeaders":
        seen = cls(None, None, [], False)
        for name, value in fields:
            lowered = name.lower()
            if lowered == b"content-type":
                seen.content_type = _fold(seen.content_type, value)
            elif lowered == b"content-encoding":
                seen.content_encoding = _fold(seen.content_encoding, value)
            elif lowered in _OURS:
                seen.ours = True
                if lowered == b"x-robots-tag":
                    seen.x_robots_tag.append(_text(value))
        return seen


def _text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")  # as mitmproxy's Headers decode values


def _fold(seen: str | None, value: bytes) -> str:
    return _text(value) if seen is None else f"{seen}, {_text(value)}"


_LINE_BREAKS = re.compile(rb"[ \t]*[\r\n]+[ \t]*")


def unfold(headers: http.Headers) -> None:
    """Each obs-fold (and any stray CR or LF) becomes one space, as RFC 9112 §5.2 tells a proxy
    to do: the origin then reads the same one line that robotsgate decided on."""
    headers.fields = tuple((name, _LINE_BREAKS.sub(b" ", value)) for name, value in
                           headers.fields)


def drop_upgrade(headers: http.Headers) -> None:
    """Remove an upgrade offer: Upgrade, HTTP2-Settings, and those names in Connection."""
    connection = [token.strip() for token in headers.get("connection", "").split(",")
                  if token.strip().lower() not in ("upgrade", "http2-settings", "")]
    for name in ("upgrade", "http2-settings", "connection"):
        headers.pop(name, None)
    if connection:
        headers["Connection"] = ", ".join(connection)


def set_headers(headers: http.Headers, added: Sequence[tuple[bytes, bytes]], *,
                replace: bool) -> None:
    """Add the headers in `added` in one rebuild of the fields (each Headers.set_all() rebuilds
    them); with `replace`, every header of those names that is there already goes first."""
    fields = headers.fields
    if replace:
        names = {name.lower() for name, _ in added}
        fields = tuple(field for field in fields if field[0].lower() not in names)
    headers.fields = (*fields, *added)


def rebuilt(fields: Sequence[tuple[bytes, bytes]], *, host: bytes | None,
            drop: Sequence[bytes] = (), drop_range: bool = False,
            connection: bytes | None = None) -> tuple[tuple[bytes, bytes], ...]:
    """The request's header fields as they leave: one Host, the one given (none when `host` is
    None: :authority says it), in place of the first Host the bot sent or first of all; the
    fields named in `drop` (and Range, If-Range with `drop_range`) removed; with `connection`,
    one Connection of that value in place of the first the bot sent (none when empty)."""
    removed = {name.lower() for name in drop}
    if drop_range:
        removed |= {b"range", b"if-range"}
    out: list[tuple[bytes, bytes]] = []
    written = host is None
    for name, value in fields:
        lowered = name.lower()
        if lowered == b"host":
            if not written:
                assert host is not None
                out.append((name, host))
                written = True
            continue
        if connection is not None and lowered == b"connection":
            if connection:
                out.append((name, connection))
                connection = b""  # written once
            continue
        if lowered not in removed:
            out.append((name, value))
    if not written:
        assert host is not None
        out.insert(0, (b"Host", host))
    return tuple(out)


_FRAMING = (b"content-length", b"transfer-encoding")


def reframed(fields: Sequence[tuple[bytes, bytes]], body: bytes
             ) -> tuple[tuple[bytes, bytes], ...]:
    """The header fields of a request the proxy sends again, with its body held whole: every
    Content-Length and Transfer-Encoding of the first one gone (the bot's, as it framed its
    body for its own connection, or one a hop added) and one Content-Length written for `body`,
    which every version and every server reads one way. A request that declared no body
    gets none."""
    kept = tuple(field for field in fields if field[0].lower() not in _FRAMING)
    if not body and len(kept) == len(fields):
        return kept
    return (*kept, (b"Content-Length", b"%d" % len(body)))
