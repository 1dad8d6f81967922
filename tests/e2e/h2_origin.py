"""An HTTPS origin that speaks HTTP/2, with a limit on concurrent streams.

What the threaded ``Origin`` cannot be: an origin whose one connection carries many requests at
once, and that may tell a client to queue them (SETTINGS_MAX_CONCURRENT_STREAMS). It also answers
HTTP/1.1 (robotsgate fetches robots.txt that way). Like ``Origin``, it records when each request's
headers came, on the monotonic clock.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

import h2.config
import h2.connection
import h2.events
import h2.settings


@dataclass(frozen=True)
class Arrival:
    path: str
    arrived: float  # time.monotonic() once its headers were read
    protocol: str  # "h2" or "http/1.1"


class H2Origin:
    def __init__(self, tls: ssl.SSLContext, robots: str, *, delays: Mapping[str, float],
                 max_streams: int, host: str = "127.0.0.1") -> None:
        """`delays`: seconds before answering a path; `max_streams`: what the origin allows a
        client at once."""
        tls.set_alpn_protocols(["h2", "http/1.1"])
        self.host = host
        self._robots = robots.encode()
        self._delays = dict(delays)
        self._max_streams = max_streams
        self._lock = threading.Lock()
        self._seen: list[Arrival] = []
        self._loop = asyncio.new_event_loop()
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._connection, host, 0, ssl=tls))
            self.port: int = self._server.sockets[0].getsockname()[1]
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="h2-origin", daemon=True)
        self._thread.start()
        started.wait(10)

    def url(self, path: str) -> str:
        return f"https://{self.host}:{self.port}{path}"

    @property
    def seen(self) -> list[Arrival]:
        with self._lock:
            return list(self._seen)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def _saw(self, path: str, protocol: str) -> None:
        with self._lock:
            self._seen.append(Arrival(path, time.monotonic(), protocol))

    def _body(self, path: str) -> bytes:
        return self._robots if path == "/robots.txt" else f"page {path}\n".encode()

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        try:
            if writer.get_extra_info("ssl_object").selected_alpn_protocol() == "h2":
                await self._h2(reader, writer)
            else:
                await self._h1(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass  # the proxy went away
        finally:
            writer.close()

    async def _h2(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS:
                              self._max_streams})
        writer.write(conn.data_to_send())
        answers: set[asyncio.Task[None]] = set()
        while data := await reader.read(65536):
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    path = dict(event.headers)[b":path"].decode()
                    self._saw(path, "h2")
                    answer = asyncio.ensure_future(
                        self._h2_answer(conn, writer, event.stream_id, path))
                    answers.add(answer)
                    answer.add_done_callback(answers.discard)
            writer.write(conn.data_to_send())

    async def _h2_answer(self, conn: h2.connection.H2Connection, writer: asyncio.StreamWriter,
                         stream: int, path: str) -> None:
        await asyncio.sleep(self._delays.get(path, 0.0))
        body = self._body(path)
        conn.send_headers(stream, [(":status", "200"), ("content-length", str(len(body))),
                                   ("content-type", "text/plain")])
        conn.send_data(stream, body, end_stream=True)
        writer.write(conn.data_to_send())

    async def _h1(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ")[1].decode()
            self._saw(path, "http/1.1")
            await asyncio.sleep(self._delays.get(path, 0.0))
            body = self._body(path)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
