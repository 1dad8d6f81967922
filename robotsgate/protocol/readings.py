"""The readings of robots.txt: one object each, holding every way it differs from the others.

- "rfc9309" (default): RFC 9309 as written.
- "google": what Google's reference parser (robots.cc) answers, where it differs from the RFC.
- "classic": the 1994 standard: first matching rule wins, plain prefixes, agent names matched as
  substrings of the robot's name, blank lines end records, several paths on one Disallow line.

A RobotsTxt looks its reading up once, when it is parsed; the parser, the decisions and the
linter then ask the reading instead of comparing names, so each reading can be read whole in
one class (as Google's RobotsMatchStrategy and Scrapy's RobotParser classes are). Reading is the
RFC itself; the others override where they differ. Readings hold no state: one instance each.
"""

import string
from collections.abc import Mapping, Sequence
from typing import ClassVar, Literal

from robotsgate.protocol.agents import product_token_of, product_tokens
from robotsgate.protocol.match import FirstMatch, LongestMatch
from robotsgate.protocol.parse import GOOGLE_MAX_LINE
from robotsgate.protocol.rules import Rule
from robotsgate.protocol.urls import (
    google_escape,
    literal_pattern,
    normal_path_of,
    path_of,
    rfc_pattern,
)

Semantics = Literal["rfc9309", "google", "classic"]
Matcher = LongestMatch | FirstMatch

_C_SPACE = frozenset(" \t\n\v\f\r")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


class Reading:
    """RFC 9309 as written; the other readings are subclasses that override where they differ."""

    __slots__ = ()

    name: ClassVar[Semantics] = "rfc9309"

    # -- parsing -------------------------------------------------------------------------------

    max_line: ClassVar[int | None] = None  # bytes of a line that are read; None: all of them
    blank_line_ends_group: ClassVar[bool] = False

    def patterns(self, value: bytes) -> list[bytes]:
        """The patterns an Allow or Disallow value holds."""
        return [value]

    def compile_pattern(self, value: bytes) -> str:
        """A pattern as written -> the form the matcher compares with request paths."""
        return rfc_pattern(value)

    def group_key(self, agent: str) -> str:
        """The name a User-agent value gives its group: "*", or a lower-case product token."""
        # Google: '*' alone, or followed by whitespace, is the global group. Whitespace as C's
        # isspace() has it: str.isspace() would also take "\x1c" or a no-break space.
        if agent.startswith("*") and (len(agent) == 1 or agent[1] in _C_SPACE):
            return "*"
        return product_token_of(agent).lower()

    def agent_warning(self, agent: str) -> str | None:
        """What to warn about a User-agent value that is not read as written; None when it is."""
        # An empty value is read as written too: it names no product.
        if agent == "*" or product_token_of(agent).lower() == agent.lower():
            return None
        return f"User-agent {agent!r} is read as {self.group_key(agent)!r}"

    # -- choosing groups -----------------------------------------------------------------------

    merges_groups: ClassVar[bool] = True  # every group naming the agent applies, not the first

    def agent_for(self, user_agent: str, names: Mapping[str, object]) -> str:
        """The group name to decide with for a whole User-Agent header; "*" when none applies.

        A name applies when it is one of the header's product tokens; when several do, the
        longest wins ("Googlebot" over "Mozilla").
        """
        tokens = product_tokens(user_agent)
        found = [name for name in names if name in tokens]
        return max(found, key=lambda name: (len(name), name)) if found else "*"

    def select(self, agent: str, named: Mapping[str, tuple[int, ...]],
               everyone: tuple[int, ...]) -> tuple[int, ...]:
        """The indexes of the groups that apply to `agent` (a product token, or what a caller
        passed as one), given those of each group name and those of '*'."""
        # The RFC reads "FooBot/1.0" as FooBot. A named group, when there is one, replaces '*'
        # entirely (RFC 9309 §2.2.1). A name without a product token (empty, "123bot") is named
        # by no group: an empty or token-less User-agent line must not catch it.
        key = product_token_of(agent.strip()).lower()
        if not key:
            return everyone
        return named.get(key) or everyone

    # -- matching ------------------------------------------------------------------------------

    def request_path(self, url: str) -> str | None:
        """The path a request URL is matched as; None for /robots.txt itself, which is allowed
        whatever the rules say.

        Called for every decision: the /robots.txt test is here, not in the caller, so that a
        decision asks the reading one thing.
        """
        path = normal_path_of(url)  # normalised: "/%72obots.txt" is /robots.txt too
        if path.startswith("/robots.txt") and path[11:12] in ("", "?"):
            return None
        return path

    first_match: ClassVar[bool] = False  # False: the longest pattern wins, Allow wins a tie

    def matcher(self, entries: Sequence[tuple[str, bool]]) -> tuple[Matcher, tuple[int, ...]]:
        """The matcher for one agent's rules, given as (compiled pattern, is Allow) in file
        order, and which of those entries each of the matcher's entries stands for."""
        owners = tuple(range(len(entries)))
        if self.first_match:
            return FirstMatch([pattern for pattern, _ in entries]), owners
        return LongestMatch(entries), owners

    # -- linting -------------------------------------------------------------------------------

    def never_matches(self, rule: Rule) -> str | None:
        """Why `rule` can never match a path, when it cannot; its pattern is neither empty nor a
        full URL."""
        if rule.pattern[0] not in "/*":
            return (f"{rule.text} never matches: paths start with '/' (a pattern starts with "
                    "'/' or '*')")
        return None


