"""The exchange policy as a pure function: a request's facts in, its plan out, no mitmproxy.

The gate is the real one, wired as the proxy wires it, its robots.txt served by httpx's
MockTransport; names resolve through the real Resolver, asked of a table instead of DNS.
"""

from dataclasses import replace

import pytest
from support.clock import FakeClock
from support.gate import wire_gate
from support.origins import Origins, ok

from robotsgate.decision import names
from robotsgate.decision.identity import AgentMap
from robotsgate.decision.plan import Answer, Forward, Plan
from robotsgate.decision.policy import Exchange, Rules
from robotsgate.decision.purposes import PurposeMap
from robotsgate.decision.request import Facts
from robotsgate.egress.policy import EgressPolicy, Refused, Socket
from robotsgate.egress.resolver import Resolver
from robotsgate.pages import PageConfig, Pages

ROBOTS = b"User-agent: *\nDisallow: /private\nCrawl-delay: 0\n"
DNS = {"example.com": ["93.184.215.14"], "local.example": ["127.0.0.1"],
       "twice.example": ["127.0.0.1", "93.184.215.14"]}


async def table(host: str, port: int) -> list[str]:
    if host not in DNS:
        raise OSError(f"no such name: {host}")
    return DNS[host]


def exchange(clock: FakeClock, origins: Origins | None = None, *, rules: Rules | None = None,
             own: tuple[Socket, ...] = (), allow: tuple[str, ...] = (),
             agents: tuple[str, ...] = (), purpose: str = "", pages: Pages | None = None
             ) -> Exchange:
    origins = origins or Origins({"example.com": ok(ROBOTS)})
    wired = wire_gate(origins.fetcher(), clock)
    resolver = Resolver(EgressPolicy.parse((), allow, own), lookup=table,
                        local=lambda address: address.startswith("127."))
    return Exchange(rules or Rules(), wired.gate, resolver, agents=AgentMap.parse(agents),
                    purposes=PurposeMap.parse(purpose, ()), pages=pages)


def facts(path: bytes = b"/page", *, host: str = "example.com", port: int = 80,
          scheme: str = "http", headers: tuple[tuple[bytes, bytes], ...] | None = None,
          method: bytes = b"GET", authority: bytes = b"", **more: object) -> Facts:
    if headers is None:
        headers = ((b"Host", host.encode() + (b"" if port in (80, 443) else
                                              b":%d" % port)),
                   (b"User-Agent", b"TestBot/1.0"))
    return Facts(scheme, host, port, method, path, authority, headers, **more)  # type: ignore[arg-type]


def refused(plan: Plan, reason: str, status: int) -> Answer:
    assert isinstance(plan, Answer), plan
    assert plan.reason == reason
    assert [(r.event, r.reason, r.status) for r in plan.records][-1:] == \
        [("block", reason, status)]
    return plan


# -- forwarded as decided ------------------------------------------------------------------------


async def test_an_allowed_request_leaves_for_the_address_classified(clock):
    plan = await exchange(clock).decide(facts())
    assert isinstance(plan, Forward)
    assert (plan.origin.authority, plan.address) == ("example.com", "93.184.215.14")
    assert plan.host_written and plan.drop == ()  # the usual case: nothing to rewrite
    assert plan.verdict.reason == "allowed" and plan.records == ()


@pytest.mark.parametrize("host", [b"EXAMPLE.com.", b"example.com:80", b"Example.COM:0080"])
async def test_another_spelling_of_the_host_is_written_again(clock, host):
    plan = await exchange(clock).decide(facts(headers=((b"Host", host),)))
    assert isinstance(plan, Forward)
    assert plan.origin.authority == "example.com" and not plan.host_written


async def test_several_host_fields_are_refused(clock):
    # RFC 9112 §3.2: servers answer 400; which one they would serve is anybody's guess.
    plan = await exchange(clock).decide(facts(headers=((b"Host", b"example.com"),) * 2))
    refused(plan, "host-mismatch", 400)


