"""Where bots may be sent: the classes of addresses the proxy dials, and those it refuses.

Pure: the addresses come in resolved, with whether each is one of this machine's own (the
resolver, robotsgate.egress.resolver, finds that out); this says which may be dialled. The proxy
dials exactly the address classified here (as Smokescreen does), never the name again: a name that
resolves elsewhere by the time of the connection cannot take a bot past the decision.

Three rules, in this order:

1. The proxy's own listening sockets (its proxy ports and its metrics port, on any address of
   this machine) are never reached through it, whatever the configuration: a bot asking for
   them would make the proxy connect to itself, again and again.
2. An address in `robots_egress_allow` is reachable.
3. An address of a class in DEFAULT_DENY, or of a class or in a network that
   `robots_egress_deny` adds, is refused.

The classes, each a fixed list of networks (IPv4-mapped IPv6 addresses are their IPv4 address):

- loopback: 127.0.0.0/8, ::1
- this-host: any address of this machine's own interfaces
- link-local: 169.254.0.0/16 (cloud metadata services: 169.254.169.254), fe80::/10
- private: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 (shared address space),
  fc00::/7
- unspecified: 0.0.0.0/8, :: (connecting to them reaches this machine)
- multicast: 224.0.0.0/4, ff00::/8
- reserved: 240.0.0.0/4 (255.255.255.255 included)

An IPv6 address that carries an IPv4 address reaches that IPv4 address wherever a translator or
relay is on the path (a NAT64 gateway, a 6to4 relay, a SIIT translator; the next hop decides,
not this machine): it is refused when the address itself, or any IPv4 address it carries, is
(`carried`). An allowed entry opens the address as written only: `127.0.0.1` names this
machine's loopback, `64:ff9b::7f00:1` the translator's.
"""

import ipaddress
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from robotsgate.egress.addresses import Address, Network, address_of


def _networks(*cidrs: str) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(cidr) for cidr in cidrs)


CLASSES: Final[Mapping[str, tuple[Network, ...]]] = {
    "loopback": _networks("127.0.0.0/8", "::1/128"),
    "this-host": (),  # not networks: the resolver says which addresses are this machine's
    "link-local": _networks("169.254.0.0/16", "fe80::/10"),
    "private": _networks("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10",
                         "fc00::/7"),
    "unspecified": _networks("0.0.0.0/8", "::/128"),
    "multicast": _networks("224.0.0.0/4", "ff00::/8"),
    "reserved": _networks("240.0.0.0/4"),
}
# What a forward proxy for bots on the open web never needs to reach: its own machine (its
# Redis, its metrics, itself), the cloud's metadata service, and addresses that are no host.
# Private networks are reachable: crawling an intranet is a common use; a sandbox adds them.
DEFAULT_DENY: Final = ("loopback", "this-host", "link-local", "unspecified", "multicast",
                       "reserved")


# Where IPv6 addresses carry an IPv4 address (the kind, for the refusal's words).
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 §2.1, the well-known prefix
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215, for local use
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")  # RFC 3056
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # SIIT's IPv4-translated (RFC 2765)
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # IPv4-compatible (RFC 4291 §2.5.5.1, deprecated)
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")  # IPv4-mapped: the IPv4 address itself
# RFC 6052 §2.2: where the IPv4 address sits after a prefix of each length (bytes of the IPv6
# address; byte 8, bits 64-71, is always zero and never part of it), and where its suffix
# starts. A local-use prefix is 48 bits or longer; its length is the operator's choice.
_LAYOUTS = ((48, (6, 7, 9, 10), 11), (56, (7, 9, 10, 11), 12), (64, (9, 10, 11, 12), 13))


