"""A request as the proxy received it (`Facts`), and what must hold of it to be decided at all.

Facts are read from mitmproxy's view of a request by the mitmproxy layer and from a URL by
`robotsgate check`; everything here is pure. A request is decided on its method, target and
names; these checks refuse those that another server could read differently than robotsgate
did: bytes HTTP/1.1 cannot carry (whatever mitmproxy's `validate_inbound_headers` let in),
targets that are not paths, bodies whose end servers may find in different places, upgrades to
protocols robotsgate cannot see into.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from robotsgate import outcomes
from robotsgate.outcomes import Reason
from robotsgate.protocol import MAX_URL_LENGTH, url_too_long
from robotsgate.values import quick_init

Fields = Sequence[tuple[bytes, bytes]]


@quick_init  # made for every request (robotsgate.values)
@dataclass(frozen=True, slots=True)
class Facts:
    """What names, frames and identifies one request, as received.

    `host` and `port` are where the proxy would send it: the absolute target's (or Host's)
    in a plain proxy request, the tunnel's CONNECT target inside a tunnel.
    """

    scheme: str
    host: str
    port: int
    method: bytes
    target: bytes  # path and query, as on the request line (or :path)
    authority: bytes  # the absolute target's authority or :authority; b"" when none
    fields: Fields  # every header field, raw
    http2: bool = False  # HTTP/2 or HTTP/3: no header has to say whether a body follows
    server_name: str | None = None  # the TLS server name the client sent, inside a tunnel
    client: str | None = None  # the client's address
    user: str | None = None  # the proxy-auth user name
    # Captured (robotsgate run --capture): the address the bot itself connected to, `host`;
    # the request is then decided for the host its Host (or server name) names, which must be
    # at that address (robotsgate.decision.names.connected_to).
    connected: str | None = None

    @property
    def path(self) -> str:
        return self.target.decode("utf-8", "surrogateescape")  # as mitmproxy decodes it


# Header names robotsgate reads, and those it never forwards: the proxy's own credentials
# (mitmproxy's proxyauth removes them only when it checks them), its own headers, which an
# origin must never take for something robotsgate said, and a bot's own offers to pay (HTTP 402
# pay-per-crawl, x402): only the proxy pays, within its budgets (robotsgate.mitm.payments).
_PROXY_AUTHORIZATION = b"proxy-authorization"
_OURS_PREFIX = b"x-robotsgate-"


@dataclass(slots=True)
class Seen:
    """What robotsgate reads of a request's header fields, in one pass over them."""

    host: str | None = None
    hosts: int = 0  # Host field lines
    user_agent: str | None = None
    referer: str | None = None
    upgrade: str | None = None
    folded: bool = False  # a value continued on the next line (obs-fold), or with a bare CR/LF
    lengths: int = 0  # Content-Length fields
    encodings: tuple[bytes, ...] = ()  # Transfer-Encoding values
    bad_name: bool = False  # a field name that is not a token
    ranged: bool = False  # Range or If-Range
    connection: str | None = None  # Connection, its lines joined
    dropped: tuple[bytes, ...] = ()  # names of fields never forwarded (as received)

    @classmethod
    def of(cls, fields: Fields, tokens: set[bytes] | None = None) -> "Seen":
        """`tokens`: a memo of names already found to be tokens (bots send the same few names
        again and again), grown here up to MEMO_SIZE."""
        seen = cls()
        valid = tokens if tokens is not None else set()
        for name, value in fields:
            # CR and LF as ints: `bytes in bytes` makes and drops a TypeError first (CPython
            # tries the needle as an int), which costs more than the search (bench_instructions).
            if 13 in value or 10 in value:
                seen.folded = True
            if name not in valid:
                if not _TOKEN.fullmatch(name):
                    seen.bad_name = True
                elif len(valid) < MEMO_SIZE:
                    valid.add(name)
            lowered = name.lower()
            kind = _READ.get(lowered)
            if kind is None:
                if lowered.startswith(_OURS_PREFIX):
                    seen.dropped += (name,)
            elif kind == _HOST:
                seen.host = _fold(seen.host, value)
                seen.hosts += 1
            elif kind == _USER_AGENT:
                seen.user_agent = _fold(seen.user_agent, value)
            elif kind == _REFERER:
                seen.referer = _fold(seen.referer, value)
            elif kind == _LENGTH:
                seen.lengths += 1
            elif kind == _ENCODING:
                seen.encodings += (value,)
            elif kind == _UPGRADE:
                seen.upgrade = _fold(seen.upgrade, value)
            elif kind == _RANGE:
                seen.ranged = True
            elif kind == _CONNECTION:
                seen.connection = _fold(seen.connection, value)
            else:
                seen.dropped += (name,)
        return seen


