"""Bounded decoding of HTTP bodies: never more than a limit is decompressed.

A response of a few kilobytes can inflate to gigabytes (a compression bomb); a proxy that reads
pages on the bots' behalf must not be the one that inflates it. Each decoder here stops at the
limit: zlib's max_length, brotli's output_buffer_limit, zstd's max_length. brotli and zstd are
mitmproxy's own codecs (it cannot run without them): Python's compression.zstd from 3.14, its
backport before.
"""

import zlib
from collections.abc import Callable

import brotli  # type: ignore[import-untyped]

try:
    from compression import zstd  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # Python < 3.14: the backport mitmproxy itself depends on
    from backports import zstd  # type: ignore[no-redef,unused-ignore]


# Codings undone for one body, at most: a site may stack them (Content-Encoding: gzip, gzip),
# and each one undone is another pass over up to `limit` bytes. curl refuses a response that
# stacks a fifth (MAX_ENCODE_STACK, since CVE-2022-32206, where an unbounded stack exhausted
# memory); so does robotsgate. Pages that stack even two are rare; none needs five.
MAX_CODINGS = 4


class Undecodable(ValueError):
    """A body robotsgate does not decode: a coding it does not know, more than MAX_CODINGS of
    them, bytes that do not decode, or a stack whose inner layer is longer than the limit."""


def decoded_prefix(raw: bytes, content_encoding: str | None, limit: int) -> bytes:
    """At most `limit` bytes of `raw` with its Content-Encoding undone; `raw` itself when it is
    not encoded. Stacked codings (at most MAX_CODINGS) are undone in the reverse of the order
    they are listed in (RFC 9110 §8.4), each layer's output no longer than `limit`.

    What comes back is exactly the decoded body's first `limit` bytes, or the whole of it when
    it is shorter: a caller that asks for one byte more than it reads can tell a longer body
    from one that is not. Raises Undecodable (a ValueError) for a body it cannot decode so."""
    if not content_encoding:
        return raw  # most pages: not a list made to find that out
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return raw
    if len(codings) > MAX_CODINGS:
        raise Undecodable(f"Content-Encoding {content_encoding!r}: {len(codings)} codings, "
                          f"more than the {MAX_CODINGS} robotsgate undoes")
    unknown = [c for c in codings if c not in _DECODERS]
    if unknown:
        raise Undecodable(f"Content-Encoding {content_encoding!r}: {unknown[0]} not known")
    body, cut = raw, False
    for coding in reversed(codings):
        try:
            decoded = _DECODERS[coding](body, limit)
        except (zlib.error, RuntimeError, OSError) as exc:
            raise Undecodable(f"Content-Encoding {coding}: the body does not decode "
                              f"({exc})") from exc
        # An inner layer (the next one to undo) stopped at the limit may hold more than its
        # first `limit` bytes decode to.
        body, cut = decoded, cut or len(decoded) >= limit
    if cut and len(body) < limit:
        # Its prefix decodes to less than the limit, and the rest is not decoded: whether the
        # body is longer cannot be told (an inner stream padded with empty blocks, say).
        raise Undecodable(f"Content-Encoding {content_encoding!r}: an inner coding is longer "
                          f"than {limit} bytes once undone")
    return body


def _deflate(raw: bytes, limit: int) -> bytes:
    try:
        return _inflate(raw, zlib.MAX_WBITS, limit)
    except zlib.error:  # servers send raw deflate as "deflate" too
        return _inflate(raw, -zlib.MAX_WBITS, limit)


def _gzip(raw: bytes, limit: int) -> bytes:
    return _inflate(raw, 16 + zlib.MAX_WBITS, limit)


def _inflate(raw: bytes, wbits: int, limit: int) -> bytes:
    out = bytearray()
    data = raw
    while data and len(out) < limit:
        inflater = zlib.decompressobj(wbits)
        out += inflater.decompress(data, limit - len(out))
        # A gzip body may be several members one after the other; the rest of this member is
        # in unconsumed_tail when the limit stopped it, the next member in unused_data.
        if inflater.unconsumed_tail or not inflater.eof:
            break
        data = inflater.unused_data
    return bytes(out)


def _brotli(raw: bytes, limit: int) -> bytes:
    decompressor = brotli.Decompressor()
    try:
        out: bytes = decompressor.process(raw, output_buffer_limit=limit)
    except TypeError as exc:  # brotli < 1.2 cannot stop at a limit
        raise RuntimeError("this brotli cannot decode within a limit") from exc
    except brotli.error as exc:
        raise RuntimeError(str(exc)) from exc
    return out[:limit]


def _zstd(raw: bytes, limit: int) -> bytes:
    out = bytearray()
    data = raw
    try:
        while data and len(out) < limit:
            decompressor = zstd.ZstdDecompressor()
            out += decompressor.decompress(data, limit - len(out))
            # Several frames may follow one another (RFC 8878 §3.1); a frame the limit stopped
            # (or that is cut short) is not finished, and nothing after it is read.
            if not decompressor.eof:
                break
            data = decompressor.unused_data
    except zstd.ZstdError as exc:
        raise RuntimeError(str(exc)) from exc
    return bytes(out)


_DECODERS: dict[str, Callable[[bytes, int], bytes]] = {
    "gzip": _gzip, "x-gzip": _gzip, "deflate": _deflate, "br": _brotli, "zstd": _zstd}
