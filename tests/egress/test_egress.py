"""Which addresses bots may reach (robotsgate.egress.policy), the resolver that classifies and pins
them (robotsgate.egress.resolver), and how bots' and sites' text is shown (robotsgate.escape)."""

import asyncio
import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.clock import FakeClock

from robotsgate.egress.policy import DEFAULT_DENY, EgressPolicy, Socket
from robotsgate.egress.resolver import Resolver, Unresolved, is_local
from robotsgate.escape import escaped

DEFAULT = EgressPolicy.parse((), ())


@pytest.mark.parametrize(("address", "why"), [
    ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("::1", "loopback"),
    ("::ffff:127.0.0.1", "loopback"), ("169.254.169.254", "link-local"),
    ("fe80::1", "link-local"), ("0.0.0.0", "unspecified"), ("::", "unspecified"),
    ("224.0.0.1", "multicast"), ("ff02::1", "multicast"), ("255.255.255.255", "reserved"),
    ("240.0.0.1", "reserved"),
])
def test_what_is_refused_by_default(address, why):
    refused = DEFAULT.refusal(address, 80, local=False)
    assert refused is not None and why in refused.why


@pytest.mark.parametrize("address", ["93.184.215.14", "10.1.2.3", "192.168.1.1", "2001:db8::1",
                                     "100.64.0.1", "fd00::1"])
def test_public_and_private_addresses_are_reachable_by_default(address):
    assert DEFAULT.refusal(address, 80, local=False) is None


def test_this_machines_own_addresses_are_refused_by_default():
    refused = DEFAULT.refusal("10.0.0.5", 6379, local=True)
    assert refused is not None and "this-host" in refused.why


def test_deny_adds_classes_and_networks_to_the_defaults():
    policy = EgressPolicy.parse(["private", "203.0.113.0/24"], ())
    assert policy.deny_classes == {"private", *DEFAULT_DENY}
    assert policy.refusal("10.1.2.3", 80, local=False) is not None
    assert policy.refusal("203.0.113.7", 80, local=False) is not None
    assert policy.refusal("93.184.215.14", 80, local=False) is None


def test_allow_opens_an_address_a_network_or_one_port():
    policy = EgressPolicy.parse((), ["127.0.0.1:8000", "10.0.0.0/8", "[::1]:9000"])
    assert policy.refusal("127.0.0.1", 8000, local=True) is None
    assert policy.refusal("127.0.0.1", 8001, local=True) is not None
    assert policy.refusal("::1", 9000, local=True) is None
    assert policy.refusal("::ffff:127.0.0.1", 8000, local=True) is None  # the same address
    assert EgressPolicy.parse(["private"], ["10.0.0.0/8"]).refusal("10.9.9.9", 80,
                                                                 local=False) is None


def test_the_proxys_own_sockets_are_never_reachable():
    policy = EgressPolicy.parse((), ["0.0.0.0/0", "::/0"],
                                [Socket("127.0.0.1", 8080), Socket("", 9108)])
    for address in ("127.0.0.1", "127.0.0.2", "0.0.0.0", "::ffff:127.0.0.1", "::1"):
        refused = policy.refusal(address, 8080, local=True)
        assert refused is not None and refused.why == "the proxy's own port", address
    assert policy.refusal("10.0.0.5", 9108, local=True) is not None  # listening everywhere
    assert policy.refusal("10.0.0.5", 9108, local=False) is None  # another machine's 9108
    assert policy.refusal("127.0.0.1", 8081, local=True) is None


