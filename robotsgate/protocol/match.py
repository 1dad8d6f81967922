"""Compiled rule sets with a guaranteed worst case.

Patterns come from the web, so none of them is ever turned into a regular expression whose cost
can explode: what is compiled is literals only, and a match backs up at most to the nearest end
of a literal. Two kinds of compiled pattern:

- literal (no '*', possibly anchored by a final '$'): the anchored ones are a dictionary of whole
  paths; the others are prefixes, all factored into one radix trie written as a regular
  expression (see _trie). It finds the longest prefix that matches in one reading of it, paid in
  C, whatever the number of rules. A trie too deep for re's compiler is a table by length.
- wildcard: the pattern split at '*' into segments, matched greedily: each segment at its
  earliest occurrence after the one before. That is exact for '*'-only globs (the earliest place
  a segment fits never hurts the segments after it).

How wildcard rules are matched depends on how many there are, and on the path. A few rules of a
few segments on a path of ordinary length (most files, most requests): one str.find scan per
segment, each rule tried only when the path starts with its first segment and holds its longest
(_GlobSet); cheapest there, but its cost is rules x path length. Otherwise (_GlobIndex): one
Aho-Corasick pass over the path finds where every distinct segment first and last occurs, all at
once; a rule is looked at only when its first segment occurs, and each further segment costs a
short scan near where the last one ended, a look-up, or one scan that is certain to find it
(and is not repeated for the same stretch). The cost is path length + rules (and the segments
they walk), never their product.

That bounds a decision by the file, not below it: 500 KiB can hold 250,000 one-character
segments, and a path can make every rule walk all of its segments before it fails (see
tests/protocol/hostile_files.py, "chains"): some tens of milliseconds in Python, however it is
matched. So the work is counted, and LongestMatch.steps() gives the same answer in slices of
about SLICE units (a few hundred microseconds), for a caller that lets other work run between.

Patterns reach this module already normalised (see urls.py): '*' is the wildcard, a final '$' is
the end anchor, and every other character stands for itself.
"""

import re
import sys
from array import array
from bisect import bisect_left
from collections.abc import Generator, Sequence
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


def _trie(literals: Sequence[str]) -> "_Prefixes | None":
    """The longest of `literals` that starts a string, as one regular expression.

    The literals are factored into a radix trie: "/a/b|/a/c|/d" becomes "/(?:a/(?:b|c)|d)".
    At each branch at most one alternative can match the next character (their first
    characters differ), and a literal that ends inside the trie is an empty alternative tried
    last, so the match goes as deep as it can and backs off to the nearest end of a literal: the
    longest match, for the cost of reading it once. A flat alternation tries every literal in
    turn instead; with a few hundred rules that is most of the cost of a decision.

    Literals nested deeper than re's compiler allows get a _LengthTable instead, never a flat
    alternation: searched at every position of a path, one costs paths x literals.
    """
    if not literals:
        return None
    words = sorted(set(literals))
    try:
        return re.compile(_trie_source(words, 0))
    except _TooDeep:
        return _LengthTable(words)


# Keys searched for anywhere in a path are cut to this many characters: a trie searched at every
# position reads at most this deep there (a cut key is still a necessary condition).
_KEY_DEPTH = 16


def _search_trie(keys: Sequence[str]) -> re.Pattern[str] | None:
    """Where any of `keys` (cut to _KEY_DEPTH characters) occurs first: search(), not match()."""
    if not keys:
        return None
    return re.compile(_trie_source(sorted({key[:_KEY_DEPTH] for key in keys}), 0))


class _LengthTable:
    """The longest of many literals that starts a string, for literals nested too deep for _trie.

    One set look-up per distinct length, longest first: at most as many as there are distinct
    lengths (under 1,012 in 500 KiB: their sum is at most the file), whatever the path.
    match() answers like re.Pattern.match() for what _trie's callers read: found[0].
    """

    __slots__ = ("_lengths", "_words")

    def __init__(self, words: Sequence[str]) -> None:
        self._words = frozenset(words)
        self._lengths = tuple(sorted({len(word) for word in self._words}, reverse=True))

    def match(self, path: str) -> tuple[str] | None:
        size = len(path)
        for length in self._lengths:
            if length <= size:
                head = path[:length]
                if head in self._words:
                    return (head,)
        return None


_Prefixes = re.Pattern[str] | _LengthTable


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
# A stepwise decision yields after about this many work units: one unit is about a line of
# Python run, or 64 characters read by a C scan; a slice is a few hundred microseconds.
SLICE = 4096
_STRIDE = 64  # characters a C scan reads per work unit
_CHUNK = SLICE // 8  # characters of the Aho-Corasick pass per slice (about 8 lines each)
_ROWS = 1 << 15  # transitions of an automaton kept from one decision to the next
_NEAR = 256  # characters after a position where a segment is looked for first, at one unit
_NONE = -1


