"""AI usage preferences: what a site says its content may be used for, once it may be crawled.

Two robots.txt group lines are read, into the same values:

- Content-Usage (IETF AI Preferences, draft-ietf-aipref-attach-05 §3, which updates RFC 9309):
  `Content-Usage: [path-pattern SP] preference`. A value that starts with '/' starts with a path,
  which ends at the first space or tab; any other value has no path, and the rule applies to
  every path (it is matched as "/", so it ties with an explicit "/"). The preference is the
  vocabulary's syntax (draft-ietf-aipref-vocab-07 §6): an RFC 9651 Dictionary of category labels
  with the tokens y and n, "train-ai=n, search=y". The Content-Usage HTTP header field has the
  same syntax (read_statement(Source.HEADER, value)).
- Content-Signal (Cloudflare's Content Signals Policy, contentsignals.org):
  `Content-Signal: search=yes, ai-input=yes, ai-train=no`, read as the same Dictionary with the
  tokens yes and no; search is the category search, ai-input ai-input, ai-train train-ai, and
  other keys state nothing. A leading path is read as in Content-Usage (contentsignals.org only
  shows lines without one).

Categories. The vocabulary (-07, the latest whose text was at hand) defines train-ai and search,
with no hierarchy: the parents of earlier drafts (bots, all, train-genai, ai-use, ...) are gone,
so a label counts for its own category only. CATEGORIES adds ai-input, which Content-Signal
defines. Any other label is ignored unless a caller asks about it: the category set is the
caller's (an operator may name others), and parsing keeps every label.

Processing (vocab §6.5): the token y (yes) is allowed, n (no) disallowed; any other value, a
value that is not a token, or an absent label is unknown; parameters are ignored; a value that
is not a Dictionary leaves every category unknown. Several statements combine most-restrictive
first (vocab §5.1): any disallowed -> disallowed, else any allowed -> allowed, else unknown.

Which statement holds for a path (attach §3.1; RobotsTxt.usage): of one source's rules in the
agent's groups (chosen and merged as for Allow/Disallow), the longest pattern that matches, by
Allow/Disallow's matching ('*', '$', percent-encoding); rules with the same pattern are combined;
of two different patterns of the same length that both match, the one earlier in the file.
Content-Usage and Content-Signal are two ways of stating, so what each says for the path is then
combined. A path that may not be crawled has no preferences: RobotsTxt.usage() is empty there.

The values (frozen): Statement (one statement, its source, line and path), Preference (a
category's value and the statement that decided it), Usage (category -> Preference for the
categories something is known about; of() answers unknown for the others). Usage.render() is the
vocabulary's syntax ("train-ai=n, search=y"; "" when nothing is known); combine() joins a
robots.txt Usage with other statements, such as read_statement(Source.HEADER, header).usage().
RobotsTxt.usage(agent, url, categories) is the robots.txt side; RobotsTxt.states_usage says
whether a file has any preference line at all.
"""

import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

# RFC 9651 parsing, the one import from outside the standard library: a parser, without I/O.
import http_sf

from robotsgate.protocol.match import LongestMatch

# train-ai and search: the vocabulary's; ai-input: Content-Signal's.
CATEGORIES: tuple[str, ...] = ("train-ai", "search", "ai-input")

_SIGNALS = {"search": "search", "ai-input": "ai-input", "ai-train": "train-ai"}
# Cloudflare's managed robots.txt also writes use=immediate|reference|full (how much of the
# content may be reproduced): a known key, but not a category.
SIGNAL_OTHERS = frozenset({"use"})
# Labels of earlier drafts of the vocabulary (-01 to -04) that -07 no longer defines.
RETIRED = frozenset({"tdm", "ai", "genai", "inference", "all", "train-genai", "ai-use", "bots",
                     "ai-output"})

_SPACE = re.compile(rb"[ \t]")


class PreferenceValue(StrEnum):
    ALLOWED = "allowed"
    DISALLOWED = "disallowed"
    UNKNOWN = "unknown"


