"""Prices, budgets and the ledgers that keep 402 payments within them
(robotsgate.payments.spending): in memory, and in a real Redis (127.0.0.1:6379) shared by several
proxies at once."""

import asyncio

import pytest
from redis.asyncio import Redis

from robotsgate.payments.spending import (
    Budget,
    Charge,
    Ledger,
    MemoryLedger,
    Money,
    RedisLedger,
    Reservation,
    Stopped,
    bot_of,
    judge,
    parse_budgets,
    parse_price,
    parse_sites,
    read_price,
)

DAY = 86_400.0
NOW = 1_800_000_000.0  # some UTC day, not at its start


def usd(text: str) -> Money:
    return parse_price(f"USD {text}")


@pytest.mark.parametrize(("text", "money", "shown"), [
    ("USD 0.01", Money("USD", 10_000), "USD 0.01"),
    ("usd 10", Money("USD", 10_000_000), "USD 10.00"),
    (" EUR 0.000125 ", Money("EUR", 125), "EUR 0.000125"),
])
def test_prices_are_exact_micro_units(text: str, money: Money, shown: str) -> None:
    assert parse_price(text) == money and str(money) == shown


# The grammar (robotsgate.payments.spending's docstring), rule by rule: what each reads, and
# what each refuses.
@pytest.mark.parametrize(("text", "money"), [
    # The currency code: three ASCII letters, any case, read as upper case.
    ("Usd 0.01", Money("USD", 10_000)),
    ("eUr 1", Money("EUR", 1_000_000)),
    # White space: spaces and tabs, around and between (one or more).
    ("\tUSD \t 0.01\t ", Money("USD", 10_000)),
    ("USD     2", Money("USD", 2_000_000)),
    # Zero is a price: of nothing.
    ("USD 0", Money("USD", 0)),
    ("USD 0.00", Money("USD", 0)),
    # Leading zeros are allowed and mean nothing (never octal).
    ("USD 007.5", Money("USD", 7_500_000)),
    ("USD 010", Money("USD", 10_000_000)),
    # Up to six decimals, and up to twelve digits before the point.
    ("USD 0.000001", Money("USD", 1)),
    ("USD 999999999999.999999", Money("USD", 999_999_999_999_999_999)),
])
def test_the_price_grammar_reads(text: str, money: Money) -> None:
    assert parse_price(text) == money and read_price(text) == money


@pytest.mark.parametrize("text", [
    # The code: exactly three ASCII letters, first.
    "US 1", "USDT 1", "U$D 1", "ＵＳＤ 1", "0.01 USD", "1",
    # White space: none between, or other than spaces and tabs.
    "USD0.01", "USD\n0.01", "USD\u00a00.01", "USD 0.01\n", "\u2003USD 0.01",
    # Decimals: at most six, even zeros; digits on both sides of the point.
    "USD 0.0000001", "USD 0.0100000", "USD 1.", "USD .5",
    # A sign, an exponent, separators other than one point, digits that are not ASCII.
    "USD +1", "USD -1", "USD 1e3", "USD 1,00", "USD 0,01", "USD 1 000", "USD 1_000",
    "USD 1.000.000", "USD \u0661", "USD １",
    # More than twelve digits before the point.
    "USD 1000000000000",
    "", "   ", "USD",
])
def test_the_price_grammar_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="is not a price"):
        parse_price(text)
    assert read_price(text) is None


def test_a_price_refused_is_named_escaped() -> None:
    with pytest.raises(ValueError, match=r"'USD\\x1b\[2J' is not a price"):
        parse_price("USD\x1b[2J")


def test_budgets_are_read_with_their_scope() -> None:
    assert parse_budgets(["USD 10/day", "site:News.Example=USD 1/hour", "MyBot=EUR 5/month"]) \
        == (Budget("*", usd("10"), "day"), Budget("site:news.example", usd("1"), "hour"),
            Budget("mybot", parse_price("EUR 5"), "month"))
    for bad in ("USD 10", "USD 10/week", "=USD 1/day", "x=ten/day"):
        with pytest.raises(ValueError, match=bad.split("/")[0][:3]):
            parse_budgets([bad])


def test_a_budget_applies_to_everything_its_bot_or_its_site() -> None:
    everything, bot, site = parse_budgets(["USD 1/day", "MyBot=USD 1/day",
                                           "site:a.example=USD 1/day"])
    assert everything.applies("Other", "b.example")
    assert bot.applies("mybot", "b.example") and not bot.applies("Other", "b.example")
    assert site.applies("Other", "A.example") and not site.applies("Other", "b.example")


