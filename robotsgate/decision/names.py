"""One destination for every name a request goes by.

A request names where it goes several times: the CONNECT target of its tunnel (where the proxy
sends it), its absolute target or :authority, its Host header, and the TLS server name the
client sent inside the tunnel. Servers route by any one of them (a name-based virtual host by
Host, a CDN edge or a TLS passthrough front by the server name), so every one must name the
origin that was decided, in any spelling that is the same origin (robotsgate.origin), or the
request is refused. What leaves then names that origin once more, in its one canonical
spelling: Host / :authority and the upstream server name are written by the proxy.
"""

from dataclasses import replace

from robotsgate import outcomes
from robotsgate.decision.request import Facts, Refusal, Seen
from robotsgate.egress.addresses import address_of
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


def captured(facts: Facts) -> Facts:
    """A captured request's facts (`host` the address the bot connected to), as if it had come
    through a tunnel to the host it names.

    A bot that knows nothing of the proxy connects to an address and names its host in Host
    (or :authority), and in its TLS server name. That name is what robots.txt is fetched and
    the request decided for, at the port the bot connected to; `connected_to` then holds it to
    the address. No name at all: the address is the host (an IP-literal target)."""
    seen = Seen.of(facts.fields, set())
    authority = facts.authority.decode("ascii", "surrogateescape") if facts.authority else ""
    named = _host_of(seen.host or authority) or facts.server_name
    return replace(facts, host=named or facts.host, connected=facts.host)


def connected_to(facts: Facts, origin: Origin, dial: str | None) -> Refusal | None:
    """A captured request's origin must be at the address the bot connected to: the address
    the proxy would dial for it (the one its resolver answered the bot's DNS query with). A
    name at another address, or at none, is a claim the connection does not bear out."""
    connected = facts.connected
    if connected is None:
        return None
    if dial is not None and address_of(dial) == address_of(connected):
        return None
    return Refusal(Reason.HOST_MISMATCH, outcomes.text(
        Reason.HOST_MISMATCH, claimed=origin.authority, host=connected, port=facts.port))


def _host_of(authority: str) -> str:
    """The host of a `host[:port]` (IPv6 in brackets)."""
    authority = authority.strip()
    if authority.startswith("["):
        return authority[1:].partition("]")[0]
    return authority.rpartition(":")[0] if authority.count(":") == 1 else authority
