"""Checking an audit log's chains (robotsgate.audit.chain): which line was changed, removed,
inserted or moved, and how much of each proxy's chain a signature vouches for.

The files are read in the order given (oldest first: FILE.2 FILE.1 FILE), each proxy's lines in
the order they stand. With public keys, a checkpoint whose signature verifies is the anchor:
from the last such one of a proxy, its chain is walked back through the hashes each line names,
and every line reached is the proxy's own. On that walk, a hash that no line has is a line
changed (a line with the number the walk expects is there, and hashes otherwise) or removed
(none is); a line of that proxy that the walk does not reach, up to the anchor, was inserted;
one reached but standing out of order was moved. After the anchor, and for a proxy with no
signed checkpoint, the chain is followed forward: that finds an edit made without recomputing
the hashes, not one made with them.

Runs. A proxy that starts again goes on with its chain (robotsgate.audit.chain_state), and the first
line of each run says how (`start`): "new"; "same-file", from a line it found in this file
before it; "other-file", from a line in another. So a chain's first line given names the line
before it, and where that line should be: a run that begins "same-file", or a checkpoint (always
written to the file of the line it follows), whose line before is not in the files given, had
the lines before it removed (a whole run, say), or was copied from another log: a problem, named
at that line. A chain that begins with any other line (a record after a rotation, a run
"other-file") may go on from a file not given: a note.

What a chain cannot show, and verify says instead: lines after a proxy's last checkpoint are
vouched for by nothing but the chain; a file cut at a line boundary after a checkpoint, or the
first lines of the oldest file given, leave no trace in the file itself (give the older files
too, and keep them).

What it covered, it says (Report.covered): files, lines, chains, runs, checkpoints (and how many
verified), and the time span of the records.
"""

import base64
import bisect
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO

from robotsgate.audit.chain import (
    CHECKPOINT,
    GENESIS,
    STARTS,
    checkpoint_line,
    digest,
    signed_text,
)
from robotsgate.signing.keys import PublicKey


@dataclass(frozen=True, slots=True)
class Place:
    file: str
    line: int
    rank: int = 0  # the file's position among those given: places sort in reading order

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(slots=True)
class _Entry:
    place: Place
    order: int  # its position among all lines read
    seq: int
    prev: str
    digest: str
    checkpoint: bool
    signed: bool | None = None  # a checkpoint's signature verified (None: not checked)
    start: str | None = None  # the first line of a run: how it begins (audit_chain.Start)


@dataclass(frozen=True, slots=True)
class Problem:
    place: Place | None
    what: str

    def __str__(self) -> str:
        return f"{self.place}: {self.what}" if self.place else self.what


@dataclass(slots=True)
class Report:
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lines: int = 0  # non-empty lines read
    chained: int = 0  # of which records and checkpoints in a chain
    unchained: int = 0  # records without chain fields (written before chaining)
    vouched: int = 0  # lines up to a verified checkpoint, its own included
    files: list[str] = field(default_factory=list)  # the files read, in order
    chains: int = 0  # proxies' chains
    runs: int = 0  # runs of those proxies (a chain's first line given begins one, too)
    checkpoints: int = 0
    signed: int = 0  # checkpoints whose signature verified with a key given
    first: datetime | None = None  # the earliest `ts` of a line read
    last: datetime | None = None  # the latest

    @property
    def ok(self) -> bool:
        return not self.problems and self.chained > 0

    def covered(self) -> str:
        """What was read, in one line: files, lines, chains, runs, checkpoints, time span."""
        span = f", from {_ts(self.first)} to {_ts(self.last)}" \
            if self.first is not None and self.last is not None else ""
        signed = f" ({self.signed} verified)" if self.checkpoints else ""
        return (f"{len(self.files)} file(s) ({', '.join(self.files)}), {self.lines} line(s)"
                f"{span}: {self.chains} chain(s), {self.runs} run(s), {self.checkpoints} "
                f"checkpoint(s){signed}")

    def _saw(self, entry: "_Entry", ts: str) -> None:
        """A chained line read: counted, its time in the span."""
        self.chained += 1
        if entry.checkpoint:
            self.checkpoints += 1
            self.signed += entry.signed is True
        if entry.start is not None:
            self.runs += 1
        try:
            moment = datetime.fromisoformat(ts)
        except ValueError:
            return
        if moment.tzinfo is None:
            return  # the proxy writes UTC with its offset: not a time it wrote
        if self.first is None or moment < self.first:
            self.first = moment
        if self.last is None or moment > self.last:
            self.last = moment


