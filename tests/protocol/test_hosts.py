"""canonical_host: every spelling of one host has one form (robots.txt cache key, pacing)."""

import ipaddress
import platform
import socket

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from robotsgate.protocol.hosts import canonical_host


@pytest.mark.parametrize(("host", "expected"), [
    # names
    ("example.com", "example.com"),
    ("EXAMPLE.Com", "example.com"),
    ("example.com.", "example.com"),
    ("Example.COM..", "example.com"),
    ("bücher.example", "xn--bcher-kva.example"),
    ("Bücher.EXAMPLE.", "xn--bcher-kva.example"),
    ("XN--BCHER-KVA.example", "xn--bcher-kva.example"),
    ("bücher。example", "xn--bcher-kva.example"),  # an ideographic full stop separates labels
    # IPv4, as inet_aton(3) reads it
    ("127.0.0.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("0X7F000001", "127.0.0.1"),
    ("0x7F.1", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("0177.0.0.01", "127.0.0.1"),
    ("00000000000000000177.1", "127.0.0.1"),
    ("0x0000000000000000007f.1", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"),  # the trailing dot goes, as for names
    ("0", "0.0.0.0"),
    ("4294967295", "255.255.255.255"),
    ("1.16777215", "1.255.255.255"),
    ("1.2.65535", "1.2.255.255"),
    ("１２７.０.０.１", "127.0.0.1"),  # full-width digits: IDNA maps them to ASCII first
    # IPv6, with or without brackets
    ("::1", "::1"),
    ("[::1]", "::1"),
    ("[0:0:0:0:0:0:0:1]", "::1"),
    ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"),
    ("[2001:0db8::0001]", "2001:db8::1"),
    ("::ffff:127.0.0.1", "127.0.0.1"),
    ("[::FFFF:127.0.0.1]", "127.0.0.1"),
    ("::ffff:7f00:1", "127.0.0.1"),
    ("0:0:0:0:0:ffff:7f00:0001", "127.0.0.1"),
    ("::127.0.0.1", "::7f00:1"),  # IPv4-compatible (deprecated) is not IPv4-mapped
    ("64:ff9b::7f00:1", "64:ff9b::7f00:1"),  # nor is NAT64
    # zone ids: kept as written (interface names are case-sensitive)
    ("fe80::1%eth0", "fe80::1%eth0"),
    ("FE80:0::1%eth0", "fe80::1%eth0"),
    ("fe80::1%ETH0", "fe80::1%ETH0"),
    ("[fe80::1%25eth0]", "fe80::1%eth0"),  # RFC 6874: '%' is escaped in a URI
    ("[fe80::1%eth0]", "fe80::1%eth0"),
    ("fe80::1%1", "fe80::1%1"),
    ("::ffff:127.0.0.1%eth0", "127.0.0.1"),  # IPv4 has no zones
    # neither an address nor a name: as written, lower-case
    ("08", "08"),  # 8 is not an octal digit
    ("0x", "0x"),
    ("256.0.0.1", "256.0.0.1"),
    ("4294967296", "4294967296"),
    ("1.16777216", "1.16777216"),
    ("1.2.3.4.5", "1.2.3.4.5"),
    ("1..2", "1..2"),
    ("127.0.0.1 junk", "127.0.0.1 junk"),  # glibc's inet_aton takes it, getaddrinfo does not
    (" 127.0.0.1", " 127.0.0.1"),
    ("1_0.0.0.1", "1_0.0.0.1"),  # int() would read 1_0 as 10
    ("[127.0.0.1]", "[127.0.0.1]"),
    ("[Example.com]", "[example.com]"),
    ("[::1].", "::1"),
    ("0::.", "::"),
    ("［::1］", "::1"),  # full-width brackets: IDNA maps them to ASCII ones
    ("１２７.０.０.１．", "127.0.0.1"),
    ("[v1.fe]", "[v1.fe]"),
    ("::1%", "::1%"),
    ("A:B", "a:b"),
    ("", ""),
    ("a" * 64 + ".Example", "a" * 64 + ".example"),  # a label IDNA refuses
    ("Ü" * 64 + ".example", "ü" * 64 + ".example"),
])
def test_canonical_host(host: str, expected: str) -> None:
    assert canonical_host(host) == expected
    assert canonical_host(expected) == expected


# -- every spelling of an IPv4 address --------------------------------------------------------

def _number(value: int, kind: str, zeros: int) -> str:
    if kind == "hex":
        return "0x" + "0" * zeros + f"{value:x}"
    if kind == "HEX":
        return "0X" + "0" * zeros + f"{value:X}"
    if kind == "octal":
        return "0" + "0" * zeros + f"{value:o}"
    return str(value)


@st.composite
def spellings(draw: st.DrawFn) -> tuple[str, str]:
    """(a spelling, the dotted form) of a random IPv4 address."""
    address = ipaddress.IPv4Address(draw(st.integers(0, 2**32 - 1)))
    octets = address.packed
    form = draw(st.sampled_from(("dotted", "4", "3", "2", "1", "mapped", "mapped-hex")))
    if form == "mapped":
        text = "::ffff:" + str(address)
    elif form == "mapped-hex":
        text = f"0:0:0:0:0:ffff:{octets[0] << 8 | octets[1]:x}:{octets[2] << 8 | octets[3]:x}"
    else:
        count = 4 if form == "dotted" else int(form)
        # the first count-1 parts are octets, the last one fills the bytes left
        values = [*octets[: count - 1], int.from_bytes(octets[count - 1:])]
        kinds = ["decimal"] * count if form == "dotted" else draw(
            st.lists(st.sampled_from(("decimal", "octal", "hex", "HEX")),
                     min_size=count, max_size=count))
        zeros = draw(st.lists(st.integers(0, 3), min_size=count, max_size=count))
        text = ".".join(_number(v, k, z) for v, k, z in zip(values, kinds, zeros, strict=True))
    if ":" in text:
        if draw(st.booleans()):
            text = f"[{text.upper()}]"
    elif draw(st.integers(0, 4)) == 0:
        text += "."  # a trailing dot, as names have
    return text, str(address)


@settings(max_examples=2000, deadline=None)
@given(spellings())
@example(("127.1", "127.0.0.1"))
@example(("0x7f.1", "127.0.0.1"))
@example(("0177.0.0.1", "127.0.0.1"))
@example(("2130706433", "127.0.0.1"))
def test_every_spelling_of_an_ipv4_address_is_its_dotted_form(case: tuple[str, str]) -> None:
    spelling, dotted = case
    assert canonical_host(spelling) == dotted, spelling


# -- idempotence --------------------------------------------------------------------------------

_PIECES = ("0", "1", "7", "8", "9", "255", "256", "0x", "0X", "f", "F", "ff", ".", ".", ":",
           "::", "[", "]", "%", "%25", "eth", "a", "Z", "-", "xn--", "ü", "Ü", "。", "１", " ",
           "_", "ffff")
hosts = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=12).map("".join),
    st.text(max_size=20),
    spellings().map(lambda case: case[0]),
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hosts)
def test_canonical_host_is_idempotent(host: str) -> None:
    once = canonical_host(host)
    assert canonical_host(once) == once, (host, once)


@settings(max_examples=500, deadline=None)
@given(st.from_regex(r"[A-Za-z0-9-]{1,10}(\.[A-Za-z0-9-]{1,10}){0,3}\.?", fullmatch=True))
def test_ascii_names_are_only_lower_cased(name: str) -> None:
    canonical = canonical_host(name)
    plain = name.rstrip(".").lower()
    try:
        ipaddress.IPv4Address(canonical)
    except ValueError:
        assert canonical == plain
    else:
        assert all(c in "0123456789abcdefx." for c in plain)  # it was a numeric spelling


# -- the resolver agrees -------------------------------------------------------------------------

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

_PART = st.one_of(
    st.integers(0, 2**32).map(str),
    st.integers(0, 300).map(str),
    st.integers(0, 2**32).map(lambda n: f"0{n:o}"),
    st.integers(0, 2**32).map(lambda n: f"0x{n:x}"),
    st.sampled_from(("0", "00", "08", "09", "0x", "0X1", "", "1a", "0xg", " 1", "1 ")),
)


def numeric_host(text: str) -> str | None:
    """What getaddrinfo() makes of `text` as a numeric host; None when it is not one."""
    try:
        found = socket.getaddrinfo(text, 80, type=socket.SOCK_STREAM,
                                   flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError, ValueError):
        return None
    return str(found[0][4][0])


@pytest.mark.skipif(not GLIBC, reason="numeric host forms are glibc's")
@settings(max_examples=1000, deadline=None)
@given(st.lists(_PART, min_size=1, max_size=5).map(".".join))
@example("127.1")
@example("127.0.0.1 junk")
@example("0x")
def test_ipv4_spellings_are_read_as_getaddrinfo_reads_them(text: str) -> None:
    # Trailing dots go first, as for names (getaddrinfo() refuses "127.0.0.1.", URL parsers
    # read it as 127.0.0.1): one key for both is the careful choice.
    text = text.rstrip(".")
    resolved = numeric_host(text)
    if resolved is None:
        assert canonical_host(text) == text.lower()
    else:
        assert canonical_host(text) == resolved, text


@pytest.mark.skipif(not GLIBC, reason="numeric host forms are glibc's")
@settings(max_examples=1000, deadline=None)
@given(st.ip_addresses(v=6), st.booleans())
def test_ipv6_spellings_are_read_as_getaddrinfo_reads_them(address: ipaddress.IPv6Address,
                                                           exploded: bool) -> None:
    text = address.exploded if exploded else str(address)
    resolved = numeric_host(text)
    assert resolved is not None
    mapped = ipaddress.IPv6Address(resolved).ipv4_mapped
    assert canonical_host(text.upper()) == (resolved if mapped is None else str(mapped))
