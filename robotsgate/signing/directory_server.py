"""The key directory and the Signature Agent Card on a port of their own (robots_directory_port),
like the metrics: a site fetches the directory to verify the proxy's signatures. Plain HTTP:
put it behind the https server that answers for robots_signature_agent's host, keeping Host
(each directory response is signed over the authority its request named)."""

import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from robotsgate.signing.directory import CARD_PATH, DIRECTORY_PATH, MEDIA_TYPE, Published

logger = logging.getLogger(__name__)


class DirectoryServer:
    """Serves what `published()` gives at the time of each request (a reconfiguration swaps
    it without restarting the server)."""

    def __init__(self, host: str, port: int, published: Callable[[], Published | None],
                 clock: Callable[[], float] = time.time) -> None:
        handler = type("Handler", (_Handler,), {"published": staticmethod(published),
                                                "clock": staticmethod(clock)})
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self.host, self.port = host, self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="robotsgate directory", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    published: Callable[[], Published | None]
    clock: Callable[[], float]
    server_version = "robotsgate"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        published = self.published()
        path = self.path.split("?", 1)[0]
        if published is None or path not in (DIRECTORY_PATH, CARD_PATH):
            self._send(404, "text/plain; charset=utf-8", b"not found\n", (), body=body)
            return
        if path == CARD_PATH:
            self._send(200, "application/json", published.card_document(), (), body=body)
            return
        authority = (self.headers.get("Host") or "").strip().lower()
        if not authority or len(self.headers.get_all("Host") or ()) > 1:
            self._send(400, "text/plain; charset=utf-8", b"one Host, please\n", (), body=body)
            return
        self._send(200, MEDIA_TYPE, published.directory(),
                   published.signature_fields(authority, self.clock()), body=body)

    def _send(self, status: int, kind: str, content: bytes, fields: Any, *, body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(content)))
        # Signed for a few minutes: a cache must not serve a signature past its expiry.
        self.send_header("Cache-Control", "max-age=60")
        for name, value in fields:
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(content)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("robotsgate: directory: " + format, *args)