async def test_an_http2_request_has_no_host_field_to_write(clock):
    assert (await exchange(clock).decide(facts(headers=(), http2=True))).host_written  # type: ignore[union-attr]
    plan = await exchange(clock).decide(facts(headers=((b"host", b"example.com"),), http2=True))
    assert isinstance(plan, Forward) and not plan.host_written  # :authority says it


async def test_the_proxys_credentials_and_headers_are_dropped(clock):
    headers = ((b"Host", b"example.com"), (b"Proxy-Authorization", b"Basic eDp5"),
               (b"X-Robotsgate-Reason", b"allowed"), (b"x-robotsgate-agent", b"Googlebot"),
               (b"X-Robots-Tag", b"kept: not ours"))
    plan = await exchange(clock).decide(facts(headers=headers))
    assert isinstance(plan, Forward)
    assert plan.drop == (b"Proxy-Authorization", b"X-Robotsgate-Reason", b"x-robotsgate-agent")


# -- names -----------------------------------------------------------------------------------------


async def test_a_host_header_for_another_host_is_refused(clock):
    plan = await exchange(clock).decide(facts(headers=((b"Host", b"other.example"),)))
    refused(plan, "host-mismatch", 400)


async def test_an_authority_for_another_host_is_refused(clock):
    plan = await exchange(clock).decide(facts(authority=b"other.example:80"))
    refused(plan, "host-mismatch", 400)


@pytest.mark.parametrize("name", ["example.com", "EXAMPLE.COM.", None])
async def test_a_server_name_that_names_the_host_passes(clock, name):
    plan = await exchange(clock).decide(facts(scheme="https", port=443, server_name=name))
    assert isinstance(plan, Forward)


async def test_a_server_name_for_another_host_is_refused_421(clock):
    plan = await exchange(clock).decide(facts(scheme="https", port=443,
                                              server_name="b.example"))
    answer = refused(plan, "server-name", 421)
    assert "b.example" in answer.text


async def test_an_ipv6_zone_id_is_refused(clock):
    plan = await exchange(clock).decide(facts(host="fe80::1%eth0", headers=()))
    refused(plan, "destination", 403)


# -- addresses -----------------------------------------------------------------------------------


async def test_a_name_that_resolves_to_loopback_is_refused_before_robots_txt(clock):
    origins = Origins({"local.example": ok(ROBOTS)})
    plan = await exchange(clock, origins).decide(facts(host="local.example", headers=()))
    answer = refused(plan, "destination", 403)
    assert answer.records[-1].error == ("127.0.0.1:80 (a loopback address, refused unless "
                                        "robots_egress_allow names it)")
    assert origins.fetches == 0  # nothing fetched for an address nobody may reach


async def test_the_first_address_that_may_be_dialled_is_the_one(clock):
    origins = Origins({"twice.example": ok(ROBOTS)})
    plan = await exchange(clock, origins).decide(facts(host="twice.example", headers=()))
    assert isinstance(plan, Forward) and plan.address == "93.184.215.14"


async def test_the_proxys_own_port_is_refused_even_when_loopback_is_allowed(clock):
    ex = exchange(clock, allow=("127.0.0.0/8",), own=(Socket("127.0.0.1", 8080),))
    for host in ("127.0.0.1", "127.1", "2130706433", "[::ffff:127.0.0.1]", "0.0.0.0"):
        plan = await ex.decide(facts(host=host, port=8080, headers=()))
        answer = refused(plan, "destination", 403)
        assert "the proxy's own port" in (answer.records[-1].error or ""), host


async def test_a_name_that_does_not_resolve_has_no_address_to_dial(clock):
    # Nothing to classify: decided on robots.txt (which cannot be had either, in real life);
    # the connection, asked again, fails closed (robotsgate.mitm.egress).
    origins = Origins({"nowhere.example": ok(b"")})
    plan = await exchange(clock, origins).decide(facts(host="nowhere.example", headers=()))
    assert isinstance(plan, Forward) and plan.address is None