class _Automaton:
    """Aho-Corasick over distinct non-empty strings, compact: flat arrays, no object per state.

    States are numbered breadth-first, so the children of a state are consecutive: state t
    (t >= 1) is reached by the character labels[t - 1], and the children of s are the states
    first[s] + 1 .. first[s + 1] (their labels: labels[first[s]:first[s + 1]]). fail[s] is the
    state of the longest proper suffix of s's string that is a prefix of some word; word[s] the
    index of the word that s spells (-1 if none); hit[s] the first state on s's fail chain, s
    itself included, that spells a word (0 if none): the words that end where s is reached are
    those of hit[s], hit[fail[hit[s]]], and so on.
    """

    __slots__ = ("fail", "first", "hit", "labels", "root", "word")

    def __init__(self, words: Sequence[str]) -> None:
        order = sorted(range(len(words)), key=words.__getitem__)
        sorted_words = [words[i] for i in order]
        labels: list[str] = []
        parents = array("i", [0])
        first, word = array("i"), array("i")
        # Breadth-first: each state is the range of sorted words sharing its string (of length
        # `depth`); the word equal to that string, if any, sorts first in the range.
        ranges = [(0, len(sorted_words), 0)]
        state = 0
        while state < len(ranges):
            lo, hi, depth = ranges[state]
            if lo < hi and len(sorted_words[lo]) == depth:
                word.append(order[lo])
                lo += 1
            else:
                word.append(_NONE)
            first.append(len(labels))
            while lo < hi:
                char = sorted_words[lo][depth]
                stop = lo + 1
                while stop < hi and sorted_words[stop][depth] == char:
                    stop += 1
                labels.append(char)
                parents.append(state)
                ranges.append((lo, stop, depth + 1))
                lo = stop
            state += 1
        first.append(len(labels))  # where the children of the last state would end
        self.labels = "".join(labels)
        self.first, self.word = first, word
        self.root = {char: index + 1 for index, char in enumerate(self.labels[:first[1]])}
        fail = array("i", bytes(4 * len(ranges)))
        hit = array("i", bytes(4 * len(ranges)))
        find = self.labels.find
        for state in range(1, len(ranges)):  # breadth-first: a fail state comes before
            parent, char = parents[state], self.labels[state - 1]
            target = 0
            if parent:
                back = fail[parent]
                while True:
                    index = find(char, first[back], first[back + 1])
                    if index >= 0:
                        target = index + 1
                        break
                    if not back:
                        break
                    back = fail[back]
            fail[state] = target
            hit[state] = state if word[state] >= 0 else hit[target]
        self.fail, self.hit = fail, hit


# (rank, the segments after the first, the last segment's id or -1 when anchored, its text)
_Rule = tuple[Rank, tuple[str, ...], int, str]


