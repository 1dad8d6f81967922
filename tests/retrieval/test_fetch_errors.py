"""Why robots.txt could not be had, in words an operator acts on: Fetcher against real sockets.

Each cause is produced for real (a closed port, a name that cannot resolve, a server whose
certificate nobody trusts, one that never answers, one that answers garbage), because httpx's
own message for several of them names a symptom ("All connection attempts failed"), not the
cause.
"""

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from e2e.tls import make_test_ca

from robotsgate.retrieval.fetch import Fetcher

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def serving(handler: Handler, **tls: object) -> AsyncIterator[int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0, **tls)  # type: ignore[arg-type]
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 1)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nothing listens


async def test_a_refused_connection_says_refused() -> None:
    port = closed_port()
    result = await Fetcher(timeout=5).fetch(f"http://127.0.0.1:{port}/robots.txt", None)
    assert result.outcome == "unreachable"
    assert result.error == "connection to 127.0.0.1 refused"


async def test_a_name_that_does_not_resolve_says_dns() -> None:
    # .invalid never resolves (RFC 6761 §6.4), with or without a network.
    result = await Fetcher(timeout=5).fetch("http://robots.invalid/robots.txt", None)
    assert result.outcome == "unreachable"
    assert result.error is not None and result.error.startswith("DNS lookup of robots.invalid")


async def test_an_untrusted_certificate_says_which_host_and_why(tmp_path: Path) -> None:
    ca = make_test_ca(tmp_path / "ca")

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    async with serving(answer, ssl=ca.server_context()) as port:
        result = await Fetcher(timeout=5).fetch(f"https://127.0.0.1:{port}/robots.txt", None)
    assert result.outcome == "unreachable"
    assert result.error is not None
    assert result.error.startswith("TLS certificate of 127.0.0.1 not trusted: ")
    # openssl's own reason and the code people search for.
    assert "issuer" in result.error and "CERTIFICATE_VERIFY_FAILED" in result.error


async def test_a_server_that_never_answers_says_how_long_was_waited() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)
        await asyncio.sleep(30)

    async with serving(silent) as port:
        result = await Fetcher(timeout=0.2).fetch(f"http://127.0.0.1:{port}/robots.txt", None)
    assert result.outcome == "unreachable"
    assert result.error == "timed out after 0.2 s waiting for an answer"


async def test_garbage_instead_of_http_says_so() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)
        writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        await writer.drain()
        writer.close()

    async with serving(garbage) as port:
        result = await Fetcher(timeout=5).fetch(f"http://127.0.0.1:{port}/robots.txt", None)
    assert result.outcome == "unreachable"
    assert result.error is not None
    assert result.error.startswith("not a valid HTTP answer from 127.0.0.1: ")


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_an_error_status_says_the_status(status: int) -> None:
    async def fail(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(65536)
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n".encode())
        await writer.drain()
        writer.close()

    async with serving(fail) as port:
        result = await Fetcher(timeout=5).fetch(f"http://127.0.0.1:{port}/robots.txt", None)
    assert (result.outcome, result.error) == ("unreachable", f"HTTP {status}")
