"""The robots directive grammar shared by META robots, X-Robots-Tag and section tags.

A directive list is comma-separated (`noindex, nofollow`, `unavailable_after: <date>`); an
X-Robots-Tag value may name the agent it is for (`otherbot: nofollow`). Readings combine by
Spiderline's rule: "the most restrictive interpretation will be made, always erring on the side
of not indexing or not following". No directive lifts another: `index`, `follow` and `all` are the
defaults and change nothing.
"""

import email.utils
import functools
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from robotsgate.pages.signals import PageWarning

# Directives of the robots META tag (the 1990s' index, noindex, follow, nofollow, all, none),
# as flags.
_FLAGS = frozenset({"index", "noindex", "follow", "nofollow", "all", "none", "noarchive",
                    "nocache", "nosnippet"})
# Google's further directives: not enforced, but carried in the normalised X-Robots-Tag so that
# nothing the origin said for this agent is lost.
_CARRIED_FLAGS = frozenset({"noimageindex", "notranslate", "indexifembedded",
                            "nositelinkssearchbox"})
_CARRIED_VALUES = frozenset({"max-snippet", "max-image-preview", "max-video-preview"})
# What the content may not be used for (DeviantArt's directives, widely copied): AI training
# (noai), AI training on its images (noimageai). Usage statements: robotsgate.mitm.usage.
NO_AI = ("noai", "noimageai")
_VALUED = _CARRIED_VALUES | {"unavailable_after"}
_DIRECTIVES = _FLAGS | _CARRIED_FLAGS | _VALUED | frozenset(NO_AI)
# A name in a User-Agent header, or before the ':' of an agent-prefixed X-Robots-Tag. Digits are
# allowed: META names are not held to robots.txt's product-token characters ("360Spider").
# (Regular expressions over header values, never over HTML.)
_AGENT_NAME = re.compile(r"[A-Za-z0-9_-]+")
_PRODUCT_NAME = re.compile(r"([A-Za-z0-9_-]+)/")  # a product's name, before its version
_COMMENT_ITEMS = re.compile(r"[;()]")
_URL_IN_AGENT = re.compile(r"\+?[A-Za-z][A-Za-z0-9+.-]*://\S*|\+?www\.\S*")


@functools.lru_cache(maxsize=256)  # asked for every page a bot fetches, with one header
def agent_tokens(user_agent: str | None) -> frozenset[str]:
    """The names a User-Agent header gives its bot, lower-cased: the META names that apply to it.

    The name of each product (`MyBot` of `MyBot/2.1`) and each one-word item of a comment
    (`compatible` of `(compatible; MyBot/2.1; +http://example.com/bot)`); not version numbers
    nor the words of a URL ("5", "http", "com"), which name no bot and which nearly every page
    holds: the byte check that spares pages a parse looks for each of these names.
    """
    if not user_agent:
        return frozenset()
    text = _URL_IN_AGENT.sub(" ", user_agent)
    names = set(_PRODUCT_NAME.findall(text))
    names.update(item.strip() for item in _COMMENT_ITEMS.split(text)
                 if _AGENT_NAME.fullmatch(item.strip()))
    return frozenset(name.lower() for name in names if not name.isdigit())


def agent_names(agent: str | None, user_agent: str | None) -> frozenset[str]:
    """The names whose META and agent-prefixed X-Robots-Tag apply to a bot: its configured
    product token, or else those its User-Agent gives (agent_tokens)."""
    return frozenset({agent.lower()}) if agent else agent_tokens(user_agent)


@dataclass(slots=True)
class Directives:
    """Directives accumulated from every source that applies; only ever more restrictive."""

    noindex: bool = False
    nofollow: bool = False
    noarchive: bool = False
    nosnippet: bool = False
    unavailable_after: float | None = None
    carried: dict[str, None] = field(default_factory=dict)  # ordered set
    no_ai: dict[str, None] = field(default_factory=dict)  # noai, noimageai: an ordered set

    def flag(self, name: str) -> None:
        if name in ("noindex", "none"):
            self.noindex = True
        if name in ("nofollow", "none"):
            self.nofollow = True
        if name in ("noarchive", "nocache"):  # nocache: Bing's name for noarchive
            self.noarchive = True
        if name == "nosnippet":
            self.nosnippet = True
        if name in _CARRIED_FLAGS:
            self.carried[name] = None
        if name in NO_AI:
            self.no_ai[name] = None

    def until(self, when: float) -> None:
        if self.unavailable_after is None or when < self.unavailable_after:
            self.unavailable_after = when


