"""What a bot crawls for: the purposes a request is made for, from configuration only.

A site's usage preferences (robots.txt Content-Usage and Content-Signal, the Content-Usage
header, TDM reservation; robotsgate.protocol.usage) say what its content may be used for, per
category: `train-ai`, `search`, `ai-input`, or any other the site names. A bot behind the proxy
declares the categories it crawls for; the proxy refuses when the site disallows every one of
them. Declared by the operator, never by the request (a bot that wants through would declare
nothing):

- `robots_purposes` entries `KEY=purpose[,purpose...]`: KEY is a client address or network
  (as in robots_agents), else a name matched against the proxy-auth user name first and then the
  bot's product token (the configured one, else those its User-Agent names), case-insensitive;
- `robots_purpose`: the purposes of all other traffic;
- neither: no purposes, and no request is refused for its use.
"""

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from robotsgate import outcomes
from robotsgate.decision.identity import by_address
from robotsgate.egress.addresses import Network
from robotsgate.escape import escaped
from robotsgate.outcomes import Reason
from robotsgate.protocol import product_tokens
from robotsgate.protocol.usage import PreferenceValue, Statement, Usage

# An RFC 9651 key, as the preference vocabulary's categories are written (train-ai, search).
_CATEGORY = re.compile(r"[a-z*][a-z0-9_.*-]*")

Purposes = frozenset[str]
NONE: Purposes = frozenset()


def parse_purposes(text: str) -> Purposes:
    """ "train-ai, search" -> {"train-ai", "search"}; ValueError naming what cannot be a
    category."""
    found = set()
    for part in text.split(","):
        category = part.strip()
        if not category:
            continue
        if not _CATEGORY.fullmatch(category):
            raise ValueError(f"{category!r} is not a usage category (lower-case letters, digits, "
                             f"'-', '_', '.', such as train-ai, search, ai-input)")
        found.add(category)
    return frozenset(found)


@dataclass(frozen=True, slots=True)
class PurposeMap:
    default: Purposes
    names: dict[str, Purposes]  # proxy-auth user name or product token, lower-cased
    networks: tuple[tuple[Network, Purposes], ...]  # most specific first

    @classmethod
    def parse(cls, default: str, entries: Iterable[str]) -> "PurposeMap":
        """Raises ValueError naming the entry that cannot be read."""
        names: dict[str, Purposes] = {}
        networks: list[tuple[Network, Purposes]] = []
        for entry in entries:
            key, sep, value = entry.partition("=")
            key = key.strip()
            if not sep or not key:
                raise ValueError(f"{entry!r} is not KEY=purpose[,purpose...] (KEY a user name, "
                                 f"a product token, an address or a network such as 10.0.0.0/8)")
            try:
                purposes = parse_purposes(value)
            except ValueError as exc:
                raise ValueError(f"{entry!r}: {exc}") from None
            try:
                network = ipaddress.ip_network(key, strict=False)
            except ValueError:
                names[key.removeprefix("user:").lower()] = purposes
            else:
                networks.append((network, purposes))
        networks.sort(key=lambda item: item[0].prefixlen, reverse=True)
        return cls(parse_purposes(default), names, tuple(networks))

    def resolve(self, *, user: str | None, address: str | None, agent: str | None,
                user_agent: str | None = None) -> Purposes:
        """The purposes of a request: by user name, address, the product token it is decided
        for (`agent`, when configured; else the first entry its User-Agent names), else the
        default."""
        if user is not None and (found := self.names.get(user.lower())) is not None:
            return found
        found = by_address(self.networks, address)
        if found is not None:
            return found
        if agent is not None:
            return self.names.get(agent.lower(), self.default)
        if user_agent and self.names:
            named = product_tokens(user_agent)
            for name, purposes in self.names.items():  # entry order: the first one wins
                if name in named:
                    return purposes
        return self.default

    @property
    def empty(self) -> bool:
        """No purpose anywhere: the usage check can be skipped for every request."""
        return not self.default and not any(self.names.values()) and \
            not any(purposes for _, purposes in self.networks)


@dataclass(frozen=True, slots=True)
class UsageRefusal:
    """Every declared purpose refused: which, and the statements that said so."""

    purposes: tuple[str, ...]  # the declared purposes, sorted
    reasons: tuple[tuple[str, Statement | None], ...]  # per purpose; None: nothing stated

    @property
    def statement(self) -> Statement | None:
        """The first statement that disallowed a purpose (the audit record's rule and line)."""
        return next((statement for _, statement in self.reasons if statement is not None), None)

    def explain(self) -> str:
        """ "train-ai disallowed by Content-Usage: train-ai=n (line 3); search: no preference
        stated (robots_usage_unknown=refuse)"."""
        return "; ".join(
            f"{purpose} disallowed by {statement.text} ({statement.where})" if statement
            else f"{purpose}: no preference stated (robots_usage_unknown=refuse)"
            for purpose, statement in self.reasons)


def refused(usage: Usage, purposes: Purposes, *, unknown_refused: bool) -> UsageRefusal | None:
    """The refusal when `usage` disallows every one of `purposes` (an unknown one counts as
    disallowed with `unknown_refused`); None when any is allowed, or none is declared."""
    if not purposes:
        return None
    reasons: list[tuple[str, Statement | None]] = []
    for purpose in sorted(purposes):
        preference = usage.of(purpose)
        if preference.value is PreferenceValue.DISALLOWED:
            reasons.append((purpose, preference.statement))
        elif preference.value is PreferenceValue.UNKNOWN and unknown_refused:
            reasons.append((purpose, None))
        else:
            return None
    return UsageRefusal(tuple(sorted(purposes)), tuple(reasons))


def usage_answer(refusal: UsageRefusal, *, agent: str, robots_url: str | None,
                 withheld: int | None = None) -> tuple[str, dict[str, str]]:
    """The text and headers of the proxy's 403 for a request (or, `withheld`, for an answer
    with that status) whose every purpose the site's usage preferences disallow."""
    statement = refusal.statement
    if withheld is not None:
        where = f"The origin's answer (HTTP {withheld}) was withheld.\n"
    elif statement is not None and statement.line is not None and robots_url:
        where = f"robots.txt: {robots_url}\n"
    else:
        where = ""
    headers = {"X-Robotsgate-Purposes": ", ".join(refusal.purposes)}
    if statement is not None:
        headers["X-Robotsgate-Rule"] = escaped(statement.text)  # what the site wrote
        if statement.line is not None:
            headers["X-Robotsgate-Line"] = str(statement.line)
    text = outcomes.text(Reason.USAGE_PREFERENCE, purposes=", ".join(refusal.purposes),
                         explain=refusal.explain(), where=where, agent=agent)
    return text, headers