def verify(streams: Sequence[tuple[str, IO[bytes]]], keys: list[PublicKey]) -> Report:
    """Every chain in `streams` (name, binary stream that can seek), checked against `keys`
    (none: the chains alone). A log that holds needs one pass and memory for each proxy's last
    line only; where anything is amiss, a second pass keeps every line's place to say which."""
    by_key = {key.keyid: key for key in keys}
    # A pipe cannot be read twice: what cannot seek is read into memory first.
    streams = [(name, stream if stream.seekable() else io.BytesIO(stream.read()))
               for name, stream in streams]
    report = _holds(streams, by_key)
    if report is None:
        for _, stream in streams:
            stream.seek(0)
        report = _analyse(streams, by_key)
    report.files = [name for name, _ in streams]
    if report.chained and report.unchained:
        report.notes.append(f"{report.unchained} record(s) carry no chain: written before "
                            f"chaining, or by something else (they are vouched for by nothing)")
    if not report.chained:
        report.notes.append("no chained records: nothing here can be verified")
    return report


def _lines(streams: Sequence[tuple[str, IO[bytes]]]) -> Iterator[tuple[bytes, Place]]:
    for rank, (name, stream) in enumerate(streams):
        for number, raw in enumerate(stream, start=1):
            if raw.strip():
                yield raw, Place(name, number, rank)


@dataclass(slots=True)
class _Last:
    """A proxy's chain as the one pass leaves it."""

    first: _Entry
    last: _Entry
    count: int = 1
    vouched: int = 0  # lines up to its last verified checkpoint
    anchor: Place | None = None  # that checkpoint


def _holds(streams: Sequence[tuple[str, IO[bytes]]], by_key: dict[str, PublicKey]
           ) -> Report | None:
    """The report of a log in which every chain holds; None at the first thing amiss."""
    report = Report()
    chains: dict[str, _Last] = {}
    order = 0
    for raw, place in _lines(streams):
        order += 1
        report.lines += 1
        entry = _entry(raw, place, order, by_key)
        if entry is None or (isinstance(entry, tuple) and entry[1].signed is False):
            return None
        if entry is True:
            report.unchained += 1
            continue
        assert isinstance(entry, tuple)
        proxy, current, ts = entry
        report._saw(current, ts)
        chain = chains.get(proxy)
        if chain is None:
            if isinstance(_beginning(proxy, current), Problem):
                return None
            chain = chains[proxy] = _Last(current, current)
            report.runs += current.start is None  # a run begun in a file not given
        elif current.seq != chain.last.seq + 1 or current.prev != chain.last.digest:
            return None
        else:
            chain.last = current
            chain.count += 1
        if current.signed:
            chain.vouched, chain.anchor = chain.count, place
    if by_key and (report.unchained or any(c.anchor is None for c in chains.values())):
        return None  # lines no key vouches for: the second pass says which
    report.chains = len(chains)
    for proxy, chain in chains.items():
        report.vouched += chain.vouched
        _notes(proxy, chain.first, chain.count - chain.vouched, chain.anchor, report,
               bool(by_key))
    return report