def read_directives(value: str, reading: Directives, warnings: list[PageWarning],
                    where: str, line: int | None) -> None:
    """Read a comma-separated directive list (META content, X-Robots-Tag, section tag)."""
    pieces = value.split(",")
    i = 0
    while i < len(pieces):
        piece = pieces[i].strip()
        i += 1
        if not piece:
            continue
        name, colon, argument = piece.partition(":")
        name = name.strip().lower()
        if colon and name == "unavailable_after":
            when = _parse_date(argument)
            # Dates may hold commas ("Wed, 25 Jun 2010 15:00:00 GMT"): take the pieces that
            # follow until the date reads, as long as they are not directives themselves.
            j = i
            while when is None and j < len(pieces) and not _is_directive(pieces[j]):
                argument += "," + pieces[j]
                j += 1
                when = _parse_date(argument)
            if when is None:
                warnings.append(PageWarning(line, f"{where}: unavailable_after date not "
                                                  f"understood: {argument.strip()!r}"))
                continue
            i = j
            reading.until(when)
        elif colon and name in _CARRIED_VALUES:
            reading.carried[f"{name}:{''.join(argument.split()).lower()}"] = None
        elif not colon and name in _NAMED_FLAGS:
            reading.flag(name)
        elif not colon and len(words := name.split()) > 1 and \
                all(word in _NAMED_FLAGS for word in words):
            warnings.append(PageWarning(line, f"{where}: directives should be separated by "
                                              f"commas: {piece!r}"))
            for word in words:
                reading.flag(word)
        else:
            warnings.append(PageWarning(line, f"{where}: unknown directive {piece!r} ignored"))


_NAMED_FLAGS = _FLAGS | _CARRIED_FLAGS | frozenset(NO_AI)


def _is_directive(piece: str) -> bool:
    return piece.partition(":")[0].strip().lower() in _DIRECTIVES


def _parse_date(text: str) -> float | None:
    """RFC 822/1123/850 dates (with zone names such as PST) or ISO 8601; no zone means UTC."""
    text = text.strip()
    if not text:
        return None
    when = _rfc_date(text) or _rfc_date(text + " 00:00:00")  # "25 Jun 2010": its midnight
    if when is None:
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        return when.timestamp()
    except (OverflowError, ValueError, OSError):
        return None


def _rfc_date(text: str) -> datetime | None:
    try:
        return email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def read_header(value: str, agents: frozenset[str], reading: Directives,
                warnings: list[PageWarning]) -> None:
    """One X-Robots-Tag value: for every agent, or for one (`otherbot: nofollow`)."""
    head, colon, rest = value.partition(":")
    name = head.strip().lower()
    if colon and name not in _DIRECTIVES and _AGENT_NAME.fullmatch(name):
        if name in agents:
            read_directives(rest, reading, warnings, f"X-Robots-Tag for {name}", None)
        return
    read_directives(value, reading, warnings, "X-Robots-Tag", None)


def normal_form(reading: Directives, noindex: bool, now: float) -> str:
    """The reading as one X-Robots-Tag value ("all" when nothing is restricted); a date that
    has passed shows only as noindex."""
    parts = [name for name, on in (("noindex", noindex), ("nofollow", reading.nofollow),
                                   ("noarchive", reading.noarchive),
                                   ("nosnippet", reading.nosnippet)) if on]
    until = reading.unavailable_after
    if until is not None and until > now:
        stamp = datetime.fromtimestamp(until, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        parts.append(f"unavailable_after: {stamp}")
    parts.extend(reading.carried)
    parts.extend(reading.no_ai)
    return ", ".join(parts) or "all"
