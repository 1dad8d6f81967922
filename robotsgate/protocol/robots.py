"""RobotsTxt: a parsed robots.txt that decides, for an agent and a URL, and explains why.

Parse once, decide many times. Groups are built at parse time; the rules that apply to one agent
are compiled on first use and kept, so a decision is a dictionary look-up plus one match.

usage() answers what the file says the content of a URL may be used for (Content-Usage,
Content-Signal: see usage.py), for the same groups.

Three readings, chosen with `semantics=`: "rfc9309" (default), "google" and "classic"; each is
an object of readings.py, which holds everything in which it differs from the others.
"""

from collections.abc import Collection, Generator, Iterable
from dataclasses import dataclass
from typing import Literal

from robotsgate.protocol import extensions
from robotsgate.protocol.extensions import RequestRate, VisitTime
from robotsgate.protocol.match import LongestMatch
from robotsgate.protocol.memo import keep
from robotsgate.protocol.parse import Key, Line, ParseWarning, tokenize
from robotsgate.protocol.readings import SEMANTICS, Reading, Semantics, reading_of
from robotsgate.protocol.rsl import MAX_LICENSES, License, Unread
from robotsgate.protocol.rules import Group, Rule
from robotsgate.protocol.urls import normal_path_of
from robotsgate.protocol.usage import (
    CATEGORIES,
    NO_USAGE,
    Source,
    Statement,
    Usage,
    UsageRules,
    read_statement,
    split_path,
)

__all__ = ["MAX_URL_LENGTH", "SEMANTICS", "UNPACED", "Basis", "Decision", "Group", "Pace",
           "RobotsTxt", "Rule", "Semantics", "url_too_long"]

# The longest request target (absolute URL, or path and query) a proxy should decide; answer
# longer ones 414 URI Too Long. Real servers refuse request lines past 8 KiB (nginx's
# large_client_header_buffers, Apache's LimitRequestLine), so nothing real is lost; and a
# decision's cost grows with the path (linearly: see match.py), so this bounds it. Normal form
# can be longer than the target (a raw non-ASCII character becomes up to 12 characters of
# escapes): url_too_long() measures what is matched.
MAX_URL_LENGTH = 8192


Basis = Literal["rule", "no-rule", "no-group", "robots.txt"]


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    rule: Rule | None  # the deciding rule; None when no rule matched
    group: Group | None  # the group that applied; None when no group names the agent or '*'
    reason: Basis  # rule matched | group without a matching rule | no group | /robots.txt

    def explain(self) -> str:
        verdict = "allowed" if self.allowed else "disallowed"
        if self.reason == "robots.txt":
            return f"{verdict}: /robots.txt itself is always allowed"
        if self.reason == "no-group":
            return f"{verdict}: no group applies to this agent"
        assert self.group is not None
        where = f"group {', '.join(self.group.agents)!s} (line {self.group.line})"
        if self.rule is None:
            return f"{verdict}: no rule of {where} matches"
        return f"{verdict} by {self.rule.text} (line {self.rule.line}) in {where}"


def url_too_long(url: str) -> bool:
    """Whether `url` is past MAX_URL_LENGTH: as written, or in the normal form decide() matches.

    What a proxy should answer 414 instead of deciding. Most URLs are answered by their length
    alone: normal form is at most 12 times longer ("%F0%9F%98%80" for one character).
    """
    if len(url) > MAX_URL_LENGTH:
        return True
    if len(url) * 12 <= MAX_URL_LENGTH:
        return False
    return len(normal_path_of(url)) > MAX_URL_LENGTH


_NO_GROUP = Decision(True, None, None, "no-group")
_ROBOTS_TXT = Decision(True, None, None, "robots.txt")
_AGENTS_REMEMBERED = 256


@dataclass(frozen=True, slots=True)
class Pace:
    """What an agent's groups say of its pace: the largest Crawl-delay (seconds), the slowest
    Request-rate, the first Visit-time window (UTC); each None when none says it."""

    crawl_delay: float | None = None
    request_rate: RequestRate | None = None
    visit_time: VisitTime | None = None


