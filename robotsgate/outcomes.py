"""The one vocabulary of outcomes: why a request was forwarded, held, answered or cut.

Verdicts, audit records, metrics labels and the proxy's own answers all name a `Reason`; each
reason that refuses has its status, its answer's text and its Retry-After here, once. Reasons
are `StrEnum`s, so they are written to the audit log and to metrics as their plain names, and a
record read back compares equal to the member.
"""

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final


class Reason(StrEnum):
    # Forwarded, and why it was (or was not) held first.
    ALLOWED = "allowed"  # robots.txt allows it, no interval to keep
    ROBOTS_TXT = "robots.txt"  # a request for /robots.txt itself: always allowed
    TUNNEL = "tunnel"  # a CONNECT decided on its host (ignore_hosts/allow_hosts)
    NOT_INTERCEPTED = "not-intercepted"  # ... that mitmproxy then passes through unseen
    CRAWL_DELAY = "crawl-delay"
    CRAWL_DELAY_CLAMPED = "crawl-delay-clamped"
    REQUEST_RATE = "request-rate"
    MIN_DELAY = "min-delay"
    PUSHBACK = "pushback"  # the origin asked for a pause (429/503): held, or refused 429
    # Refused by what the site says.
    DISALLOWED = "disallowed"
    DISALLOWED_HOST = "disallowed-host"  # a tunnel to a host that disallows everything
    NOFOLLOW = "nofollow"
    USAGE_PREFERENCE = "usage-preference"  # the site disallows every purpose the bot crawls for
    VISIT_TIME = "visit-time"
    CRAWL_DELAY_TOO_LONG = "crawl-delay-too-long"
    WAIT_TOO_LONG = "wait-too-long"
    # Refused because robotsgate cannot decide, or cannot keep its promises.
    ROBOTS_UNAVAILABLE = "robots-unavailable"
    UNIDENTIFIED = "unidentified"
    HOST_MISMATCH = "host-mismatch"
    SERVER_NAME = "server-name"  # the TLS server name names another host than the tunnel's
    DESTINATION = "destination"  # an address bots may not reach: robots_egress_*, the proxy
    TARGET = "target"
    URL_TOO_LONG = "url-too-long"
    FRAMING = "framing"
    UPGRADE = "upgrade"
    PROTOCOL = "protocol"  # a connection that carries nothing robotsgate can decide
    AUDIT_UNAVAILABLE = "audit-unavailable"
    REDIS_UNAVAILABLE = "redis-unavailable"
    INTERNAL_ERROR = "internal-error"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How robotsgate answers a request it refuses for one reason."""

    status: int
    # str.format template; the fields each one uses are the keyword arguments of `text`.
    message: str
    retry_after: int | None = None  # a fixed Retry-After (the verdict's own takes precedence)
    close: bool = False  # the connection is closed after the answer: what follows is suspect
    tunnel: str | None = None  # the message when a CONNECT is refused, where it differs


_UNDECIDABLE = "robotsgate does not forward "
_TUNNEL = "robots.txt of {{host}} ({{robots_url}}) {what}; this tunnel, which the proxy " \
    "cannot see into, is refused.\n"

OUTCOMES: Final[dict[Reason, Outcome]] = {
    Reason.DISALLOWED: Outcome(403, "Forbidden by robots.txt: {explain}\nrobots.txt: "
                                    "{robots_url}\nagent: {agent}\n"),
    Reason.DISALLOWED_HOST: Outcome(403, _TUNNEL.format(what="disallows everything for this "
                                                             "agent")),
    Reason.USAGE_PREFERENCE: Outcome(403, "Refused by this site's usage preferences: they "
                                          "disallow every purpose this bot crawls for "
                                          "({purposes}): {explain}\n{where}agent: {agent}\n"),
    Reason.NOFOLLOW: Outcome(403, "Not followed: the referring page {page} {where}.\n"),
    Reason.VISIT_TIME: Outcome(503, "This site's robots.txt allows visits only in its "
                                    "Visit-time window; it opens in {retry_after} s.\n"),
    Reason.CRAWL_DELAY_TOO_LONG: Outcome(429, "This site's Crawl-delay ({asked} s) is longer "
                                              "than this proxy honours; requests to it are "
                                              "refused.\n", retry_after=60),
    Reason.WAIT_TOO_LONG: Outcome(429, "This site's politeness schedule is full for longer "
                                       "than the proxy holds a request; retry after "
                                       "{retry_after} s.\n", retry_after=60),
    Reason.PUSHBACK: Outcome(429, "This site asked for a pause (429/503); retry after "
                                  "{retry_after} s.\n", retry_after=60),
    Reason.ROBOTS_UNAVAILABLE: Outcome(503, "robots.txt of this site ({robots_url}) could not "
                                            "be fetched ({error}); nothing is forwarded to it "
                                            "until it can.\n", retry_after=60,
                                       tunnel=_TUNNEL.format(
                                           what="could not be fetched ({error})")),
    Reason.UNIDENTIFIED: Outcome(407, "robotsgate needs to know which bot this is. Send a "
                                      "User-Agent that names your bot (e.g. MyBot/1.0), or "
                                      "authenticate to the proxy with your bot's name, or ask "
                                      "the operator to map your address (robots_agents).\n"),
    Reason.HOST_MISMATCH: Outcome(400, "The Host header ({claimed}) names another host than "
                                       "the request goes to ({host}:{port}); robotsgate decides "
                                       "for the real target only.\n"),
    Reason.SERVER_NAME: Outcome(421, "The TLS server name ({claimed}) names another host than "
                                     "this tunnel goes to ({host}); robotsgate decides for, "
                                     "and connects to, the tunnel's host only.\n", close=True),
    Reason.DESTINATION: Outcome(403, "robotsgate does not forward requests to {where}: "
                                     "{why}.\n",
                                tunnel="robotsgate does not open tunnels to {where}: {why}.\n"),
    Reason.TARGET: Outcome(400, "robotsgate only forwards request targets that are paths "
                                "starting with '/'.\n", close=True),
    Reason.URL_TOO_LONG: Outcome(414, "robotsgate decides request targets of up to {limit} "
                                      "characters.\n", close=True),
    Reason.FRAMING: Outcome(400, _UNDECIDABLE + "a request {what}.\n", close=True),
    Reason.UPGRADE: Outcome(400, _UNDECIDABLE + "protocol upgrades other than WebSocket "
                                 "(asked for: {asked}).\n", close=True),
    Reason.AUDIT_UNAVAILABLE: Outcome(503, "robotsgate cannot write its audit log, so it "
                                           "refuses every request it would have to record (a "
                                           "refusal, or a wait for politeness) until it can; "
                                           "requests that go straight through are not recorded "
                                           "and still pass.\n", retry_after=60),
    Reason.REDIS_UNAVAILABLE: Outcome(503, "robotsgate cannot reach the Redis its fleet "
                                           "shares; nothing is forwarded until it can.\n",
                                       retry_after=5, tunnel="robotsgate cannot reach the Redis "
                                       "its fleet shares; this tunnel was refused.\n"),
    Reason.INTERNAL_ERROR: Outcome(503, "robotsgate could not decide this request; it was not "
                                        "forwarded.\n", retry_after=60,
                                   tunnel="robotsgate could not decide this tunnel; it was "
                                   "refused.\n"),
}


def status(reason: Reason) -> int | None:
    """The status a refusal for `reason` is answered with; None for a forwarding reason."""
    outcome = OUTCOMES.get(reason)
    return outcome.status if outcome else None


def text(reason: Reason, *, tunnel: bool = False, **fields: Any) -> str:
    """The answer's body for a refusal (of a CONNECT, with `tunnel`), its template filled in."""
    outcome = OUTCOMES[reason]
    template = outcome.tunnel if tunnel and outcome.tunnel else outcome.message
    return template.format(**fields)