def test_sites_forgiven_are_hosts_and_a_bad_one_is_refused_naming_the_option() -> None:
    from robotsgate.config.options import OPTIONS, Settings

    assert parse_sites(["News.Example", " 127.0.0.1 ", "[::1]", "::1"]) == \
        {"news.example", "127.0.0.1", "::1"}
    for bad in ["news.example:8080", "https://news.example", "news.example/x", "", "a b",
                "1:2:3"]:
        with pytest.raises(ValueError, match=r"is not a host such as news\.example"):
            parse_sites([bad])
    values = {spec.name: spec.default for spec in OPTIONS} | \
        {"robots_forgive_overcharge": ("news.example:443",)}
    with pytest.raises(ValueError, match=r"^robots_forgive_overcharge: 'news\.example:443' is not"):
        Settings.read(values.__getitem__)


def test_a_bot_is_counted_as_the_proxy_names_it_never_as_a_robots_txt_group() -> None:
    budgets = parse_budgets(["USD 1/day", "RedBot=USD 0.02/day", "site:a.example=USD 1/day"])
    # The operator's name for it (robots_agents, proxy-auth, robots_agent) comes first.
    assert bot_of("BlueBot", "RedBot/1.0", budgets) == "BlueBot"
    # Named by its User-Agent: the first product token a budget names, wherever it stands...
    assert bot_of(None, "RedBot/1.0", budgets) == "RedBot"
    assert bot_of(None, "Mozilla/5.0 (compatible; redbot/2.1; +https://red.example)",
                  budgets) == "redbot"
    # ... else the first it names; * when it names none.
    assert bot_of(None, "Mozilla/5.0 (compatible; GreenBot/1.0)", budgets) == "Mozilla"
    assert bot_of(None, "123/456", budgets) == bot_of(None, None, budgets) == "*"


def test_what_a_site_charged_is_judged_against_the_price_agreed() -> None:
    agreed = usd("0.01")
    assert judge(agreed, None) == Charge(None, usd("0"), None)  # it said nothing
    assert judge(agreed, "USD 0") == Charge("USD 0", usd("0"), None)
    assert judge(agreed, "usd 0.005") == Charge("usd 0.005", usd("0.005"), None)
    assert judge(agreed, "USD 0.01") == Charge("USD 0.01", agreed, None)
    # More than agreed: counted in full.
    assert judge(agreed, "USD 5.00") == Charge("USD 5.00", usd("5"), "more")
    # Another currency, or words that are no price: what it cost cannot be known, so the price
    # agreed stays counted; the claim is kept as written.
    assert judge(agreed, "EUR 5.00") == Charge("EUR 5.00", agreed, "currency")
    assert judge(agreed, "USD 0,01") == Charge("USD 0,01", agreed, "unreadable")
    assert judge(agreed, "") == Charge("", agreed, "unreadable")
    assert judge(agreed, "x" * 5000).written == "x" * 200  # cut, not dropped
    said = judge(agreed, "EUR\x1b[2J 5").why(agreed)
    assert "\x1b" not in said and "EUR\\x1b[2J 5" in said and "USD 0.01 agreed" in said
    assert judge(agreed, "USD 5.00").why(agreed) == \
        "it charged USD 5.00, more than the USD 0.01 agreed"


@pytest.fixture
async def redis_ledgers(redis_url: str, redis_prefix: str):
    """Two proxies' ledgers on one Redis."""
    clients = [Redis.from_url(redis_url) for _ in range(2)]

    async def ask(call):
        return await call()

    yield [RedisLedger(client, redis_prefix, ask) for client in clients]
    for client in clients:
        await client.aclose()


@pytest.fixture(params=["memory", "redis"])
def ledgers(request: pytest.FixtureRequest) -> list[Ledger]:
    """Two proxies' view of one ledger: one MemoryLedger (one proxy's memory), or two
    RedisLedgers on one Redis."""
    if request.param == "memory":
        ledger = MemoryLedger()
        return [ledger, ledger]
    return request.getfixturevalue("redis_ledgers")


def reserved(taken: Reservation | Stopped | None) -> Reservation:
    assert isinstance(taken, Reservation), taken
    return taken


