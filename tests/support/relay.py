"""A TCP relay in front of a real server that can lose the server's answers: the fault of a
network that delivers a command and loses its reply, so that the server acts on a command
its sender then gives up on."""

import asyncio
import contextlib


class Relay:
    """Listens on 127.0.0.1:`port` and relays each connection to `target`. While `mute` is
    set, what the server sends back is dropped."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.mute = False
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> "Relay":
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        both = [asyncio.ensure_future(self._pipe(reader, upstream_writer, answers=False)),
                asyncio.ensure_future(self._pipe(upstream_reader, writer, answers=True))]
        self._tasks.update(both)
        await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
        for task in both:
            task.cancel()
        for w in (writer, upstream_writer):
            with contextlib.suppress(Exception):
                w.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                    answers: bool) -> None:
        while data := await reader.read(65536):
            if answers and self.mute:
                continue  # lost on the way back
            writer.write(data)
            await writer.drain()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
