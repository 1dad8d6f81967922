"""One flow's state (robotsgate.mitm.flow): how mitmproxy copies and writes it, how a flow read
back from a file keeps what was saved, and the order of the parts."""

import copy

from mitmproxy import io
from mitmproxy.test import tflow
from support.driver import driven

from robotsgate.mitm.flow import KEY, PARTS, FlowState, forget, state


def test_a_state_is_made_on_first_use_and_found_again() -> None:
    flow = tflow.tflow()
    made = state(flow)
    assert made is state(flow) and flow.metadata[KEY] is made
    assert (made.verdict, made.host, made.signed, made.answered, made.no_ai) == \
        (None, None, None, False, ())


def test_copies_share_the_state_until_one_is_decided_again() -> None:
    """Deep-copied, it is itself: it holds live services (invariant 5)."""
    flow = tflow.tflow()
    state(flow).host = "example.com"
    copied = flow.copy()
    assert state(copied) is state(flow)
    assert copy.deepcopy(state(flow)) is state(flow)
    forget(copied)  # the copy decided again: a life of its own
    assert state(copied).host is None and state(flow).host == "example.com"


def test_written_with_a_flow_it_is_its_plain_values_and_read_back_it_keeps_them(
        tmp_path) -> None:
    flow = tflow.tflow(resp=True)
    known = state(flow)
    known.decided, known.host, known.signed, known.delay_ms = "p1", "example.com", True, 1500
    known.verdict = object()  # type: ignore[assignment]  # a live object: never written
    path = tmp_path / "flows"
    with open(path, "wb") as out:
        io.FlowWriter(out).add(flow)
    with open(path, "rb") as back:
        [read] = list(io.FlowReader(back).stream())
    saved = read.metadata[KEY]
    assert saved == {"decided": "p1", "host": "example.com", "signed": True, "delay_ms": 1500}
    again = state(read)  # a flow read back: its saved values, as a state
    assert isinstance(again, FlowState) and again is state(read)
    assert (again.decided, again.host, again.signed, again.delay_ms, again.verdict) == \
        ("p1", "example.com", True, 1500, None)


def test_the_parts_run_in_the_order_the_flow_s_life_gives() -> None:
    with driven() as addon:
        assert tuple(type(part).__name__ for part in addon.root.parts) == PARTS
