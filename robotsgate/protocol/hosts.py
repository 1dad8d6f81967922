"""One spelling for every spelling of a host: the key of its robots.txt and of its schedule.

A bot can name one server in many ways: EXAMPLE.com, example.com., bücher.example and its
punycode, and an IP address in any form a resolver accepts (127.0.0.1, 127.1, 2130706433,
0x7f000001, 0177.0.0.1, [::ffff:127.0.0.1]). Each of them must find the same robots.txt and
wait in the same queue, or a bot could sidestep a Crawl-delay or a cached decision by spelling
the host another way.

Pure: no resolver is asked (this package does no I/O). The IPv4 forms are read as the C
library's inet_aton(3) reads them -- what getaddrinfo() accepts for a numeric host -- but
strictly: glibc's inet_aton also accepts "127.0.0.1 anything" (it stops at white space), which
getaddrinfo() refuses, and so does this module.
"""

import ipaddress
import re

# One to four parts: 0x-hex, 0-octal or decimal (inet_aton(3)). Checked before any int(): int()
# would also take '_', white space and non-ASCII digits.
_IPV4_PART = r"(?:0[xX][0-9A-Fa-f]+|[0-9]+)"
_IPV4_LIKE = re.compile(rf"{_IPV4_PART}(?:\.{_IPV4_PART}){{0,3}}")
_OCTAL = re.compile(r"0[0-7]*")


def canonical_host(host: str) -> str:
    """The one form of `host` (a host name or an IP literal, without a port).

    - names: lower-case, trailing dots removed, internationalised names in punycode (IDNA, as
      Origin.of does): bücher.EXAMPLE. -> xn--bcher-kva.example;
    - IPv4 in every form inet_aton(3) reads (1 to 4 parts, each decimal, 0-octal or 0x-hex, the
      last filling the bytes left): 127.1, 2130706433, 0x7f000001, 0177.0.0.1, 127.0.1, 0x7f.1
      -> 127.0.0.1;
    - IPv6 with or without brackets, in any spelling -> its compressed lower-case form
      (RFC 5952): [0:0::0:1] -> ::1; an IPv4-mapped address is the IPv4 address it maps:
      ::ffff:127.0.0.1 and ::ffff:7f00:1 -> 127.0.0.1;
    - a zone id is kept, as written (interface names are case-sensitive: fe80::1%eth0 and
      fe80::1%ETH0 are different links): FE80:0::1%eth0 -> fe80::1%eth0. In brackets, the URI
      form of RFC 6874 is read: [fe80::1%25eth0] -> fe80::1%eth0; without brackets '%' is the
      delimiter, as getaddrinfo() reads it. IPv4 has no zones: ::ffff:127.0.0.1%eth0 ->
      127.0.0.1. IPv6 comes out without brackets (Origin adds them to its URLs).

    A trailing dot goes from IP addresses too (127.0.0.1. -> 127.0.0.1): URL parsers read it so;
    getaddrinfo() refuses it as a number and looks it up as a name, which fails.

    Anything else (not an IP literal, not a name IDNA can encode) is returned lower-case with
    its trailing dots removed: it will not resolve either. Never raises; idempotent.
    """
    name = host.rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        return _ipv6(name[1:-1], bracketed=True) or name.lower()
    if ":" in name:
        # Before lower(): the zone keeps its case. As written first: a zone may end with a dot.
        address = _ipv6(host, bracketed=False) or _ipv6(name, bracketed=False)
        if address is not None:
            return address
    name = name.lower()
    if not name.isascii():
        try:
            encoded = name.encode("idna").decode("ascii")
        except UnicodeError:
            return name  # not a name IDNA can encode: as it is
        # IDNA maps full-width digits, dots and colons to ASCII ones: the result may be an
        # address (１２７.０.０.１), so it is read again, once (it is ASCII now).
        return canonical_host(encoded)
    number = _inet_aton(name)
    return name if number is None else str(ipaddress.IPv4Address(number))


def _inet_aton(text: str) -> int | None:
    """The address inet_aton(3) reads in `text` (with nothing after it), or None."""
    if _IPV4_LIKE.fullmatch(text) is None:
        return None
    parts: list[int] = []
    for part in text.split("."):
        if part[:2] in ("0x", "0X"):
            digits, base = part[2:].lstrip("0"), 16
        elif part[0] == "0":
            if _OCTAL.fullmatch(part) is None:
                return None  # 08, 09: not octal, and not decimal either
            digits, base = part.lstrip("0"), 8
        else:
            digits, base = part, 10
        if len(digits) > 11:  # more than 32 bits in any base; keeps int() cheap
            return None
        parts.append(int(digits or "0", base))
    *leading, last = parts
    free = 8 * (4 - len(leading))  # the last part fills the bytes the others leave
    if any(byte > 255 for byte in leading) or last >= 1 << free:
        return None
    number = 0
    for byte in leading:
        number = number << 8 | byte
    return number << free | last


def _ipv6(text: str, *, bracketed: bool) -> str | None:
    address_part, percent, zone = text.partition("%")
    if bracketed and zone.startswith("25"):
        text = address_part + percent + zone[2:]  # RFC 6874: in a URI the zone starts with %25
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError:
        return None
    mapped = address.ipv4_mapped
    return str(address) if mapped is None else str(mapped)
