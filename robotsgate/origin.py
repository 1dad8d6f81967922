"""Origin: what one robots.txt and one politeness schedule are kept for.

RFC 9309 §2.3: a robots.txt applies to one scheme, host and port. Every spelling of a host that a
resolver accepts (case, a trailing dot, IDN, IP literals written in other bases) is one Origin.
"""

from dataclasses import dataclass, field

from robotsgate.protocol.hosts import canonical_host

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Origin:
    """One robots.txt per scheme + host + port (RFC 9309 §2.3)."""

    scheme: str
    host: str
    port: int
    # Worked out once: the proxy asks for them on every request.
    key: str = field(init=False, repr=False, compare=False)  # scheme://host[:port]
    robots_url: str = field(init=False, repr=False, compare=False)
    # host[:port], IPv6 in brackets, the default port left out: what the requests that leave
    # say in Host (or :authority), whatever spelling the bot used.
    authority: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        authority = self._netloc()
        key = f"{self.scheme}://{authority}"
        object.__setattr__(self, "authority", authority)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "robots_url", f"{key}/robots.txt")

    @classmethod
    def of(cls, scheme: str, host: str, port: int | None) -> "Origin":
        scheme = scheme.lower()
        # example.com. and EXAMPLE.com are example.com; the default port is no port; an
        # internationalised name has one form, its punycode (bücher.example is xn--bcher-kva...);
        # an IP address has one form whichever way it was written (127.1, 0x7f000001 and
        # [::ffff:127.0.0.1] are 127.0.0.1): one robots.txt and one schedule per host.
        return cls(scheme, canonical_host(host), port or _DEFAULT_PORTS.get(scheme, 80))

    def _netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = _DEFAULT_PORTS.get(self.scheme)
        return host if self.port == default else f"{host}:{self.port}"


def same_authority(claimed: str, scheme: str, host: str, port: int) -> bool:
    """Whether a Host header (`host[:port]`, IPv6 in brackets) names the request's target."""
    if claimed == f"{host}:{port}" or (claimed == host and port == _DEFAULT_PORTS.get(scheme)):
        return True  # as clients write it: nothing to normalise
    claimed = claimed.strip()
    if claimed.startswith("["):
        name, _, rest = claimed[1:].partition("]")
        port_text = rest.removeprefix(":")
    else:
        name, _, port_text = claimed.rpartition(":") if ":" in claimed else (claimed, "", "")
    try:
        claimed_port = int(port_text) if port_text else None
    except ValueError:
        return False
    return Origin.of(scheme, name, claimed_port) == Origin.of(scheme, host, port)
