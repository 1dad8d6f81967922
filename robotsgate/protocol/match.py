"""Compiled rule sets with a guaranteed worst case.

Patterns come from the web, so none of them is ever turned into a regular expression whose cost
can explode: what is compiled is literals only, and a match backs up at most to the nearest end
of a literal. Two kinds of compiled pattern:

- literal (no '*', possibly anchored by a final '$'): the anchored ones are a dictionary of whole
  paths; the others are prefixes, all factored into one radix trie written as a regular
  expression (see _trie). It finds the longest prefix that matches in one reading of it, paid in
  C, whatever the number of rules.
- wildcard: the pattern split at '*' into segments, matched by a greedy left-to-right scan with
  str.find that takes each segment's earliest occurrence. That is exact for '*'-only globs (the
  earliest place a segment fits never hurts the segments after it), and costs one forward scan
  per segment: bounded by path length x pattern length, like Google's matcher, never exponential.
  One search for every glob's longest segment rules them all out for most paths.

Patterns reach this module already normalised (see urls.py): '*' is the wildcard, a final '$' is
the end anchor, and every other character stands for itself.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass


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


# Deeper tries fall back to a plain alternation: re's compiler recurses for every nested group,
# and a level of the trie nests up to two.
_TRIE_DEPTH = 48


def _shared_start(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]


class _TooDeep(Exception):
    pass


def _trie(literals: Sequence[str]) -> re.Pattern[str] | None:
    """The longest of `literals` that starts a string, as one regular expression.

    The literals are factored into a radix trie: "/a/b|/a/c|/d" becomes "/(?:a/(?:b|c)|d)".
    At each branch at most one alternative can match the next character (their first
    characters differ), and a literal that ends inside the trie is an empty alternative tried
    last, so the match goes as deep as it can and backs off to the nearest end of a literal: the
    longest match, for the cost of reading it once. A flat alternation tries every literal in
    turn instead; with a few hundred rules that is most of the cost of a decision. With search()
    instead of match(), it finds where any of the literals occurs first.
    """
    if not literals:
        return None
    try:
        return re.compile(_trie_source(sorted(set(literals)), 0))
    except _TooDeep:
        return _alternation(sorted(set(literals), key=len, reverse=True))


def _trie_source(words: list[str], depth: int) -> str:
    # `words` is sorted and holds what is left of each literal below this node ("" = ends here).
    if depth > _TRIE_DEPTH:
        raise _TooDeep
    ends = words[0] == ""
    rest = words[1:] if ends else words
    branches: list[str] = []
    start = 0
    while start < len(rest):
        first = rest[start][0]
        stop = start + 1
        while stop < len(rest) and rest[stop][0] == first:
            stop += 1
        group = rest[start:stop]
        shared = _shared_start(group[0], group[-1])  # sorted: first and last bound the rest
        below = [word[len(shared):] for word in group]
        branches.append(re.escape(shared) + (_trie_source(below, depth + 1)
                                             if len(group) > 1 else ""))
        start = stop
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return "(?:" + body + "|)" if ends else body


def _first_of[T](keys: Sequence[tuple[str, T]]) -> dict[str, T]:
    """key -> the value of the first entry with that key."""
    first: dict[str, T] = {}
    for key, value in keys:
        first.setdefault(key, value)
    return first


Rank = tuple[int, int, int]  # (-length, 0 for allow | 1 for disallow, index): smaller wins


# Up to this many rules of a kind are matched one by one in Python: as fast as a regular
# expression for so few, and without its memory (a compiled expression costs kilobytes, and
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


_Entry = tuple[Rank, str, _Glob]  # (rank, the glob's longest segment, the glob)


class _GlobSet:
    """Wildcard rules in order of precedence, each tried only where it can match.

    Every segment of a glob must occur in a path it matches, and the path must start with its
    first segment. One search for every glob's longest segment at once rules the whole set out
    for most paths. Where it does not, one match of the first segments (a trie) picks the globs
    whose first segment starts the path; of those, a glob whose longest segment is not in the
    path is passed over for one substring test, and only the rest are scanned.
    """

    __slots__ = ("_by_first", "_few", "_first", "_required")

    def __init__(self, globs: Sequence[tuple[Rank, str, bool]]) -> None:
        entries = [(rank, max(body.split("*"), key=len), _Glob.of(body, anchored))
                   for rank, body, anchored in globs]
        self._few: tuple[_Entry, ...] = ()
        self._required: re.Pattern[str] | None = None
        self._first: re.Pattern[str] | None = None
        self._by_first: dict[str, tuple[_Entry, ...]] = {}
        if len(entries) <= _FEW_GLOBS:
            self._few = tuple(entries)
            return
        self._required = _trie([key for _, key, _ in entries])
        self._first = _trie([glob.first for _, _, glob in entries])
        self._by_first = _starting(entries)

    def best(self, path: str, best: Rank | None) -> Rank | None:
        """The better of `best` and the first wildcard rule that matches `path`."""
        if self._first is None:
            candidates = self._few
        else:
            if self._required is None or self._required.search(path) is None:
                return best
            first = self._first.match(path)
            if first is None:
                return best
            candidates = self._by_first[first[0]]
        for rank, key, glob in candidates:
            if best is not None and rank > best:
                break  # in order of precedence: nothing from here on beats `best`
            if key in path and glob.matches(path):
                return rank
        return best


def _starting(entries: list[_Entry]) -> dict[str, tuple[_Entry, ...]]:
    """first segment F -> the globs whose first segment starts F, in order of precedence.

    The trie of first segments finds the longest one that starts a path; every glob whose first
    segment is a prefix of that one starts the path too, and no other does.
    """
    groups: dict[str, list[_Entry]] = {}
    for entry in entries:
        groups.setdefault(entry[2].first, []).append(entry)
    lengths = sorted({len(first) for first in groups})
    starting: dict[str, tuple[_Entry, ...]] = {}
    for first in groups:
        found = [entry for length in lengths if length <= len(first)
                 for entry in groups.get(first[:length], ())]
        starting[first] = tuple(sorted(found))  # ranks are distinct: no glob is compared
    return starting


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
        # prefixes: a few tried in order of precedence (the first that matches is the best), or
        # the trie, which finds the longest, and _outranked, which says which rule that means.
        prefix = [(body, rank) for rank, body, anchored in ranked
                  if "*" not in body and not anchored]
        self._exact = _first_of([(body, rank) for rank, body, anchored in ranked
                                 if "*" not in body and anchored])
        few = len(prefix) <= _FEW
        self._few = tuple(prefix) if few else ()
        self._prefix = None if few else _trie([body for body, _ in prefix])
        self._prefix_rank = {} if few else _outranked(_first_of(prefix))
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


def _outranked(ranks: dict[str, Rank]) -> dict[str, Rank]:
    """body -> the best rank among the literals that match wherever `body` is the longest match.

    The trie finds the longest literal that matches, and usually that is the winner. But trailing
    '*'s count in a rule's length without changing what it matches: "/a**" outranks "/ab" and
    matches wherever "/a" does. So a shorter literal that a longer one starts with can still win.
    """
    starred = {body: rank for body, rank in ranks.items() if -rank[0] > len(body)}
    if not starred:
        return ranks
    lengths = sorted({len(body) for body in starred})
    best = dict(ranks)
    for body, rank in ranks.items():
        for length in lengths:
            if length >= len(body):
                break
            other = starred.get(body[:length])
            if other is not None and other < rank:
                rank = other
        best[body] = rank
    return best


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
