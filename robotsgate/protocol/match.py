"""Compiled rule sets with a guaranteed worst case.

Patterns come from the web, so none of them is ever turned into a backtracking regular
expression. Two kinds of compiled pattern:

- literal (no '*', possibly anchored by a final '$'): all of them go into one regular expression
  that is a plain alternation of escaped literals anchored at the start. Python tries the
  alternatives in order and stops at the first that matches, so ordering them by precedence makes
  "the first alternative that matches" mean "the winning rule". Literals cannot backtrack: the
  cost is at most the total length of the literals, paid in C.
- wildcard: the pattern split at '*' into segments; a greedy left-to-right scan with str.find is
  exact for '*'-only globs (the earliest place a segment fits never hurts the segments after it),
  and costs one linear find per segment.

Patterns reach this module already normalised (see urls.py): '*' is the wildcard, a final '$' is
the end anchor, and every other character stands for itself.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class _Glob:
    first: str
    middle: tuple[str, ...]
    last: str
    anchored: bool

    def matches(self, path: str) -> bool:
        if not path.startswith(self.first):
            return False
        pos = len(self.first)
        for segment in self.middle:
            pos = path.find(segment, pos)
            if pos < 0:
                return False
            pos += len(segment)
        if self.anchored:
            return len(path) - len(self.last) >= pos and path.endswith(self.last)
        return path.find(self.last, pos) >= 0


def _split(pattern: str) -> tuple[str, bool]:
    """(body, anchored), trailing wildcards dropped: '/a*' and '/a*$' match as '/a' does."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    if body.endswith("*"):
        body, anchored = body.rstrip("*"), False
    return body, anchored


def _glob(body: str, anchored: bool) -> _Glob:
    parts = body.split("*")
    middle = tuple(p for p in parts[1:-1] if p)
    return _Glob(parts[0], middle, parts[-1], anchored)


def _alternation(prefixes: Sequence[str]) -> re.Pattern[str] | None:
    # No capture groups: with one group per alternative, re saves and restores the marks of
    # every group at each alternative, which makes a match quadratic in the number of rules.
    # The matched text is the prefix itself, and identifies the alternative that matched.
    if not prefixes:
        return None
    return re.compile("|".join(re.escape(prefix) for prefix in prefixes))


def _first_of[T](keys: Sequence[tuple[str, T]]) -> dict[str, T]:
    """key -> the value of the first entry with that key."""
    first: dict[str, T] = {}
    for key, value in keys:
        first.setdefault(key, value)
    return first


class LongestMatch:
    """RFC 9309 §2.2.2 precedence: the longest pattern (in octets) wins, Allow wins a tie.

    Built from (pattern, is_allow) in file order; `winner(path)` returns the index of the winning
    entry, or None when nothing matches. Among equal patterns the earliest line wins, so a
    decision always names one line. Empty patterns match nothing (an empty Disallow allows all).
    """

    __slots__ = ("_exact", "_globs", "_prefix", "_prefix_rank")

    def __init__(self, entries: Sequence[tuple[str, bool]]) -> None:
        ranked: list[tuple[tuple[int, int, int], str, bool]] = []
        for index, (pattern, allow) in enumerate(entries):
            if pattern:
                ranked.append(((-len(pattern), 0 if allow else 1, index), *_split(pattern)))
        ranked.sort()
        # Literals: a final '$' means the whole path (a dictionary look-up); the others are
        # prefixes, tried in order of precedence, so the first that matches is the best.
        prefix = [(body, rank) for rank, body, anchored in ranked
                  if "*" not in body and not anchored]
        self._exact = _first_of([(body, rank) for rank, body, anchored in ranked
                                 if "*" not in body and anchored])
        self._prefix = _alternation([body for body, _ in prefix])
        self._prefix_rank = _first_of(prefix)
        self._globs = tuple((rank, _glob(body, anchored))
                            for rank, body, anchored in ranked if "*" in body)

    def winner(self, path: str) -> int | None:
        best = self._exact.get(path)
        if self._prefix is not None:
            found = self._prefix.match(path)
            if found is not None:
                rank = self._prefix_rank[found[0]]
                if best is None or rank < best:
                    best = rank
        for rank, glob in self._globs:
            if best is not None and rank > best:
                break  # sorted: nothing after this can beat the literal winner
            if glob.matches(path):
                best = rank
                break
        return None if best is None else best[2]


class FirstMatch:
    """The 1994 reading: plain prefixes, the first rule in file order that matches wins."""

    __slots__ = ("_indexes", "_regex")

    def __init__(self, prefixes: Sequence[str]) -> None:
        kept = [(p, i) for i, p in enumerate(prefixes) if p]
        self._indexes = _first_of(kept)
        self._regex = _alternation([p for p, _ in kept])

    def winner(self, path: str) -> int | None:
        if self._regex is None:
            return None
        found = self._regex.match(path)
        return None if found is None else self._indexes[found[0]]