# IPv4 addresses carried inside IPv6 ones, classified by what they carry. Only decided here,
# never dialled: outside loopback, these go to the machine's default gateway.
@pytest.mark.parametrize(("address", "carried"), [
    ("64:ff9b::7f00:1", "127.0.0.1 is a loopback address"),  # NAT64, RFC 6052's prefix
    ("64:ff9b::127.0.0.1", "127.0.0.1 is a loopback"),
    ("2002:7f00:1::", "127.0.0.1 is a loopback"),  # 6to4
    ("2002:a9fe:a9fe::1", "169.254.169.254 is a link-local"),
    ("::127.0.0.1", "127.0.0.1 is a loopback"),  # IPv4-compatible
    ("::ffff:0:7f00:1", "127.0.0.1 is a loopback"),  # SIIT
    ("64:ff9b:1::7f00:1", "127.0.0.1 is a loopback"),  # NAT64 for local use, as a /96
    ("64:ff9b:1:0:7f:0:100:0", "127.0.0.1 is a loopback"),  # ... as a /64 (/96: 1.0.0.0)
    ("64:ff9b::e000:1", "224.0.0.1 is a multicast"),
])
def test_an_ipv4_address_inside_an_ipv6_one_is_refused_as_itself(address, carried):
    refused = DEFAULT.refusal(address, 80, local=False)
    assert refused is not None and carried in refused.why, refused
    assert refused.address == str(ipaddress.ip_address(address)) and "carried by" in refused.why


@pytest.mark.parametrize("address", ["64:ff9b::10.0.0.1", "64:ff9b::a00:1", "2002:c0a8:101::",
                                     "::10.1.2.3", "::ffff:0:192.168.0.1",
                                     "64:ff9b:1::ac10:1", "64:ff9b:1:0:a:0:100:0"])
def test_deny_private_refuses_private_networks_inside_ipv6_addresses(address):
    assert DEFAULT.refusal(address, 80, local=False) is None  # private: reachable by default
    refused = EgressPolicy.parse(["private"], ()).refusal(address, 80, local=False)
    assert refused is not None and "is a private address" in refused.why


@pytest.mark.parametrize("address", ["64:ff9b::93.184.215.14", "2002:5db8:d70e::1",
                                     "64:ff9b:1::5db8:d70e", "2001:db8::7f00:1",
                                     "::ffff:0:93.184.215.14"])
def test_public_addresses_inside_ipv6_ones_are_reachable(address):
    assert EgressPolicy.parse(["private"], ()).refusal(address, 80, local=False) is None


def test_a_denied_network_is_refused_inside_ipv6_addresses_too():
    policy = EgressPolicy.parse(["203.0.113.0/24"], ())
    refused = policy.refusal("64:ff9b::203.0.113.7", 80, local=False)
    assert refused is not None and "in 203.0.113.0/24, refused by robots_egress_deny" in \
        refused.why
    assert policy.refusal("64:ff9b::203.0.114.7", 80, local=False) is None


def test_this_machines_own_ipv4_address_inside_an_ipv6_one_is_refused():
    refused = DEFAULT.refusal("64:ff9b::10.0.0.5", 80, local=lambda a: a == "10.0.0.5")
    assert refused is not None and "10.0.0.5 is a this-host address" in refused.why


def test_allowing_an_ipv4_address_does_not_open_it_through_a_translator():
    # 127.0.0.1:8000 is this machine's site; 64:ff9b::7f00:1 the NAT64 gateway's loopback.
    policy = EgressPolicy.parse((), ["127.0.0.1:8000"])
    assert policy.refusal("127.0.0.1", 8000, local=True) is None
    assert policy.refusal("64:ff9b::7f00:1", 8000, local=False) is not None
    # Naming the address dialled opens it.
    assert EgressPolicy.parse((), ["64:ff9b::/96"]).refusal("64:ff9b::7f00:1", 80,
                                                           local=False) is None


def test_entries_in_mapped_form_mean_their_ipv4_networks():
    policy = EgressPolicy.parse(["::ffff:10.0.0.0/104", "::FFFF:203.0.113.9"],
                                ["[::ffff:127.0.0.1]:8000", "::ffff:7f00:2/127"])
    assert policy.deny_networks == (ipaddress.ip_network("10.0.0.0/8"),
                                    ipaddress.ip_network("203.0.113.9/32"))
    for address in ("10.1.2.3", "::ffff:10.1.2.3", "203.0.113.9"):
        assert policy.refusal(address, 80, local=False) is not None, address
    assert policy.refusal("11.1.2.3", 80, local=False) is None
    assert policy.refusal("127.0.0.1", 8000, local=True) is None
    assert policy.refusal("::ffff:127.0.0.3", 80, local=True) is None
    assert policy.refusal("127.0.0.4", 80, local=True) is not None
    # Other IPv6 networks stay IPv6 networks, matched against the address dialled.
    assert EgressPolicy.parse(["64:ff9b::/96"], ()).refusal("64:ff9b::93.184.215.14", 80,
                                                            local=False) is not None


