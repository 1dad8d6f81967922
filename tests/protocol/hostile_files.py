"""robots.txt files built to make matching slow, and the paths that make them slowest.

Shared by tests/protocol/test_hostile.py (they must decide exactly as the reference does) and
scripts/bench_hostile.py (they must not stall a proxy). Every file is at most MAX_BYTES, the
500 KiB a fetch keeps, and holds one `User-agent: *` group.

Each case is `build() -> text` and `path(length, variant) -> path`: a path of exactly `length`
characters (at least 64), already in normal form, and as costly for every `variant` (variants
differ in a few characters near the start, so that a proxy sees distinct URLs).
"""

import itertools
import random
import string
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from robotsgate.protocol import MAX_BYTES

# Unreserved characters: a segment made of them is in normal form as written.
ALPHABET = string.ascii_letters + string.digits + "-._~"
HEADER = "User-agent: *\n"


def fill(lines: Iterable[str], cap: int = MAX_BYTES) -> str:
    """As many of `lines` as fit in `cap` bytes, after the User-agent line."""
    out, size = [HEADER], len(HEADER)
    for line in lines:
        size += len(line) + 1
        if size > cap:
            break
        out.append(line + "\n")
    return "".join(out)


def _tag(variant: int) -> str:
    """A short marker that tells variants apart: 'v' and base-36 digits."""
    digits = ""
    while True:
        variant, rest = divmod(variant, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[rest] + digits
        if not variant:
            return "v" + digits


def _fit(head: str, filler: str, tail: str, length: int) -> str:
    """head + filler repeated + tail, cut in the filler to exactly `length` characters."""
    room = length - len(head) - len(tail)
    if room < 0:
        return (head + tail)[:length]
    body = (filler * (room // max(1, len(filler)) + 1))[:room]
    return head + body + tail


def _words(size: int, last: str = "a") -> Iterator[str]:
    """Distinct words of `size` characters, all ending in `last` (slow needles in a run of it)."""
    for chars in itertools.product(ALPHABET, repeat=size - 1):
        word = "".join(chars) + last
        if word != last * size:
            yield word


@dataclass(frozen=True)
class Case:
    name: str
    about: str
    build: Callable[[], str]
    path: Callable[[int, int], str]


# -- 1. Wildcard rules whose segments all occur, late, in a run that makes every scan slow ----


def _far_segments() -> str:
    # "/*XYZa*!": every segment is in the path, near its end, after a long run of 'a' (the
    # worst haystack for a needle ending in 'a'); '!' is nowhere, so no rule matches.
    return fill(f"Allow:/*{word}*!" for word in _words(4))


def _far_segments_path(length: int, variant: int) -> str:
    tail = "".join(itertools.islice(_words(4), 0, 40_000))
    tail = tail[: max(0, min(len(tail), length // 2))]
    return _fit("/" + _tag(variant) + "/", "a", tail, length)


# -- 2. Long keys nested in one another: a regular expression over them backtracks -----------


def _nested_keys() -> str:
    return fill("Allow:/*" + "a" * k + "b$" for k in range(1, 5000))


def _nested_keys_path(length: int, variant: int) -> str:
    return _fit("/" + _tag(variant) + "/", "a", "", length)


def _nested_keys_unanchored() -> str:
    # The same keys behind a leading '*': no first segment to filter on.
    return fill("Allow:*" + "a" * k + "b*!" for k in range(1, 5000))


# -- 3. Deep chains: many rules, each a long chain of one-character segments ----------------


def _chains() -> str:
    # Every rule walks its 240 segments (each found a character or two further on), then misses
    # 'c', which is nowhere; the last segment, '!', ends the path: no shortcut rules them out.
    chain = "*".join("ab" * 120)

    def lines() -> Iterator[str]:
        for x, y in itertools.product(ALPHABET[:62], repeat=2):
            yield f"Allow:/*Z{x}{y}*{chain}*c*!"

    return fill(lines())


def _chains_path(length: int, variant: int) -> str:
    heads = "".join(f"Z{x}{y}" for x, y in itertools.product(ALPHABET[:62], repeat=2))
    head = "/" + _tag(variant) + "/" + heads[: max(0, length // 2 - 8)]
    return _fit(head.replace("c", "d"), "ab", "!", length)


# -- 4. One first segment shared by every rule: no group to pass over ------------------------


def _one_group() -> str:
    # "/*Q*XYZa*!": Q starts the path, every rule's next segment is tried in turn; half of those
    # segments occur before Q and after it (found by a scan), the others nowhere.
    return fill(f"Allow:/*Q*{word}*!" for word in _words(4))


def _one_group_path(length: int, variant: int) -> str:
    words = "".join(itertools.islice(_words(4), 0, 40_000))
    block = words[: max(0, (length - 16) // 3)]
    return _fit("/" + _tag(variant) + block + "Q", "a", block, length)


# -- 5. A large automaton walked deep at every character --------------------------------------


def _deep_automaton() -> str:
    rng = random.Random(9309)
    return fill("Allow:/*" + "".join(rng.choice("ab") for _ in range(40)) + "*!"
                for _ in range(20_000))


def _deep_automaton_path(length: int, variant: int) -> str:
    rng = random.Random(variant)
    return _fit("/" + _tag(variant) + "/", "", "".join(rng.choice("ab") for _ in range(length)),
                length)


# -- 6. One rule, many times: every copy scanned --------------------------------------------


def _repeated() -> str:
    return fill(itertools.repeat("Allow:/*Zza*!"))


def _repeated_path(length: int, variant: int) -> str:
    return _fit("/" + _tag(variant) + "/", "a", "Zza", length)


CASES: dict[str, Case] = {case.name: case for case in (
    Case("far-segments", "34,000 rules /*XYZa*! whose segments all occur at the end of a run "
         "of 'a'", _far_segments, _far_segments_path),
    Case("nested-keys", "1,000 rules /*a...ab$, each key a prefix of the next; path of 'a'",
         _nested_keys, _nested_keys_path),
    Case("nested-keys-star", "1,000 rules *a...ab*!, no first segment; path of 'a'",
         _nested_keys_unanchored, _nested_keys_path),
    Case("chains", "1,000 rules /*Zxy*a*b*a*b...*c*! (240 one-character segments each), all "
         "advancing through the path to miss the last", _chains, _chains_path),
    Case("one-group", "34,000 rules /*Q*XYZa*!: one first segment, the next found far or not "
         "at all", _one_group, _one_group_path),
    Case("deep-automaton", "11,000 rules /*<40 random a|b>*!; a random a|b path walks the "
         "automaton deep at every character", _deep_automaton, _deep_automaton_path),
    Case("repeated", "37,000 copies of /*Zza*!, Zza at the end of a run of 'a'", _repeated,
         _repeated_path),
)}

# The case bench_hostile.py runs by default: the slowest for the matcher in this tree.
WORST = "chains"
