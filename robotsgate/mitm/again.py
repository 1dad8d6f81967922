"""A request sent once more, by the proxy, on an origin's answer that asks for something the
proxy can give: a signature (robotsgate.mitm.signing), a fresh licence (robotsgate.mitm.licensing).

The copy goes through mitmproxy's own ReplayHandler, so it is decided, paced, dialled and
audited afresh (robotsgate.mitm.decision forgets what was noted on the flow); the bot gets the
second answer, or the first when the second never came. What frames it is the proxy's: its
body is held whole (a request whose body streamed is never sent again), so it goes with one
Content-Length, whatever framing the bot's connection used (chunked, or an HTTP/2 body whose
DATA frames ended it) or a hop wrote.
"""

import asyncio

from mitmproxy import ctx, http

from robotsgate.mitm import keys
from robotsgate.mitm.headers import reframed

AGAIN_TIMEOUT = 300.0  # seconds the second request may take, pacing waits included


async def send_again[T](flow: http.HTTPFlow, sending: dict[str, T], note: T
                        ) -> tuple[http.HTTPFlow, str | None]:
    """Send `flow`'s request again; while it is on its way, `sending[copy's id]` is `note`
    (what the caller's hooks know it by). On an answer, `flow` gets it, settled (it went through
    every part on its way). Returns the copy that was sent, and None or why no answer came."""
    from mitmproxy.addons.clientplayback import ReplayHandler

    again = flow.copy()
    again.is_replay = "request"  # decided afresh (robotsgate.mitm.decision), our fields gone
    again.response = again.error = None
    request = again.request.data
    request.headers.fields = reframed(request.headers.fields, request.content or b"")
    sending[again.id] = note
    trouble = None
    try:
        await asyncio.wait_for(ReplayHandler(again, ctx.options).replay(), AGAIN_TIMEOUT)
    except TimeoutError:
        trouble = f"no answer within {AGAIN_TIMEOUT:.0f} s"
    finally:
        del sending[again.id]
    if again.response is None:
        return again, trouble or (again.error.msg if again.error else "no answer")
    flow.response = again.response
    flow.metadata[keys.ANSWERED] = True
    return again, None
