"""Bounded decoding of response bodies (robotsgate.pages.content): never more than the limit."""

import gzip
import tracemalloc
import zlib

import brotli  # type: ignore[import-untyped]
import pytest

from robotsgate.pages.content import MAX_CODINGS, Undecodable, decoded_prefix, zstd

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
    (gzip.compress(gzip.compress(PAGE)), "gzip, compress"),  # one of a stack not known
    (gzip.compress(PAGE), "gzip, gzip"),  # one layer less than it says
])
def test_what_cannot_be_decoded_is_undecodable(raw, encoding):
    with pytest.raises(Undecodable, match="Content-Encoding"):
        decoded_prefix(raw, encoding, 1000)


@pytest.mark.parametrize(("encoding", "encode"), [
    ("gzip, gzip", lambda data: gzip.compress(gzip.compress(data))),
    # Listed in the order applied (RFC 9110 §8.4): undone last first.
    ("deflate, br", lambda data: brotli.compress(zlib.compress(data))),
    ("zstd,identity, GZIP", lambda data: gzip.compress(zstd.compress(data))),
    (", ".join(["gzip"] * MAX_CODINGS), lambda data: stacked(data, MAX_CODINGS)),
])
def test_stacked_codings_are_undone_last_first_up_to_the_limit(encoding, encode):
    raw = encode(PAGE)
    assert decoded_prefix(raw, encoding, len(PAGE) + 1) == PAGE
    assert decoded_prefix(raw, encoding, 100) == PAGE[:100]


def stacked(data: bytes, times: int) -> bytes:
    for _ in range(times):
        data = gzip.compress(data)
    return data


def test_more_codings_than_curl_undoes_are_not_undone():
    # curl refuses a fifth coding (CVE-2022-32206): each is one more pass over the body.
    raw = stacked(PAGE, MAX_CODINGS + 1)
    with pytest.raises(Undecodable, match=f"{MAX_CODINGS + 1} codings, more than the "
                                          f"{MAX_CODINGS}"):
        decoded_prefix(raw, ", ".join(["gzip"] * (MAX_CODINGS + 1)), 10 * MIB)


def test_a_stacked_bomb_is_decoded_no_further_than_the_limit_in_any_layer():
    # 64 MiB of zeros, gzipped, gzipped again: the inner layer is cut at the limit too, and the
    # outer's first 2 MiB are what the caller gets (a longer body, it can tell).
    raw = gzip.compress(gzip_bomb(64))
    tracemalloc.start()
    try:
        decoded = decoded_prefix(raw, "gzip, gzip", 2 * MIB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoded == bytes(2 * MIB)
    assert peak < 16 * MIB, f"peak {peak >> 20} MiB"


def test_an_inner_layer_longer_than_the_limit_for_less_output_is_undecodable():
    # The inner gzip stream is padded with empty members: its first `limit` bytes decode to
    # less than the limit, so whether the page goes on past it cannot be told without
    # decoding more. Refused rather than read as a whole page (it may not be).
    empty = gzip.compress(b"", mtime=0)
    inner = gzip.compress(b"<html>", mtime=0) + empty * (2000 // len(empty) + 1) + \
        gzip.compress(b"tail</html>", mtime=0)
    with pytest.raises(Undecodable, match="inner coding is longer than 1000 bytes"):
        decoded_prefix(gzip.compress(inner), "gzip, gzip", 1000)
    # With room for all of it, it is read whole.
    assert decoded_prefix(gzip.compress(inner), "gzip, gzip", 10_000) == b"<html>tail</html>"


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
