"""RSL licences' rulings: what the licences that apply to one request say of each purpose a bot
declared, and the element that says it (rsl.py holds the document, rsl_parse.py reads it).

Its own module because it is the one place that interprets RSL's usage vocabulary as decisions
(permitted, prohibited, not granted, unstated), and what the proxy and `robotsgate check` cite.

Usage, per purpose (evaluate):
- A `<license>` grants a purpose when its `<permits type="usage">` names a token that covers it
  (USAGE_PURPOSES). A `<license>` without a `<permits type="usage">` grants every purpose it does
  not prohibit: nothing in the sections quoted makes the element required, and its
  example of a site-wide ban on AI uses (as a third party quotes it, secondary), `<license>
  <prohibits type="usage">ai-all</prohibits></license>`, would otherwise ban search as well. A
  `<permits type="usage">` is a list of what is granted: what it does not cover, that licence
  does not grant.
- A `<license>` prohibits a purpose when its `<prohibits type="usage">` names a token that covers
  it; a prohibition wins over any grant, in the same licence or another (§3.1.1, secondary).
- Several `<license>` elements (in one `<content>` or in several that apply): a purpose is
  PERMITTED when some licence grants it and none prohibits it; PROHIBITED when one prohibits it;
  NOT_GRANTED when none prohibits it and none grants it (every licence lists what it permits, and
  the purpose is not among them: the use is not licensed); UNSTATED when no licence applies at
  all (a `<content>` with no `<license>`). Ruling.value maps these onto usage.py's values:
  allowed, disallowed, disallowed, unknown.
"""

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from robotsgate.protocol.rsl import Content, LicenseElement, Terms
from robotsgate.protocol.usage import PreferenceValue

__all__ = ["Evidence", "Grant", "Ruling", "evaluate", "prohibited"]


class Grant(StrEnum):
    PERMITTED = "permitted"  # a licence grants it, none prohibits it
    PROHIBITED = "prohibited"  # a licence prohibits it
    NOT_GRANTED = "not-granted"  # none prohibits it, none grants it: not licensed
    UNSTATED = "unstated"  # no licence applies


_VALUES = {Grant.PERMITTED: PreferenceValue.ALLOWED,
           Grant.PROHIBITED: PreferenceValue.DISALLOWED,
           Grant.NOT_GRANTED: PreferenceValue.DISALLOWED,
           Grant.UNSTATED: PreferenceValue.UNKNOWN}


@dataclass(frozen=True, slots=True)
class Evidence:
    """The element that decided: for an audit record."""

    content: Content
    license: LicenseElement | None  # None: the content has no licence (UNSTATED)
    element: Literal["permits", "prohibits"] | None  # None: a licence that lists no usage
    token: str | None  # the usage token that decided; None: no token did

    def cite(self) -> str:
        """ '<content url="/"> #1 (line 2), <license> #1 (line 3): <prohibits type="usage">
        ai-all' """
        where = f'<content url="{self.content.url}"> #{self.content.index} ' \
                f"(line {self.content.line})"
        if self.license is None:
            return f"{where}: no <license>"
        where += f", <license> #{self.license.index} (line {self.license.line})"
        if self.element is None:
            return f'{where}: no <permits type="usage">'
        if self.token is None:
            listed = " ".join(self.license.permits or ())
            return f'{where}: <permits type="usage"> {listed}'.rstrip()
        return f'{where}: <{self.element} type="usage"> {self.token}'


@dataclass(frozen=True, slots=True)
class Ruling:
    """What the applying licences say of one purpose, and the element that says it."""

    purpose: str
    answer: Grant
    evidence: Evidence

    @property
    def value(self) -> PreferenceValue:
        """As a usage preference (usage.py): permitted is allowed, prohibited and not granted
        are disallowed, unstated is unknown."""
        return _VALUES[self.answer]


def _finding(terms: Terms, purpose: str) -> Ruling:
    licenses = terms.licenses
    if not licenses:
        return Ruling(purpose, Grant.UNSTATED, Evidence(terms.content, None, None, None))
    for content, license in licenses:  # a prohibition wins (§3.1.1)
        token = license.forbids(purpose)
        if token is not None:
            return Ruling(purpose, Grant.PROHIBITED,
                           Evidence(content, license, "prohibits", token))
    for content, license in licenses:
        token = license.grants(purpose)
        if token is not None:
            return Ruling(purpose, Grant.PERMITTED,
                           Evidence(content, license, "permits" if token else None,
                                    token or None))
    content, license = licenses[0]
    return Ruling(purpose, Grant.NOT_GRANTED, Evidence(content, license, "permits", None))


def evaluate(terms: Terms, purposes: Collection[str]) -> tuple[Ruling, ...]:
    """Per purpose (sorted), what the licences of `terms` say of it."""
    return tuple(_finding(terms, purpose) for purpose in sorted(set(purposes)))


def prohibited(terms: Terms, purposes: Collection[str]) -> tuple[Ruling, ...]:
    """The purposes the licences do not license (prohibited, or not granted), with evidence;
    () when every one is permitted or unstated."""
    return tuple(finding for finding in evaluate(terms, purposes)
                 if finding.answer in (Grant.PROHIBITED, Grant.NOT_GRANTED))
