"""Counting in bounded memory, for the report (summary.py): how often each key was seen, for at
most a fixed number of keys (TopCounts, the Space-Saving algorithm), and the same with a Detail
of each key kept (Breakdown: a host's or an agent's own top paths, reasons and URLs).
"""

import heapq
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from operator import itemgetter


@dataclass(frozen=True, slots=True)
class Count[K]:
    """One row of a TopCounts: `key` was seen `count` times, exactly when `error` is 0;
    otherwise `count` is an upper bound, at most `error` too high."""

    key: K
    count: int
    error: int = 0


class TopCounts[K: Hashable](Mapping[K, int]):
    """How often each key was seen, for at most `capacity` keys: the Space-Saving algorithm
    (Metwally, Agrawal, El Abbadi, 2005).

    Exact as long as no more than `capacity` distinct keys were added (then it is a Counter).
    Beyond that, a new key takes the place of the one with the smallest count m and starts at
    m + 1 with an error of m: every count kept is then an upper bound, at most its error too
    high; a key not kept was seen at most `floor` times, and every key seen more than
    total / capacity times is kept. Memory is O(capacity).
    """

    __slots__ = ("_counts", "_errors", "_heap", "_keys", "_mask", "_shift", "capacity",
                 "evicted")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.evicted = 0  # keys dropped to make room; 0: every count is exact
        self._counts: dict[K, int] = {}
        # Built when the table is first full. Each key kept has a slot: _keys[slot] is the key,
        # _errors[slot] its error. The heap holds count << _shift | slot for every slot: plain
        # ints, which compare much faster than tuples. A count only grows, so an entry is a
        # lower bound; a stale one is refreshed when it reaches the top.
        self._keys: list[K] = []
        self._errors: list[int] = []
        self._heap: list[int] = []
        self._shift = capacity.bit_length()
        self._mask = (1 << self._shift) - 1

    def add(self, key: K) -> None:
        counts = self._counts
        count = counts.get(key)
        if count is not None:
            counts[key] = count + 1
        elif len(counts) < self.capacity:
            counts[key] = 1
        else:
            self._replace_smallest(key)

    def _replace_smallest(self, key: K) -> K:
        """Put `key` in the place of the key with the smallest count; that key is returned."""
        heap, counts, keys, shift, mask = \
            self._heap, self._counts, self._keys, self._shift, self._mask
        if not heap:
            keys.extend(counts)
            self._errors.extend([0] * len(keys))
            heap.extend(count << shift | slot for slot, count in enumerate(counts.values()))
            heapq.heapify(heap)
        entry = heap[0]
        slot = entry & mask
        gone = keys[slot]
        smallest = counts[gone]
        while smallest != entry >> shift:
            heapq.heapreplace(heap, smallest << shift | slot)
            entry = heap[0]
            slot = entry & mask
            gone = keys[slot]
            smallest = counts[gone]
        del counts[gone]
        counts[key] = smallest + 1
        keys[slot] = key
        self._errors[slot] = smallest
        self.evicted += 1
        heapq.heapreplace(heap, (smallest + 1) << shift | slot)
        return gone

    @property
    def total(self) -> int:
        """How many keys were added: what the counts kept add up to, since a key that takes
        another's place takes its count too (m + 1 for m)."""
        return sum(self._counts.values())

    @property
    def exact(self) -> bool:
        """Whether every key added is still here, with its true count."""
        return not self.evicted

    def _error_of(self) -> dict[K, int]:
        """The errors above 0, by key (a pass over the slots: for reading, not while adding)."""
        return {key: error for key, error in zip(self._keys, self._errors, strict=True) if error}

    def error(self, key: K) -> int:
        return self._error_of().get(key, 0)

    @property
    def floor(self) -> int:
        """The most times a key that is not kept can have been seen: 0 while exact, else the
        smallest count kept (it only grows, and each key dropped had it when dropped)."""
        return min(self._counts.values()) if self.evicted else 0

    def top(self, n: int | None = None) -> list[Count[K]]:
        """The n highest counts that are sure to be above any key not kept (seen at least
        count - error > floor times): while exact, simply the n highest."""
        floor = self.floor
        if not floor:
            return self.most_common(n)
        errors = self._error_of()
        sure = [(key, count) for key, count in self._counts.items()
                if count - errors.get(key, 0) > floor]
        chosen = sorted(sure, key=itemgetter(1), reverse=True)[:n]
        return [Count(key, count, errors.get(key, 0)) for key, count in chosen]

    def most_common(self, n: int | None = None) -> list[Count[K]]:
        """The n highest counts kept, highest first; equal counts in the order first seen."""
        items = self._counts.items()
        chosen = sorted(items, key=itemgetter(1), reverse=True) if n is None else \
            heapq.nlargest(n, items, key=itemgetter(1))
        errors = self._error_of()
        return [Count(key, count, errors.get(key, 0)) for key, count in chosen]

    def __getitem__(self, key: K) -> int:
        return self._counts[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._counts)

    def __len__(self) -> int:
        return len(self._counts)

    def __repr__(self) -> str:
        return f"TopCounts({self._counts!r}, capacity={self.capacity})"


