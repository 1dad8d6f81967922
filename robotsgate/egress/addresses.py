"""IP addresses and networks as the egress policy, the resolver and the identity map read
them: one type for each, and an address read from text the one way (an IPv4-mapped IPv6
address is its IPv4 address, as the policy classifies it).
"""

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def address_of(text: str) -> Address | None:
    """The IP address `text` is (an IPv4-mapped IPv6 address is its IPv4 address), or None."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address