class _GlobIndex:
    """Many wildcard rules, matched at a cost of path length + rules (see the module docstring).

    A rule is F*M1*...*Mk*S, or F*M1*...*Mk*S$. Rules are grouped by F, the literal the path
    must start with, then by their first segment after it (M1, or S when there is no M):

    - F*S: true when S occurs at or after len(F); S's last occurrence says so.
    - F*S$: true when the path ends with S, and S starts at or after len(F); the path's
      suffixes of the lengths these S have are a few look-ups.
    - the others: looked at only when M1 occurs at or after len(F); then each further segment
      at its earliest occurrence after the one before: its first occurrence when that is late
      enough, none when its last occurrence is too early, else one str.find that is certain to
      find it.

    One Aho-Corasick pass over the path gives the first and last occurrence of every segment
    (M and unanchored S) at once. Rules are never looked at one by one in a pass over all of
    them: only those whose first segment occurs (where there are fewer of those than rules).
    """

    __slots__ = ("_automaton", "_best", "_end_lengths", "_ends", "_firsts", "_groups", "_ids",
                 "_kept", "_known", "_lengths", "_segments", "_shorter", "_tails")

    def __init__(self, globs: Sequence[tuple[Rank, str, bool]]) -> None:
        ids: dict[str, int] = {}
        # per first segment F: F*S rules (S id -> best rank), F*S$ rules (S -> best rank), and
        # the others by the id of M1: (best rank of the group, rules in order of precedence)
        tails: dict[str, dict[int, Rank]] = {}
        ends: dict[str, dict[str, Rank]] = {}
        groups: dict[str, dict[int, list[_Rule]]] = {}
        seen: set[tuple[str, bool]] = set()
        for rank, body, anchored in globs:  # in order of precedence
            if (body, anchored) in seen:
                continue  # the same pattern again can never win
            seen.add((body, anchored))
            parts = body.split("*")
            first, last = parts[0], parts[-1]
            middle = [part for part in parts[1:-1] if part]
            for part in middle:
                ids.setdefault(part, len(ids))
            tails.setdefault(first, {})
            ends.setdefault(first, {})
            groups.setdefault(first, {})
            if not middle:
                if anchored:
                    ends[first].setdefault(last, rank)
                else:
                    tails[first].setdefault(ids.setdefault(last, len(ids)), rank)
                continue
            tail = _NONE if anchored else ids.setdefault(last, len(ids))
            groups[first].setdefault(ids[middle[0]], []).append(
                (rank, tuple(middle[1:]), tail, last))
        self._ids = ids  # text -> id
        self._segments = tuple(ids)  # id -> text
        self._lengths = tuple(len(text) for text in self._segments)
        self._automaton = _Automaton(self._segments)
        self._firsts = _trie(list(groups))
        # F -> the longest other first segment that F starts with (the next shorter one that
        # starts a path F starts), or None. Work: the distinct lengths below len(F), for each F.
        lengths = sorted({len(start) for start in groups})
        self._shorter: dict[str, str | None] = {
            start: next((start[:n] for n in reversed(lengths[:bisect_left(lengths, len(start))])
                         if start[:n] in groups), None)
            for start in groups}
        self._tails = tails
        self._ends = ends
        self._end_lengths = tuple(sorted({len(text) for by in ends.values() for text in by},
                                         reverse=True))
        self._groups: dict[str, dict[int, tuple[Rank, tuple[_Rule, ...]]]] = {
            first: {key: (rules[0][0], tuple(rules)) for key, rules in by.items()}
            for first, by in groups.items()}
        # F -> the best rank of any rule that starts with F: none of them can beat a better one
        self._best: dict[str, Rank] = {
            first: min([*tails[first].values(), *ends[first].values(),
                        *(group[0] for group in self._groups[first].values())])
            for first in groups}
        self._known: dict[str, dict[int, int]] = {}  # transitions met before (see _states)
        self._kept = 0

    def best(self, path: str, best: Rank | None) -> Rank | None:
        steps = self.steps(path, best)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                result: Rank | None = done.value
                return result

    def _starting(self, path: str) -> list[str]:
        """The first segments F that start `path`, longest first."""
        found = None if self._firsts is None else self._firsts.match(path)
        chain: list[str] = []
        start = None if found is None else found[0]
        while start is not None:
            chain.append(start)
            start = self._shorter[start]
        return chain

    def _states(self, path: str) -> Generator[None, None, list[int]]:
        """The automaton's state after each character of `path` (a slice per _CHUNK of them).

        Transitions met before are kept (at most about _ROWS, then they are forgotten): a path
        like those decided before costs two dictionary look-ups a character. A new one follows
        fail links: amortised two steps a character.
        """
        automaton = self._automaton
        labels, first, fail = automaton.labels, automaton.first, automaton.fail
        root, find = automaton.root.get, labels.find
        known = self._known  # character -> {state: next state}: no objects for the collector
        if self._kept > _ROWS:
            known.clear()
            self._kept = 0
        kept = 0
        visited: list[int] = []
        visit = visited.append
        state = 0
        for lo in range(0, len(path), _CHUNK):
            for char in path[lo:lo + _CHUNK]:
                row = known.get(char)
                if row is None:
                    row = known[char] = {}
                target = row.get(state)
                if target is None:
                    source = state
                    while state:
                        index = find(char, first[state], first[state + 1])
                        if index >= 0:
                            state = index + 1
                            break
                        state = fail[state]
                    else:
                        state = root(char, 0)
                    row[source] = state
                    kept += 1
                else:
                    state = target
                visit(state)
            yield
        self._kept += kept
        return visited

    def steps(self, path: str, best: Rank | None) -> Generator[None, None, Rank | None]:
        """The better of `best` and the first wildcard rule that matches `path`, in slices."""
        starts = [start for start in self._starting(path)
                  if best is None or self._best[start] < best]
        if not starts:
            return best
        size = len(path)
        lengths, segments, ids = self._lengths, self._segments, self._ids
        # -- where each segment first and last starts -----------------------------------------
        first_start: dict[int, int] = {}
        last_start: dict[int, int] = {}
        if any(self._tails[start] or self._groups[start] for start in starts):
            visited = yield from self._states(path)
            word, fail, hit = self._automaton.word, self._automaton.fail, self._automaton.hit
            first_seen = dict(zip(reversed(visited), range(size - 1, -1, -1), strict=True))
            last_seen = dict(zip(visited, range(size), strict=True))
            del visited
            # Only states where some word ends matter (most states are inside words).
            ending = list(filter(hit.__getitem__, first_seen))
            units = 0
            for seen, placed in ((first_seen, first_start), (last_seen, last_start)):
                # States in the order they were first (last: last, backwards) seen; the words on
                # a state's fail chain end where it does. A word already placed has its whole
                # chain placed (by the walk that placed it): stop there. Each state and each
                # word once.
                ending.sort(key=seen.__getitem__, reverse=placed is last_start)
                for state in ending:
                    units += 5
                    if units >= SLICE:
                        units = 0
                        yield
                    at = seen[state] + 1
                    node = hit[state]
                    while node:
                        key = word[node]
                        if key in placed:
                            break
                        placed[key] = at - lengths[key]
                        node = hit[fail[node]]
                        units += 5
            del first_seen, last_seen
        # -- the rules ------------------------------------------------------------------------
        # `units` counts about one per line of Python run; a slice ends past SLICE of them.
        units = 0
        find, near = path.find, _NEAR
        known: dict[int, tuple[int, int]] = {}  # id -> (p, q): no occurrence in [p, q), one at q
        suffixes: set[str] | None = None
        for start in starts:
            origin = len(start)
            # F*S: S starts at origin or later somewhere, so its last occurrence does
            tails = self._tails[start]
            for key in tails if len(tails) <= len(last_start) else \
                    filter(tails.__contains__, last_start):
                units += 3
                if units >= SLICE:
                    units = 0
                    yield
                rank = tails[key]
                if (best is None or rank < best) and last_start.get(key, _NONE) >= origin:
                    best = rank
            # F*S$: the path ends with S, which starts at origin or later
            anchored_tails = self._ends[start]
            if anchored_tails:
                if suffixes is None:
                    suffixes = {path[size - n:] for n in self._end_lengths if n <= size}
                    units += 2 * len(self._end_lengths)
                texts = suffixes if len(suffixes) < len(anchored_tails) else anchored_tails
                for text in texts:
                    units += 3
                    if units >= SLICE:
                        units = 0
                        yield
                    found_rank = anchored_tails.get(text)
                    if found_rank is not None and (best is None or found_rank < best) and \
                            text in suffixes and size - len(text) >= origin:
                        best = found_rank
            # F*M1*...: each group only where M1 occurs after F
            groups = self._groups[start]
            for key in groups if len(groups) <= len(first_start) else \
                    filter(groups.__contains__, first_start):
                units += 8
                if units >= SLICE:
                    units = 0
                    yield
                group_best, rules = groups[key]
                if best is not None and group_best > best:
                    continue
                at = first_start.get(key, _NONE)
                if at < origin:
                    if at < 0 or last_start[key] < origin:
                        continue
                    at = find(segments[key], origin)  # certain: it occurs after origin
                    units += (at - origin) // _STRIDE
                at += lengths[key]
                for rank, rest, tail, text in rules:
                    units += 8
                    if units >= SLICE:
                        units = 0
                        yield
                    if best is not None and rank > best:
                        break  # in order of precedence
                    # The last segment first: it must start at `at` or later in any case.
                    if tail < 0:
                        if size - len(text) < at or not path.endswith(text):
                            continue
                    elif last_start.get(tail, _NONE) < at:
                        continue
                    pos = at
                    units += 6 * len(rest)  # at most
                    for segment in rest:
                        # Near pos, one short scan says where it first is (the common case).
                        begin = find(segment, pos, pos + near)
                        if begin < 0:
                            key = ids[segment]
                            begin = first_start.get(key, _NONE)
                            if begin < pos:
                                if begin < 0 or last_start[key] < pos:
                                    break
                                # It occurs after pos: where first? Scanned once per stretch.
                                span = known.get(key)
                                if span is not None and span[0] <= pos <= span[1]:
                                    begin = span[1]
                                else:
                                    begin = find(segment, pos)
                                    known[key] = (pos, begin)
                                    units += 8 + (begin - pos) // _STRIDE
                        pos = begin + len(segment)
                    else:
                        if tail < 0:
                            matched = size - len(text) >= pos and path.endswith(text)
                        else:
                            matched = last_start.get(tail, _NONE) >= pos
                        if matched:
                            best = rank
                            break
        return best


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
                 "_query_globs", "_wildcards")

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
        if lines > _SCANNED_LINES:
            self._index = _GlobIndex(globs)
            self._globs = self._query_globs = _Indexed()
            return
        limit = sys.maxsize
        if scans:
            self._wildcards = globs
            limit = _SCAN_BUDGET // scans
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