def _beginning(proxy: str, first: _Entry) -> Problem | str | None:
    """What the first line given of a chain says of the lines before it: a problem when they
    should be here (see the module's docstring), else a note when there are some."""
    if first.prev == GENESIS or first.seq <= 1:
        return None
    missing = f"record {first.seq - 1}" if first.seq == 2 else f"records 1 to {first.seq - 1}"
    if first.checkpoint:
        return Problem(first.place, f"removed: record {first.seq - 1} of proxy {proxy}, which "
                                    f"this checkpoint follows in its own file: the lines "
                                    f"before it were removed, or it was copied from another "
                                    f"log")
    if first.start == "same-file":
        return Problem(first.place, f"removed: {missing} of proxy {proxy}, before this line: "
                                    f"this run of it began after record {first.seq - 1} in "
                                    f"this file (a whole run, or more, was taken out)")
    return f"proxy {proxy}: its chain begins at record {first.seq} ({first.place}): the " \
           f"records before it are in an older file"


def _notes(proxy: str, first: _Entry, tail: int, anchor: Place | None, report: Report,
           keyed: bool) -> None:
    """What a chain still cannot vouch for; a beginning whose lines before it are missing."""
    if anchor is not None and tail:
        report.notes.append(f"proxy {proxy}: {tail} line(s) after its last signed checkpoint "
                            f"({anchor}) are vouched for by the chain alone")
    said = _beginning(proxy, first)
    if isinstance(said, Problem):
        report.problems.append(said)
    elif said is not None:
        report.notes.append(said)


def _analyse(streams: Sequence[tuple[str, IO[bytes]]], by_key: dict[str, PublicKey]
             ) -> Report:
    """Every line's place kept, to name each that was changed, removed, inserted or moved."""
    report = Report()
    chains: dict[str, list[_Entry]] = {}
    broken: list[tuple[int, Place]] = []  # lines that are not records at all: (order, place)
    unchained: Place | None = None  # the first record in no chain
    order = 0
    for raw, place in _lines(streams):
        order += 1
        report.lines += 1
        entry = _entry(raw, place, order, by_key)
        if entry is None:
            broken.append((order, place))
        elif entry is True:
            report.unchained += 1
            unchained = unchained or place
        else:
            assert isinstance(entry, tuple)
            if entry[0] not in chains:
                report.runs += entry[1].start is None  # a run begun in a file not given
            chains.setdefault(entry[0], []).append(entry[1])
            report._saw(entry[1], entry[2])
            if entry[1].signed is False:
                report.problems.append(Problem(place, _unsigned_what(raw, by_key)))
    for order_, place in broken:
        report.problems.append(Problem(place, _broken_what(order_, order)))
    broken_orders = [order_ for order_, _ in broken]
    report.chains = len(chains)
    for proxy, entries in chains.items():
        _check(proxy, entries, report, bool(by_key), broken_orders)
    if by_key and unchained is not None:
        report.problems.append(Problem(unchained, f"{report.unchained} record(s) in no chain, "
                                                  f"the first here: vouched for by nothing"))
    report.problems.sort(key=lambda p: (p.place.rank, p.place.line) if p.place else (-1, 0))
    return report


def _broken_what(order: int, last: int) -> str:
    if order == last:
        return "not a whole record: the file was cut short here, or this line was changed"
    return "not a record: this line was changed"


def _entry(raw: bytes, place: Place, order: int, by_key: dict[str, PublicKey]
           ) -> "tuple[str, _Entry, str] | bool | None":
    """(proxy, entry, ts) for a chained line (a checkpoint's signature checked when there are
    keys); True for a record without a chain; None for a line that is not a record."""
    if not raw.endswith(b"\n"):
        return None  # the last line of a file cut short (every line is written whole)
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past reading
        return None
    if not isinstance(record, dict) or not isinstance(record.get("ts"), str):
        return None
    proxy, seq, prev = record.get("proxy"), record.get("seq"), record.get("prev")
    if proxy is None and seq is None and prev is None:
        return True
    if not (isinstance(proxy, str) and type(seq) is int and isinstance(prev, str)):
        return None
    checkpoint = record.get("event") == CHECKPOINT
    start = record.get("start")
    if start is not None and start not in STARTS:
        return None  # only the proxy writes this field, and only those values
    entry = _Entry(place, order, seq, prev, digest(raw), checkpoint, start=start)
    if checkpoint and by_key:
        entry.signed = _signed(raw, record, proxy, seq, prev, by_key)
    return proxy, entry, record["ts"]


