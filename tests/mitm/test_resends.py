"""One way to send a request again (robotsgate.mitm.again.Resends): its policy, what it takes
off a copy, whose note a copy carries, and the parts that use it, driven without a network."""

import httpx
import pytest
from mitmproxy import http
from mitmproxy.test import tflow
from support.driver import driven
from support.origins import Origins

from robotsgate.config.assemble import Clocks
from robotsgate.mitm.again import Added, Resends
from robotsgate.mitm.flow import state
from robotsgate.mitm.payments import Pay
from robotsgate.signing.messages import Wanted

ROBOTS = b"User-agent: *\nAllow: /\n"


def answered(status: int = 401, **headers: str) -> http.HTTPFlow:
    flow = tflow.tflow(resp=True)
    assert flow.response is not None
    flow.response.status_code = status
    for name, value in headers.items():
        flow.response.headers[name.replace("_", "-")] = value
    return flow


def _no_response(flow: http.HTTPFlow) -> None:
    flow.response = None


def _error(flow: http.HTTPFlow) -> None:
    flow.error = tflow.terr()


def _copy(flow: http.HTTPFlow) -> None:
    flow.is_replay = "request"


def _answered(flow: http.HTTPFlow) -> None:
    state(flow).answered = True


def _response_streamed(flow: http.HTTPFlow) -> None:
    assert flow.response is not None
    flow.response.stream = True


def _request_streamed(flow: http.HTTPFlow) -> None:
    flow.request.stream = True


def _body_not_held(flow: http.HTTPFlow) -> None:
    flow.request.raw_content = None


@pytest.mark.parametrize("spoil", [_no_response, _error, _copy, _answered, _response_streamed,
                                   _request_streamed, _body_not_held])
def test_only_a_first_answer_from_the_origin_to_a_request_held_whole_is_sent_again(
        spoil) -> None:
    flow = answered()
    assert Resends.may_send(flow)
    spoil(flow)
    assert not Resends.may_send(flow)


def test_a_copy_carries_the_note_of_the_part_that_sent_it_and_no_other() -> None:
    resends = Resends()
    flow = answered()
    assert not resends.in_flight
    resends.in_flight[flow.id] = Wanted(("@authority",), None, None)  # as send() holds it
    assert resends.note(flow, Wanted) == Wanted(("@authority",), None, None)
    assert resends.note(flow, str) is None  # another part's kind of note: not its copy
    assert resends.note(answered(), Wanted) is None


def test_what_the_parts_wrote_is_taken_off_and_nothing_else() -> None:
    resends = Resends()
    resends.declare(Added(frozenset((b"signature", b"signature-input")),
                          lambda flow: flow.metadata.get("signed") is True))
    resends.declare(Added(frozenset((b"authorization",)), lambda flow: False))
    flow = answered()
    headers = flow.request.headers
    headers["Signature"] = "sig1=:AAAA:"
    headers["Signature-Input"] = "sig1=()"
    headers["Authorization"] = "License abc"  # a field its part did not write: kept
    headers["X-Bot"] = "mine"
    flow.metadata["signed"] = True
    resends.take_off(flow)
    assert "signature" not in headers and "signature-input" not in headers
    assert headers["authorization"] == "License abc" and headers["x-bot"] == "mine"


def test_every_part_that_writes_on_a_request_declares_it() -> None:
    origins = Origins({"http://example.com/robots.txt": httpx.Response(200, content=ROBOTS)})
    with driven(clocks=Clocks(clock=lambda: 1_700_000_000.0),
                transport=httpx.MockTransport(origins)) as addon:
        declared = set().union(*(added.fields for added in addon.runtime.resends._added))
    assert declared == {b"signature", b"signature-input", b"signature-agent", b"authorization"}


def test_a_402_already_streaming_to_the_bot_is_not_paid() -> None:
    """Its answer cannot be replaced by the paid one: paying would spend money on an answer the
    bot never gets."""
    origins = Origins({"http://example.com/robots.txt": httpx.Response(200, content=ROBOTS)})
    with driven(clocks=Clocks(clock=lambda: 1_700_000_000.0),
                transport=httpx.MockTransport(origins), robots_max_price="USD 1") as addon:
        [pay] = [part for part in addon.root.parts if isinstance(part, Pay)]
        flow = answered(402, crawler_price="USD 0.01")
        state(flow).verdict = object()  # type: ignore[assignment]  # decided to leave
        state(flow).signed = True
        streaming = flow.copy()
        assert streaming.response is not None
        streaming.response.stream = True
        assert pay.response(streaming) is None
        asked = pay.response(flow)  # the same 402 held whole: the price is looked at
        assert asked is not None
        asked.close()  # type: ignore[attr-defined]