# -- bytes and framing ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", [b"/a b", b"/a\tb", b"/pub#/../private", b"/a\x00", b"/a\x7f"])
@pytest.mark.parametrize("mode", [False, True], ids=["enforce", "monitor"])
async def test_a_target_http1_cannot_carry_is_refused_in_every_mode(clock, path, mode):
    plan = await exchange(clock, rules=Rules(monitor=mode)).decide(facts(path))
    refused(plan, "framing", 400)


@pytest.mark.parametrize(("method", "header"), [
    (b"GE T", b"Host"), (b"GET", b"Bad Name"), (b"GET", b"X:"), (b"G\x00", b"Host")])
async def test_a_method_or_header_name_that_is_not_a_token_is_refused(clock, method, header):
    plan = await exchange(clock).decide(facts(method=method, headers=((header, b"x"),)))
    refused(plan, "framing", 400)


async def test_a_body_servers_may_frame_differently_is_forwarded_only_in_monitor_mode(clock):
    smuggling = ((b"Host", b"example.com"), (b"Content-Length", b"5"),
                 (b"Transfer-Encoding", b"chunked"))
    refused(await exchange(clock).decide(facts(headers=smuggling)), "framing", 400)
    plan = await exchange(clock, rules=Rules(monitor=True)).decide(facts(headers=smuggling))
    assert isinstance(plan, Forward)
    assert [(r.event, r.reason) for r in plan.records] == [("would-block", "framing")]


async def test_an_h2c_offer_is_dropped_and_other_upgrades_refused(clock):
    offer = ((b"Host", b"example.com"), (b"Upgrade", b"H2C"), (b"Connection", b"Upgrade"))
    plan = await exchange(clock).decide(facts(headers=offer))
    assert isinstance(plan, Forward) and plan.drop_upgrade
    pipe = ((b"Host", b"example.com"), (b"Upgrade", b"x-pipe"))
    refused(await exchange(clock).decide(facts(headers=pipe)), "upgrade", 400)


# -- Connection (RFC 9110 §7.6.1) ---------------------------------------------------------------


async def test_fields_connection_names_are_gone_before_the_decision(clock):
    # A Referer named in Connection is the bot's hop's: the nofollow check never sees it.
    pages = Pages(PageConfig(), clock, clock)
    pages.annotate(url="http://example.com/page", method="GET", status=200, agent=None,
                   user_agent="TestBot/1.0", content_type="text/html",
                   x_robots_tag=["nofollow"], raw=b'<a href="/linked">x</a>')
    headers = ((b"Host", b"example.com"), (b"User-Agent", b"TestBot/1.0"),
               (b"Connection", b"Referer, Signature,close"), (b"Signature", b"sig1=:AAAA:"),
               (b"Referer", b"http://example.com/page"), (b"Range", b"bytes=0-1"),
               (b"Connection", b"range"))
    plan = await exchange(clock, pages=pages, purpose="train-ai").decide(
        facts(b"/linked", headers=headers))
    assert isinstance(plan, Forward), plan
    assert set(plan.drop) == {b"referer", b"signature", b"range"}
    assert plan.connection == b"close" and not plan.drop_range  # no Range left to drop
    with_referer = await exchange(clock, pages=pages).decide(
        facts(b"/linked", headers=headers[:2] + headers[4:5]))
    refused(with_referer, "nofollow", 403)


@pytest.mark.parametrize(("connection", "kept"), [
    (b"keep-alive", None), (b"close", None), (b"Keep-Alive, x-a", b"Keep-Alive"),
    (b"x-a", b""), (b"upgrade, x-a", b"")])  # no WebSocket: upgrade is not kept
