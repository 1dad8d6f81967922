"""Hostile robots.txt files (500 KiB of rules built to be slow) against paths as long as a proxy
accepts: decided exactly as the reference decides, with work bounded by path + file, never by
their product, and in slices of bounded work for decide_steps().

Nothing here reads a clock: work is counted, as lines of Python executed in the matcher and
characters read by its C scans (str.find and friends on the path).
"""

import functools
import sys
from collections.abc import Callable, Generator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.reference import reference_decision, reference_match

from robotsgate.protocol import (
    MAX_BYTES,
    MAX_URL_LENGTH,
    RobotsTxt,
    glob_index,
    globs,
    literals,
    url_too_long,
)
from robotsgate.protocol import match as match_module
from robotsgate.protocol import robots as robots_module
from robotsgate.protocol.match import SLICE, LongestMatch

from .hostile_files import CASES, HEADER, Case

# The matcher (match.py and the modules it is built from) and robots.py, which drives it.
MATCHER_FILES = {module.__file__ for module in (match_module, literals, globs, glob_index,
                                                robots_module)}

# --------------------------------------------------------------------------------------------
# A fast reference: the same dynamic programming as reference_match, one int per row
# --------------------------------------------------------------------------------------------


def rules_of(text: str) -> list[tuple[bool, str]]:
    """(allow, pattern) for every rule of a one-group file whose patterns are in normal form."""
    rules = []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("allow", "disallow"):
            rules.append((key.strip().lower() == "allow", value.strip()))
    return rules


def bitset_match(pattern: str, path: str, masks: dict[str, int]) -> bool:
    """reference_match(pattern, path), with the row reach[] as the bits of one int.

    masks[c] has bit j set where path[j] == c. Reading a character c keeps the bits j whose
    path[j] is c, moved to j + 1; reading '*' sets every bit from the lowest set one up.
    """
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    full = (1 << (len(path) + 1)) - 1
    reach = 1  # bit j: the pattern read so far can consume exactly path[:j]
    for char in body:
        # '*': every bit from the lowest set one up; a character: the bits it allows, moved on
        reach = full & ~((reach & -reach) - 1) if char == "*" else \
            (reach & masks.get(char, 0)) << 1
        if not reach:
            return False
    return bool(reach >> len(path)) if anchored else True


def bitset_decision(rules: list[tuple[bool, str]], path: str) -> tuple[bool, int] | None:
    """reference_decision(rules, path), with bitset_match."""
    masks: dict[str, int] = {}
    for j, char in enumerate(path):
        masks[char] = masks.get(char, 0) | 1 << j
    best: tuple[int, bool, int] | None = None
    for index, (allow, pattern) in enumerate(rules):
        if pattern and bitset_match(pattern, path, masks):
            key = (len(pattern), allow, -index)
            if best is None or key > best:
                best = key
    return None if best is None else (best[1], -best[2])


@settings(max_examples=2000, deadline=None)
@given(st.text(st.sampled_from("ab/*"), max_size=10).flatmap(
    lambda body: st.sampled_from([body, body + "$"])),
    st.text(st.sampled_from("ab/"), max_size=14))
def test_the_fast_reference_is_the_reference(pattern: str, path: str) -> None:
    masks: dict[str, int] = {}
    for j, char in enumerate(path):
        masks[char] = masks.get(char, 0) | 1 << j
    assert bitset_match(pattern, path, masks) == reference_match(pattern, path)


# --------------------------------------------------------------------------------------------
# Decisions
# --------------------------------------------------------------------------------------------


def assert_decides(robots: RobotsTxt, rules: list[tuple[bool, str]], path: str,
                   expected: tuple[bool, int] | None) -> None:
    url = "https://example.com" + path  # a bare "//a" would name a host
    decision = robots.decide("bot", url)
    if expected is None:
        assert decision.allowed and decision.rule is None, path[:80]
    else:
        first_rule_line = 2  # rules follow the one User-agent line
        assert decision.rule is not None, path[:80]
        assert (decision.allowed, decision.rule.line) == (expected[0],
                                                          expected[1] + first_rule_line)
    assert run(robots.decide_steps("bot", url))[0] == decision
    assert robots.decide_at_once("bot", url) in (None, decision)


def run[T](steps: Generator[None, None, T]) -> tuple[T, int]:
    """(what a stepwise generator returns, how many times it yielded)."""
    count = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value, count
        count += 1