def carried(ip: Address) -> tuple[tuple[ipaddress.IPv4Address, str], ...]:
    """The IPv4 addresses an IPv6 address carries, each with how: one for NAT64's well-known
    prefix, 6to4, SIIT and the IPv4-compatible form; for a local-use NAT64 prefix
    (64:ff9b:1::/48), one for each prefix length it may have been written after: /96 always,
    and /48, /56, /64 when the bits RFC 6052 keeps zero are (a prefix whose length is not known
    is read every way it can be, and refused when any reading is)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return ()
    packed = ip.packed
    low = ipaddress.IPv4Address(packed[12:])
    if ip in _NAT64:
        return ((low, "NAT64, 64:ff9b::/96"),)
    if ip in _SIX_TO_FOUR:
        return ((ipaddress.IPv4Address(packed[2:6]), "6to4, 2002::/16"),)
    if ip in _TRANSLATED:
        return ((low, "SIIT, ::ffff:0:0:0/96"),)
    if ip in _COMPATIBLE:
        # :: and ::1 are the unspecified and loopback addresses themselves.
        return ((low, "IPv4-compatible, ::/96"),) if int(ip) > 1 else ()
    if ip in _NAT64_LOCAL:
        readings = [(low, "NAT64, 64:ff9b:1::/48 read as a /96")]
        if packed[8] == 0:
            readings += [(ipaddress.IPv4Address(bytes(packed[i] for i in at)),
                          f"NAT64, 64:ff9b:1::/48 read as a /{length}")
                         for length, at, suffix in _LAYOUTS if not any(packed[suffix:])]
        return tuple(readings)
    return ()


def _ipv4_meaning(network: Network) -> Network:
    """An IPv4-mapped network (::ffff:10.0.0.0/104) as the IPv4 network it means: addresses in
    that form are classified as the IPv4 address they are (address_of), so the IPv6 network
    would match none of them."""
    if isinstance(network, ipaddress.IPv6Network) and network.prefixlen >= 96 and \
            network.subnet_of(_MAPPED):
        return ipaddress.IPv4Network((int(network.network_address) & 0xFFFFFFFF,
                                      network.prefixlen - 96))
    return network


@dataclass(frozen=True, slots=True)
class Socket:
    """A socket of the proxy's own: `host` is the address it listens on ("" or an unspecified
    address: every address of this machine)."""

    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Refused:
    """Why an address may not be dialled, in words, and the class (or rule) that says so."""

    address: str
    port: int
    why: str  # "the proxy's own port", or the class or network that denies it

    @property
    def where(self) -> str:
        shown = f"[{self.address}]" if ":" in self.address else self.address
        return f"{shown}:{self.port}"

    def describe(self) -> str:
        return f"{self.where} ({self.why})"


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """Which addresses bots, and the proxy's own robots.txt fetches, may reach."""

    deny_classes: frozenset[str]
    deny_networks: tuple[Network, ...]
    allow: tuple[tuple[Network, int | None], ...]  # a network, and its port when only one
    own: tuple[Socket, ...] = ()

    @classmethod
    def parse(cls, deny: Iterable[str], allow: Iterable[str],
              own: Iterable[Socket] = ()) -> "EgressPolicy":
        """`deny`: class names and networks, besides DEFAULT_DENY's; `allow`: networks or
        addresses, each with an optional port (`127.0.0.1:8000`, `[::1]:8000`). Raises
        ValueError naming the entry."""
        classes: set[str] = set(DEFAULT_DENY)
        networks: list[Network] = []
        for entry in deny:
            name = entry.strip().lower()
            if name in CLASSES:
                classes.add(name)
                continue
            try:
                networks.append(_ipv4_meaning(ipaddress.ip_network(name, strict=False)))
            except ValueError:
                raise ValueError(f"{entry!r} is neither a class ({', '.join(CLASSES)}) nor a "
                                 f"network such as 10.0.0.0/8") from None
        allowed = tuple(_allow_entry(entry) for entry in allow)
        return cls(frozenset(classes), tuple(networks), allowed, tuple(own))

    def with_own(self, own: Iterable[Socket]) -> "EgressPolicy":
        return EgressPolicy(self.deny_classes, self.deny_networks, self.allow, tuple(own))

    def refusal(self, address: str, port: int, *,
                local: bool | Callable[[str], bool]) -> Refused | None:
        """None when `address`:`port` may be dialled; else why not. `local`: whether the
        address is one of this machine's own (the resolver knows), or how to ask it of an
        address (of the IPv4 addresses it carries too)."""
        ip = address_of(address)
        if ip is None:
            return Refused(address, port, "not an IP address")
        shown = str(ip)
        inside = carried(ip)
        if callable(local):
            asked = local
            local = asked(shown)
            inside_local = [asked(str(each)) for each, _ in inside]
        else:
            inside_local = [False] * len(inside)
        classes = self._classes(ip, local=local)
        everywhere = classes + [name for (each, _), each_local in
                                zip(inside, inside_local, strict=True)
                                for name in self._classes(each, local=each_local)]
        if self._own(ip, port, everywhere):
            return Refused(shown, port, "the proxy's own port")
        if any(ip.version == net.version and ip in net and (only is None or only == port)
               for net, only in self.allow):
            return None
        for name in classes:
            if name in self.deny_classes:
                return Refused(shown, port, f"a {name} address, refused unless "
                               f"robots_egress_allow names it")
        for net in self.deny_networks:
            if ip.version == net.version and ip in net:
                return Refused(shown, port, f"in {net}, refused by robots_egress_deny")
        for (each, how), each_local in zip(inside, inside_local, strict=True):
            refused = self._carried_refusal(each, local=each_local)
            if refused is not None:
                return Refused(shown, port, f"{refused}, carried by this address ({how})")
        return None

    def _carried_refusal(self, ip: ipaddress.IPv4Address, *, local: bool) -> str | None:
        """Why an IPv4 address carried inside an IPv6 one is refused, or None."""
        for name in self._classes(ip, local=local):
            if name in self.deny_classes:
                return f"{ip} is a {name} address, refused unless robots_egress_allow names " \
                       f"the address dialled"
        for net in self.deny_networks:
            if net.version == 4 and ip in net:
                return f"{ip} is in {net}, refused by robots_egress_deny"
        return None

    def _classes(self, ip: Address, *, local: bool) -> list[str]:
        found = [name for name, nets in CLASSES.items()
                 if any(ip.version == net.version and ip in net for net in nets)]
        if local:
            found.append("this-host")
        return found

    def _own(self, ip: Address, port: int, classes: list[str]) -> bool:
        """Whether `ip`:`port` reaches one of the proxy's own sockets: its port on its address,
        or on any address of this machine when it listens on all of them (or on loopback)."""
        for sock in self.own:
            if sock.port != port:
                continue
            if "this-host" in classes or "loopback" in classes or "unspecified" in classes:
                return True  # every local address reaches a socket bound to all of them
            if address_of(sock.host) == ip:
                return True
        return False


def _allow_entry(entry: str) -> tuple[Network, int | None]:
    text = entry.strip()
    port: int | None = None
    if text.startswith("["):
        inner, _, rest = text[1:].partition("]")
        text = inner
        if rest:
            port = _port(entry, rest.removeprefix(":"))
    elif text.count(":") == 1:  # IPv4 (or IPv4 network) with a port
        text, _, port_text = text.partition(":")
        port = _port(entry, port_text)
    try:
        return _ipv4_meaning(ipaddress.ip_network(text, strict=False)), port
    except ValueError:
        raise ValueError(f"{entry!r} is not a network or address, with an optional port "
                         f"(10.0.0.0/8, 127.0.0.1:8000, [::1]:8000)") from None


def _port(entry: str, text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{entry!r}: the port must be a number from 1 to 65535")
    return int(text)
