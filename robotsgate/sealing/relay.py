"""The one way out of a sealed namespace: each connection to its loopback listener, bridged to
the proxy outside.

The listener was made inside the namespace (robotsgate.sealing.namespace) and handed over; the
run accepts on it from outside and connects to the proxy from its own network. Bytes are copied
as they come, both ways, and a half-close is passed on: the proxy sees a client on the run's
side, the bot a proxy on its own loopback.
"""

import asyncio
import contextlib
import socket

_CHUNK = 65_536


class Relay:
    def __init__(self, listener: socket.socket, proxy: tuple[str, int]) -> None:
        self._listener = listener
        self._proxy = proxy
        self._server: asyncio.Server | None = None
        self._bridges: set[asyncio.Task[None]] = set()
        self.connections = 0

    async def start(self) -> None:
        self._listener.setblocking(False)
        self._server = await asyncio.start_server(self._bridge, sock=self._listener)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._bridges):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*self._bridges, return_exceptions=True)

    async def _bridge(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._bridges.add(task)
        self.connections += 1
        try:
            try:
                up_reader, up_writer = await asyncio.open_connection(*self._proxy)
            except OSError:
                return  # the proxy is gone: the bot's connection is closed, nothing else
            try:
                await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
            finally:
                up_writer.close()
        finally:
            writer.close()
            self._bridges.discard(task)


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(_CHUNK):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except OSError:
        sink.close()  # reset on one side: the other is closed, not left waiting
