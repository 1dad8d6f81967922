"""Where robotsgate relies on mitmproxy's internals: every such place, and only here.

Each function names what it relies on; `check()` says at load time whether the installed
mitmproxy is the one these were read against (`CHECKED`), and tests/test_compat.py holds each
against mitmproxy's own behaviour, so that an upgrade fails in one place.
"""

import argparse
import logging
from collections.abc import Sequence

from mitmproxy import connection, ctx, options, version
from mitmproxy.proxy import layer
from mitmproxy.proxy.layers.http import HttpStream
from mitmproxy.proxy.layers.http._events import RequestHeaders
from mitmproxy.proxy.layers.http._http1 import Http1Client
from mitmproxy.tools import cmdline

from robotsgate.mitm import keys

logger = logging.getLogger(__name__)

CHECKED = "12.3"  # the mitmproxy release line everything below was read against


def check() -> None:
    """Warn once when the installed mitmproxy is not the line this layer was checked against."""
    if not version.VERSION.startswith(CHECKED + "."):
        logger.warning("robotsgate: its mitmproxy layer was checked against mitmproxy %s.x, "
                       "this is %s: run its tests before relying on it", CHECKED,
                       version.VERSION)


def mitmdump_arguments(args: Sequence[str], *, prog: str) -> argparse.Namespace:
    """mitmdump's command line read as mitmdump reads it (mitmproxy.tools.cmdline), so that
    `robotsgate serve` can refuse a mistake with status 2 before it starts mitmdump (which
    turns argparse's 2 into 1). Raises SystemExit(2), argparse's message printed."""
    parser: argparse.ArgumentParser = cmdline.mitmdump(options.Options())
    parser.prog = prog
    return parser.parse_args(list(args))


def listening() -> list[tuple[str, int]]:
    """(host, port) of every address the proxy listens on (mitmproxy's proxyserver addon);
    host "" or an unspecified address: every address of this machine."""
    proxyserver = ctx.master.addons.get("proxyserver")
    if proxyserver is None:
        return []
    return [(str(address[0]), int(address[1])) for address in proxyserver.listen_addrs()]


def patch() -> None:
    """Apply the fixes below, once per process."""
    _drain_answered_bodies()
    _frame_downgraded_requests()


def rename(server: connection.Server, address: tuple[str, int]) -> None:
    """Give an open connection back the address mitmproxy knows it by.

    The connection was dialled at the address robotsgate classified (an IP), and mitmproxy uses
    `server.address` for more than the dial: to reuse the connection for the next request to the
    same host, and as the host of the requests inside a tunnel. Server.__setattr__ refuses to
    change the address of an open connection; this is the one place that does it.
    """
    object.__setattr__(server, "address", address)


def _drain_answered_bodies() -> None:
    """The body of a request robotsgate answered itself is read and dropped, never streamed.

    The answer is set when the headers are in; mitmproxy then reads the body before it sends
    the answer, and checks the size of what it has read so far against stream_large_bodies
    and body_size_limit as it goes (HttpStream.check_body_size). Left alone, that check would
    switch such a request to streaming (which mitmproxy refuses for an answered request: the
    connection breaks with a crash report) or keep an unbounded body in memory. For an answered
    request the check drops what was read and lets the rest come.
    """
    original = HttpStream.check_body_size
    if getattr(original, "robotsgate", False):
        return

    def check_body_size(stream: HttpStream, request: bool) -> layer.CommandGenerator[bool]:
        if request and stream.flow.metadata.get(keys.ANSWERED):
            stream.request_body_buf.clear()
            return False
        return (yield from original(stream, request))

    check_body_size.robotsgate = True  # type: ignore[attr-defined]
    HttpStream.check_body_size = check_body_size  # type: ignore[method-assign,assignment]


def _frame_downgraded_requests() -> None:
    """An HTTP/2 or HTTP/3 request with a body leaves as HTTP/1.1 with its body framed.

    HTTP/2 needs no header to say that a body follows (RFC 9113 §8.1.1). Http1Client.send turns
    such a request into an HTTP/1.1 head without Content-Length or Transfer-Encoding, and then
    writes the DATA frames' bytes raw: the origin reads a request without a body, and the body's
    bytes as the next request, one nobody decided. Here a request whose body is still to come
    (its headers did not end the stream) and whose length no header gives is sent chunked
    (Http1Client chunks the data of a request marked so, and ends it with the last chunk).
    The Host of the downgraded request is the :authority robotsgate wrote.
    """
    original = Http1Client.send
    if getattr(original, "robotsgate", False):
        return

    def send(client: Http1Client, event: object) -> layer.CommandGenerator[None]:
        if isinstance(event, RequestHeaders) and not event.end_stream:
            request = event.request
            headers = request.headers
            if (request.is_http2 or request.is_http3) and "content-length" not in headers \
                    and "transfer-encoding" not in headers:
                headers["transfer-encoding"] = "chunked"
        return (yield from original(client, event))  # type: ignore[arg-type]

    send.robotsgate = True  # type: ignore[attr-defined]
    Http1Client.send = send  # type: ignore[method-assign,assignment]