# What one pass reads, by lower-cased field name. Keep-Alive and Proxy-Connection are about
# the bot's connection to the proxy: an intermediary removes them (RFC 9110 §7.6.1).
_HOST, _USER_AGENT, _REFERER, _LENGTH, _ENCODING, _UPGRADE, _RANGE, _CONNECTION, _DROPPED = \
    range(9)
_READ = {b"host": _HOST, b"user-agent": _USER_AGENT, b"referer": _REFERER,
         b"content-length": _LENGTH, b"transfer-encoding": _ENCODING, b"upgrade": _UPGRADE,
         b"range": _RANGE, b"if-range": _RANGE, b"connection": _CONNECTION,
         _PROXY_AUTHORIZATION: _DROPPED, b"keep-alive": _DROPPED, b"proxy-connection": _DROPPED,
         b"crawler-exact-price": _DROPPED, b"crawler-max-price": _DROPPED,
         b"payment-signature": _DROPPED, b"x-payment": _DROPPED}


def _text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")  # as mitmproxy's Headers decode values


def _fold(seen: str | None, value: bytes) -> str:
    return _text(value) if seen is None else f"{seen}, {_text(value)}"


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request the proxy answers itself: why, and the answer's text."""

    reason: Reason
    text: str


_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
MEMO_SIZE = 4096  # header names (and methods) remembered as tokens, at most
# A request target HTTP/1.1 can carry: no control character, space or DEL, and no '#': a
# fragment is never sent (RFC 9112 §3.2), and a server that resolves dot segments before it cuts
# one would serve another path than the one decided (/pub#/../private).
_TARGET = re.compile(rb"[^\x00-\x20\x7f#]+")
_AUTHORITY = re.compile(rb"[^\x00-\x20\x7f#/?@\\]*")


def unwritable(facts: Facts, seen: Seen, tokens: set[bytes] | None = None) -> Refusal | None:
    """A request HTTP/1.1 cannot carry as it was decided, or None: refused in every mode.
    `tokens`: as for Seen.of (methods are names too)."""
    method, tokens = facts.method, tokens if tokens is not None else set()
    if (method in tokens or _token(method, tokens)) and _TARGET.fullmatch(facts.target) \
            and (not facts.authority or _AUTHORITY.fullmatch(facts.authority)) \
            and not seen.bad_name:
        return None
    # What validate_inbound_headers makes sure of, when it is on; with it off, or through an
    # HTTP/2 :path, a space or control byte would end the request line early on the way to an
    # HTTP/1.1 origin and start a request nobody decided.
    return Refusal(Reason.FRAMING, outcomes.text(
        Reason.FRAMING, what="with bytes HTTP/1.1 cannot carry (a control character, space or "
        "'#' in the method or target, a header name that is not a token)"))


def _token(text: bytes, tokens: set[bytes]) -> bool:
    if not _TOKEN.fullmatch(text):
        return False
    if len(tokens) < MEMO_SIZE:
        tokens.add(text)
    return True


