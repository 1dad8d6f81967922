"""Bounded decoding of response bodies (robotsgate.content): never more than the limit."""

import gzip
import tracemalloc
import zlib

import brotli  # type: ignore[import-untyped]
import pytest

from robotsgate.content import decoded_prefix, zstd

PAGE = b"<html><body>" + b"<p>some text</p>" * 1000 + b"</body></html>"
MIB = 1 << 20


def gzip_bomb(mib: int) -> bytes:
    """`mib` MiB of zeros, gzip-compressed (about 1 KB per MiB)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MIB)
    return b"".join([*(compressor.compress(zeros) for _ in range(mib)), compressor.flush()])


@pytest.mark.parametrize(("encoding", "encode"), [
    ("gzip", gzip.compress),
    ("x-gzip", gzip.compress),
    ("GZIP", gzip.compress),
    ("deflate", zlib.compress),
    ("deflate", lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS)),  # raw deflate
    ("br", brotli.compress),
    ("zstd", zstd.compress),
    ("identity, gzip", gzip.compress),
])
def test_each_encoding_decodes_up_to_the_limit(encoding, encode):
    raw = encode(PAGE)
    assert decoded_prefix(raw, encoding, len(PAGE) + 1) == PAGE
    assert decoded_prefix(raw, encoding, 100) == PAGE[:100]


def test_an_unencoded_body_is_returned_itself():
    assert decoded_prefix(PAGE, None, 10) is PAGE
    assert decoded_prefix(PAGE, "identity", 10) is PAGE


def test_gzip_members_one_after_the_other():
    raw = gzip.compress(b"first ") + gzip.compress(b"second")
    assert decoded_prefix(raw, "gzip", 100) == b"first second"
    assert decoded_prefix(raw, "gzip", 8) == b"first se"


def test_zstd_frames_one_after_the_other():
    compress = zstd.compress
    assert decoded_prefix(compress(b"one ") + compress(b"two"), "zstd", 100) == b"one two"


@pytest.mark.parametrize(("raw", "encoding"), [
    (b"not compressed", "gzip"),
    (b"not compressed", "deflate"),
    (b"not compressed", "br"),
    (b"not compressed", "zstd"),
    (gzip.compress(PAGE), "compress"),  # not one this reads
    (gzip.compress(gzip.compress(PAGE)), "gzip, gzip"),  # stacked
])
def test_what_cannot_be_decoded_is_a_value_error(raw, encoding):
    with pytest.raises(ValueError, match="Content-Encoding"):
        decoded_prefix(raw, encoding, 1000)


@pytest.mark.parametrize(("encoding", "bomb"), [
    ("gzip", gzip_bomb),
    ("br", lambda mib: brotli.compress(bytes(mib * MIB), quality=5)),
    ("zstd", lambda mib: zstd.compress(bytes(mib * MIB))),
])
def test_a_compression_bomb_is_decoded_no_further_than_the_limit(encoding, bomb):
    raw = bomb(64)
    assert len(raw) < MIB  # 64 MiB once decoded
    tracemalloc.start()
    try:
        decoded = decoded_prefix(raw, encoding, 2 * MIB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoded == bytes(2 * MIB)
    assert peak < 8 * MIB, f"peak {peak >> 20} MiB"
