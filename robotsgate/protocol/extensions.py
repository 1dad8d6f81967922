"""Values of the non-standard group directives: Crawl-delay, Request-rate, Visit-time.

Each reader returns the value or a message saying why the line was not understood; the caller
turns the message into a warning with the line number. What a Visit-time window means at a given
moment is worked out here too, from a time the caller passes: nothing here reads a clock.
"""

import math
import re
from datetime import UTC, datetime, time, timedelta
from typing import NamedTuple


class RequestRate(NamedTuple):
    """`Request-rate: n/m` -- at most `requests` requests every `seconds` seconds."""

    requests: int
    seconds: float

    @property
    def interval(self) -> float:
        """Seconds between the starts of two requests."""
        return self.seconds / self.requests


class VisitTime(NamedTuple):
    """`Visit-time: HHMM-HHMM` in UTC; `end` before `start` means the window crosses midnight."""

    start: time
    end: time

    def contains(self, moment: time) -> bool:
        if self.start <= self.end:
            return self.start <= moment < self.end
        return moment >= self.start or moment < self.end


def seconds_until_open(window: VisitTime, now: float) -> float:
    """0 inside the window, else the whole seconds until it opens (rounded up, so that a request
    retried after them finds it open).

    `now` is seconds since the epoch; windows are UTC and may cross midnight.
    """
    moment = datetime.fromtimestamp(now, UTC)
    if window.contains(moment.time()):
        return 0.0
    opens = moment.replace(hour=window.start.hour, minute=window.start.minute, second=0,
                           microsecond=0)
    if opens <= moment:
        opens += timedelta(days=1)
    return math.ceil((opens - moment).total_seconds())


_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_RATE = re.compile(r"(\d{1,9})\s*/\s*(\d{1,9}(?:\.\d+)?)\s*([smhd]?)\s*(.*)", re.IGNORECASE)
_VISIT = re.compile(r"(\d\d):?(\d\d)\s*-\s*(\d\d):?(\d\d)(?:\s*UTC)?", re.IGNORECASE)


def crawl_delay(value: str) -> float | str:
    try:
        seconds = float(value)
    except ValueError:
        return f"Crawl-delay {value!r} is not a number of seconds"
    if not math.isfinite(seconds) or seconds < 0:
        return f"Crawl-delay {value!r} is not a number of seconds"
    return seconds


def request_rate(value: str) -> RequestRate | str:
    found = _RATE.fullmatch(value.strip())
    if found is None:
        return f"Request-rate {value!r} is not of the form n/m with an optional unit (s, m, h)"
    requests, span = int(found[1]), float(found[2])
    if requests == 0 or span == 0:
        return f"Request-rate {value!r} has a zero in it"
    # The extended standard allows a visit window after the rate; we read Visit-time lines only.
    return RequestRate(requests, span * _UNIT_SECONDS[found[3].lower()])


def visit_time(value: str) -> VisitTime | str:
    found = _VISIT.fullmatch(value.strip())
    if found is None:
        return f"Visit-time {value!r} is not of the form HHMM-HHMM"
    h1, m1, h2, m2 = (int(found[i]) for i in range(1, 5))
    if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
        return f"Visit-time {value!r} is not a time of day"
    return VisitTime(time(h1, m1), time(h2, m2))
