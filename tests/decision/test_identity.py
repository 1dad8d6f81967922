"""Who a request is decided for, and the path forms a server may really serve."""

import pytest

from robotsgate.decision.identity import AgentMap, Identity, is_product
from robotsgate.origin import Origin, same_authority
from robotsgate.protocol import RobotsTxt
from robotsgate.protocol.urls import server_equivalent

AGENTS = AgentMap.parse(["alice=AliceBot", "user:bob=BobBot", "10.0.0.0/8=TenBot",
                         "10.1.2.0/24=LabBot", "2001:db8::/32=SixBot", "127.0.0.2=LoopBot"])


@pytest.mark.parametrize(("user", "address", "option", "expected"), [
    ("alice", "10.1.2.3", "OptBot", Identity("AliceBot", "map-user")),
    ("bob", None, None, Identity("BobBot", "map-user")),
    (None, "10.1.2.3", "OptBot", Identity("LabBot", "map-address")),  # most specific network
    (None, "10.9.9.9", None, Identity("TenBot", "map-address")),
    (None, "::ffff:10.9.9.9", None, Identity("TenBot", "map-address")),
    (None, "2001:db8::1", None, Identity("SixBot", "map-address")),
    (None, "127.0.0.2", None, Identity("LoopBot", "map-address")),
    ("carol", "192.0.2.1", "OptBot", Identity("carol", "proxyauth")),
    ("not a token!", "192.0.2.1", "OptBot", Identity("OptBot", "option")),
    (None, "192.0.2.1", "OptBot", Identity("OptBot", "option")),
    (None, "192.0.2.1", None, Identity(None, "user-agent")),
    (None, "garbage", None, Identity(None, "user-agent")),
])
def test_precedence_map_then_proxyauth_then_option_then_header(user, address, option, expected):
    assert AGENTS.resolve(user=user, address=address, agent_option=option) == expected


@pytest.mark.parametrize("entry", ["AliceBot", "alice=", "=AliceBot", "alice=Alice Bot",
                                   "10.0.0.0/8=Ten/1.0", "alice=Alice=Bot"])
def test_bad_map_entries_are_refused_naming_the_entry(entry):
    with pytest.raises(ValueError, match="KEY=Token"):
        AgentMap.parse([entry])


@pytest.mark.parametrize(("identity", "user_agent", "mismatch"), [
    (Identity("MyBot", "option"), "MyBot/1.0 (+https://example.com)", False),
    (Identity("MyBot", "option"), "mybot/2", False),
    (Identity("MyBot", "option"), "curl/8.0", True),
    (Identity("MyBot", "map-address"), None, True),
    (Identity(None, "user-agent"), "curl/8.0", None),
])
def test_a_configured_token_missing_from_the_user_agent_is_a_mismatch(identity, user_agent,
                                                                         mismatch):
    assert identity.mismatch(user_agent) is mismatch


@pytest.mark.parametrize(("user_agent", "named"), [
    ("curl/8.0", True), ("", False), ("   ", False), ("12345", False), ("/1.0", False)])
def test_is_product(user_agent, named):
    assert is_product(user_agent) is named


# -- what a server may really serve --------------------------------------------------------------

@pytest.mark.parametrize(("path", "equivalent"), [
    ("/private", "/private"),
    ("/%70rivate", "/private"),
    ("/priv%61te", "/private"),
    ("/priv%41te", "/privAte"),
    ("/%7euser", "/~user"),
    ("/a/../private", "/private"),
    ("/./private", "/private"),
    ("/a/b/../../private/x", "/private/x"),
    ("/%2e%2e/private", "/private"),
    ("/%2E/private", "/private"),
    ("//private", "/private"),
    ("/a//b///c", "/a/b/c"),
    ("/private;jsessionid=1/x", "/private/x"),
    ("/pub;x/../private", "/private"),
    ("/a\\..\\private", "/private"),
    ("/..", "/"),
    ("/a/..", "/"),
    ("/a/.", "/a/"),
    ("/a/../private?next=/../x", "/private?next=/../x"),  # the query is not a path
    # RFC 3986 says an encoded slash is not a slash, but nginx decodes it before resolving.
    ("/%2Fprivate", "/private"),
    ("/x/..%2fprivate", "/private"),
    ("/x/..%5Cprivate", "/private"),
])
def test_server_equivalent(path, equivalent):
    assert server_equivalent(path) == equivalent


@pytest.mark.parametrize("semantics", ["rfc9309", "google", "classic"])
@pytest.mark.parametrize("path", ["/%70rivate", "/a/../private", "//private", "/private;x",
                                  "/x/%2e%2e/private"])
def test_every_reading_is_denied_when_either_form_is(semantics, path):
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /private\n", semantics=semantics)
    denied = [not robots.decide("bot", p).allowed for p in (path, server_equivalent(path))]
    assert any(denied)


# -- origins and Host headers -------------------------------------------------------------------

def test_idn_hosts_have_one_punycode_form():
    punycode = Origin.of("https", "xn--bcher-kva.example", 443)
    assert Origin.of("https", "Bücher.Example.", None) == punycode
    assert Origin.of("https", "bücher.example", None).robots_url == \
        "https://xn--bcher-kva.example/robots.txt"


@pytest.mark.parametrize(("claimed", "scheme", "host", "port", "same"), [
    ("example.com", "http", "example.com", 80, True),
    ("EXAMPLE.com.", "http", "example.com", 80, True),
    ("example.com:80", "http", "example.com", 80, True),
    ("example.com:443", "https", "example.com", 443, True),
    ("example.com", "https", "example.com", 443, True),
    ("example.com:8080", "http", "example.com", 8080, True),
    ("example.com", "http", "example.com", 8080, False),
    ("other.example", "http", "example.com", 80, False),
    ("[::1]:8080", "http", "::1", 8080, True),
    ("[::1]", "http", "::1", 8080, False),
    ("example.com:http", "http", "example.com", 80, False),
    ("bücher.example", "https", "xn--bcher-kva.example", 443, True),
])
def test_same_authority(claimed, scheme, host, port, same):
    assert same_authority(claimed, scheme, host, port) is same


@pytest.mark.parametrize(("body", "semantics", "everything"), [
    ("User-agent: *\nDisallow: /\n", "rfc9309", True),
    ("User-agent: *\nDisallow: /*\n", "google", True),
    ("User-agent: *\nDisallow: *\n", "rfc9309", True),
    ("User-agent: *\nDisallow: /\nAllow: /public\n", "rfc9309", False),
    ("User-agent: *\nDisallow: /private\n", "rfc9309", False),
    ("User-agent: *\nDisallow:\n", "rfc9309", False),
    ("User-agent: other\nDisallow: /\n", "rfc9309", False),
    ("User-agent: *\nDisallow: /*\n", "classic", False),  # '*' is a literal in 1994
    ("", "rfc9309", False),
])
def test_disallows_all(body, semantics, everything):
    assert RobotsTxt.parse(body, semantics=semantics).disallows_all("bot") is everything