def planted(case: Case, path: str) -> str:
    """The case's file with its last rules replaced by rules that match `path` in several ways
    (literal, wildcard, anchored), Allow and Disallow of equal length: the winner is not None
    and not trivial to find."""
    tail = path[-7:]
    extra = [f"Disallow:/*{tail}", f"Allow:/*{tail}", f"Disallow:{path[:9]}*{path[-3:]}$",
             f"Allow:/*{path[20:26]}*{path[40:43]}*{tail}", f"Disallow:{path[:12]}",
             f"Allow:*{path[-30:-24]}*{path[-5:]}$"]
    lines = case.build().splitlines()
    while len("\n".join(lines + extra)) + 1 > MAX_BYTES:
        lines.pop()
    return "\n".join(lines + extra) + "\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_files_decide_as_the_reference(name: str) -> None:
    case = CASES[name]
    text = case.build()
    assert len(text.encode()) <= MAX_BYTES and text.startswith(HEADER)
    robots = RobotsTxt.parse(text)
    assert not robots.warnings
    rules = rules_of(text)
    for length in (64, 700, 3000, MAX_URL_LENGTH):
        for variant in (0, 7):
            path = case.path(length, variant)
            assert len(path) == length
            assert_decides(robots, rules, path, bitset_decision(rules, path))
    # The same files with rules that match, among the hostile ones.
    for length in (300, MAX_URL_LENGTH):
        path = case.path(length, 3)
        text = planted(case, path)
        planted_rules = rules_of(text)
        expected = bitset_decision(planted_rules, path)
        assert expected is not None
        assert_decides(RobotsTxt.parse(text), planted_rules, path, expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_small_hostile_files_decide_as_the_dynamic_programming(name: str) -> None:
    # The slow reference itself, on the same structures cut down to a few hundred rules (still
    # past what is scanned rule by rule) and shorter paths.
    case = CASES[name]
    lines = case.build().splitlines()[:400]
    text = "\n".join(lines) + "\n"
    rules = rules_of(text)
    robots = RobotsTxt.parse(text)
    for length in (70, 260):
        path = case.path(length, 1)
        small = planted(Case(name, "", lambda text=text: text, case.path), path)
        assert_decides(robots, rules, path, reference_decision(rules, path))
        small_rules = rules_of(small)
        assert_decides(RobotsTxt.parse(small), small_rules, path,
                       reference_decision(small_rules, path))


patterns = st.text(st.sampled_from("ab/*"), max_size=7).flatmap(
    lambda body: st.sampled_from(["/" + body, "/" + body + "$", body + "$", "*" + body,
                                  "/*" + body, "/a*" + body + "$"])
)
paths = st.text(st.sampled_from("ab/"), max_size=16).map(lambda t: "/" + t)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.booleans(), patterns), min_size=33, max_size=80),
       st.lists(paths, min_size=1, max_size=6))
def test_many_wildcard_rules_agree_with_reference(rules: list[tuple[bool, str]],
                                                  queries: list[str]) -> None:
    # Past _SCANNED_LINES of wildcard rules: matched by the index, whatever the path.
    rules = rules + [(index % 2 == 0, f"/*{'ab'[index % 2]}*{index}") for index in range(90)]
    text = "User-agent: *\n" + "".join(
        f"{'Allow' if allow else 'Disallow'}: {pattern}\n" for allow, pattern in rules)
    robots = RobotsTxt.parse(text)
    for path in queries:
        assert_decides(robots, rules, path, reference_decision(rules, path))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), patterns), min_size=3, max_size=12),
       st.lists(st.text(st.sampled_from("ab/"), min_size=1, max_size=40), min_size=1,
                max_size=4), st.integers(min_value=0, max_value=3000))
def test_few_wildcard_rules_on_long_paths_agree_with_reference(
        rules: list[tuple[bool, str]], tails: list[str], padding: int) -> None:
    # A few wildcard rules are scanned rule by rule, but not on a path past _SCAN_BUDGET /
    # scans characters: there the index takes over (built on first use). Same answers.
    text = "User-agent: *\n" + "".join(
        f"{'Allow' if allow else 'Disallow'}: {pattern}\n" for allow, pattern in rules)
    robots = RobotsTxt.parse(text)
    for tail in tails:
        for path in ("/" + tail, "/" + "ab/" * padding + tail):
            assert_decides(robots, rules, path, bitset_decision(rules, path))


# --------------------------------------------------------------------------------------------
# Work, counted
# --------------------------------------------------------------------------------------------


