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
    BOT_SIGNED = "bot-signed"  # forwarded with the bot's own signature, not the proxy's
    SIGNATURE_ASKED = "signature-asked"  # the origin asked for a signature: sent again, signed
    LICENSE_REFUSED = "license-refused"  # the origin refused the licence: sent again, a new one
    CRAWLER_CHARGED = "crawler-charged"  # a 402's price paid: sent again, the charge recorded
    # Refused by what the site says.
    DISALLOWED = "disallowed"
    DISALLOWED_HOST = "disallowed-host"  # a tunnel to a host that disallows everything
    NOFOLLOW = "nofollow"
    USAGE_PREFERENCE = "usage-preference"  # the site disallows every purpose the bot crawls for
    LICENSE_PROHIBITED = "license-prohibited"  # its RSL licences license none of them
    LICENSE_REQUIRED = "license-required"  # a licence to be obtained from a licence server
    PRICE_REFUSED = "price-refused"  # a 402's price the proxy will not pay
    BUDGET_EXHAUSTED = "budget-exhausted"  # ... for which a budget has no room left
    OVERCHARGED = "overcharged"  # ... asked by a site that charged more than agreed before
    X402_UNSUPPORTED = "x402-unsupported"  # an x402 payment asked for: not made
    VISIT_TIME = "visit-time"
    CRAWL_DELAY_TOO_LONG = "crawl-delay-too-long"
    WAIT_TOO_LONG = "wait-too-long"
    # Refused because robotsgate cannot decide, or cannot keep its promises.
    ROBOTS_UNAVAILABLE = "robots-unavailable"
    LICENSE_UNAVAILABLE = "license-unavailable"  # an RSL licence robots.txt names, not read
    UNIDENTIFIED = "unidentified"
    HOST_MISMATCH = "host-mismatch"
    SERVER_NAME = "server-name"  # the TLS server name names another host than the tunnel's
    DESTINATION = "destination"  # an address bots may not reach: robots_egress_*, the proxy
    TARGET = "target"
    URL_TOO_LONG = "url-too-long"
    FRAMING = "framing"
    UPGRADE = "upgrade"
    HOP_BY_HOP = "hop-by-hop"  # Connection names a field the request is decided by
    PROTOCOL = "protocol"  # a connection that carries nothing robotsgate can decide
    RESOLVED = "resolved"  # a captured bot's DNS query, answered by the proxy's resolver
    CONTENT_CODING = "content-coding"  # a page that must be read, in codings not undone
    AUDIT_UNAVAILABLE = "audit-unavailable"
    REDIS_UNAVAILABLE = "redis-unavailable"
    INTERNAL_ERROR = "internal-error"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How robotsgate answers a request it refuses for one reason."""

    status: int
    # str.format template; the fields each one uses are the keyword arguments of `text`.
    message: str
    when: str  # the situation, in words (the documentation's answers table)
    retry_after: int | None = None  # a fixed Retry-After (the verdict's own takes precedence)
    close: bool = False  # the connection is closed after the answer: what follows is suspect
    tunnel: str | None = None  # the message when a CONNECT is refused, where it differs
    headers: tuple[str, ...] = ()  # headers of its own, besides X-Robotsgate-Reason


_UNDECIDABLE = "robotsgate does not forward "
_TUNNEL = "robots.txt of {{host}} ({{robots_url}}) {what}; this tunnel, which the proxy " \
    "cannot see into, is refused.\n"
# Headers the answers carry besides X-Robotsgate-Reason (and Connection: close, Retry-After,
# which the table says of each).
_ROBOTS = ("X-Robotsgate-Robots-Url", "X-Robotsgate-Agent")
_RULE = ("X-Robotsgate-Rule", "X-Robotsgate-Line")

# One answer a reason, each declared alike (the 402s most of all): alike in shape, different
# answers; a table, not code said twice.
OUTCOMES: Final[dict[Reason, Outcome]] = {
    Reason.DISALLOWED: Outcome(
        403, "Forbidden by robots.txt: {explain}\nrobots.txt: {robots_url}\nagent: {agent}\n",
        when="a rule of the origin's robots.txt disallows the path for the agent",
        headers=_RULE + _ROBOTS),
    Reason.DISALLOWED_HOST: Outcome(
        403, _TUNNEL.format(what="disallows everything for this agent"),
        when="a CONNECT that mitmproxy would pass through unseen (ignore_hosts, allow_hosts), "
             "to a host whose robots.txt disallows everything for the agent",
        headers=_ROBOTS),
    Reason.USAGE_PREFERENCE: Outcome(
        403, "Refused by this site's usage preferences: they disallow every purpose this bot "
             "crawls for ({purposes}): {explain}\n{where}agent: {agent}\n",
        when="the site's usage preferences disallow every purpose the bot declared: by "
             "robots.txt (before the origin sees the request), or by the origin's answer "
             "(Content-Usage, TDM reservation: the answer is withheld)",
        headers=("X-Robotsgate-Purposes", *_RULE, *_ROBOTS)),
    Reason.LICENSE_PROHIBITED: Outcome(
        403, "Refused by this site's licence: it does not license any purpose this bot crawls "
             "for ({purposes}): {explain}\nlicence: {license} ({where})\n{withheld}"
             "agent: {agent}\n",
        when="the RSL licences the site names (robots.txt License:, before the origin sees "
             "the request; a Link header or a page's <link rel=\"license\">, whose answer is "
             "then withheld) prohibit, or do not grant, every purpose the bot declared, for "
             "this URL",
        headers=("X-Robotsgate-Purposes", "X-Robotsgate-License", *_RULE, *_ROBOTS)),
    Reason.LICENSE_REQUIRED: Outcome(
        403, "This site's licence ({license}, {where}) must be obtained from its licence "
             "server ({server}) before this URL is used for {purposes}, and none was: "
             "{error}.\n{withheld}agent: {agent}\n",
        when="the RSL licence that covers the URL names a licence server (<content server>): "
             "a licence must be obtained from it, even a free one, and none was (no "
             "robots_license_credentials for that server, or the server refused)",
        headers=("X-Robotsgate-Purposes", "X-Robotsgate-License", *_RULE, *_ROBOTS)),
    Reason.PRICE_REFUSED: Outcome(
        402, "The origin asks a price for this page ({price}); this proxy did not pay it: "
             "{why}.\n",
        when="the origin answered 402 with crawler-price, and the price cannot be read, is "
             "above robots_max_price (or none is set), is in another currency, or the request "
             "was not signed; the origin's 402 is withheld",
        headers=("crawler-price",)),
    Reason.BUDGET_EXHAUSTED: Outcome(
        402, "The origin asks {price} for this page; this proxy's budget has no room for it "
             "({why}).\n",
        when="the origin's price is within robots_max_price, but a budget that applies "
             "(robots_budget) has no room left for it in its window (or the fleet's Redis "
             "cannot be asked)",
        headers=("crawler-price",)),
    Reason.OVERCHARGED: Outcome(
        402, "The origin asks {price} for this page; this proxy pays this site no more: "
             "{why}.\n",
        when="the origin's price is within robots_max_price, but the site charged more than "
             "the price agreed for an earlier paid request (a crawler-charged above it, in "
             "another currency, or that cannot be read): it is paid nothing more until "
             "robots_forgive_overcharge names it",
        headers=("crawler-price",)),
    Reason.X402_UNSUPPORTED: Outcome(
        402, "The origin asks for an x402 payment ({x402}); this proxy does not pay on a "
             "chain.\n",
        when="the origin answered 402 with PAYMENT-REQUIRED (x402): decoded and recorded in "
             "the audit record's x402 field, not paid"),
    Reason.NOFOLLOW: Outcome(
        403, "Not followed: the referring page {page} {where}.\n",
        when="a link that the page named in Referer says not to follow",
        headers=("X-Robotsgate-Page",)),
    Reason.VISIT_TIME: Outcome(
        503, "This site's robots.txt allows visits only in its Visit-time window; it opens in "
             "{retry_after} s.\n",
        when="outside the site's Visit-time window; Retry-After says when it opens",
        headers=_ROBOTS),
    Reason.CRAWL_DELAY_TOO_LONG: Outcome(
        429, "This site's Crawl-delay ({asked} s) is longer than this proxy honours; requests "
             "to it are refused.\n", retry_after=60,
        when="a Crawl-delay longer than robots_max_crawl_delay, with robots_on_long_delay=refuse",
        headers=_ROBOTS),
    Reason.WAIT_TOO_LONG: Outcome(
        429, "This site's politeness schedule is full for longer than the proxy holds a "
             "request; retry after {retry_after} s.\n", retry_after=60,
        when="the request would wait for its turn longer than robots_max_wait",
        headers=_ROBOTS),
    Reason.PUSHBACK: Outcome(
        429, "This site asked for a pause (429/503); retry after {retry_after} s.\n",
        retry_after=60,
        when="the origin asked for a pause (its own 429 or 503) that lasts longer than "
             "robots_max_wait",
        headers=_ROBOTS),
    Reason.ROBOTS_UNAVAILABLE: Outcome(
        503, "robots.txt of this site ({robots_url}) could not be fetched ({error}); nothing is "
             "forwarded to it until it can.\n", retry_after=60,
        tunnel=_TUNNEL.format(what="could not be fetched ({error})"),
        when="the origin's robots.txt could not be fetched (5xx, 429, timeout, DNS, TLS, a "
             "broken body) and no good copy is kept: complete disallow, for robots_error_ttl",
        headers=_ROBOTS),
    Reason.LICENSE_UNAVAILABLE: Outcome(
        503, "The licence this site names ({license}, {where}) could not be read ({error}); "
             "it may prohibit what this bot crawls for ({purposes}), so nothing is forwarded "
             "for those purposes until it can.\n{withheld}agent: {agent}\n", retry_after=60,
        when="an RSL licence the site names could not be fetched (5xx, 429, "
             "timeout, DNS, TLS, a refused address) or read (an XML document past a cap, "
             "not well-formed, with a DOCTYPE), for a bot that declared purposes: for "
             "robots_error_ttl; or was not read at all: named past the 16 documents read "
             "per robots.txt (8 per answer), or past the 64 fetched per site per "
             "robots_cache_ttl",
        headers=("X-Robotsgate-Purposes", "X-Robotsgate-License", *_ROBOTS)),
    Reason.UNIDENTIFIED: Outcome(
        407, "robotsgate needs to know which bot this is. Send a User-Agent that names your "
             "bot (e.g. MyBot/1.0), or authenticate to the proxy with your bot's name, or ask "
             "the operator to map your address (robots_agents).\n",
        when="nothing says which bot this is, and robots_require_agent is on",
        headers=("Proxy-Authenticate",)),
    Reason.HOST_MISMATCH: Outcome(
        400, "The Host header ({claimed}) names another host than the request goes to "
             "({host}:{port}); robotsgate decides for the real target only.\n",
        when="the Host header (or several of them), or an absolute target or :authority, "
             "names another host than the request goes to"),
    Reason.SERVER_NAME: Outcome(
        421, "The TLS server name ({claimed}) names another host than this tunnel goes to "
             "({host}); robotsgate decides for, and connects to, the tunnel's host only.\n",
        close=True,
        when="the TLS server name a bot sent inside its tunnel names another host than the "
             "tunnel's"),
    Reason.DESTINATION: Outcome(
        403, "robotsgate does not forward requests to {where}: {why}.\n",
        tunnel="robotsgate does not open tunnels to {where}: {why}.\n",
        when="an address bots may not reach (the proxy's own ports; this machine, loopback, "
             "link-local and the like unless robots_egress_allow; robots_egress_deny), or an "
             "IPv6 zone id; the audit record's error says which address and why"),
    Reason.TARGET: Outcome(
        400, "robotsgate only forwards request targets that are paths starting with '/'.\n",
        close=True,
        when="an HTTP/2 :path that is not a path starting with / (OPTIONS * aside)"),
    Reason.URL_TOO_LONG: Outcome(
        414, "robotsgate decides request targets of up to {limit} characters.\n", close=True,
        when="a request target longer than 8,192 characters (in its RFC 9309 normal form too), "
             "which servers refuse anyway"),
    Reason.FRAMING: Outcome(
        400, _UNDECIDABLE + "a request {what}.\n", close=True,
        when="a body whose end servers may find in different places (Content-Length with "
             "Transfer-Encoding, several Content-Length, a coding other than chunked), or "
             "bytes an HTTP/1.1 request line cannot carry (a space, control character or # in "
             "the method or target, a header name that is not a token), whatever "
             "validate_inbound_headers says"),
    Reason.HOP_BY_HOP: Outcome(
        400, _UNDECIDABLE + "a request whose Connection header names {named}: a proxy removes "
             "the fields Connection names (RFC 9110 §7.6.1), and this request is named, framed "
             "or identified by those.\n", close=True,
        when="a Connection header that names Host, Content-Length, Transfer-Encoding or "
             "User-Agent, which the request is named, framed or identified by, whatever the "
             "mode; any other field it names is removed before the decision, as RFC 9110 asks "
             "of a proxy"),
    Reason.UPGRADE: Outcome(
        400, _UNDECIDABLE + "protocol upgrades other than WebSocket (asked for: {asked}).\n",
        close=True,
        when="an Upgrade to anything but WebSocket (an h2c offer alone is dropped instead); "
             "an origin's 101 to anything but WebSocket closes the connection before the 101 "
             "reaches the client (event cut, status 502)"),
    Reason.CONTENT_CODING: Outcome(
        502, "The origin's page is encoded in a way robotsgate does not undo ({error}); "
             "this proxy reads every page before it passes it on ({why}), so it was "
             "withheld.\n",
        when="an HTML page that must be read before the bot gets it (robots_strip, or a bot "
             "that declared purposes) whose Content-Encoding robotsgate does not undo: more "
             "than 4 codings stacked, one it does not know, or a body that does not decode; "
             "the origin's answer is withheld (event withheld, the record's error says why)"),
    Reason.AUDIT_UNAVAILABLE: Outcome(
        503, "robotsgate cannot write its audit log, so it refuses every request it would have "
             "to record (a refusal, or a wait for politeness) until it can; requests that go "
             "straight through are not recorded and still pass.\n", retry_after=60,
        when="the audit log cannot be written and robots_audit_failure is closed: every "
             "request whose decision would be recorded"),
    Reason.REDIS_UNAVAILABLE: Outcome(
        503, "robotsgate cannot reach the Redis its fleet shares; nothing is forwarded until it "
             "can.\n", retry_after=5,
        tunnel="robotsgate cannot reach the Redis its fleet shares; this tunnel was refused.\n",
        when="the fleet's Redis cannot be reached and robots_redis_fallback is closed"),
    Reason.INTERNAL_ERROR: Outcome(
        503, "robotsgate could not decide this request; it was not forwarded.\n",
        retry_after=60,
        tunnel="robotsgate could not decide this tunnel; it was refused.\n",
        when="anything went wrong inside robotsgate: fail closed, never forwarded; the "
             "traceback goes to mitmproxy's log"),
}

# What the reasons that are no answer of the proxy's mean: requests forwarded (and why they
# waited, or not), tunnels let through, connections closed.
FORWARDED: Final[dict[Reason, str]] = {
    Reason.ALLOWED: "robots.txt allows it, and there is no interval to keep",
    Reason.ROBOTS_TXT: "a bot's own request for /robots.txt: always allowed",
    Reason.TUNNEL: "a CONNECT decided on its host alone (ignore_hosts, allow_hosts)",
    Reason.NOT_INTERCEPTED: "a CONNECT that mitmproxy then passes through unseen (event tunnel)",
    Reason.CRAWL_DELAY: "forwarded after the wait robots.txt's Crawl-delay asks for",
    Reason.CRAWL_DELAY_CLAMPED: "forwarded after a wait of robots_max_crawl_delay, the site's "
                                "longer Crawl-delay cut down to it",
    Reason.REQUEST_RATE: "forwarded after the wait robots.txt's Request-rate asks for",
    Reason.MIN_DELAY: "forwarded after the wait robots_min_delay_ms asks for",
    Reason.PUSHBACK: "forwarded after the pause the origin asked for (its own 429 or 503)",
    Reason.BOT_SIGNED: "forwarded with the Web Bot Auth signature the bot made itself, which "
                       "the proxy leaves as it is (event signature)",
    Reason.SIGNATURE_ASKED: "the origin answered 401 or 403 with Accept-Signature: the request "
                            "was sent once more, signed as it asked (event signature)",
    Reason.LICENSE_REFUSED: "the origin answered 401 with WWW-Authenticate: License to a "
                            "request that carried a licence from the site's licence server: "
                            "the licence was dropped and the request sent once more with a "
                            "new one (event license)",
    Reason.CRAWLER_CHARGED: "the origin answered 402 with a price within robots_max_price "
                            "and the budgets: the request was sent once more, signed, with "
                            "crawler-exact-price; the record's price is what the budgets "
                            "counted as charged, charged_as_written what crawler-charged said "
                            "(event payment)",
    Reason.PROTOCOL: "a connection that carries nothing robotsgate can decide (DNS, UDP, raw "
                     "QUIC, raw TCP outside a tunnel), closed at once; method is TCP, UDP, DNS "
                     "or QUIC",
    Reason.RESOLVED: "a captured bot's DNS query (robotsgate run --capture), answered by the "
                     "proxy's resolver with the address it dials for the name (the record's "
                     "address; event dns), or NXDOMAIN when the name does not resolve (its "
                     "error)",
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
