"""Compiled rule sets with a guaranteed worst case.

Patterns come from the web, so none of them is ever turned into a regular expression that can
backtrack more than once over the path. Two kinds of compiled pattern:

- literal (no '*', possibly anchored by a final '$'): all of them go into one regular expression
  that is a plain alternation of escaped literals anchored at the start. Python tries the
  alternatives in order and stops at the first that matches, so ordering them by precedence makes
  "the first alternative that matches" mean "the winning rule". Literals cannot backtrack: the
  cost is at most the total length of the literals, paid in C.
- wildcard: the pattern split at '*' into segments, each matched by an atomic group that takes
  the segment's earliest occurrence and never gives it back. That greedy left-to-right scan is
  exact for '*'-only globs (the earliest place a segment fits never hurts the segments after
  it), and costs one forward scan per segment; see _glob_source.

Patterns reach this module already normalised (see urls.py): '*' is the wildcard, a final '$' is
the end anchor, and every other character stands for itself.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Wildcard rules go into regular expressions of at most this many alternatives, each in its own
# capture group (the group says which rule matched); re saves every group's marks at each
# alternative, so unbounded groups per expression would make a match quadratic in the rules.
_GLOBS_PER_REGEX = 32


def _glob_source(body: str, anchored: bool) -> str:
    """A '*'-glob as a regular expression that cannot backtrack into what it has matched.

    `(?>.*?seg)` finds the earliest occurrence of a segment and commits to it (an atomic group):
    the greedy left-to-right scan that is exact for '*'-only globs, run in C. Each segment scans
    forward at most once, so the cost is bounded by path length x pattern length, whatever the
    pattern -- like Google's matcher, never exponential.
    """
    parts = body.split("*")
    source = re.escape(parts[0])
    for segment in parts[1:-1]:
        if segment:
            source += "(?>.*?" + re.escape(segment) + ")"
    last = re.escape(parts[-1])
    return source + (".*" + last + r"\Z" if anchored else "(?>.*?" + last + ")")


def _split(pattern: str) -> tuple[str, bool]:
    """(body, anchored), trailing wildcards dropped: '/a*' and '/a*$' match as '/a' does."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    if body.endswith("*"):
        body, anchored = body.rstrip("*"), False
    return body, anchored


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


Rank = tuple[int, int, int]  # (-length, 0 for allow | 1 for disallow, index): smaller wins


# Up to this many rules of a kind are matched one by one in Python: as fast as a regular
# expression for so few, and without its memory (a compiled alternation costs kilobytes, and
# most robots.txt files are a few lines, cached by the hundred thousand).
_FEW = 4
_FEW_GLOBS = 2


@dataclass(frozen=True, slots=True)
class _Glob:
    """A '*'-glob matched by a greedy left-to-right scan with str.find (exact for '*' only)."""

    first: str
    middle: tuple[str, ...]
    last: str
    anchored: bool

    @classmethod
    def of(cls, body: str, anchored: bool) -> "_Glob":
        parts = body.split("*")
        return cls(parts[0], tuple(p for p in parts[1:-1] if p), parts[-1], anchored)

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


class _GlobSet:
    """Wildcard rules in order of precedence: a few scanned in turn, or regular expressions."""

    __slots__ = ("_chunks", "_few", "_required")

    def __init__(self, globs: Sequence[tuple[Rank, str, bool]]) -> None:
        self._few: tuple[tuple[Rank, _Glob], ...] | None = None
        self._required: re.Pattern[str] | None = None
        self._chunks: tuple[tuple[re.Pattern[str], tuple[Rank, ...]], ...] = ()
        if len(globs) <= _FEW_GLOBS:
            self._few = tuple((rank, _Glob.of(body, anchored)) for rank, body, anchored in globs)
            return
        # Every segment of a glob must occur in a path it matches: one search for each glob's
        # longest segment rules the whole set out for most paths, in a single pass.
        keys = sorted({max(body.split("*"), key=len) for _, body, _ in globs}, key=len,
                      reverse=True)
        self._required = re.compile("|".join(map(re.escape, keys)))
        chunks = [globs[i : i + _GLOBS_PER_REGEX] for i in range(0, len(globs), _GLOBS_PER_REGEX)]
        self._chunks = tuple(
            (re.compile("|".join(f"({_glob_source(body, anchored)})"
                                 for _, body, anchored in chunk), re.DOTALL),
             tuple(rank for rank, _, _ in chunk))
            for chunk in chunks)

    def best(self, path: str, best: Rank | None) -> Rank | None:
        """The better of `best` and the first wildcard rule that matches `path`."""
        if self._few is not None:
            for rank, glob in self._few:
                if best is not None and rank > best:
                    break
                if glob.matches(path):
                    return rank
            return best
        if self._required is None or self._required.search(path) is None:
            return best
        for regex, ranks in self._chunks:
            if best is not None and ranks[0] > best:
                break  # in order of precedence: nothing from here on beats `best`
            found = regex.match(path)
            if found is not None and found.lastindex is not None:
                rank = ranks[found.lastindex - 1]
                return rank if best is None or rank < best else best
        return best


class LongestMatch:
    """RFC 9309 §2.2.2 precedence: the longest pattern (in octets) wins, Allow wins a tie.

    Built from (pattern, is_allow) in file order; `winner(path)` returns the index of the winning
    entry, or None when nothing matches. Among equal patterns the earliest line wins, so a
    decision always names one line. Empty patterns match nothing (an empty Disallow allows all).
    """

    __slots__ = ("_exact", "_few", "_globs", "_prefix", "_prefix_rank", "_query_globs")

    def __init__(self, entries: Sequence[tuple[str, bool]]) -> None:
        ranked: list[tuple[Rank, str, bool]] = []
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
        few = len(prefix) <= _FEW
        self._few = tuple(prefix) if few else ()
        self._prefix = None if few else _alternation([body for body, _ in prefix])
        self._prefix_rank = {} if few else _first_of(prefix)
        globs = [(rank, body, anchored) for rank, body, anchored in ranked if "*" in body]
        # Rules about query strings ('/*?', '/*?*sessionid=') are common and scan the whole
        # path; a path without '?' can skip every one of them at the cost of one test.
        self._globs = _GlobSet([g for g in globs if "?" not in g[1]])
        self._query_globs = _GlobSet([g for g in globs if "?" in g[1]])

    def winner(self, path: str) -> int | None:
        best = self._exact.get(path)
        for body, rank in self._few:  # in order of precedence: the first that matches is best
            if path.startswith(body):
                if best is None or rank < best:
                    best = rank
                break
        if self._prefix is not None:
            found = self._prefix.match(path)
            if found is not None:
                rank = self._prefix_rank[found[0]]
                if best is None or rank < best:
                    best = rank
        best = self._globs.best(path, best)
        if "?" in path:
            best = self._query_globs.best(path, best)
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
