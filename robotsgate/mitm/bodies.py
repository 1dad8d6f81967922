"""The body of a request robotsgate answered itself is read and dropped, never streamed."""

from mitmproxy.proxy import layer
from mitmproxy.proxy.layers.http import HttpStream

from robotsgate.mitm import keys


def drain_answered_bodies() -> None:
    """The answer is set when the headers are in; mitmproxy then reads the body before it sends
    the answer, and checks the size of what it has read so far against stream_large_bodies
    and body_size_limit as it goes. Left alone, that check would switch such a request to
    streaming (which mitmproxy refuses for an answered request: the connection breaks with a
    crash report) or keep an unbounded body in memory. Patched once, here: for an answered
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
