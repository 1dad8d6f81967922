"""Which bot is this? Product tokens for requests, from configuration before headers.

Several bots can share one proxy. Each request's product token comes from, in this order:
the `robots_agents` map (by proxy-auth user name, then by client address or network), the
proxy-auth user name itself, the `robots_agent` option, and only then the User-Agent header --
which the bot controls, so it is the weakest source.
"""

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from robotsgate.egress.addresses import Network
from robotsgate.protocol import PRODUCT_TOKEN, is_product_token

IdentitySource = Literal["map-user", "map-address", "proxyauth", "option", "user-agent"]


@dataclass(frozen=True, slots=True)
class Identity:
    token: str | None  # None: decide by the User-Agent header
    source: IdentitySource

    def mismatch(self, user_agent: str | None) -> bool | None:
        """Whether a configured token is missing from the User-Agent; None when not configured."""
        if self.token is None or self.source == "user-agent":
            return None
        return self.token.lower() not in (user_agent or "").lower()


def by_address[T](networks: tuple[tuple[Network, T], ...], address: str | None) -> T | None:
    """The value of the first network (most specific first) that holds `address`; None when
    none does or it is no address. ::ffff:10.0.0.1 is 10.0.0.1, and a zone (%eth0) is left
    out."""
    if address is None or not networks:
        return None
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for network, value in networks:
        if ip.version == network.version and ip in network:
            return value
    return None


_BY_USER_AGENT = Identity(None, "user-agent")  # the common answer, shared: a value


@dataclass(frozen=True, slots=True)
class AgentMap:
    users: dict[str, str]
    networks: tuple[tuple[Network, str], ...]  # most specific first

    @classmethod
    def parse(cls, entries: Iterable[str]) -> "AgentMap":
        """Entries `KEY=Token`; KEY is an IP address or network (CIDR), else a user name.

        Raises ValueError naming the entry that cannot be read.
        """
        users: dict[str, str] = {}
        networks: list[tuple[Network, str]] = []
        for entry in entries:
            key, sep, token = entry.partition("=")
            key, token = key.strip(), token.strip()
            if not sep or not key or not is_product_token(token):
                raise ValueError(f"{entry!r} is not KEY=Token (KEY a user name, an address or a "
                                 f"network such as 10.0.0.0/8; Token letters, '-' and '_')")
            key = key.removeprefix("user:")
            try:
                network = ipaddress.ip_network(key, strict=False)
            except ValueError:
                users[key] = token
            else:
                networks.append((network, token))
        networks.sort(key=lambda item: item[0].prefixlen, reverse=True)
        return cls(users, tuple(networks))

    def resolve(self, *, user: str | None, address: str | None,
                agent_option: str | None) -> Identity:
        if user is not None and user in self.users:
            return Identity(self.users[user], "map-user")
        token = by_address(self.networks, address)
        if token is not None:
            return Identity(token, "map-address")
        if user is not None and is_product_token(user):
            return Identity(user, "proxyauth")
        if agent_option:
            return Identity(agent_option, "option")
        return _BY_USER_AGENT


def is_product(user_agent: str) -> bool:
    """Whether a User-Agent header names any product at all (so that it can pick a group)."""
    return PRODUCT_TOKEN.search(user_agent) is not None