def malformed(facts: Facts, seen: Seen) -> Refusal | None:
    """A request robotsgate cannot decide what it would carry, or None."""
    target = facts.target
    if target[:1] != b"/" and not (target == b"*" and facts.method == b"OPTIONS"):
        # HTTP/2 lets a client send any :path; servers read "private/x" as /private/x, and
        # robots.txt rules are about paths that start with '/'.
        return Refusal(Reason.TARGET, outcomes.text(Reason.TARGET))
    if url_too_long(facts.path):
        # Servers refuse request lines this long anyway; a decision's work grows with the
        # path, and one site's hostile robots.txt must not hold the others.
        return Refusal(Reason.URL_TOO_LONG,
                       outcomes.text(Reason.URL_TOO_LONG, limit=MAX_URL_LENGTH))
    if _smuggled(seen):
        # Servers disagree on where such a body ends, and the rest would be read as another
        # request nobody decided.
        return Refusal(Reason.FRAMING, outcomes.text(
            Reason.FRAMING, what="whose body length servers may read differently "
            "(Content-Length with Transfer-Encoding, several Content-Length, or a coding other "
            "than chunked)"))
    if seen.upgrade is None:
        return None
    # After a 101 the connection would be a pipe that robotsgate cannot see into.
    if _upgrades(seen.upgrade) == {"websocket"} or h2c_offered(seen):
        return None  # WebSocket: decided on its path; h2c: the offer is dropped (Forward)
    return Refusal(Reason.UPGRADE, outcomes.text(Reason.UPGRADE, asked=seen.upgrade))


def _upgrades(upgrade: str) -> set[str]:
    return {token.strip().lower() for token in upgrade.split(",")} - {""}


# Connection's options the proxy acts on itself, for the connection it reads them on and the
# one it opens (mitmproxy closes both after the answer, keeps an HTTP/1.0 client's open, makes
# a WebSocket handshake's hop): kept as the proxy's own options for the next hop. Every other
# option names fields that were meant for the hop to the proxy only.
_OPTIONS = frozenset({"close", "keep-alive", "upgrade"})
# Fields a request is named, framed or identified by, before any decision and by others than
# robotsgate: mitmproxy read its body by Content-Length or Transfer-Encoding and named it by
# Host; the decision is for the bot its User-Agent names (robots.txt's group, robots_agents'
# check, the audit). Removing them as Connection asks would send a request other than the one
# received, framed, named or identified otherwise; keeping them would send the next hop an
# instruction to remove them after robotsgate decided. Neither: refused.
_NAMING = frozenset({"host", "content-length", "transfer-encoding", "user-agent"})


@dataclass(frozen=True, slots=True)
class Hop:
    """What a request's Connection asks of the proxy (RFC 9110 §7.6.1): the fields it names,
    removed before the decision, and the Connection the proxy writes in its place."""

    named: frozenset[bytes]  # lower-cased field names
    connection: bytes  # the options kept (b"": no Connection field)


def hop_by_hop(seen: Seen) -> Hop | Refusal | None:
    """The fields a request's Connection names, which leave with the hop they were meant for;
    a Refusal when it names one the request is named, framed or identified by; None when it
    names none (no Connection, or only options the proxy acts on: the common case)."""
    if seen.connection is None:
        return None
    options = [token.strip() for token in seen.connection.split(",")]
    options = [token for token in options if token]
    named = {token.lower() for token in options} - _OPTIONS
    if not named:
        return None
    naming = sorted(named & _NAMING)
    if naming:
        return Refusal(Reason.HOP_BY_HOP, outcomes.text(Reason.HOP_BY_HOP,
                                                        named=", ".join(naming)))
    # "upgrade" stays for a WebSocket handshake only (an h2c offer is dropped whole).
    upgrade = seen.upgrade is not None and _upgrades(seen.upgrade) == {"websocket"}
    kept = [token for token in options if token.lower() in _OPTIONS and
            (upgrade or token.lower() != "upgrade")]
    return Hop(frozenset(name.encode("utf-8", "surrogateescape") for name in named),
               ", ".join(kept).encode("utf-8", "surrogateescape"))


def h2c_offered(seen: Seen) -> bool:
    """An h2c upgrade offer, which is dropped (as mitmproxy means to; it only recognises the
    exact lower-case token): the request is then served over HTTP/1.1, decided like any
    other."""
    if seen.upgrade is None:
        return False
    tokens = _upgrades(seen.upgrade)
    return bool(tokens) and tokens <= {"h2c"}


def _smuggled(seen: Seen) -> bool:
    if not (seen.lengths or seen.encodings):
        return False
    return seen.lengths > 1 or bool(seen.lengths and seen.encodings) or bool(
        seen.encodings and [e.strip().lower() for e in seen.encodings] != [b"chunked"])
