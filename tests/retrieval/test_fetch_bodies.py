"""robots.txt bodies are read whole or not at all: Fetcher against a real HTTP server.

The server sends exact bytes with chosen headers, in chunked transfer-encoding, one chunk per
write: httpx hands each chunk over as it comes, so the fetcher's streaming path decodes the body
piece by piece (chunk boundaries inside gzip headers, trailers and between members included).
"""

import asyncio
import contextlib
import gzip
import tracemalloc
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest
from support.clock import FakeClock
from support.gate import wire_gate

from robotsgate.decision.verdict import Request
from robotsgate.origin import Origin
from robotsgate.protocol import MAX_BYTES, RobotsTxt
from robotsgate.retrieval.fetch import Fetcher

ALLOW = b"User-agent: *\nAllow: /public\n"
DISALLOW = b"Disallow: /private\n"
RULES = ALLOW + DISALLOW


@dataclass
class Reply:
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    chunk: int = 7  # bytes per chunk, each its own write


class Server:
    """A real HTTP/1.1 server on 127.0.0.1 that answers every request with `reply`."""

    def __init__(self) -> None:
        self.reply = Reply(b"")
        self.requests = 0
        self.heads: list[bytes] = []  # each request's head, as received
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/robots.txt"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # The client stops reading at the cap or at the first error: it may hang up on us.
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            self.heads.append(await reader.readuntil(b"\r\n\r\n"))
            self.requests += 1
            reply = self.reply
            head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
            head += "".join(f"{name}: {value}\r\n" for name, value in reply.headers.items())
            head += "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            writer.write(head.encode("latin-1"))
            for start in range(0, len(reply.body), reply.chunk):
                piece = reply.body[start : start + reply.chunk]
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    server = Server()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def fetcher() -> AsyncIterator[Fetcher]:
    fetcher = Fetcher(timeout=5)
    yield fetcher
    await fetcher.aclose()


