"""Compiled rule sets with a guaranteed worst case: LongestMatch (RFC 9309), FirstMatch (1994).

Patterns come from the web, so none of them is ever turned into a regular expression whose cost
can explode: what is compiled is literals only (literals.py), and a match backs up at most to
the nearest end of a literal. Two kinds of compiled pattern:

- literal (no '*', possibly anchored by a final '$'): the anchored ones are a dictionary of whole
  paths; the others are prefixes, all factored into one radix trie written as a regular
  expression (literals.py's _trie). It finds the longest prefix that matches in one reading of
  it, paid in C, whatever the number of rules.
- wildcard: the pattern split at '*' into segments, matched greedily: each segment at its
  earliest occurrence after the one before (exact for '*'-only globs).

How wildcard rules are matched depends on how many there are, and on the path, and is chosen
here by cost (_scan_cost). A few rules of a few segments on a path of ordinary length (most
files, most requests): scanned one by one (_GlobSet, globs.py); cheapest there, but its cost is
rules x path length. Otherwise (_GlobIndex, glob_index.py): one Aho-Corasick pass over the path,
at a cost of path length + rules (and the segments they walk), never their product.

That bounds a decision by the file, not below it (see glob_index.py): so the work is counted,
and LongestMatch.steps() gives the same answer in slices of about SLICE units (a few hundred
microseconds), for a caller that lets other work run between.

Patterns reach this module already normalised (see urls.py): '*' is the wildcard, a final '$' is
the end anchor, and every other character stands for itself.
"""

import sys
from collections.abc import Generator, Sequence

from robotsgate.protocol.glob_index import SLICE, _GlobIndex
from robotsgate.protocol.globs import Rank, _GlobSet, _Indexed, _TooLong
from robotsgate.protocol.literals import _alternation, _trie

__all__ = ["SLICE", "FirstMatch", "LongestMatch", "Rank"]


def _split(pattern: str) -> tuple[str, bool]:
    """(body, anchored), trailing wildcards dropped: '/a*' and '/a*$' match as '/a' does."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    if body.endswith("*"):
        body, anchored = body.rstrip("*"), False
    return body, anchored


def _first_of[T](keys: Sequence[tuple[str, T]]) -> dict[str, T]:
    """key -> the value of the first entry with that key."""
    first: dict[str, T] = {}
    for key, value in keys:
        first.setdefault(key, value)
    return first


# Up to this many rules of a kind are matched one by one in Python: as fast as a regular
# expression for so few, and without its memory (a compiled expression costs kilobytes, and
# most robots.txt files are a few lines, cached by the hundred thousand). Wildcard rules:
# globs.py's _FEW_GLOBS.
_FEW = 4


# _GlobSet scans the path up to three times per wildcard segment and walks the rules in Python,
# all in one go, so it is used only where its work is bounded below a slice (SLICE, in the same
# units): at most _SCANNED_LINES lines of Python for the rules (_LINES_PER_GLOB each, and
# _LINES_PER_SEGMENT for each segment between two '*'), and _SCAN_BUDGET characters of scans,
# which sets the longest path it takes (_SCAN_BUDGET / scans per character). Rule sets past
# _SCANNED_LINES are matched by _GlobIndex whatever the path; the others by _GlobIndex on paths
# longer than their limit (built on first use). The choice is by cost, not by count: the rules of
# a big shop's or news site's file (some fifty one-star patterns) are scanned, cheapest there.
_SCANNED_LINES = 1024
_LINES_PER_GLOB = 9
_LINES_PER_SEGMENT = 4
_SCAN_BUDGET = 65_536


class LongestMatch:
    """RFC 9309 §2.2.2 precedence: the longest pattern (in octets) wins, Allow wins a tie.

    Built from (pattern, is_allow) in file order; `winner(path)` returns the index of the winning
    entry, or None when nothing matches. Among equal patterns the earliest line wins, so a
    decision always names one line. Empty patterns match nothing (an empty Disallow allows all).

    `steps(path)` is the same answer as a generator that yields between slices of about SLICE
    work units; its return value is winner(path). It yields only where wildcard rules are
    matched by _GlobIndex: when they are many, or the path is long for _GlobSet's scans (the
    index is then built on first use).
    """

    __slots__ = ("_exact", "_few", "_globs", "_index", "_prefix", "_prefix_rank",
                 "_query_globs", "_wildcards", "at_once")

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
        # Wildcard rules, each pattern once (in order of precedence: a repeat never wins).
        # Scanned one by one (_GlobSet) where that is cheap for sure (_scan_cost: rules and
        # segments within _SCANNED_LINES, on a path no longer than _SCAN_BUDGET / scans); else
        # _GlobIndex (built on first use where only long paths need it).
        globs: list[tuple[Rank, str, bool]] = []
        seen: set[tuple[str, bool]] = set()
        for rank, body, anchored in ranked:
            if "*" in body and (body, anchored) not in seen:
                seen.add((body, anchored))
                globs.append((rank, body, anchored))
        lines, scans = _scan_cost(globs)
        self._index: _GlobIndex | None = None
        self._wildcards: list[tuple[Rank, str, bool]] | None = None
        self._globs: _GlobSet | _Indexed
        self._query_globs: _GlobSet | _Indexed
        # The longest path winner() decides without the index: in one slice of steps()'s work.
        self.at_once = -1
        if lines > _SCANNED_LINES:
            self._index = _GlobIndex(globs)
            self._globs = self._query_globs = _Indexed()
            return
        limit = sys.maxsize
        if scans:
            self._wildcards = globs
            limit = _SCAN_BUDGET // scans
        self.at_once = limit
        # Rules about query strings ('/*?', '/*?*sessionid=') are common and scan the whole
        # path; a path without '?' can skip every one of them at the cost of one test.
        self._globs = _GlobSet([g for g in globs if "?" not in g[1]], limit)
        self._query_globs = _GlobSet([g for g in globs if "?" in g[1]], limit)

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
        literal = best
        try:
            best = self._globs.best(path, best)
            if "?" in path:
                best = self._query_globs.best(path, best)
        except _TooLong:
            best = self._glob_index().best(path, literal)
        return None if best is None else best[2]

    def steps(self, path: str) -> Generator[None, None, int | None]:
        """winner(path), yielding between slices of bounded work.

        The same lines as winner's, on purpose: sharing them as a method costs a call on every
        decision, 1-3% of decide() measured with scripts/bench_decide.py --against, and the
        shop workload's margin over its 5x target is about that. The differential tests hold
        the two to the same answers.
        """
        best = self._exact.get(path)
        for body, rank in self._few:
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
        literal = best
        try:
            best = self._globs.best(path, best)
            if "?" in path:
                best = self._query_globs.best(path, best)
        except _TooLong:
            best = yield from self._glob_index().steps(path, literal)
        return None if best is None else best[2]

    def _glob_index(self) -> "_GlobIndex":
        if self._index is None:
            self._index = _GlobIndex(self._wildcards or [])
            self._wildcards = None
        return self._index


def _scan_cost(globs: Sequence[tuple[Rank, str, bool]]) -> tuple[int, int]:
    """_GlobSet's most work on `globs`: lines of Python, and scans per character of path (each
    rule's longest segment tested, then each segment found, the last one maybe twice)."""
    lines = scans = 0
    for _, body, _ in globs:
        middle = sum(1 for part in body.split("*")[1:-1] if part)
        lines += _LINES_PER_GLOB + _LINES_PER_SEGMENT * middle
        scans += middle + 3
    return lines, scans


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