class CountingPath(str):
    """A path that counts the characters its C scans may read (for find: up to what it finds)."""

    scanned = 0

    def find(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        begin = 0 if start is None else start
        stop = len(self) if end is None else min(end, len(self))
        found = str.find(self, sub, begin, stop)
        CountingPath.scanned += max(0, (found + len(sub) if found >= 0 else stop) - begin)
        return found

    def __contains__(self, sub: object) -> bool:
        assert isinstance(sub, str)
        found = str.find(self, sub)
        CountingPath.scanned += found + len(sub) if found >= 0 else len(self)
        return found >= 0

    def startswith(self, prefix: Any, *args: Any) -> bool:  # type: ignore[override]
        CountingPath.scanned += len(prefix) if isinstance(prefix, str) else len(self)
        return str.startswith(self, prefix, *args)

    def endswith(self, suffix: Any, *args: Any) -> bool:  # type: ignore[override]
        CountingPath.scanned += len(suffix) if isinstance(suffix, str) else len(self)
        return str.endswith(self, suffix, *args)


class Work:
    """Lines of Python executed in MATCHER_FILES, plus characters scanned / 64."""

    def __init__(self) -> None:
        self.lines = 0

    def trace(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if frame.f_code.co_filename not in MATCHER_FILES:
            return None
        if event == "line":
            self.lines += 1
        return self.trace

    def __enter__(self) -> "Work":
        CountingPath.scanned = 0
        self._previous = sys.gettrace()
        sys.settrace(self.trace)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._previous)
        self.scanned = CountingPath.scanned

    @property
    def units(self) -> int:
        return self.lines + self.scanned // 64


def matcher_of(robots: RobotsTxt) -> LongestMatch:
    robots.decide("bot", "/")  # compiled
    policy = robots._policy("bot")
    assert policy is not None and isinstance(policy.matcher, LongestMatch)
    return policy.matcher


def slices(matcher: LongestMatch, path: str) -> list[int]:
    """The work of each slice of matcher.steps(path) (the last one ends with the answer)."""
    steps = matcher.steps(CountingPath(path))
    done: list[int] = []
    while True:
        with Work() as work:
            try:
                next(steps)
                finished = False
            except StopIteration:
                finished = True
        done.append(work.units)
        if finished:
            return done


@functools.cache
def hostile(name: str) -> RobotsTxt:
    return RobotsTxt.parse(CASES[name].build())


# Work per character of path, and per byte of robots.txt, that no decision exceeds.
PER_CHARACTER, PER_BYTE = 40, 4


@pytest.mark.parametrize("name", sorted(CASES))
def test_work_grows_with_path_plus_file_never_their_product(name: str) -> None:
    # Each hostile file, at paths of 1,000 characters, MAX_URL_LENGTH and four times that: the
    # work is within PER_CHARACTER x path + PER_BYTE x file. The old matcher read the whole path
    # once per rule or more: on far-segments at MAX_URL_LENGTH that alone was 34,000 rules x
    # 8,192 characters / 64, over 4 million units, and 17 million at four times the length.
    case = CASES[name]
    size = len(case.build().encode())
    matcher = matcher_of(hostile(name))
    for length in (1000, MAX_URL_LENGTH, 4 * MAX_URL_LENGTH):
        path = case.path(length, 5)
        matcher.winner(path)  # once first: the transitions it meets are kept, count the worse
        work = sum(slices(matcher, case.path(length, 6)))
        assert work <= PER_CHARACTER * length + PER_BYTE * size, (length, work)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_slice_is_bounded(name: str) -> None:
    # decide_steps() yields after about SLICE units; no slice of a hostile decision does much
    # more, so an event loop awaiting between slices is never held long.
    case = CASES[name]
    matcher = matcher_of(hostile(name))
    for variant in (1, 2):
        work = slices(matcher, case.path(MAX_URL_LENGTH, variant))
        assert max(work) <= 3 * SLICE, work
        assert len(work) <= 2 + 2 * sum(work) // SLICE, work  # and not needlessly many


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_decision_in_slices_is_never_made_at_once(name: str) -> None:
    # decide_at_once() is for the first slice only: a path that takes several is left to
    # decide_steps(), which then gives decide()'s answer. (Nearly every case takes several.)
    case = CASES[name]
    robots = hostile(name)
    for variant in (1, 2):
        url = "https://example.com" + case.path(MAX_URL_LENGTH, variant)
        decision, yielded = run(robots.decide_steps("bot", url))
        assert decision == robots.decide("bot", url)
        at_once = robots.decide_at_once("bot", url)
        assert at_once is None if yielded else at_once in (None, decision)


def test_ordinary_files_decide_in_one_go() -> None:
    # The realistic 200-rule file of the decision benchmark: no slices, no index.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    try:
        import bench_decide
    finally:
        sys.path.pop(0)
    robots = RobotsTxt.parse(bench_decide.realistic_robots())
    for url in bench_decide.URLS:
        for agent in bench_decide.AGENTS:
            decision, yielded = run(robots.decide_steps(agent, url))
            assert yielded == 0 and decision == robots.decide(agent, url)
            assert robots.decide_at_once(agent, url) == decision


def test_the_shop_workload_is_scanned_in_one_go() -> None:
    # ../shared/bench's shop file (some fifty one-star rules in its * group, as big shops and
    # news sites write them): scanned rule by rule, no index, no slices.
    bench = Path(__file__).resolve().parents[3] / "shared" / "bench"
    robots = RobotsTxt.parse((bench / "shop-robots.txt").read_text())
    rows = [line.split("\t") for line in (bench / "shop-requests.tsv").read_text().splitlines()]
    for agent, url in rows[1:400]:
        decision, yielded = run(robots.decide_steps(agent, url))
        assert yielded == 0 and decision == robots.decide(agent, url)
        assert robots.decide_at_once(agent, url) == decision
    for agent in ("OtherBot", "FooBot", "BarBot"):
        matcher = matcher_of_agent(robots, agent)
        assert matcher._index is None


def matcher_of_agent(robots: RobotsTxt, agent: str) -> LongestMatch:
    robots.decide(agent, "/")
    policy = robots._policy(agent)
    assert policy is not None and isinstance(policy.matcher, LongestMatch)
    return policy.matcher


def _pairs(letters: str) -> str:
    """A de Bruijn sequence: every pair of `letters` occurs in it once."""
    k, sequence, a = len(letters), [], [0, 0, 0]

    def walk(t: int, p: int) -> None:
        if t > 2:
            if 2 % p == 0:
                sequence.extend(a[1:p + 1])
            return
        a[t] = a[t - p]
        walk(t + 1, p)
        for j in range(a[t - p] + 1, k):
            a[t] = j
            walk(t + 1, t)

    walk(1, 1)
    return "".join(letters[i] for i in sequence)


def _costliest_scanned(shape: str) -> tuple[list[tuple[bool, str]], str]:
    """As many rules of `shape` (each with its own two letters) as are still scanned rule by
    rule, and a path as long as they are scanned on that holds every rule's letters, early:
    every rule is tried and walks its segments (the z's in the path's tail) before it fails at
    the missing q."""
    pairs = _pairs("abcdefghijklmnop")
    rules: list[tuple[bool, str]] = []

    def cost(patterns: list[str]) -> tuple[int, int]:
        return match_module._scan_cost([((0, 0, n), p, False) for n, p in enumerate(patterns)])

    while cost([p for _, p in rules] + [shape.format(pairs[len(rules):len(rules) + 2])])[0] \
            <= match_module._SCANNED_LINES:
        rules.append((False, shape.format(pairs[len(rules):len(rules) + 2])))
    limit = match_module._SCAN_BUDGET // cost([p for _, p in rules])[1]
    start = "/" + pairs[:len(rules) + 1]
    assert len(start) < limit
    return rules, start + "z" * (limit - len(start))


@pytest.mark.parametrize("shape", ["/*{}*q", "/*{}*z*z*q", "/*{}*z*z*z*z*z*z*q", "/*{}*z*q$"])
def test_a_scanned_rule_set_stays_within_a_slice(shape: str) -> None:
    # _scan_cost's budget, held to the work counted: the costliest rule set still scanned rule
    # by rule, on the longest path it is scanned on, is decided in one go within one slice.
    rules, path = _costliest_scanned(shape)
    assert len(rules) >= 20
    robots = RobotsTxt.parse("User-agent: *\n" + "".join(f"Disallow: {p}\n" for _, p in rules))
    matcher = matcher_of(robots)
    work = slices(matcher, path)
    assert matcher._index is None and len(work) == 1, work
    # The model's bound (its lines, and its scans at 64 characters a unit), well within a slice.
    assert work[0] <= match_module._SCANNED_LINES + match_module._SCAN_BUDGET // 64 <= SLICE, work
    expected = bitset_decision(rules, path)
    assert_decides(robots, rules, path, expected)


# --------------------------------------------------------------------------------------------
# The URL cap
# --------------------------------------------------------------------------------------------


def test_url_too_long() -> None:
    assert MAX_URL_LENGTH == 8192
    host = "https://example.com"
    assert not url_too_long(host + "/" + "a" * (MAX_URL_LENGTH - len(host) - 1))
    assert url_too_long(host + "/" + "a" * (MAX_URL_LENGTH - len(host)))
    assert not url_too_long("/x" * 300)
    # In normal form a character may become up to twelve: what decide() matches counts.
    assert url_too_long("/" + "\U0001f600" * (MAX_URL_LENGTH // 12 + 1))
    assert not url_too_long("/" + "\U0001f600" * (MAX_URL_LENGTH // 12 - 1))
    assert url_too_long("/" + '"' * (MAX_URL_LENGTH // 3 + 1))
    assert not url_too_long("/" + "%41" * (MAX_URL_LENGTH // 3))  # %41 is A: shorter
