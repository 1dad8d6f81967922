"""Pushback: a 429 or 503 from an origin pauses its host for every bot; any other answer
ends the pause. Every forwarded response also says how long the proxy held the request."""

import logging
from collections.abc import Awaitable

from mitmproxy import http

from robotsgate.mitm.flow import state
from robotsgate.mitm.headers import set_headers
from robotsgate.mitm.runtime import Runtime
from robotsgate.origin import Origin
from robotsgate.state.driver import Politeness
from robotsgate.state.pacing import parse_retry_after

logger = logging.getLogger(__name__)

_DELAY_MS = b"x-robotsgate-delay-ms"  # its own name, or within another's: replace then


class Pushback:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def response(self, flow: http.HTTPFlow) -> Awaitable[object] | None:
        response = flow.response
        known = state(flow)
        if response is None or flow.error is not None or known.answered:
            return None
        status = response.status_code
        if status == 101:
            return None
        delay = known.delay_ms
        if delay is not None:
            # The origin cannot set it for us: any header of that name it sent goes.
            headers = response.headers
            set_headers(headers, [(b"X-Robotsgate-Delay-Ms", str(delay).encode())],
                        replace=b"\n".join(
                            [name for name, _ in headers.fields]).lower().find(_DELAY_MS) >= 0)
        host = known.host or \
            Origin.of(flow.request.scheme, flow.request.host, flow.request.port).host
        politeness = self.runtime.of(flow).services.politeness
        if status in (429, 503):
            return self._pause(politeness, host, status, parse_retry_after(
                response.headers.get("retry-after"), self.runtime.clocks.clock()))
        # The schedule's own coroutine, awaited by mitmproxy; none for nearly every answer.
        return politeness.recovered(host)

    async def _pause(self, politeness: Politeness, host: str, status: int,
                     retry_after: float | None) -> None:
        pause = await politeness.pushback(host, retry_after)
        logger.info("robotsgate: %s answered %d: pausing it for %.1f s", host, status, pause)

