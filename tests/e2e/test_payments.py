"""End to end, HTTP 402: an origin that sells its pages (pay-per-crawl) and one that asks for an
x402 payment, through a real ``mitmdump -s addon.py`` that signs its requests; and two proxies
sharing one budget in Redis under concurrent load. Assertions are about what the origin saw,
what the bot got and what the audit log says.
"""

import base64
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from .clients import curl, httpx_call, run_concurrently
from .machine import clean_env, free_port
from .origins import Origin, Reply, Seen
from .proxy import Proxy
from .redis_server import SHARED_URL, delete_prefix, new_prefix, require_shared_redis
from .test_tooling import scrape, wait_for_output

OriginFactory = Callable[..., Origin]
ProxyFactory = Callable[..., Proxy]
ROBOTSGATE = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "robotsgate"
AGENT = "https://bots.example/.well-known/http-message-signatures-directory"


@pytest.fixture
def key(tmp_path: Path) -> Path:
    made = tmp_path / "signing.pem"
    done = subprocess.run([str(ROBOTSGATE), "keygen", str(made)], capture_output=True,
                          text=True, timeout=60, env=clean_env())
    assert done.returncode == 0, done.stderr
    return made


def selling(site: Origin, price: str = "USD 0.01", charged: str | None = None) -> None:
    """Pages at /paid/... cost `price`: 402 unless asked to pay it exactly, signed; then
    answered with crawler-charged: `charged` (the price, unless told)."""
    site.set_robots("User-agent: *\nAllow: /\n")

    def sell(seen: Seen) -> Reply:
        offered = seen.headers.get("crawler-exact-price")
        if offered == price and "signature" in seen.headers:
            return Reply(200, f"paid page {seen.path}".encode(),
                         {"crawler-charged": charged or price})
        if offered is not None:
            return Reply(402, b"", {"crawler-error": "price mismatch", "crawler-price": price})
        return Reply(402, b"payment required\n", {"crawler-price": price})

    for n in range(40):
        site.answer(f"/paid/{n}", sell)


def paid(site: Origin) -> list[Seen]:
    return [seen for seen in site.seen if "crawler-exact-price" in seen.headers]


def signing(key: Path, **options: object) -> dict[str, object]:
    return {"trust_test_ca": True, "robots_signing_key": str(key),
            "robots_signature_agent": AGENT, **options}


def test_a_price_within_policy_is_paid_once_signed_and_recorded(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path) -> None:
    site = https_origin()
    selling(site)
    gate = proxy(**signing(key, robots_max_price="USD 0.05", robots_budget="USD 1/day"))

    got = curl(gate, site.url("/paid/1"), headers={"crawler-max-price": "USD 100"})
    assert (got.status, got.text) == (200, "paid page /paid/1")
    first, second = [seen for seen in site.seen if seen.path == "/paid/1"]
    # The bot's own offer to pay never left; the proxy's did, signed.
    assert "crawler-max-price" not in first.headers and "crawler-exact-price" not in first.headers
    assert second.headers["crawler-exact-price"] == "USD 0.01" and "signature" in second.headers
    [record] = [r for r in gate.audit() if r["event"] == "payment"]
    assert (record["reason"], record["price"], record["origin_status"]) == \
        ("crawler-charged", "USD 0.01", 200)


def test_spending_stops_at_the_budget(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path) -> None:
    site = https_origin()
    selling(site)
    gate = proxy(**signing(key, robots_max_price="USD 0.05",
                           robots_budget=f"site:{site.host}=USD 0.02/day"))
    answers = [curl(gate, site.url(f"/paid/{n}")) for n in range(3)]
    assert [a.status for a in answers] == [200, 200, 402]
    assert answers[2].header("X-Robotsgate-Reason") == "budget-exhausted"
    assert answers[2].header("crawler-price") == "USD 0.01"
    assert len(paid(site)) == 2
    [record] = [r for r in gate.audit() if r["reason"] == "budget-exhausted"]
    assert record["event"] == "withheld" and record["price"] == "USD 0.01"


def test_a_price_above_policy_or_with_no_policy_is_not_paid(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path) -> None:
    site = https_origin()
    selling(site, price="USD 0.10")
    for options in ({"robots_max_price": "USD 0.05"}, {}):
        gate = proxy(**signing(key, **options))
        refused = curl(gate, site.url("/paid/1"))
        assert refused.status == 402
        assert refused.header("X-Robotsgate-Reason") == "price-refused"
        assert ("more than robots_max_price" if options else "pays nothing") in refused.text
    assert paid(site) == []


