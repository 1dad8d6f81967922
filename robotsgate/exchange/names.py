"""One destination for every name a request goes by.

A request names where it goes several times: the CONNECT target of its tunnel (where the proxy
sends it), its absolute target or :authority, its Host header, and the TLS server name the
client sent inside the tunnel. Servers route by any one of them (a name-based virtual host by
Host, a CDN edge or a TLS passthrough front by the server name), so every one must name the
origin that was decided, in any spelling that is the same origin (robotsgate.origin), or the
request is refused. What leaves then names that origin once more, in its one canonical
spelling: Host / :authority and the upstream server name are written by the proxy.
"""

from robotsgate import outcomes
from robotsgate.exchange.request import Facts, Refusal, Seen
from robotsgate.origin import Origin, same_authority
from robotsgate.outcomes import Reason
from robotsgate.protocol.hosts import canonical_host


def destination(facts: Facts, origin: Origin, seen: Seen) -> Refusal | None:
    """Why the request's names disagree with `origin` (where it goes), or None."""
    if "%" in origin.host:
        # An IPv6 zone id names an interface of the proxy's own machine: one host would have
        # as many robots.txt copies and schedules as there are ways to write a zone.
        return Refusal(Reason.DESTINATION, outcomes.text(
            Reason.DESTINATION, where=origin.host,
            why="an IPv6 zone id names an interface of the proxy's machine"))
    authority = facts.authority.decode("ascii", "surrogateescape") if facts.authority else ""
    for claimed in (seen.host, authority):
        if claimed and not same_authority(claimed, facts.scheme, facts.host, facts.port):
            return Refusal(Reason.HOST_MISMATCH, outcomes.text(
                Reason.HOST_MISMATCH, claimed=claimed, host=facts.host, port=facts.port))
    if facts.server_name is not None and canonical_host(facts.server_name) != origin.host:
        return Refusal(Reason.SERVER_NAME, outcomes.text(
            Reason.SERVER_NAME, claimed=facts.server_name, host=origin.host))
    return None