async def test_connection_keeps_the_options_the_proxy_acts_on(clock, connection, kept):
    headers = ((b"Host", b"example.com"), (b"Connection", connection), (b"X-A", b"1"))
    plan = await exchange(clock).decide(facts(headers=headers))
    assert isinstance(plan, Forward) and plan.connection == kept
    assert plan.drop == (() if kept is None else (b"x-a",))


@pytest.mark.parametrize("named", [b"host", b"Content-Length", b"transfer-encoding",
                                   b"User-Agent", b"close, HOST"])
@pytest.mark.parametrize("monitor", [False, True])
async def test_a_connection_naming_what_names_frames_or_identifies_it_is_refused(
        clock, named, monitor):
    headers = ((b"Host", b"example.com"), (b"User-Agent", b"TestBot/1.0"),
               (b"Connection", named))
    answer = refused(await exchange(clock, rules=Rules(monitor=monitor)).decide(
        facts(headers=headers)), "hop-by-hop", 400)
    assert named.split(b",")[-1].strip().lower().decode() in answer.text


# -- robots.txt, identity, monitor mode ---------------------------------------------------------


async def test_a_disallowed_request_is_answered_with_its_rule(clock):
    plan = await exchange(clock).decide(facts(b"/private/x"))
    answer = refused(plan, "disallowed", 403)
    assert answer.headers["X-Robotsgate-Rule"] == "Disallow: /private"
    assert answer.verdict is not None and answer.verdict.robots_url == \
        "http://example.com/robots.txt"


async def test_monitor_mode_forwards_what_it_would_refuse_and_says_so(clock):
    plan = await exchange(clock, rules=Rules(monitor=True)).decide(facts(b"/private/x"))
    assert isinstance(plan, Forward) and plan.refused
    assert [(r.event, r.reason, r.status) for r in plan.records] == [
        ("would-block", "disallowed", 403)]


async def test_a_sites_control_characters_never_reach_a_header(clock):
    origins = Origins({"example.com": ok(b"User-agent: *\nDisallow: /p\x1b[2J\r\n")})
    plan = await exchange(clock, origins).decide(facts(b"/p%1B[2J"))
    answer = refused(plan, "disallowed", 403)
    assert answer.headers["X-Robotsgate-Rule"] == "Disallow: /p\\x1b[2J"


async def test_an_unidentified_bot_is_asked_to_name_itself_when_required(clock):
    plan = await exchange(clock, rules=Rules(require_agent=True)).decide(
        facts(headers=((b"Host", b"example.com"),)))
    answer = refused(plan, "unidentified", 407)
    assert "Proxy-Authenticate" in answer.headers
    named = await exchange(clock, rules=Rules(require_agent=True), agents=("u=MyBot",)).decide(
        facts(headers=((b"Host", b"example.com"),), user="u"))
    assert isinstance(named, Forward) and named.who.identity.token == "MyBot"


async def test_range_is_dropped_when_the_whole_page_decides(clock):
    ranged = ((b"Host", b"example.com"), (b"Range", b"bytes=0-10"))
    plan = await exchange(clock).decide(facts(headers=ranged))
    assert isinstance(plan, Forward) and not plan.drop_range
    plan = await exchange(clock, purpose="train-ai").decide(facts(headers=ranged))
    assert isinstance(plan, Forward) and plan.drop_range
    assert plan.who.purposes == frozenset({"train-ai"})


async def test_a_nofollow_link_is_refused_with_its_page_escaped(clock):
    pages = Pages(PageConfig(), clock, clock)
    page = "http://example.com/dir/page\x1b.html"
    pages.annotate(url=page, method="GET", status=200, agent=None, user_agent="TestBot/1.0",
                   content_type="text/html", x_robots_tag=["nofollow"],
                   raw=b'<a href="/linked">x</a>', content_encoding=None)
    headers = ((b"Host", b"example.com"), (b"User-Agent", b"TestBot/2.0"),
               (b"Referer", page.encode()))
    plan = await exchange(clock, pages=pages).decide(facts(b"/linked", headers=headers))
    answer = refused(plan, "nofollow", 403)
    # RedBot/1.0's refusals are RedBot/1.1's: the memory is kept per product token.
    assert answer.headers["X-Robotsgate-Page"] == "http://example.com/dir/page\\x1b.html"