def test_an_unsigned_request_is_never_paid_for(
        https_origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = https_origin()
    selling(site)
    gate = proxy(trust_test_ca=True, robots_max_price="USD 0.05")
    refused = curl(gate, site.url("/paid/1"))
    assert refused.status == 402 and "must be signed" in refused.text
    assert paid(site) == []


def test_an_x402_payment_is_recorded_and_refused(
        origin: OriginFactory, proxy: ProxyFactory) -> None:
    site = origin(robots="User-agent: *\nAllow: /\n")
    asked = {"x402Version": 2, "accepts": [{"scheme": "exact", "network": "eip155:8453",
                                            "amount": "10000", "asset": "0xUSDC",
                                            "payTo": "0xSELLER"}]}
    site.route("/article", 402, b"{}", {"PAYMENT-REQUIRED": base64.b64encode(
        json.dumps(asked).encode()).decode()})
    gate = proxy(robots_max_price="USD 1")
    refused = httpx_call(gate, site.url("/article"))
    assert refused.status == 402
    assert refused.header("X-Robotsgate-Reason") == "x402-unsupported"
    assert "does not pay on a chain" in refused.text
    [record] = [r for r in gate.audit() if r["reason"] == "x402-unsupported"]
    assert record["x402"] == ("x402 v2: scheme=exact network=eip155:8453 amount=10000 "
                              "asset=0xUSDC payTo=0xSELLER")
    assert site.count("/article") == 1


def test_two_proxies_sharing_a_budget_never_spend_past_it(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path) -> None:
    require_shared_redis()
    prefix = new_prefix()
    try:
        site = https_origin()
        selling(site)
        gates = [proxy(**signing(key, robots_max_price="USD 0.05",
                                 robots_budget="USD 0.05/day", robots_redis=SHARED_URL,
                                 robots_redis_prefix=prefix)) for _ in range(2)]
        calls = [lambda n=n: curl(gates[n % 2], site.url(f"/paid/{n}")) for n in range(20)]
        answers = run_concurrently(calls)
        assert sorted(a.status for a in answers) == [200] * 5 + [402] * 15
        assert len(paid(site)) == 5
        charged = [r for gate in gates for r in gate.audit() if r["event"] == "payment"]
        assert len(charged) == 5 and {r["price"] for r in charged} == {"USD 0.01"}
    finally:
        delete_prefix(SHARED_URL, prefix)


def test_a_paid_request_is_never_sent_again_by_another_part(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path) -> None:
    # A hostile origin answers the paid request with an ask for a signature: sent again, it
    # would lose its crawler-exact-price, meet the 402 again and be paid again, and again.
    site = https_origin()
    site.set_robots("User-agent: *\nAllow: /\n")

    def greedy(seen: Seen) -> Reply:
        if "crawler-exact-price" in seen.headers:
            return Reply(401, b"", {"Accept-Signature": 'sig1=("@authority");tag="web-bot-auth"',
                                    "crawler-charged": "USD 0.01"})
        return Reply(402, b"pay\n", {"crawler-price": "USD 0.01"})

    site.answer("/paid/1", greedy)
    gate = proxy(**signing(key, robots_max_price="USD 0.05"))
    got = curl(gate, site.url("/paid/1"))
    assert got.status == 401
    assert site.count("/paid/1") == 2 and len(paid(site)) == 1


def test_monitor_mode_never_pays_for_what_it_would_have_refused(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path) -> None:
    site = https_origin()
    selling(site)
    site.set_robots("User-agent: *\nDisallow: /paid/\n")
    gate = proxy(**signing(key, robots_max_price="USD 0.05", robots_mode="monitor"))
    got = curl(gate, site.url("/paid/1"))
    assert got.status == 402 and paid(site) == []


def test_a_site_that_charges_more_than_agreed_is_counted_in_full_and_paid_no_more(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path) -> None:
    site, honest = https_origin(), https_origin("127.0.0.2")  # two hosts
    selling(site, charged="USD 5.00")  # for the USD 0.01 agreed
    selling(honest)
    port = free_port()
    gate = proxy(**signing(key, robots_max_price="USD 0.05", robots_metrics_port=port,
                           robots_budget=[f"site:{site.host}=USD 0.05/day", "USD 10/day"]))
    wait_for_output(gate, f"robotsgate: metrics on http://127.0.0.1:{port}/metrics")
    first = curl(gate, site.url("/paid/1"))
    assert first.status == 200  # paid: the bot gets the page
    refused = [curl(gate, site.url(f"/paid/{n}")) for n in (2, 3)]
    assert [r.status for r in refused] == [402, 402]
    assert {r.header("X-Robotsgate-Reason") for r in refused} == {"overcharged"}
    assert "pays this site no more: it charged USD 5.00, more than the USD 0.01 agreed" in \
        refused[0].text
    assert len(paid(site)) == 1
    # Another site is paid as before, within the budgets.
    assert curl(gate, honest.url("/paid/1")).status == 200
    records = gate.audit()
    [payment] = [r for r in records if r["event"] == "payment" and site.host in r["url"]]
    assert (payment["reason"], payment["price"], payment["charged_as_written"]) == \
        ("crawler-charged", "USD 5.00", "USD 5.00")
    assert payment["error"].startswith("overcharged: it charged USD 5.00, more than the USD 0.01 "
                                       "agreed")
    stops = [r for r in records if r["reason"] == "overcharged"]
    assert [(r["event"], r["status"], r["price"]) for r in stops] == \
        [("withheld", 402, "USD 0.01")] * 2
    metrics = scrape(port)
    assert metrics["robotsgate_overcharges_total", frozenset({("kind", "more")})] == 1
    assert metrics["robotsgate_charged_micros_total", frozenset({("currency", "USD")})] == \
        5_010_000
    assert "overcharged" in gate.output()  # the error log says so too


def test_an_overcharge_forgiven_is_still_counted_in_full(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path) -> None:
    site = https_origin()
    selling(site, charged="USD 5.00")
    gate = proxy(**signing(key, robots_max_price="USD 0.05",
                           robots_budget=f"site:{site.host}=USD 0.05/day",
                           robots_forgive_overcharge=site.host))
    answers = [curl(gate, site.url(f"/paid/{n}")) for n in range(2)]
    # USD 5.00 counted against USD 0.05: no room left for USD 0.01.
    assert [a.status for a in answers] == [200, 402]
    assert answers[1].header("X-Robotsgate-Reason") == "budget-exhausted"
    assert len(paid(site)) == 1
    [payment] = [r for r in gate.audit() if r["event"] == "payment"]
    assert payment["price"] == "USD 5.00"
    assert payment["error"].endswith("forgiven (robots_forgive_overcharge)")


@pytest.mark.parametrize("claim", ["EUR 5.00", "USD 0,01", "USD 0.01; USD 4.99"])
def test_a_charge_in_another_currency_or_unreadable_is_recorded_as_written(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path, claim: str) -> None:
    site = https_origin()
    selling(site, charged=claim)
    gate = proxy(**signing(key, robots_max_price="USD 0.05", robots_budget="USD 1/day"))
    assert curl(gate, site.url("/paid/1")).status == 200
    # The proxy cannot know what that cost: the site is paid no more.
    refused = curl(gate, site.url("/paid/2"))
    assert (refused.status, refused.header("X-Robotsgate-Reason")) == (402, "overcharged")
    assert len(paid(site)) == 1
    [payment] = [r for r in gate.audit() if r["event"] == "payment"]
    # What it claimed, as written; what the budgets kept counting, the price agreed.
    assert payment["charged_as_written"] == claim
    assert payment["price"] == "USD 0.01"
    assert "given back" not in payment["error"] and repr(claim) in payment["error"]
    assert ("another currency" if claim.startswith("EUR") else "cannot be read") in \
        payment["error"]


def test_a_bot_named_by_its_user_agent_has_its_own_budget(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path) -> None:
    site = https_origin()
    selling(site)  # robots.txt: User-agent: * (the group every bot here matches)
    gate = proxy(**signing(key, robots_max_price="USD 0.05",
                           robots_budget=["RedBot=USD 0.02/day", "USD 1/day"]))
    red = [curl(gate, site.url(f"/paid/{n}"), headers={"User-Agent": ua})
           for n, ua in enumerate(["RedBot/1.0", "Mozilla/5.0 (compatible; RedBot/2.0)",
                                   "RedBot/1.0"])]
    assert [a.status for a in red] == [200, 200, 402]
    assert red[2].header("X-Robotsgate-Reason") == "budget-exhausted"
    assert "RedBot=USD 0.02/day" not in red[2].text and "redbot=USD 0.02/day" in red[2].text
    # Another bot's spending is its own.
    assert curl(gate, site.url("/paid/9"), headers={"User-Agent": "BlueBot/1.0"}).status == 200
    assert len(paid(site)) == 3
    records = [r for r in gate.audit() if r["event"] in ("payment", "withheld")]
    assert [(r["reason"], r["bot"], r["agent"]) for r in records] == [
        ("crawler-charged", "RedBot", "*"), ("crawler-charged", "RedBot", "*"),
        ("budget-exhausted", "RedBot", "*"), ("crawler-charged", "BlueBot", "*")]
    # robotsgate report: what each bot spent.
    done = subprocess.run([str(ROBOTSGATE), "report", str(gate.audit_path)], capture_output=True,
                          text=True, timeout=60, env=clean_env())
    assert done.returncode == 0, done.stderr
    assert "spent:     USD 0.03 in 3 payments\n" in done.stdout
    per_bot = done.stdout.split("\n  per bot\n", 1)[1].split("\n  per site\n", 1)[0]
    assert [line.split() for line in per_bot.splitlines()] == [
        ["USD", "0.02", "2", "payments", "RedBot"], ["USD", "0.01", "1", "payment", "BlueBot"]]


def test_a_fleet_pays_a_site_that_overcharged_no_more(
        https_origin: OriginFactory, proxy: ProxyFactory, key: Path) -> None:
    require_shared_redis()
    prefix = new_prefix()
    try:
        site = https_origin()
        selling(site, charged="USD 0.02")
        gates = [proxy(**signing(key, robots_max_price="USD 0.05", robots_redis=SHARED_URL,
                                 robots_redis_prefix=prefix)) for _ in range(2)]
        assert curl(gates[0], site.url("/paid/1")).status == 200
        refused = curl(gates[1], site.url("/paid/2"))
        assert (refused.status, refused.header("X-Robotsgate-Reason")) == (402, "overcharged")
        assert len(paid(site)) == 1
    finally:
        delete_prefix(SHARED_URL, prefix)
