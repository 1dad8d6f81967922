"""Every request the proxy sends once more, whoever asks: one registry (`Resends`), one policy.

Three parts send a request again on an origin's answer that asks for something the proxy can
give: a signature (robotsgate.mitm.signing, a 401/403 with Accept-Signature), a fresh licence
(robotsgate.mitm.licensing, a 401 refusing the one presented), a payment (robotsgate.mitm.payments,
a 402 with a price). Each declares what it writes on a request as it leaves (`Added`) and gives
a note to the copy it sends (what the origin asked, the licence, the room reserved); the
registry holds the notes while copies are on their way, and nothing else does.

The invariants, which no part may break:

1. At most one resend per request, by one part, and never of a copy: a copy is a replay
   (`is_replay == "request"`), and the first answer's flow is marked answered once the copy's
   answer is given to it, so no later part in the hook order finds a request to send again.
2. Only a request that went to its origin and came back whole: not answered by the proxy, no
   error, neither body streamed past it (a body not held cannot be sent twice).
3. The copy is decided, paced, signed and audited afresh, as a request of its own: the decision
   forgets every note robotsgate made on it (robotsgate.mitm.decision) and takes off every field
   a part declared it writes (`take_off`), so that nothing the proxy added the first time goes
   out again unless decided again.
4. The bot gets the copy's answer, or the first one when none came (`send` says why).

What frames the copy is the proxy's: its body is held whole, so it goes with one
Content-Length, whatever framing the bot's connection used (chunked, or an HTTP/2 body whose
DATA frames ended it) or a hop wrote. It goes through mitmproxy's own ReplayHandler.
"""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from mitmproxy import ctx, http

from robotsgate.mitm.flow import state
from robotsgate.mitm.headers import reframed

AGAIN_TIMEOUT = 300.0  # seconds the second request may take, pacing waits included


@dataclass(frozen=True, slots=True)
class Added:
    """Header fields a part writes on a request as it leaves (lower-case names), and how to
    tell from the flow that it wrote them: taken off a copy before it is decided again."""

    fields: frozenset[bytes]
    written: Callable[[http.HTTPFlow], bool]


class Resends:
    def __init__(self) -> None:
        # The copies on their way: copy's flow id -> the note of the part that sent it. Read as
        # a whole only to ask whether any is (a dict's truth: one test per request, nearly
        # always False, without a method call).
        self.in_flight: dict[str, object] = {}
        self._added: list[Added] = []

    def declare(self, added: Added) -> None:
        """A part says what it writes on requests (at its construction)."""
        self._added.append(added)

    def note[T](self, flow: http.HTTPFlow, kind: type[T]) -> T | None:
        """The note of the part whose notes are `kind`, when `flow` is a copy it sent."""
        note = self.in_flight.get(flow.id)
        return note if isinstance(note, kind) else None

    @staticmethod
    def may_send(flow: http.HTTPFlow) -> bool:
        """Invariants 1 and 2: a first answer, from the origin, to a request held whole."""
        response = flow.response
        request = flow.request
        return response is not None and flow.error is None and \
            flow.is_replay != "request" and not state(flow).answered and \
            not response.stream and not request.stream and request.raw_content is not None

    def take_off(self, flow: http.HTTPFlow) -> None:
        """Invariant 3: the fields the parts wrote on `flow`'s request, taken off."""
        headers = flow.request.data.headers
        for added in self._added:
            if added.written(flow):
                headers.fields = tuple(field for field in headers.fields
                                       if field[0].lower() not in added.fields)

    async def send(self, flow: http.HTTPFlow, note: object) -> tuple[http.HTTPFlow, str | None]:
        """Send `flow`'s request again, `note` held for the copy while it is on its way. On an
        answer, `flow` gets it, settled (it went through every part on its way). Returns the
        copy that was sent, and None or why no answer came."""
        from mitmproxy.addons.clientplayback import ReplayHandler

        assert self.may_send(flow), "a request sent again that the policy refuses"
        again = flow.copy()
        again.is_replay = "request"  # decided afresh (robotsgate.mitm.decision), our fields gone
        again.response = again.error = None
        request = again.request.data
        request.headers.fields = reframed(request.headers.fields, request.content or b"")
        self.in_flight[again.id] = note
        trouble = None
        try:
            await asyncio.wait_for(ReplayHandler(again, ctx.options).replay(), AGAIN_TIMEOUT)
        except TimeoutError:
            trouble = f"no answer within {AGAIN_TIMEOUT:.0f} s"
        finally:
            del self.in_flight[again.id]
        if again.response is None:
            return again, trouble or (again.error.msg if again.error else "no answer")
        flow.response = again.response
        state(flow).answered = True
        return again, None