UNPACED = Pace()


class _Policy:
    """The compiled rules of the groups that apply to one agent."""

    __slots__ = ("decisions", "groups", "matcher", "no_rule", "pace", "rules", "sources",
                 "usage")

    def __init__(self, groups: tuple[Group, ...], reading: Reading) -> None:
        self.groups = groups
        # Asked on every request a proxy forwards: worked out once, like the matcher.
        self.pace = Pace(
            max(_present(g.crawl_delay for g in groups), default=None),
            max(_present(g.request_rate for g in groups), key=lambda rate: rate.interval,
                default=None),
            next(iter(_present(g.visit_time for g in groups)), None))
        rules = [rule for group in groups for rule in group.rules]
        sources = [group for group in groups for _ in group.rules]
        entries = [(pattern, rule.allow) for pattern, rule
                   in zip((p for group in groups for p in group.compiled), rules, strict=True)]
        self.matcher, owners = reading.matcher(entries)
        # Aligned with the matcher's entries, which a reading may add to (Google's index.html).
        self.rules = tuple(rules[i] for i in owners)
        self.sources = tuple(sources[i] for i in owners)
        # Decisions are values, made once per rule that ever wins: repeated decisions allocate
        # nothing, and rules that never win cost nothing.
        self.decisions: list[Decision | None] = [None] * len(self.rules)
        self.no_rule = Decision(True, None, self.groups[0], "no-rule")
        self.usage: UsageRules | None = None  # built when first asked: decide() never needs it

    def usage_rules(self) -> UsageRules:
        self.usage = UsageRules((compiled, statement) for group in self.groups
                                for compiled, statement
                                in zip(group.usage_compiled, group.usage, strict=True))
        return self.usage

    def decision(self, index: int) -> Decision:
        rule = self.rules[index]
        decision = self.decisions[index] = Decision(rule.allow, rule, self.sources[index], "rule")
        return decision