class Source(StrEnum):
    """Where a statement of preference was found."""

    CONTENT_USAGE = "robots-content-usage"  # a robots.txt Content-Usage rule
    CONTENT_SIGNAL = "robots-content-signal"  # a robots.txt Content-Signal line
    HEADER = "header-content-usage"  # a Content-Usage response header field
    # W3C TDM Reservation Protocol: the tdm-reservation header field, its META in the head, or
    # a rule of the origin's /.well-known/tdmrep.json (robotsgate.protocol.tdmrep).
    TDM_HEADER = "header-tdm-reservation"
    TDM_META = "meta-tdm-reservation"
    TDM_FILE = "tdmrep-json"
    # The noai and noimageai robots directives (DeviantArt's, widely copied): X-Robots-Tag, or
    # a robots META in the head.
    NOAI_HEADER = "header-x-robots-tag"
    NOAI_META = "meta-robots"


class Label(NamedTuple):
    """One member of a statement's Dictionary."""

    key: str  # as written
    category: str | None  # the category it speaks of; None: none (an unknown Content-Signal key)
    allowed: bool | None  # y (yes): True, n (no): False, anything else: None (unknown)
    value: str  # as written, for messages


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of preference: a robots.txt line, or a header field."""

    source: Source
    preference: str  # the preference as written
    labels: tuple[Label, ...] = ()
    line: int | None = None  # 1-based, in robots.txt; None for a header
    pattern: str | None = None  # the path as written; None: no path (every path)
    problems: tuple[str, ...] = ()  # why some or all of it could not be read
    # TDMRep: the tdm-policy that came with a tdm-reservation (the rights holder's terms).
    policy: str | None = None

    @property
    def text(self) -> str:
        """The statement as written: "Content-Usage: /ai-ok/ train-ai=y"."""
        if self.source is Source.TDM_HEADER:
            return f"tdm-reservation: {self.preference}"
        if self.source is Source.TDM_META:
            return f'<meta name="tdm-reservation" content="{self.preference}">'
        if self.source is Source.TDM_FILE and self.pattern is None:
            return "/.well-known/tdmrep.json (not read: taken as tdm-reservation: 1)"
        if self.source is Source.TDM_FILE:
            return (f'/.well-known/tdmrep.json: {{"location": "{self.pattern}", '
                    f'"tdm-reservation": {self.preference}}}')
        if self.source is Source.NOAI_HEADER:
            return f"X-Robots-Tag: {self.preference}"
        if self.source is Source.NOAI_META:
            return f'<meta name="robots" content="{self.preference}">'
        name = "Content-Signal" if self.source is Source.CONTENT_SIGNAL else "Content-Usage"
        value = self.preference if self.pattern is None else f"{self.pattern} {self.preference}"
        return f"{name}: {value}".rstrip()

    @property
    def where(self) -> str:
        if self.source in (Source.TDM_META, Source.NOAI_META):
            return "the page's head"
        if self.source is Source.TDM_FILE:
            return "the origin's tdmrep.json"
        return "response header" if self.line is None else f"line {self.line}"

    def usage(self) -> "Usage":
        """What this statement alone says."""
        return Usage(tuple(
            (label.category, Preference(
                PreferenceValue.ALLOWED if label.allowed else PreferenceValue.DISALLOWED, self))
            for label in self.labels if label.category is not None and label.allowed is not None))


@dataclass(frozen=True, slots=True)
class Preference:
    value: PreferenceValue
    statement: Statement | None = None  # the statement that decided it; None when unknown


UNKNOWN = Preference(PreferenceValue.UNKNOWN)


@dataclass(frozen=True, slots=True)
class Usage(Mapping[str, Preference]):
    """category -> Preference for every category allowed or disallowed; of() for any category."""

    preferences: tuple[tuple[str, Preference], ...] = ()

    def __getitem__(self, category: str) -> Preference:
        for name, preference in self.preferences:
            if name == category:
                return preference
        raise KeyError(category)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.preferences)

    def __len__(self) -> int:
        return len(self.preferences)

    def of(self, category: str) -> Preference:
        """The category's preference: unknown when nothing says anything of it."""
        return self.get(category, UNKNOWN)

    def only(self, categories: Collection[str]) -> "Usage":
        """The preferences for `categories` alone: the other labels ignored."""
        return Usage(tuple(item for item in self.preferences if item[0] in categories))

    def render(self) -> str:
        """The vocabulary's syntax: "train-ai=n, search=y"; "" when nothing is known.

        Categories come from parsed Dictionary keys (or Content-Signal's mapping), so each is a
        valid key.
        """
        return ", ".join(f"{name}={'y' if p.value is PreferenceValue.ALLOWED else 'n'}"
                         for name, p in self.preferences)

    def explain(self) -> str:
        """For people: "train-ai disallowed by Content-Usage: train-ai=n (line 4); ..."."""
        if not self.preferences:
            return "no usage preference known"
        return "; ".join(f"{name} {p.value} by {p.statement.text} ({p.statement.where})"
                         for name, p in self.preferences if p.statement is not None)