def _signed(raw: bytes, record: dict[str, object], proxy: str, seq: int, prev: str,
            by_key: dict[str, PublicKey]) -> bool:
    keyid, sig, ts = record.get("keyid"), record.get("sig"), record.get("ts")
    if not (isinstance(keyid, str) and isinstance(sig, str) and isinstance(ts, str)):
        return False
    key = by_key.get(keyid)
    if key is None:
        return False
    # The whole line, not only what the signature covers: nothing else may be in it (a
    # checkpoint that no line names could otherwise carry anything).
    try:
        if checkpoint_line(ts, proxy, seq, prev, keyid, sig) != raw:
            return False
        signature = base64.b64decode(sig + "=" * (-len(sig) % 4), altchars=b"-_",
                                     validate=True)
    except (ValueError, TypeError):
        return False
    return key.verifies(signature, signed_text(proxy, seq, prev, ts, keyid))


def _unsigned_what(raw: bytes, by_key: dict[str, PublicKey]) -> str:
    record = json.loads(raw)
    keyid = record.get("keyid")
    if not isinstance(keyid, str) or keyid not in by_key:
        return f"checkpoint signed with a key not given (keyid {keyid!r})"
    return "checkpoint whose signature does not verify: this line was changed or forged"


def _check(proxy: str, entries: list[_Entry], report: Report, keyed: bool,
           broken: list[int]) -> None:
    anchors = [entry for entry in entries if entry.signed]
    if anchors:
        anchor = max(anchors, key=lambda entry: entry.seq)
        reached = _walk_back(proxy, entries, anchor, report, broken)
        report.vouched += len(reached)
        # Before the anchor, every line of this proxy is on the chain it signed, or added.
        inserted = [entry for entry in entries
                    if id(entry) not in reached and entry.order < anchor.order]
        for entry in inserted:
            report.problems.append(Problem(entry.place, f"inserted: proxy {proxy}'s chain does "
                                                        f"not lead through this line"))
        walked = sorted((entry for entry in entries if id(entry) in reached),
                        key=lambda entry: entry.seq)
        for entry in _out_of_place(walked):
            report.problems.append(Problem(entry.place, f"moved: record {entry.seq} of proxy "
                                                        f"{proxy} is out of its place"))
        tail = [entry for entry in entries if entry.order > anchor.order]
        _walk_forward(proxy, anchor, tail, report, broken)
        first = min(walked, key=lambda entry: entry.seq)  # the signed chain's own first
        _notes(proxy, first, len(tail), anchor.place, report, keyed)
    else:
        _walk_forward(proxy, None, entries, report, broken)
        _notes(proxy, min(entries, key=lambda entry: entry.order), len(entries), None, report,
               keyed)
        if keyed:
            report.problems.append(Problem(entries[0].place, f"proxy {proxy}: no checkpoint "
                                                             f"signed by a key given vouches "
                                                             f"for its {len(entries)} line(s)"))


def _out_of_place(entries: list[_Entry]) -> list[_Entry]:
    """Of entries in the order of their numbers, those not standing in that order in the file:
    the fewest whose removal leaves the rest in order (the complement of a longest increasing
    run of their positions), so that two lines swapped are the two named."""
    tails: list[int] = []  # tails[k]: index of the last entry of the best run of length k + 1
    ends: list[int] = []  # ends[k]: that entry's position
    before: list[int] = [-1] * len(entries)
    for index, entry in enumerate(entries):
        k = bisect.bisect_left(ends, entry.order)
        if k:
            before[index] = tails[k - 1]
        if k == len(tails):
            tails.append(index)
            ends.append(entry.order)
        else:
            tails[k], ends[k] = index, entry.order
    kept = set()
    index = tails[-1] if tails else -1
    while index != -1:
        kept.add(index)
        index = before[index]
    return [entry for index, entry in enumerate(entries) if index not in kept]


