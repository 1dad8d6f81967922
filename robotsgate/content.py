"""Bounded decoding of HTTP bodies: never more than a limit is decompressed.

A response of a few kilobytes can inflate to gigabytes (a compression bomb); a proxy that reads
pages on the bots' behalf must not be the one that inflates it. Each decoder here stops at the
limit: zlib's max_length, brotli's output_buffer_limit, zstd's max_length. brotli and zstd are
mitmproxy's own codecs (it cannot run without them): Python's compression.zstd from 3.14, its
backport before.
"""

import zlib

import brotli  # type: ignore[import-untyped]

try:
    from compression import zstd  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # Python < 3.14: the backport mitmproxy itself depends on
    from backports import zstd  # type: ignore[no-redef,unused-ignore]


def decoded_prefix(raw: bytes, content_encoding: str | None, limit: int) -> bytes:
    """At most `limit` bytes of `raw` with its Content-Encoding undone; `raw` itself when it is
    not encoded. Raises ValueError for an encoding it cannot decode within the limit (several
    stacked, or one it does not know) and for a body that does not decode."""
    if not content_encoding:
        return raw  # most pages: not a list made to find that out
    codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return raw
    if len(codings) > 1:
        raise ValueError(f"Content-Encoding {content_encoding!r}: stacked codings not read")
    coding = codings[0]
    try:
        if coding in ("gzip", "x-gzip"):
            return _inflate(raw, 16 + zlib.MAX_WBITS, limit)
        if coding == "deflate":
            try:
                return _inflate(raw, zlib.MAX_WBITS, limit)
            except zlib.error:  # servers send raw deflate as "deflate" too
                return _inflate(raw, -zlib.MAX_WBITS, limit)
        if coding == "br":
            return _brotli(raw, limit)
        if coding == "zstd":
            return _zstd(raw, limit)
    except (zlib.error, RuntimeError, OSError) as exc:
        raise ValueError(f"Content-Encoding {coding}: the body does not decode ({exc})") from exc
    raise ValueError(f"Content-Encoding {content_encoding!r} not known")


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
