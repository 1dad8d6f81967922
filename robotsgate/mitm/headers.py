"""Headers read on every request and every page, each set in one pass over the raw fields
(Headers.get() scans them all, lower-casing every name, once per header asked for), and the
few rewrites robotsgate makes to them."""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mitmproxy import http


@dataclass(slots=True)
class RequestHeaders:
    """What robotsgate reads of a request's headers, in one pass over its fields."""

    host: str | None
    user_agent: str | None
    referer: str | None
    upgrade: str | None
    folded: bool  # a value continued on the next line (obs-fold), or holding a bare CR or LF
    lengths: int  # Content-Length fields
    encodings: list[bytes]  # Transfer-Encoding values

    @classmethod
    def of(cls, fields: Sequence[tuple[bytes, bytes]]) -> "RequestHeaders":
        seen = cls(None, None, None, None, False, 0, [])
        for name, value in fields:
            lowered = name.lower()
            if lowered == b"content-length":
                seen.lengths += 1
            elif lowered == b"transfer-encoding":
                seen.encodings.append(value)
            elif lowered == b"host":
                seen.host = _fold(seen.host, value)
            elif lowered == b"user-agent":
                seen.user_agent = _fold(seen.user_agent, value)
            elif lowered == b"referer":
                seen.referer = _fold(seen.referer, value)
            elif lowered == b"upgrade":
                seen.upgrade = _fold(seen.upgrade, value)
            if b"\r" in value or b"\n" in value:
                seen.folded = True
        return seen


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


_TOKEN_BYTES = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TARGET_BYTES = re.compile(rb"[^\x00-\x20\x7f]+")


def well_formed(req: http.Request) -> bool:
    """Method and header names are tokens, the path and authority hold no control character or
    space: what mitmproxy's validate_inbound_headers would have made sure of."""
    data = req.data
    return bool(_TOKEN_BYTES.fullmatch(data.method)
                and _TARGET_BYTES.fullmatch(data.path)
                and (not data.authority or _TARGET_BYTES.fullmatch(data.authority))
                and all(_TOKEN_BYTES.fullmatch(name) for name, _ in req.headers.fields))