class Google(Reading):
    """Google's reference parser, where its answers differ from the RFC's."""

    __slots__ = ()

    name: ClassVar[Semantics] = "google"

    max_line: ClassVar[int | None] = GOOGLE_MAX_LINE

    def compile_pattern(self, value: bytes) -> str:
        return google_escape(value)  # nothing decoded: %41 and A differ

    def select(self, agent: str, named: Mapping[str, tuple[int, ...]],
               everyone: tuple[int, ...]) -> tuple[int, ...]:
        # Google compares the caller's token as given, and folds ASCII case only: str.lower()
        # would turn the Kelvin sign into "k".
        return named.get(agent.translate(_ASCII_LOWER)) or everyone

    def request_path(self, url: str) -> str | None:
        # As written, and as a C string: a NUL ends it. /robots.txt is a path like any other.
        return path_of(url).split("\0", 1)[0]

    def matcher(self, entries: Sequence[tuple[str, bool]]) -> tuple[Matcher, tuple[int, ...]]:
        # Google reads "Allow: /x/index.html" as also allowing "/x/" exactly.
        more = list(entries)
        owners = list(range(len(entries)))
        for index, (pattern, allow) in enumerate(entries):
            slash = pattern.rfind("/")
            if allow and slash >= 0 and pattern.startswith("/index.htm", slash):
                more.append((pattern[: slash + 1] + "$", True))
                owners.append(index)
        return LongestMatch(more), tuple(owners)


class Classic(Reading):
    """The 1994 standard, as the documents of its time describe it."""

    __slots__ = ()

    name: ClassVar[Semantics] = "classic"

    blank_line_ends_group: ClassVar[bool] = True  # records are separated by blank lines

    def patterns(self, value: bytes) -> list[bytes]:
        # "Disallow: /tmp /spool" names two prefixes (Lycos's 1994 off_limits routine). An
        # empty value stays one (empty) rule so that the record still says "nothing
        # disallowed".
        return value.split() or [b""]

    def compile_pattern(self, value: bytes) -> str:
        return literal_pattern(value)  # a plain prefix: '*' and '$' are characters

    def group_key(self, agent: str) -> str:
        return agent.strip().lower()

    def agent_warning(self, agent: str) -> str | None:
        return None  # any name is read as written: a part of the robot's name

    merges_groups: ClassVar[bool] = False  # one record applies: the first that names the robot

    def agent_for(self, user_agent: str, names: Mapping[str, object]) -> str:
        return user_agent  # names are matched as substrings of the header itself

    def select(self, agent: str, named: Mapping[str, tuple[int, ...]],
               everyone: tuple[int, ...]) -> tuple[int, ...]:
        # The first record whose name is part of the robot's name, else the '*' record.
        lowered = agent.lower()
        for name, indexes in named.items():
            if name and name in lowered:
                return indexes[:1]
        return everyone[:1]

    first_match: ClassVar[bool] = True  # the first rule in file order that matches wins

    def never_matches(self, rule: Rule) -> str | None:
        if rule.pattern[0] != "/":
            return f"{rule.text} never matches: paths start with '/'"
        if "*" in rule.pattern or rule.pattern.endswith("$"):
            return (f"{rule.text}: in the 1994 reading '*' and '$' are plain characters, so it "
                    "only matches paths that contain them")
        return None


_READINGS = (Reading(), Google(), Classic())
SEMANTICS: tuple[Semantics, ...] = tuple(reading.name for reading in _READINGS)


def reading_of(semantics: str) -> Reading:
    """The reading named `semantics`; ValueError when there is none."""
    for reading in _READINGS:
        if reading.name == semantics:
            return reading
    raise ValueError(f"semantics must be one of {', '.join(SEMANTICS)}, not {semantics!r}")