async def fetch(server: Server, fetcher: Fetcher, body: bytes, encoding: str | None,
                chunk: int = 7):
    headers = {"Content-Encoding": encoding} if encoding else {}
    server.reply = Reply(body, headers, chunk)
    return await fetcher.fetch(server.url, "FooBot/1.0")


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def gzip_of_zeros(size: int, prefix: bytes = b"") -> bytes:
    """A gzip member of `prefix` and `size` zero bytes, made without holding them all."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [packer.compress(prefix)]
    block = bytes(1 << 20)
    for _ in range(size // len(block)):
        out.append(packer.compress(block))
    return b"".join([*out, packer.flush()])


def unreachable(result, error: str) -> None:
    assert result.outcome == "unreachable", result
    assert result.body == b""
    assert error in (result.error or ""), result.error


# -- what decodes whole -----------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 7, 4096])
async def test_every_gzip_member_is_read(server, fetcher, chunk):
    # The Disallow is in the second member: reading the first one only would allow /private.
    body = gzip.compress(ALLOW) + gzip.compress(DISALLOW)
    result = await fetch(server, fetcher, body, "gzip", chunk)
    assert result.outcome == "ok" and result.body == RULES
    assert not RobotsTxt.parse(result.body).decide("FooBot", "/private").allowed


async def test_x_gzip_is_gzip(server, fetcher):
    result = await fetch(server, fetcher, gzip.compress(ALLOW) + gzip.compress(DISALLOW),
                         "x-gzip")
    assert result.outcome == "ok" and result.body == RULES


@pytest.mark.parametrize("chunk", [1, 7, 4096])
async def test_deflate_with_a_zlib_header(server, fetcher, chunk):
    result = await fetch(server, fetcher, zlib.compress(RULES), "deflate", chunk)
    assert result.outcome == "ok" and result.body == RULES


@pytest.mark.parametrize("chunk", [1, 7, 4096])
async def test_raw_deflate_without_a_zlib_header(server, fetcher, chunk):
    result = await fetch(server, fetcher, raw_deflate(RULES), "deflate", chunk)
    assert result.outcome == "ok" and result.body == RULES


async def test_an_empty_compressed_body_is_an_empty_file(server, fetcher):
    # Nothing was compressed, so nothing is missing (servers send this for an empty file).
    result = await fetch(server, fetcher, b"", "gzip")
    assert result.outcome == "ok" and result.body == b""


# -- what does not: unreachable, with the error in words ----------------------------------------


@pytest.mark.parametrize("cut", [1, 9, "middle", -8, -1])
async def test_a_truncated_gzip_body_is_unreachable(server, fetcher, cut):
    body = gzip.compress(RULES)
    end = len(body) // 2 if cut == "middle" else cut
    result = await fetch(server, fetcher, body[:end], "gzip")
    unreachable(result, "gzip body truncated")


async def test_a_gzip_body_cut_inside_its_second_member_is_unreachable(server, fetcher):
    first = gzip.compress(ALLOW)
    body = first + gzip.compress(DISALLOW)
    result = await fetch(server, fetcher, body[: len(first) + 12], "gzip")
    unreachable(result, "gzip body truncated")


@pytest.mark.parametrize(("where", "error"), [(-6, "incorrect data check"),
                                              (-2, "incorrect length check")])
async def test_a_gzip_body_failing_its_crc_or_length_is_unreachable(server, fetcher, where,
                                                                    error):
    body = bytearray(gzip.compress(RULES))
    body[where] ^= 0xFF
    result = await fetch(server, fetcher, bytes(body), "gzip")
    unreachable(result, "corrupt gzip body")
    assert error in (result.error or "")


@pytest.mark.parametrize("tail", [b"<html>oops</html>", b"\0" * 8, b"\n"])
async def test_bytes_after_the_last_gzip_member_are_unreachable(server, fetcher, tail):
    result = await fetch(server, fetcher, gzip.compress(RULES) + tail, "gzip")
    assert result.outcome == "unreachable" and result.body == b""
    # A single byte cannot be told from the start of a member: it reads as one cut short.
    assert "not another member" in (result.error or "") or "truncated" in (result.error or "")


@pytest.mark.parametrize("pack", [zlib.compress, raw_deflate])
async def test_a_truncated_deflate_body_is_unreachable(server, fetcher, pack):
    body = pack(RULES)
    result = await fetch(server, fetcher, body[: len(body) // 2], "deflate")
    unreachable(result, "deflate body truncated")


async def test_a_deflate_body_failing_its_checksum_is_unreachable(server, fetcher):
    body = bytearray(zlib.compress(RULES))
    body[-1] ^= 0xFF  # Adler-32
    result = await fetch(server, fetcher, bytes(body), "deflate")
    unreachable(result, "corrupt deflate body: ")


async def test_bytes_after_a_deflate_stream_are_unreachable(server, fetcher):
    result = await fetch(server, fetcher, zlib.compress(RULES) + b"junk", "deflate")
    unreachable(result, "corrupt deflate body")


async def test_an_encoding_not_asked_for_is_unreachable(server, fetcher):
    result = await fetch(server, fetcher, b"\x0b\x02\x80hello\x03", "br")
    unreachable(result, "'br'")


# -- the 500 KiB cap ----------------------------------------------------------------------------


@pytest.mark.parametrize("bomb_member", [1, 2])
async def test_a_compression_bomb_stays_capped(server, fetcher, bomb_member):
    bomb = gzip_of_zeros(50_000_000, RULES if bomb_member == 1 else b"")
    body = bomb if bomb_member == 1 else gzip.compress(RULES) + bomb
    tracemalloc.start()
    try:
        result = await fetch(server, fetcher, body, "gzip", chunk=16_384)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.outcome == "ok"
    assert len(result.body) == MAX_BYTES and result.body.startswith(RULES)
    assert peak < 8 * MAX_BYTES, f"inflating took {peak:,} bytes at its peak"


async def test_a_body_cut_after_the_cap_is_capped_not_truncated(server, fetcher):
    # Reading stops at the cap: what the stream does after it is never seen.
    body = gzip.compress(RULES + b"#" * (4 * MAX_BYTES))
    result = await fetch(server, fetcher, body[: len(body) * 3 // 4], "gzip", chunk=64)
    assert result.outcome == "ok"
    assert len(result.body) == MAX_BYTES and result.body.startswith(RULES)


# -- a transport that hands over whole bodies (httpx.MockTransport) ---------------------------


def whole(body: bytes, encoding: str) -> Fetcher:
    def answer(request: httpx.Request) -> httpx.Response:
        # content=...: httpx reads (and decodes, its own way) the body before the fetcher sees it.
        return httpx.Response(200, headers={"Content-Encoding": encoding}, content=body)

    return Fetcher(timeout=5, transport=httpx.MockTransport(answer))


async def test_a_whole_body_is_decoded_like_a_streamed_one():
    fetcher = whole(gzip.compress(ALLOW) + gzip.compress(DISALLOW), "gzip")
    result = await fetcher.fetch("http://example.com/robots.txt", None)
    assert result.outcome == "ok" and result.body == RULES
    fetcher = whole(raw_deflate(RULES), "deflate")
    result = await fetcher.fetch("http://example.com/robots.txt", None)
    assert result.outcome == "ok" and result.body == RULES


async def test_a_whole_body_truncated_is_unreachable():
    body = gzip.compress(RULES)
    fetcher = whole(body[: len(body) // 2], "gzip")
    unreachable(await fetcher.fetch("http://example.com/robots.txt", None),
                "gzip body truncated")


# -- the request ---------------------------------------------------------------------------------


async def test_the_fetch_names_the_proxy_as_it_is_told(server, fetcher):
    result = await fetcher.fetch(server.url, "MyBot (+https://bots.example/about)")
    assert result.outcome == "ok"
    assert b"\r\nUser-Agent: MyBot (+https://bots.example/about)\r\n" in server.heads[0]
    await fetcher.fetch(server.url)
    assert b"\r\nUser-Agent: robotsgate\r\n" in server.heads[1]  # never httpx's own


# -- through the gate ---------------------------------------------------------------------------


async def test_a_truncated_gzip_body_is_unavailable_and_remembered(server, fetcher):
    body = gzip.compress(ALLOW + b"#" * 2000 + b"\n" + DISALLOW)
    server.reply = Reply(body[: len(body) // 2], {"Content-Encoding": "gzip"})
    clock = FakeClock()
    wired = wire_gate(fetcher, clock, error_ttl=60)
    gate = wired.gate
    port = httpx.URL(server.url).port
    request = Request(Origin.of("http", "127.0.0.1", port), "/private/x", "FooBot/1.0")

    verdict = await gate.check(request)
    assert (verdict.action, verdict.status, verdict.reason) == (
        "unavailable", 503, "robots-unavailable")
    assert verdict.entry is not None and verdict.entry.error == "gzip body truncated"
    assert verdict.retry_after == 60

    clock.now += 59  # within robots_error_ttl: the failure is remembered, not fetched again
    again = await gate.check(request)
    assert again.reason == "robots-unavailable" and again.retry_after == 1
    assert wired.retrieval.fetches == 1 and server.requests == 1

    clock.now += 2  # past it: tried again
    await gate.check(request)
    assert wired.retrieval.fetches == 2 and server.requests == 2
