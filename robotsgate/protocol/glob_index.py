"""Many wildcard rules, matched at a cost of path length + rules, never their product.

Where globs.py's scans would cost too much (many rules, or a long path), match.py matches the
wildcard rules with _GlobIndex: one Aho-Corasick pass over the path (_Automaton) finds where
every distinct segment first and last occurs, all at once; a rule is looked at only when its
first segment occurs, and each further segment costs a short scan near where the last one ended,
a look-up, or one scan that is certain to find it (and is not repeated for the same stretch).
The cost is path length + rules (and the segments they walk), never their product.

That bounds a decision by the file, not below it: 500 KiB can hold 250,000 one-character
segments, and a path can make every rule walk all of its segments before it fails (see
tests/protocol/hostile_files.py, "chains"): some tens of milliseconds in Python, however it is
matched. So the work is counted, and _GlobIndex.steps() gives the same answer in slices of
about SLICE units (a few hundred microseconds), for a caller that lets other work run between
(LongestMatch.steps() in match.py).
"""

from array import array
from bisect import bisect_left
from collections.abc import Generator, Iterable, Sequence

from robotsgate.protocol.globs import Rank
from robotsgate.protocol.literals import _trie

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
            # Each loop below keeps the slice's count itself (units, SLICE, yield), as the F*S
            # and F*M1* loops look alike: a generator cannot share that without a call per step,
            # on the path only a hostile file makes long.
            # F*S: S starts at origin or later somewhere, so its last occurrence does
            tails = self._tails[start]
            for key in _candidates(tails, last_start):
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
            for key in _candidates(groups, first_start):
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


def _candidates[V](table: dict[int, V], occurring: dict[int, int]) -> Iterable[int]:
    """The keys of `table` worth trying, the segments a rule needs that may be in the path:
    all of them when `table` is the smaller, else those `occurring` (the segments found in the
    path) holds. One walk, over the smaller of the two."""
    return table if len(table) <= len(occurring) else filter(table.__contains__, occurring)
