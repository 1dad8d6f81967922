"""Literals compiled into regular expressions whose cost cannot explode (see match.py).

Patterns come from the web, so none of them is ever turned into a regular expression whose cost
can explode: what is compiled here is literals only, and a match backs up at most to the nearest
end of a literal.

- prefixes: all factored into one radix trie written as a regular expression (_trie). It finds
  the longest prefix that matches in one reading of it, paid in C, whatever the number of
  rules. A trie too deep for re's compiler is a table by length (_LengthTable).
- keys searched for anywhere in a path (_search_trie): one trie of their first _KEY_DEPTH
  characters, whose search() says where any of them may first occur.
- the 1994 reading's prefixes (_alternation): a flat alternation, the first that matches.
"""

import re
from collections.abc import Sequence


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