class Detail:
    """What is kept of one host or agent besides its count: its own top paths and reasons, and
    for an agent its top URLs (a host's would mostly repeat its paths)."""

    __slots__ = ("paths", "reasons", "urls")

    def __init__(self, each: int, *, urls: bool) -> None:
        self.paths: TopCounts[str] = TopCounts(each)
        self.reasons: TopCounts[str] = TopCounts(each)
        self.urls: TopCounts[str] | None = TopCounts(each) if urls else None


class Breakdown(TopCounts[str]):
    """A TopCounts of hosts (or agents), each kept with a Detail of `each` keys per table.

    A key that loses its place loses its Detail: one that comes back (its error above 0)
    has paths and URLs counted from its return only (`Detail.paths.total` of them).
    """

    __slots__ = ("_each", "_urls", "details")

    def __init__(self, capacity: int, each: int, *, urls: bool = True) -> None:
        super().__init__(capacity)
        self._each = each
        self._urls = urls
        self.details: dict[str, Detail] = {}

    def count(self, key: str) -> Detail:
        """Count `key` once; its Detail, to count the record's path, URL and reason in."""
        detail = self.details.get(key)
        if detail is not None:
            self._counts[key] += 1
            return detail
        if len(self._counts) < self.capacity:
            self._counts[key] = 1
        else:
            del self.details[self._replace_smallest(key)]
        detail = self.details[key] = Detail(self._each, urls=self._urls)
        return detail


@dataclass(frozen=True, slots=True)
class Sum:
    """One row of Sums: `amount` (micro-units of `currency`) over `times` records."""

    name: str
    currency: str
    amount: int
    times: int


OTHERS = "(others)"  # the row of the keys a full Sums had no room for


class Sums:
    """Money summed per name and currency, exactly, for at most `capacity` names: a name that
    comes when the table is full is summed into the row `OTHERS` of its currency, so every
    total stays exact however many names there are, and the table says how many it merged."""

    __slots__ = ("_rows", "capacity", "merged")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.merged = 0  # records summed into OTHERS
        self._rows: dict[tuple[str, str], list[int]] = {}  # (name, currency) -> [amount, times]

    def add(self, name: str, currency: str, amount: int) -> None:
        row = self._rows.get((name, currency))
        if row is None:
            if len(self._rows) >= self.capacity:
                self.merged += 1
                name = OTHERS
            row = self._rows.setdefault((name, currency), [0, 0])
        row[0] += amount
        row[1] += 1

    def totals(self) -> dict[str, int]:
        """The amount of each currency, over every name."""
        found: dict[str, int] = {}
        for (_, currency), (amount, _) in self._rows.items():
            found[currency] = found.get(currency, 0) + amount
        return dict(sorted(found.items()))

    def top(self, n: int | None = None) -> list[Sum]:
        """The n largest amounts, per currency in turn (currencies in alphabetical order),
        the largest first; OTHERS last of its currency."""
        rows = sorted(self._rows.items(),
                      key=lambda item: (item[0][1], item[0][0] == OTHERS, -item[1][0],
                                        item[0][0]))
        return [Sum(name, currency, amount, times)
                for (name, currency), (amount, times) in rows[:n]]

    def last(self, n: int) -> list[Sum]:
        """The rows of the last n names in their own order (days: the latest n), each name's
        currencies in turn; OTHERS first, when there is one."""
        names = sorted({name for name, _ in self._rows if name != OTHERS})[-n:] if n else []
        chosen = ([OTHERS] if any(name == OTHERS for name, _ in self._rows) else []) + names
        return [Sum(name, currency, amount, times)
                for (name, currency), (amount, times) in sorted(
                    self._rows.items(), key=lambda item: (item[0][0] != OTHERS, item[0]))
                if name in chosen]

    def __len__(self) -> int:
        return len(self._rows)