class RobotsTxt:
    """A parsed robots.txt. Build with RobotsTxt.parse(); values never change afterwards."""

    __slots__ = ("_agent_for", "_by_agent", "_case_sensitive", "_global", "_named", "_policies",
                 "groups", "host", "licenses", "reading", "sitemaps", "states_usage",
                 "unread_licenses", "warnings")

    def __init__(self, groups: tuple[Group, ...], sitemaps: tuple[str, ...], host: str | None,
                 warnings: tuple[ParseWarning, ...], reading: Reading,
                 case_sensitive: bool, licenses: tuple[License, ...] = (),
                 unread_licenses: Unread | None = None) -> None:
        self.groups = groups
        self.sitemaps = sitemaps
        # RSL's License lines (global, like Sitemap: they belong to no group and end none): the
        # first line naming each document, for the first MAX_LICENSES documents; the others
        # are not read (unread_licenses says how many, and where the first is named).
        self.licenses = licenses
        self.unread_licenses = unread_licenses
        self.host = host
        self.warnings = warnings
        self.reading = reading
        self._case_sensitive = case_sensitive
        # Whether any group has a Content-Usage or Content-Signal line: almost no file has, and
        # then usage() is empty for every URL and need not be asked.
        self.states_usage = any(group.usage for group in groups)
        named: dict[str, list[int]] = {}
        global_: list[int] = []
        for index, group in enumerate(groups):
            for name in {reading.group_key(agent) for agent in group.agents}:
                if name == "*":
                    global_.append(index)
                else:
                    named.setdefault(name, []).append(index)
        self._named = {name: tuple(indexes) for name, indexes in named.items()}
        self._global = tuple(global_)
        self._policies: dict[tuple[int, ...], _Policy] = {}
        # agent as given -> its policy: the per-decision cost of choosing groups is one look-up.
        self._by_agent: dict[str, _Policy | None] = {}
        self._agent_for: dict[str, str] = {}  # User-Agent header -> product token

    @classmethod
    def parse(cls, content: bytes | str, *, semantics: str = "rfc9309",
              case_sensitive: bool = True) -> "RobotsTxt":
        """Parse a robots.txt body. Never raises on content; raises ValueError on bad options."""
        reading = reading_of(semantics)
        if isinstance(content, str):
            content = content.encode("utf-8", "surrogatepass")
        tokens = tokenize(content, max_line=reading.max_line)
        return _build(tokens.lines, list(tokens.warnings), reading, case_sensitive)

    @property
    def semantics(self) -> Semantics:
        """The name of the reading the file was parsed with."""
        return self.reading.name

    # -- decisions ---------------------------------------------------------------------------

    def decide(self, agent: str, url: str) -> Decision:
        """Is `url` (a full URL, or a path with its query) allowed for the product token `agent`?"""
        path = self.reading.request_path(url)
        if path is None:
            return _ROBOTS_TXT
        if not self._case_sensitive:
            path = path.lower()
        try:
            policy = self._by_agent[agent]  # the _policy() look-up, without the call
        except KeyError:
            policy = self._policy(agent)
        if policy is None:
            return _NO_GROUP
        winner = policy.matcher.winner(path)
        if winner is None:
            return policy.no_rule
        return policy.decisions[winner] or policy.decision(winner)

    def decide_at_once(self, agent: str, url: str) -> Decision | None:
        """decide(agent, url) when it is sure to take one slice of decide_steps' work (nearly
        every decision), or None when it may take more (decide_steps then): what a proxy asks of
        every request, without the two generators decide_steps makes. decide()'s lines on
        purpose: a method shared with it would cost every decision one more call."""
        path = self.reading.request_path(url)
        if path is None:
            return _ROBOTS_TXT
        if not self._case_sensitive:
            path = path.lower()
        policy = self._policy(agent)
        if policy is None:
            return _NO_GROUP
        matcher = policy.matcher
        if isinstance(matcher, LongestMatch) and len(path) > matcher.at_once:
            return None  # it may need the wildcard index: decide_steps does that in slices
        winner = matcher.winner(path)
        if winner is None:
            return policy.no_rule
        return policy.decisions[winner] or policy.decision(winner)

    def decide_steps(self, agent: str, url: str) -> Generator[None, None, Decision]:
        """decide(agent, url) in slices of bounded work: a generator that returns the Decision.

        It yields between slices of about match.SLICE work units (a few hundred microseconds),
        so that an event loop can run other work in between: `for _ in steps: await sleep(0)`.
        Rules like those of almost every file, on paths of ordinary length, are matched in one
        go (no yield at all); many wildcard rules, or a long path, take as many slices as they
        need, however hostile the file. Compiling an agent's rules, on its first decision, is
        part of the first slice.
        """
        path = self.reading.request_path(url)
        if path is None:
            return _ROBOTS_TXT
        if not self._case_sensitive:
            path = path.lower()
        policy = self._policy(agent)
        if policy is None:
            return _NO_GROUP
        matcher = policy.matcher
        if isinstance(matcher, LongestMatch):
            winner = yield from matcher.steps(path)
        else:
            winner = matcher.winner(path)
        if winner is None:
            return policy.no_rule
        return policy.decisions[winner] or policy.decision(winner)

    def allowed(self, agent: str, url: str) -> bool:
        return self.decide(agent, url).allowed

    def disallows_all(self, agent: str) -> bool:
        """Whether every path but /robots.txt is disallowed for `agent`.

        True when a Disallow rule matches every path ("/", "*", "/*") and no Allow rule could
        carve anything out of it: what a proxy can decide knowing only the host.
        """
        policy = self._policy(agent)
        if policy is None:
            return False
        patterns = [p for group in policy.groups for p in group.compiled]
        rules = [rule for group in policy.groups for rule in group.rules]
        if any(rule.allow and pattern for rule, pattern in zip(rules, patterns, strict=True)):
            return False
        return any(not rule.allow and pattern.rstrip("*") in ("", "/") and pattern != ""
                   for rule, pattern in zip(rules, patterns, strict=True))

    def groups_for(self, agent: str) -> tuple[Group, ...]:
        """The groups that apply to `agent` (merged, in file order); () when none does."""
        policy = self._policy(agent)
        return () if policy is None else policy.groups

    def crawl_delay(self, agent: str) -> float | None:
        """The largest Crawl-delay of the agent's groups, in seconds."""
        policy = self._policy(agent)
        return None if policy is None else policy.pace.crawl_delay

    def request_rate(self, agent: str) -> RequestRate | None:
        """The agent's slowest Request-rate."""
        policy = self._policy(agent)
        return None if policy is None else policy.pace.request_rate

    def visit_time(self, agent: str) -> VisitTime | None:
        """The agent's first Visit-time window (UTC)."""
        policy = self._policy(agent)
        return None if policy is None else policy.pace.visit_time

    def pace(self, agent: str) -> Pace:
        """crawl_delay, request_rate and visit_time together: one look-up for a proxy, which
        asks all three of every request it forwards."""
        policy = self._policy(agent)
        return UNPACED if policy is None else policy.pace

    def usage(self, agent: str, url: str,
              categories: Collection[str] | None = CATEGORIES, *, allowed: bool = False
              ) -> Usage:
        """The AI usage preferences of `url` for `agent`: Content-Usage and Content-Signal rules
        of the groups decide() uses (usage.py says how they are matched and combined).

        Only the categories in `categories` (None: every label stated). A URL decide() does not
        allow has none at all (draft-ietf-aipref-attach §3.1: preferences apply only to what
        may be crawled; the request is refused anyway), nor has an agent no group applies to.
        `allowed`: the caller has decide()d the URL allowed already (a proxy, on every request).
        """
        if not allowed and not self.decide(agent, url).allowed:
            return NO_USAGE
        policy = self._policy(agent)
        if policy is None:
            return NO_USAGE
        path = self.reading.request_path(url)
        if path is None:  # /robots.txt: crawlable, and matched as any other path
            path = normal_path_of(url)
        if not self._case_sensitive:
            path = path.lower()
        found = (policy.usage or policy.usage_rules()).at(path)
        return found if categories is None else found.only(categories)

    def agent_for(self, user_agent: str) -> str:
        """The product token to decide with for a whole User-Agent header.

        A named group applies when its name is one of the header's product tokens
        (case-insensitive); when several do, the longest name wins ("Googlebot" over "Mozilla").
        Returns "*" when no named group applies. In the classic reading the header itself is
        the agent (names are matched as substrings of it).
        """
        try:
            return self._agent_for[user_agent]  # a proxy asks again for every request
        except KeyError:
            pass
        return keep(self._agent_for, _AGENTS_REMEMBERED, user_agent,
                    self.reading.agent_for(user_agent, self._named))

    def _policy(self, agent: str) -> _Policy | None:
        try:
            return self._by_agent[agent]
        except KeyError:
            pass
        indexes = self.reading.select(agent, self._named, self._global)
        policy = None
        if indexes:
            policy = self._policies.get(indexes)
            if policy is None:
                policy = _Policy(tuple(self.groups[i] for i in indexes), self.reading)
                self._policies[indexes] = policy
        return keep(self._by_agent, _AGENTS_REMEMBERED, agent, policy)