def _between(broken: list[int], after: int, before: int) -> bool:
    """Whether a line that is not a record stands between two positions (`broken`: sorted):
    a record changed past reading, said already, rather than one removed."""
    index = bisect.bisect_right(broken, after)
    return index < len(broken) and broken[index] < before


def _walk_back(proxy: str, entries: list[_Entry], anchor: _Entry, report: Report,
               broken: list[int]) -> set[int]:
    """ids of the entries the anchor's chain leads through, from the anchor back."""
    by_digest = {entry.digest: entry for entry in entries}
    by_seq: dict[int, list[_Entry]] = {}
    for entry in entries:
        by_seq.setdefault(entry.seq, []).append(entry)
    lowest = min(entry.seq for entry in entries)
    ordered = sorted(entries, key=lambda entry: entry.seq)
    seqs = [entry.seq for entry in ordered]
    reached = {id(anchor)}
    current = anchor
    while current.prev != GENESIS and current.seq > lowest:
        found = by_digest.get(current.prev)
        if found is not None and found.seq == current.seq - 1:
            reached.add(id(found))
            current = found
            continue
        candidates = [entry for entry in by_seq.get(current.seq - 1, ())
                      if id(entry) not in reached and entry.order < current.order]
        if candidates:
            changed = max(candidates, key=lambda entry: entry.order)
            report.problems.append(Problem(changed.place, f"changed: record {changed.seq} of "
                                                          f"proxy {proxy} is not the one the "
                                                          f"next names"))
            reached.add(id(changed))
            current = changed
            continue
        previous = _below(ordered, seqs, current, reached)
        if not _between(broken, previous.order if previous else 0, current.order):
            missing = f"record {current.seq - 1}" \
                if previous is None or previous.seq == current.seq - 2 else \
                f"record(s) {previous.seq + 1} to {current.seq - 1}"
            report.problems.append(Problem(current.place, f"removed: {missing} of proxy "
                                                          f"{proxy}, before this line"))
        if previous is None:
            break
        current = previous
        reached.add(id(current))
    return reached


def _below(ordered: list[_Entry], seqs: list[int], current: _Entry, reached: set[int]
           ) -> _Entry | None:
    """The line with the highest number below the one `current` names, before it and not on
    the chain yet: where the walk goes on after a removal."""
    index = bisect.bisect_left(seqs, current.seq - 1) - 1
    while index >= 0:
        entry = ordered[index]
        if id(entry) not in reached and entry.order < current.order:
            return entry
        index -= 1
    return None


def _walk_forward(proxy: str, start: _Entry | None, entries: list[_Entry], report: Report,
                  broken: list[int]) -> None:
    """Each line names the one before and counts on from it; a line that repeats or goes
    back is inserted (the one before stays the chain's)."""
    last = start
    for entry in entries:
        if last is None:
            last = entry
            continue
        if entry.seq <= last.seq:
            report.problems.append(Problem(entry.place, f"inserted: record {entry.seq} of "
                                                        f"proxy {proxy} again, after "
                                                        f"{last.place}"))
            continue
        if entry.seq > last.seq + 1 and _between(broken, last.order, entry.order):
            pass  # a record changed past reading stands there: said already
        elif entry.seq > last.seq + 1:
            missing = f"{last.seq + 1}" if entry.seq == last.seq + 2 else \
                f"{last.seq + 1} to {entry.seq - 1}"
            report.problems.append(Problem(entry.place, f"removed: record(s) {missing} of "
                                                        f"proxy {proxy}, before this line"))
        elif entry.prev != last.digest:
            report.problems.append(Problem(last.place, f"changed: record {last.seq} of proxy "
                                                       f"{proxy} is not the one the next "
                                                       f"({entry.place}) names"))
        last = entry


def _ts(moment: datetime) -> str:
    """A time as the proxy writes it (audit.timestamp), in UTC."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")
