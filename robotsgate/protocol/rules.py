"""The values a robots.txt is read into: rules, and the groups that hold them.

Apart from robots.py so that the readings (readings.py), which robots.py builds on, can speak of
rules too.
"""

from dataclasses import dataclass, field
from typing import Literal

from robotsgate.protocol.extensions import RequestRate, VisitTime
from robotsgate.protocol.usage import Statement


@dataclass(frozen=True, slots=True)
class Rule:
    directive: Literal["allow", "disallow"]
    pattern: str  # as written in the file
    line: int  # 1-based

    @property
    def allow(self) -> bool:
        return self.directive == "allow"

    @property
    def text(self) -> str:
        """The rule as a line of a robots.txt: "Disallow: /private"."""
        return f"{self.directive.capitalize()}: {self.pattern}"


@dataclass(frozen=True, slots=True)
class Group:
    agents: tuple[str, ...]  # the User-agent values as written
    line: int  # the first User-agent line
    rules: tuple[Rule, ...]
    crawl_delay: float | None = None
    request_rate: RequestRate | None = None
    visit_time: VisitTime | None = None
    # The rules' patterns in matchable form, aligned with `rules`.
    compiled: tuple[str, ...] = field(default=(), repr=False, compare=False)
    # Content-Usage and Content-Signal lines (usage.py): they decide no crawling, so they are
    # kept apart from `rules`; their patterns in matchable form ("/" for none), aligned.
    usage: tuple[Statement, ...] = ()
    usage_compiled: tuple[str, ...] = field(default=(), repr=False, compare=False)