def _embeddings(v4: ipaddress.IPv4Address) -> list[str]:
    n = int(v4)
    forms = [ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | n),
             ipaddress.IPv6Address((0x2002 << 112) | (n << 80)),
             ipaddress.IPv6Address((0xFFFF << 32) << 16 | n),  # ::ffff:0:a.b.c.d
             ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b:1::")) | n),
             # RFC 6052 §2.2's /64 layout: bits 72-103.
             ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b:1::")) | (n << 24))]
    if n > 1:
        forms.append(ipaddress.IPv6Address(n))  # ::a.b.c.d
    return [str(form) for form in forms]


@given(st.ip_addresses(v=4), st.sampled_from([(), ("private",)]))
def test_every_carried_form_of_a_refused_ipv4_address_is_refused(v4, deny):
    policy = EgressPolicy.parse(deny, ())
    if policy.refusal(str(v4), 80, local=False) is None:
        # Reachable as itself: so it is in each form whose prefix says where it sits.
        for form in _embeddings(v4)[:3]:
            assert policy.refusal(form, 80, local=False) is None, form
        return
    for form in _embeddings(v4):
        assert policy.refusal(form, 80, local=False) is not None, form


@pytest.mark.parametrize(("deny", "allow", "words"), [
    (["loopbak"], [], "neither a class"),
    ([], ["localhost"], "not a network or address"),
    ([], ["127.0.0.1:0"], "port"),
    ([], ["127.0.0.1:http"], "port"),
])
def test_entries_that_cannot_be_read_are_refused_naming_them(deny, allow, words):
    with pytest.raises(ValueError, match=words):
        EgressPolicy.parse(deny, allow)


def test_the_kernel_says_which_addresses_are_this_machines():
    assert is_local("127.0.0.1") and is_local("127.3.4.5")
    assert not is_local("192.0.2.1")  # TEST-NET-1: never an address of a machine here


async def test_a_name_is_resolved_once_and_its_answer_pinned():
    asked: list[str] = []
    answers = {"site.example": ["93.184.215.14"]}

    async def lookup(host: str, port: int) -> list[str]:
        asked.append(host)
        await asyncio.sleep(0)
        return answers[host]

    clock = FakeClock()
    resolver = Resolver(DEFAULT, lookup=lookup, local=lambda a: False, ttl=60, timer=clock)
    first = await asyncio.gather(*(resolver.dial("site.example", 80) for _ in range(5)))
    assert first == ["93.184.215.14"] * 5 and asked == ["site.example"]
    # The name now points at this machine: the decision and the connection still agree on the
    # address classified, until the answer is old.
    answers["site.example"] = ["127.0.0.1"]
    assert await resolver.dial("site.example", 80) == "93.184.215.14"
    clock.now += 61
    refused = await resolver.dial("site.example", 80)
    assert refused is not None and not isinstance(refused, str) and "loopback" in refused.why


async def test_a_name_that_does_not_resolve_is_asked_again_next_time():
    calls = 0

    async def lookup(host: str, port: int) -> list[str]:
        nonlocal calls
        calls += 1
        raise OSError(-2, "Name or service not known")

    resolver = Resolver(DEFAULT, lookup=lookup, local=lambda a: False)
    answer = await resolver.resolve("gone.example", 80)
    assert isinstance(answer, Unresolved) and "gone.example" in answer.error
    assert await resolver.dial("gone.example", 80) is None
    assert calls == 2


@pytest.mark.parametrize(("text", "shown"), [
    ("plain /path?q=1", "plain /path?q=1"),
    ("\x1b[2J\x1b]0;title\x07", "\\x1b[2J\\x1b]0;title\\x07"),
    ("a\r\nforged row", "a\\x0d\\x0aforged row"),
    ("\u202eevil", "\\u202eevil"), ("\x85", "\\x85"),
    ("Bot\udcff", "Bot\\udcff"),  # a byte that was not UTF-8, as the audit log writes it
    ("caf\u00e9 \u00fcber", "caf\u00e9 \u00fcber"),
])
def test_control_characters_are_escaped_and_the_rest_kept(text, shown):
    assert escaped(text) == shown
