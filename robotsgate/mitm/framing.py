"""What a request must look like to be decided at all.

A request is decided on its method, target and headers; these checks refuse those that another
server could read differently than robotsgate did: targets that are not paths, bodies whose end
servers may find in different places, upgrades to protocols robotsgate cannot see into, a Host
or authority that names another host than the request goes to. Each check returns the reason
and the answer's text, or None; the request decision (robotsgate.mitm.decide) answers and
audits.
"""

from dataclasses import dataclass

from mitmproxy import http

from robotsgate import outcomes
from robotsgate.mitm.headers import RequestHeaders, drop_upgrade, well_formed
from robotsgate.origin import same_authority
from robotsgate.outcomes import Reason
from robotsgate.protocol import MAX_URL_LENGTH, url_too_long


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: Reason
    text: str


def malformed(req: http.Request, seen: RequestHeaders, *, lenient: bool) -> Refusal | None:
    """A request robotsgate cannot decide what it would carry. An h2c upgrade is dropped
    instead of refused, as mitmproxy means to (it only recognises the exact lower-case token):
    the request is then served over HTTP/1.1, decided like any other."""
    if req.path[:1] != "/" and not (req.path == "*" and req.method == "OPTIONS"):
        # HTTP/2 lets a client send any :path; servers read "private/x" as /private/x, and
        # robots.txt rules are about paths that start with '/'.
        return Refusal(Reason.TARGET, outcomes.text(Reason.TARGET))
    if url_too_long(req.path):
        # Servers refuse request lines this long anyway; a decision's work grows with the
        # path, and one site's hostile robots.txt must not hold the others.
        return Refusal(Reason.URL_TOO_LONG,
                       outcomes.text(Reason.URL_TOO_LONG, limit=MAX_URL_LENGTH))
    if lenient and not well_formed(req):
        # validate_inbound_headers off: mitmproxy no longer refuses these, and a control
        # character in a method, path or header name becomes a second request on the way to an
        # HTTP/1 origin.
        return Refusal(Reason.FRAMING, outcomes.text(
            Reason.FRAMING, what="with control characters or separators where HTTP allows "
            "none (method, path, header names)"))
    if _smuggled(seen):
        # Servers disagree on where such a body ends, and the rest would be read as another
        # request nobody decided (mitmproxy refuses these too, unless validate_inbound_headers
        # is off).
        return Refusal(Reason.FRAMING, outcomes.text(
            Reason.FRAMING, what="whose body length servers may read differently "
            "(Content-Length with Transfer-Encoding, several Content-Length, or a coding other "
            "than chunked)"))
    if seen.upgrade is None:
        return None
    # After a 101 the connection would be a pipe that robotsgate cannot see into.
    tokens = {token.strip().lower() for token in seen.upgrade.split(",")} - {""}
    if tokens == {"websocket"}:
        return None  # the handshake is decided on its path like any request
    if tokens <= {"h2c"}:
        drop_upgrade(req.headers)
        return None
    return Refusal(Reason.UPGRADE, outcomes.text(Reason.UPGRADE, asked=seen.upgrade))


def _smuggled(seen: RequestHeaders) -> bool:
    if not (seen.lengths or seen.encodings):
        return False
    return seen.lengths > 1 or bool(seen.lengths and seen.encodings) or bool(
        seen.encodings and [e.strip().lower() for e in seen.encodings] != [b"chunked"])


def misdirected(req: http.Request, host: str | None) -> Refusal | None:
    """A Host header, or a request target's authority (absolute form, :authority), naming
    another host than the request goes to. Servers serve by one or the other (RFC 9112 §3.2.2
    prefers the target's); both must name what was decided."""
    claimed = next((name for name in (host, req.authority) if name and not
                    same_authority(name, req.scheme, req.host, req.port)), None)
    if claimed is None:
        return None
    return Refusal(Reason.HOST_MISMATCH, outcomes.text(
        Reason.HOST_MISMATCH, claimed=claimed, host=req.host, port=req.port))