async def test_the_plan_is_the_same_for_the_same_facts(clock):
    ex = exchange(clock)
    first, second = await ex.decide(facts()), await ex.decide(facts())
    assert replace(first, verdict=second.verdict) == second  # type: ignore[arg-type]


def test_refused_addresses_say_where_and_why():
    refusal = Refused("::1", 8080, "the proxy's own port")
    assert refusal.describe() == "[::1]:8080 (the proxy's own port)"


async def test_a_folded_line_is_unfolded_and_nothing_else_is(clock):
    plain = await exchange(clock).decide(facts())
    assert isinstance(plain, Forward) and not plain.unfold
    folded = ((b"Host", b"example.com"), (b"X-Long", b"one\r\n two"))
    plan = await exchange(clock).decide(facts(headers=folded))
    assert isinstance(plan, Forward) and plan.unfold


# -- captured requests (robotsgate run --capture) ------------------------------------------------


def captured(path: bytes = b"/page", *, address: str = "93.184.215.14", port: int = 80,
             host: bytes | None = b"example.com", **more: object) -> Facts:
    """A request a captured bot sent to `address`, naming `host` (no Host at all: None), as
    the mitmproxy layer reads it."""
    headers = ((b"Host", host),) if host is not None else ()
    return names.captured(facts(path, host=address, port=port,
                                headers=(*headers, (b"User-Agent", b"Bot/1")), **more))


async def test_a_captured_request_is_decided_for_the_host_it_names_at_its_address(clock):
    origins = Origins({"example.com": ok(ROBOTS)})
    plan = await exchange(clock, origins).decide(captured())
    assert isinstance(plan, Forward)
    assert (plan.origin.host, plan.address) == ("example.com", "93.184.215.14")
    refused(await exchange(clock, origins).decide(captured(b"/private/x")), "disallowed", 403)


async def test_a_captured_request_naming_a_host_at_another_address_is_refused(clock):
    origins = Origins({"example.com": ok(ROBOTS), "local.example": ok(ROBOTS)})
    ex = exchange(clock, origins, allow=("127.0.0.1",))
    answer = refused(await ex.decide(captured(address="127.0.0.1")), "host-mismatch", 400)
    assert answer.records[-1].error == ("example.com is at 93.184.215.14; the bot connected "
                                        "to 127.0.0.1")
    # And a name that does not resolve is at no address the bot could have connected to.
    answer = refused(await ex.decide(captured(host=b"nowhere.example")), "host-mismatch", 400)
    assert answer.records[-1].error == ("nowhere.example is at no address; the bot connected "
                                        "to 93.184.215.14")
    assert origins.fetches == 0


async def test_a_captured_request_s_server_name_and_port_are_held_to_it_too(clock):
    ex = exchange(clock)
    refused(await ex.decide(captured(scheme="https", port=443, server_name="b.example")),
            "server-name", 421)
    # Host names a port other than the one connected to.
    refused(await ex.decide(captured(host=b"example.com:8080")), "host-mismatch", 400)
    # No Host: the server name names it.
    plan = await ex.decide(captured(scheme="https", port=443, host=None,
                                    server_name="example.com"))
    assert isinstance(plan, Forward) and plan.origin.host == "example.com"


async def test_a_captured_request_naming_no_host_is_decided_for_its_address(clock):
    origins = Origins({"93.184.215.14": ok(ROBOTS)})
    plan = await exchange(clock, origins).decide(captured(host=None))
    assert isinstance(plan, Forward) and plan.origin.host == "93.184.215.14"
    plan = await exchange(clock, origins).decide(captured(host=b"93.184.215.14"))
    assert isinstance(plan, Forward) and plan.origin.host == "93.184.215.14"
