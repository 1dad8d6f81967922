"""TDMRep's file: an origin's `/.well-known/tdmrep.json` (W3C TDM Reservation Protocol, Final
Community Group Report, 2024-05-10), read and matched. Pure: bytes in, values out.

The file is a JSON array of rules, each an object with a `location` (a path pattern on the
origin), a `tdm-reservation` (1: text and data mining rights are reserved; 0: they are not) and,
with a reservation, maybe a `tdm-policy` (the URL of the rights holder's terms). The report's
example:

    [
      {
        "location": "/",
        "tdm-reservation": 1,
        "tdm-policy": "https://provider.com/policies/policy.json"
      }
    ]

Reading (read_tdmrep). A rule without a string `location` applies to nothing; a
`tdm-reservation` other than 0 or 1 (the number, or the string of it) states nothing; either
is a problem, and the other rules are still read. A body that is not a JSON array of objects
cannot be read at all (`unreadable`): what it reserves is not known, which is not the same as
reserving nothing (robotsgate.licensing.tdmrep decides what that means for a request).

Matching (TdmRep.rule). A location is a path pattern as robots.txt's Allow and Disallow lines
write them ('*' any characters, a final '$' the end), matched against the request's path and
query the way RFC 9309 matches them (percent-encoding normalised), and the longest matching
location decides; of two of the same length, the earlier in the file. (Which of several
matching rules applies is how robotsgate reads the report: the most specific location, as for
robots.txt, so that `/` reserved and `/open/` not reserved says what it plainly means.)

Hostile input: at most MAX_BYTES of a file are read (more: unreadable), at most MAX_RULES rules.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from robotsgate.protocol.match import LongestMatch
from robotsgate.protocol.readings import reading_of
from robotsgate.protocol.urls import normal_path_of
from robotsgate.protocol.usage import Source, Statement, tdm_reservation

__all__ = ["MAX_BYTES", "MAX_RULES", "PATH", "TdmRep", "TdmRule", "read_tdmrep"]

PATH = "/.well-known/tdmrep.json"
MAX_BYTES = 256 * 1024  # real files are a few rules; a site with a rule per section fits
MAX_RULES = 4096
_RFC9309 = reading_of("rfc9309")


@dataclass(frozen=True, slots=True)
class TdmRule:
    """One rule of the file, as written, and the statement it makes (None: it states
    nothing: no usable location, or a tdm-reservation that is neither 0 nor 1)."""

    index: int  # 1-based, in the file's array
    location: str
    statement: Statement | None


@dataclass(frozen=True, slots=True)
class TdmRep:
    """A tdmrep.json as read: its rules, and what could not be read."""

    rules: tuple[TdmRule, ...] = ()
    problems: tuple[str, ...] = ()
    unreadable: bool = False  # not a JSON array of objects (or past the caps): not known
    _matcher: LongestMatch | None = field(default=None, repr=False, compare=False)
    _ranked: tuple[TdmRule, ...] = field(default=(), repr=False, compare=False)

    def rule(self, url: str) -> TdmRule | None:
        """The rule for a request URL (or a path, with its query): the longest matching
        location, the earlier of two of one length; None when no location matches."""
        if self._matcher is None:
            return None
        winner = self._matcher.winner(normal_path_of(url))
        return None if winner is None else self._ranked[winner]

    def statement(self, url: str) -> Statement | None:
        """What the file says of a request URL: its rule's statement (None: nothing)."""
        rule = self.rule(url)
        return None if rule is None else rule.statement


def read_tdmrep(body: bytes) -> TdmRep:
    """Parse a tdmrep.json body. Never raises: what cannot be read is said in `problems`."""
    if len(body) > MAX_BYTES:
        return TdmRep(problems=(f"{len(body)} bytes, more than the {MAX_BYTES} read: not read",),
                      unreadable=True)
    try:
        parsed = json.loads(body.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        where = f" (line {error.lineno}, column {error.colno})" \
            if isinstance(error, json.JSONDecodeError) else ""
        return TdmRep(problems=(f"not JSON: {getattr(error, 'msg', error)}{where}",),
                      unreadable=True)
    if not isinstance(parsed, list):
        return TdmRep(problems=(f"a JSON {type(parsed).__name__}, not an array of rules",),
                      unreadable=True)
    if len(parsed) > MAX_RULES:
        return TdmRep(problems=(f"{len(parsed)} rules, more than {MAX_RULES}: not read",),
                      unreadable=True)
    rules: list[TdmRule] = []
    problems: list[str] = []
    for index, item in enumerate(parsed, 1):
        if not isinstance(item, dict):
            return TdmRep(problems=(f"rule {index} is a JSON {type(item).__name__}, not an "
                                    f"object",), unreadable=True)
        rules.append(_rule(index, item, problems))
    return _indexed(tuple(rules), tuple(problems))


def _rule(index: int, item: dict[str, object], problems: list[str]) -> TdmRule:
    location = item.get("location")
    value = item.get("tdm-reservation")
    policy = item.get("tdm-policy")
    if not isinstance(location, str) or not location.strip():
        problems.append(f"rule {index} has no location: it applies to nothing")
        return TdmRule(index, "", None)
    location = location.strip()
    said = value if isinstance(value, str | int) and not isinstance(value, bool) else None
    # No line: a statement's line is robots.txt's (audit records, X-Robotsgate-Line); the
    # rule's index is TdmRule.index, and its text names its location.
    statement = tdm_reservation(said, Source.TDM_FILE, pattern=location,
                                policy=policy if isinstance(policy, str) else None)
    if statement is None:
        problems.append(f"rule {index} ({location}): tdm-reservation {value!r} is neither 0 "
                        f"nor 1: it states nothing")
    return TdmRule(index, location, statement)


def _indexed(rules: Sequence[TdmRule], problems: tuple[str, ...]) -> TdmRep:
    ranked = tuple(rule for rule in rules if rule.location)
    if not ranked:
        return TdmRep(tuple(rules), problems)
    patterns = [(_pattern(rule.location), True) for rule in ranked]
    return TdmRep(tuple(rules), problems, False, LongestMatch(patterns), ranked)


def _pattern(location: str) -> str:
    """A location in the match form of Allow/Disallow patterns. One that does not start with
    '/' or '*' (a full URL, or a bare word) is read from its path."""
    if not location.startswith(("/", "*")):
        at = location.find("://")
        if at >= 0:
            slash = location.find("/", at + 3)
            location = location[slash:] if slash >= 0 else "/"
        else:
            location = "/" + location
    return _RFC9309.compile_pattern(location.encode("utf-8", "surrogatepass"))