async def test_a_ledger_never_spends_past_any_budget_that_applies(ledgers) -> None:
    ledger, _ = ledgers
    budgets = parse_budgets(["USD 0.05/day", "MyBot=USD 0.03/day"])
    taken = [await ledger.reserve("a.example", budgets, usd("0.01"), NOW) for _ in range(5)]
    assert [t is not None for t in taken] == [True, True, True, False, False]  # 0.03 for MyBot
    first = reserved(taken[0])
    await ledger.settle(first, 0)  # not charged after all
    assert await ledger.reserve("a.example", budgets, usd("0.01"), NOW) is not None
    assert await ledger.reserve("a.example", budgets, usd("0.01"), NOW) is None
    # A new day, a new window.
    assert await ledger.reserve("a.example", budgets, usd("0.03"), NOW + DAY) is not None


async def test_a_ledger_takes_all_or_nothing(ledgers) -> None:
    ledger, _ = ledgers
    wide, narrow = parse_budgets(["USD 1/day", "site:a.example=USD 0.01/day"])
    assert await ledger.reserve("a.example", [wide, narrow], usd("0.02"), NOW) is None
    # Nothing was taken before.
    assert await ledger.reserve("a.example", [wide], usd("1"), NOW) is not None


async def test_a_ledger_gives_back_what_was_not_charged(ledgers) -> None:
    first, second = ledgers
    budgets = parse_budgets(["site:a.example=USD 0.02/hour"])
    taken = reserved(await first.reserve("a.example", budgets, usd("0.02"), NOW))
    assert await second.reserve("a.example", budgets, usd("0.01"), NOW) is None
    await first.settle(taken, usd("0.01").micros)  # charged half
    assert await second.reserve("a.example", budgets, usd("0.01"), NOW) is not None
    assert await second.reserve("a.example", budgets, usd("0.01"), NOW) is None


async def test_a_ledger_counts_an_overcharge_in_full(ledgers) -> None:
    first, second = ledgers
    budgets = parse_budgets(["USD 0.05/day"])
    taken = reserved(await first.reserve("a.example", budgets, usd("0.01"), NOW))
    await first.settle(taken, usd("5").micros)  # USD 5.00 for the USD 0.01 agreed
    # USD 5.00 counted against USD 0.05: nothing more fits, whichever proxy or site asks.
    assert await second.reserve("b.example", budgets, usd("0.01"), NOW) is None
    assert await second.reserve("b.example", budgets, usd("0"), NOW) is None
    # Tomorrow's window is a new one.
    assert await second.reserve("b.example", budgets, usd("0.01"), NOW + DAY) is not None


async def test_a_site_that_overcharged_is_paid_no_more_until_forgiven(ledgers) -> None:
    first, second = ledgers
    budgets = parse_budgets(["USD 1/day"])
    taken = reserved(await first.reserve("A.example", budgets, usd("0.01"), NOW))
    await first.settle(taken, usd("0.01").micros, stop="it charged 'EUR 5.00'")
    for ledger in (first, second):  # every proxy of the fleet
        assert await ledger.reserve("a.example", budgets, usd("0.01"), NOW) == \
            Stopped("a.example", "it charged 'EUR 5.00'")
        # Whatever the budgets, none at all included, and in the next period too.
        assert isinstance(await ledger.reserve("a.example", [], usd("0"), NOW + DAY), Stopped)
    # Other sites are paid as before: its charge was counted, nothing more.
    reserved(await second.reserve("b.example", budgets, usd("0.99"), NOW))
    assert await second.reserve("b.example", budgets, usd("0.01"), NOW) is None
    # Forgiven: paid again, and the mark is gone, so it is paid once it is no longer forgiven.
    reserved(await second.reserve("a.example", [], usd("0.01"), NOW, forgiven=True))
    reserved(await first.reserve("a.example", [], usd("0.01"), NOW))


@pytest.fixture
async def redis_client(redis_url: str):
    """A third client, to look at what the ledgers keep."""
    client = Redis.from_url(redis_url)
    yield client
    await client.aclose()


async def test_an_overcharge_counted_for_a_window_that_closed_meanwhile_is_kept(
        redis_ledgers, redis_client: Redis) -> None:
    ledger, _ = redis_ledgers
    budgets = parse_budgets(["USD 0.05/hour"])
    taken = reserved(await ledger.reserve("a.example", budgets, usd("0.01"), NOW))
    [(key, _)] = taken.keys
    client = redis_client
    await client.delete(key)  # expired while the paid request was on its way
    await ledger.settle(taken, usd("5").micros)
    assert int(await client.get(key)) == 4_990_000 and 0 < await client.ttl(key) <= 7200
    mark = ledger.mark("a.example")
    await ledger.settle(taken, usd("0.01").micros, stop="why")
    assert await client.ttl(mark) == -1  # no expiry: until forgiven