NO_USAGE = Usage()


def combine(*usages: Usage) -> Usage:
    """Several statements' preferences, the most restrictive first: any disallowed ->
    disallowed, else any allowed -> allowed (vocab §5.1). The deciding statement is the first
    that said so; categories keep the order in which they first appear."""
    decided: dict[str, Preference] = {}
    for usage in usages:
        for category, preference in usage.preferences:
            held = decided.get(category)
            if held is None or (held.value is PreferenceValue.ALLOWED
                                and preference.value is PreferenceValue.DISALLOWED):
                decided[category] = preference
    return Usage(tuple(decided.items()))


def split_path(value: bytes) -> tuple[bytes | None, bytes]:
    """A robots.txt rule value -> (path or None when absent, preference) (attach §3.2)."""
    if not value.startswith(b"/"):
        return None, value
    space = _SPACE.search(value)
    if space is None:
        return value, b""
    return value[: space.start()], value[space.start():].lstrip(b" \t")


def read_statement(source: Source, preference: bytes | str, *, line: int | None = None,
                   pattern: str | None = None) -> Statement:
    """Parse a preference (the part after any path). Never raises: what cannot be read is
    unknown, and said in `problems`."""
    if isinstance(preference, str):
        # Lone surrogates become bytes that are not ASCII: unreadable, as they should be.
        preference = preference.encode("utf-8", "surrogatepass")
    text = preference.decode("utf-8", "replace")
    name = "Content-Signal" if source is Source.CONTENT_SIGNAL else "Content-Usage"
    if not preference.strip(b" \t"):
        return Statement(source, text, (), line, pattern, (f"{name} states no preference",))
    repeated: list[str] = []
    try:
        parsed = http_sf.parse(preference, tltype="dictionary",
                               on_duplicate_key=lambda key, _kind: repeated.append(key))
    except ValueError as error:  # StructuredFieldError, and bytes that are not text
        hint = "; a path starts with '/'" if preference[:1] == b"*" else ""
        return Statement(source, text, (), line, pattern, (
            f"{name} preference {_short(text)} is not a Structured Field Dictionary "
            f"({error}{hint}): every category unknown",))
    assert isinstance(parsed, dict)  # what tltype="dictionary" returns
    labels = []
    for key, member in parsed.items():
        bare = member[0] if isinstance(member, tuple) else member
        category = _SIGNALS.get(key) if source is Source.CONTENT_SIGNAL else key
        labels.append(Label(key, category, _allowed(source, bare), _written(bare)))
    problems = tuple(f"{name} preference names {key!r} more than once: the last one counts"
                     for key in dict.fromkeys(repeated))
    return Statement(source, text, tuple(labels), line, pattern, problems)


# TDMRep's sources, in the order it processes them: a later one supersedes an earlier one.
TDM_ORDER = (Source.TDM_FILE, Source.TDM_HEADER, Source.TDM_META)