class _Draft:
    """A group while it is being read."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.agents: list[str] = []
        self.rules: list[Rule] = []
        self.compiled: list[str] = []
        self.crawl_delay: float | None = None
        self.request_rate: RequestRate | None = None
        self.visit_time: VisitTime | None = None
        self.usage: list[Statement] = []
        self.usage_compiled: list[str] = []

    def extend(self, key: Key, value: str) -> str | None:
        """Read an extension line into the group; a message when it cannot be read."""
        # Several of one kind in a group (often two groups merged): the most polite one counts.
        if key is Key.CRAWL_DELAY:
            delay = extensions.crawl_delay(value)
            if isinstance(delay, str):
                return delay
            self.crawl_delay = max(delay, self.crawl_delay or 0.0)
        elif key is Key.REQUEST_RATE:
            rate = extensions.request_rate(value)
            if isinstance(rate, str):
                return rate
            if self.request_rate is None or rate.interval > self.request_rate.interval:
                self.request_rate = rate
        else:
            window = extensions.visit_time(value)
            if isinstance(window, str):
                return window
            self.visit_time = self.visit_time or window
        return None

    def group(self) -> Group:
        return Group(tuple(self.agents), self.line, tuple(self.rules), self.crawl_delay,
                     self.request_rate, self.visit_time, tuple(self.compiled), tuple(self.usage),
                     tuple(self.usage_compiled))


_EXTENSIONS = frozenset({Key.CRAWL_DELAY, Key.REQUEST_RATE, Key.VISIT_TIME})
_USAGE = {Key.CONTENT_USAGE: Source.CONTENT_USAGE, Key.CONTENT_SIGNAL: Source.CONTENT_SIGNAL}


def _build(lines: Iterable[Line], warnings: list[ParseWarning], reading: Reading,
           case_sensitive: bool) -> RobotsTxt:
    drafts: list[_Draft] = []
    sitemaps: list[str] = []
    licenses: dict[str, License] = {}  # URL -> the first line naming it
    unread: dict[str, int] = {}  # the documents named past MAX_LICENSES -> their first line
    host: str | None = None
    current: _Draft | None = None
    in_rules = False  # a rule was seen since the last User-agent line: the next one starts a group
    for line in lines:
        key = line.key
        if key is Key.BLANK:
            if reading.blank_line_ends_group:
                current, in_rules = None, False
            continue
        value = line.value.decode("utf-8", "replace")
        if key is Key.USER_AGENT:
            if current is None or in_rules:
                current, in_rules = _Draft(line.number), False
                drafts.append(current)
            current.agents.append(value)
            problem = reading.agent_warning(value)
            if problem:
                warnings.append(ParseWarning(line.number, problem))
        elif key is Key.ALLOW or key is Key.DISALLOW:
            if current is None:
                warnings.append(ParseWarning(
                    line.number, f"{line.name} outside any group (no User-agent above): ignored"))
                continue
            in_rules = True
            directive: Literal["allow", "disallow"] = "allow" if key is Key.ALLOW else "disallow"
            for raw in reading.patterns(line.value):
                pattern = reading.compile_pattern(raw)
                current.rules.append(Rule(directive, raw.decode("utf-8", "replace"), line.number))
                current.compiled.append(pattern if case_sensitive else pattern.lower())
        elif key in _EXTENSIONS:
            if current is None:
                warnings.append(ParseWarning(line.number, f"{line.name} outside any group: "
                                                          "ignored"))
                continue
            problem = current.extend(key, value)
            if problem:
                warnings.append(ParseWarning(line.number, problem))
        elif key in _USAGE:
            # A rule of its group that ends no group and starts none: like the extensions,
            # it must not change which lines decide crawling.
            if current is None:
                warnings.append(ParseWarning(line.number, f"{line.name} outside any group: "
                                                          "ignored"))
                continue
            path, preference = split_path(line.value)
            statement = read_statement(
                _USAGE[key], preference, line=line.number,
                pattern=None if path is None else path.decode("utf-8", "replace"))
            warnings += [ParseWarning(line.number, problem) for problem in statement.problems]
            pattern = reading.compile_pattern(path or b"/")  # no path: every path
            current.usage.append(statement)
            current.usage_compiled.append(pattern if case_sensitive else pattern.lower())
        elif key is Key.SITEMAP:
            sitemaps.append(value)
        elif key is Key.LICENSE:
            if value in licenses or value in unread:
                continue  # the same document again: nothing more to read
            if len(licenses) < MAX_LICENSES:
                licenses[value] = License(value, line.number)
            else:
                unread[value] = line.number
        elif key is Key.HOST and host is None:
            host = value
    warnings.sort(key=lambda w: w.line)
    past = None
    if unread:
        url, number = next(iter(unread.items()))
        past = Unread(License(url, number), len(unread), len(licenses) + len(unread),
                      MAX_LICENSES)
    return RobotsTxt(tuple(d.group() for d in drafts), tuple(sitemaps), host, tuple(warnings),
                     reading, case_sensitive, tuple(licenses.values()), past)


def _present[T](values: Iterable[T | None]) -> list[T]:
    return [value for value in values if value is not None]
