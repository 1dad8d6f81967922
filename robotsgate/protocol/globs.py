"""Wildcard rules scanned one by one: the cheapest way for a few rules on an ordinary path.

A wildcard pattern is split at '*' into segments, matched greedily: each segment at its
earliest occurrence after the one before. That is exact for '*'-only globs (the earliest place
a segment fits never hurts the segments after it).

A few rules of a few segments on a path of ordinary length (most files, most requests): one
str.find scan per segment, each rule tried only when the path starts with its first segment and
holds its longest (_GlobSet); cheapest there, but its cost is rules x path length. So match.py
uses it only where that cost is bounded (its _scan_cost), and on a path too long for the scans
(_TooLong) matches the rules with glob_index.py's _GlobIndex instead.
"""

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from robotsgate.protocol.literals import _Prefixes, _search_trie, _trie

Rank = tuple[int, int, int]  # (-length, 0 for allow | 1 for disallow, index): smaller wins


# Up to this many wildcard rules are matched one by one in Python, without their tries: as
# fast for so few, and without their memory (as literal rules are, up to match.py's _FEW).
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


class _TooLong(Exception):
    """A path too long for _GlobSet's scans: the caller uses a _GlobIndex instead."""


class _Indexed:
    """In place of _GlobSet where every path goes to the _GlobIndex."""

    __slots__ = ()

    def best(self, path: str, best: Rank | None) -> Rank | None:
        raise _TooLong


class _GlobSet:
    """Wildcard rules in order of precedence, each tried only where it can match.

    Every segment of a glob must occur in a path it matches, and the path must start with its
    first segment. One search for every glob's longest segment at once rules the whole set out
    for most paths. Where it does not, one match of the first segments (a trie) picks the globs
    whose first segment starts the path; of those, a glob whose longest segment is not in the
    path is passed over for one substring test, and only the rest are scanned.
    """

    __slots__ = ("_by_first", "_few", "_first", "_limit", "_required")

    def __init__(self, globs: Sequence[tuple[Rank, str, bool]], limit: int = sys.maxsize) -> None:
        self._limit = limit  # longer paths: _TooLong (before anything is scanned)
        entries = [(rank, max(body.split("*"), key=len), _Glob.of(body, anchored))
                   for rank, body, anchored in globs]
        self._few: tuple[_Entry, ...] = ()
        self._required: re.Pattern[str] | None = None
        self._first: _Prefixes | None = None
        self._by_first: dict[str, tuple[_Entry, ...]] = {}
        if len(entries) <= _FEW_GLOBS:
            self._few = tuple(entries)
            return
        self._required = _search_trie([key for _, key, _ in entries])
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
            if len(path) > self._limit:
                raise _TooLong
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