def tdm_reservation(value: str | int | None, source: Source, *, policy: str | None = None,
                    pattern: str | None = None, line: int | None = None) -> Statement | None:
    """One TDMRep statement (W3C TDM Reservation Protocol, Final Community Group Report,
    2024-05-10): tdm-reservation 1, "TDM rights are reserved", which robotsgate reads as
    train-ai=n and ai-input=n (training and AI input are mining; search is not); 0, rights are
    not reserved, which it reads as train-ai=y and ai-input=y: "0" is a statement (the rights
    holder lets miners mine), not silence. Any other value states nothing (None). `policy`:
    the tdm-policy that came with it (only a reservation has terms); `pattern` and `line`: the
    tdmrep.json rule (its location, its number in the file)."""
    written = value.strip() if isinstance(value, str) else value
    if written not in ("0", "1", 0, 1) or isinstance(written, bool):
        return None
    said = str(written)
    allowed = said == "0"
    return Statement(source, said, (Label("tdm-reservation", "train-ai", allowed, said),
                                    Label("tdm-reservation", "ai-input", allowed, said)),
                     line, pattern, policy=None if allowed else policy)


def tdm_decided(*statements: Statement | None) -> Statement | None:
    """TDMRep's own answer from its sources, given in TDM_ORDER (the origin's tdmrep.json, the
    response's header, the page's META; None where a source said nothing): the last one that
    said something. TDMRep reads them one after the other, the more specific superseding the
    less (a META "0" undoes a header's "1"); this is TDMRep's rule between its own sources,
    not aipref's most-restrictive combination, which applies between TDMRep's answer and the
    other signals (combine)."""
    decided = None
    for statement in statements:
        if statement is not None:
            decided = statement
    return decided


def no_ai(directive: str, *, header: bool) -> Statement:
    """The noai or noimageai robots directive (an X-Robots-Tag, or a robots META): the content
    may not be used to train AI, which robotsgate reads as train-ai=n (and nothing else: it
    says nothing of search or of AI input). noimageai says it of images only: the mitm layer
    counts it for an image response alone."""
    return Statement(Source.NOAI_HEADER if header else Source.NOAI_META, directive,
                     (Label(directive, "train-ai", False, directive),))


def _allowed(source: Source, bare: object) -> bool | None:
    # A Token: a String "y", which compares equal to one, is not (vocab §6.5.1).
    if not isinstance(bare, http_sf.Token):
        return None
    word = str(bare)
    yes, no = ("yes", "no") if source is Source.CONTENT_SIGNAL else ("y", "n")
    return True if word == yes else False if word == no else None


def _written(bare: object) -> str:
    if isinstance(bare, http_sf.Token):
        return str(bare)
    if isinstance(bare, bool):
        return "?1" if bare else "?0"
    if isinstance(bare, str):
        return f'"{bare}"'
    if isinstance(bare, list):
        return "(...)"
    return str(bare)


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:60] + "…")


class UsageRules:
    """The Content-Usage and Content-Signal rules of one agent's groups, matched to paths."""

    __slots__ = ("_sources",)

    def __init__(self, entries: Iterable[tuple[str, Statement]]) -> None:
        """`entries`: (compiled pattern, statement), in file order."""
        by_source: dict[Source, dict[str, list[Statement]]] = {}
        for compiled, statement in entries:
            by_source.setdefault(statement.source, {}).setdefault(compiled, []).append(statement)
        # Per source, one matcher over its distinct patterns: rules with the same pattern are
        # one combined statement. An equal rank breaks ties by index, that is by file order.
        self._sources = tuple(
            (LongestMatch([(pattern, True) for pattern in patterns]),
             tuple(same[0].usage() if len(same) == 1 else combine(*(s.usage() for s in same))
                   for same in patterns.values()))
            for patterns in by_source.values())

    def at(self, path: str) -> Usage:
        """The preferences for `path`, in the match form decide() uses."""
        found = []
        for matcher, usages in self._sources:
            winner = matcher.winner(path)
            if winner is not None:
                found.append(usages[winner])
        return combine(*found)
