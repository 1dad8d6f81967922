"""The transitions of robotsgate.state.politeness, held to the invariants its docstring states,
over any sequence of them (hypothesis draws the sequences)."""

import math

from hypothesis import given
from hypothesis import strategies as st

from robotsgate.state import politeness
from robotsgate.state.politeness import NoSlot, Schedule, Slot, Turn

BASE, CAP = 1.0, 300.0

seconds = st.floats(min_value=0.0, max_value=50.0, allow_nan=False)
steps = st.lists(st.one_of(
    st.tuples(st.just("advance"), seconds),
    st.tuples(st.just("reserve"), seconds, seconds),  # interval, max_wait
    st.tuples(st.just("pushback"), st.one_of(st.none(), seconds)),
    st.tuples(st.just("recovered")),
    st.tuples(st.just("follow"), seconds, seconds),
), max_size=40)


@given(steps)
def test_starts_are_never_closer_than_asked_nor_inside_a_pause(sequence: list[tuple]) -> None:
    now = 1000.0
    schedule = Schedule()
    starts: list[tuple[float, float]] = []  # (start, interval it was given with)
    for step in sequence:
        kind = step[0]
        before = schedule
        if kind == "advance":
            now += step[1]
        elif kind == "reserve":
            interval, max_wait = step[1], step[2]
            schedule, slot = politeness.reserve(schedule, now, interval, max_wait)
            earliest = max(now, before.next, before.paused_until)
            if isinstance(slot, NoSlot):
                # 3: refused beyond max_wait, and nothing changed
                assert slot.retry_after > max_wait and schedule == before
                assert math.isclose(now + slot.retry_after, earliest)
                continue
            assert isinstance(slot, Slot) and slot.wait <= max_wait
            start = now + slot.wait
            # 1: never before next, nor inside a pause
            assert start >= before.next - 1e-9 and start >= before.paused_until - 1e-9
            # 2: never closer to an earlier start than that one's interval asked
            for earlier, its_interval in starts:
                assert start >= earlier + its_interval - 1e-9
            starts.append((start, interval))
        elif kind == "pushback":
            schedule, pause = politeness.pushback(schedule, now, step[1], base=BASE, cap=CAP)
            # 4: a pause only lengthens, and is bounded
            assert schedule.paused_until >= before.paused_until
            assert schedule.paused_until >= now + pause - 1e-9
            assert 0 <= pause <= (CAP if step[1] is None else CAP * 12)
            assert schedule.next == before.next
        elif kind == "recovered":
            schedule = politeness.recovered(schedule)
            assert schedule.failures == 0
            assert (schedule.next, schedule.paused_until) == (before.next, before.paused_until)
        else:
            schedule = politeness.follow(schedule, now, step[1], step[2])
            assert schedule.next >= before.next and schedule.paused_until >= before.paused_until


def test_the_backoff_doubles_until_its_cap_and_starts_over_when_recovered() -> None:
    schedule, pauses = Schedule(), []
    for _ in range(11):
        schedule, pause = politeness.pushback(schedule, 0.0, None, base=BASE, cap=CAP)
        pauses.append(pause)
    assert pauses == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]
    schedule = politeness.recovered(schedule)
    assert politeness.pushback(schedule, 0.0, None, base=BASE, cap=CAP)[1] == 1


turn_steps = st.lists(st.one_of(
    st.tuples(st.just("advance"), seconds),
    st.tuples(st.just("release")),
    st.tuples(st.just("depart"), st.floats(min_value=-60, max_value=60, allow_nan=False)),
), max_size=40)


@given(turn_steps, st.floats(min_value=0.0, max_value=10.0, allow_nan=False))
def test_a_turn_is_never_given_before_the_last_departure_plus_the_interval(
        sequence: list[tuple], interval: float) -> None:
    now, turn, n = 1000.0, Turn(), 0
    for step in sequence:
        before = turn
        if step[0] == "advance":
            now += step[1]
        elif step[0] == "release":
            wait = politeness.turn_wait(turn, now, interval)
            if wait > 0:
                now += wait  # the caller sleeps that long
            # 5: released no earlier than a whole interval after the last departure
            assert now >= turn.left + interval - 1e-9
            n += 1
            turn = politeness.released(turn, now, f"r{n}")
            assert turn.pending == f"r{n}" and turn.left == before.left
        else:
            turn = politeness.departed(turn, now, now + step[1])
            # 6: left only moves forward, never past now; nothing is pending any more
            assert turn.left >= before.left and turn.left <= max(before.left, now)
            assert turn.pending is None