async def test_two_proxies_sharing_redis_never_spend_past_the_budget_under_load(
        redis_ledgers) -> None:
    budgets = parse_budgets(["USD 1/day"])
    price = usd("0.03")  # 33 fit in USD 1, not 34

    async def one(ledger: RedisLedger) -> bool:
        return await ledger.reserve("a.example", budgets, price, NOW) is not None

    results = await asyncio.gather(*(one(redis_ledgers[i % 2]) for i in range(100)))
    assert sum(results) == 33


async def test_no_payment_is_reserved_once_an_overcharge_is_settled_under_load(
        redis_ledgers, redis_client: Redis) -> None:
    # Reservations race the settlement that marks the site: each one is either reserved
    # before the mark (and so counted) or refused after it, never both nor neither.
    first, second = redis_ledgers
    budgets = parse_budgets(["USD 100/day"])
    taken = reserved(await first.reserve("a.example", budgets, usd("0.01"), NOW))

    async def one(ledger: RedisLedger) -> Reservation | Stopped | None:
        return await ledger.reserve("a.example", budgets, usd("0.01"), NOW)

    racing = [one(redis_ledgers[i % 2]) for i in range(60)]
    results = await asyncio.gather(*racing[:30], first.settle(taken, usd("5").micros,
                                                               stop="why"), *racing[30:])
    answers = [r for r in results if r is not None]
    paid = sum(isinstance(r, Reservation) for r in answers)
    assert paid + sum(isinstance(r, Stopped) for r in answers) == 60
    assert isinstance(await second.reserve("a.example", budgets, usd("0.01"), NOW), Stopped)
    client = redis_client
    [(key, _)] = taken.keys
    assert int(await client.get(key)) == 5_000_000 + paid * 10_000


async def test_with_redis_unreachable_nothing_is_paid(redis_url: str, redis_prefix: str) -> None:
    from robotsgate.state.fleet import Down

    async def down(call):
        return Down.DOWN

    client = Redis.from_url(redis_url)
    try:
        ledger = RedisLedger(client, redis_prefix, down)
        assert await ledger.reserve("a.example", parse_budgets(["USD 1/day"]), usd("0.01"),
                                    NOW) is None
    finally:
        await client.aclose()


def test_what_origins_charged_is_counted_per_currency() -> None:
    from robotsgate.metrics.prometheus import Metrics

    metrics = Metrics()
    metrics.charged("USD", 10_000)
    metrics.charged("USD", 20_000)
    assert metrics.registry.get_sample_value("robotsgate_charged_micros_total",
                                             {"currency": "USD"}) == 30_000
    metrics.overcharged("currency")
    metrics.overcharged("currency")
    metrics.overcharged("more")
    assert [metrics.registry.get_sample_value("robotsgate_overcharges_total", {"kind": kind})
            for kind in ("more", "currency", "unreadable")] == [1, 2, None]


async def test_money_spent_is_kept_when_the_options_change(tmp_path) -> None:
    """In memory, a proxy's spending lasts as long as the proxy: a change of options that
    rebuilds its services (robots_budget itself, robots_cache_ttl) must not find the budgets
    empty again, nor forget a site stopped for overcharging."""
    from support.driver import driven

    with driven(robots_audit_log=str(tmp_path / "a.jsonl"), robots_max_price="USD 1",
                robots_budget=["*=USD 0.02/day"]) as addon:
        budgets = addon.live.services.budgets
        ledger = addon.live.services.ledger
        reserved = await ledger.reserve("a.example", budgets, usd("0.02"), 1_700_000_000.0)
        assert reserved is not None
        await ledger.settle(reserved, usd("5").micros, stop="charged USD 5.00")
        addon.configure(robots_budget=["*=USD 0.03/day"], robots_cache_ttl=60)
        assert addon.live.services.ledger is ledger
        budgets = addon.live.services.budgets
        assert (await addon.live.services.ledger.reserve(
            "b.example", budgets, usd("0.02"), 1_700_000_000.0)) is None  # 5.00 of 0.03 spent
        assert isinstance(await addon.live.services.ledger.reserve(
            "a.example", budgets, usd("0.01"), 1_700_000_000.0), Stopped)
