"""Prices, budgets and the ledgers that keep 402 payments within them (robotsgate.spending):
in memory, and in a real Redis (127.0.0.1:6379) shared by several proxies at once."""

import asyncio

import pytest
from redis.asyncio import Redis

from robotsgate.spending import (
    Budget,
    MemoryLedger,
    Money,
    RedisLedger,
    parse_budgets,
    parse_price,
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


@pytest.mark.parametrize("text", ["0.01", "USD", "USD -1", "USD 1e3", "DOLLARS 1", "USD 0.0000001",
                                  "USD 1,00", ""])
def test_what_is_not_a_price_is_refused_or_read_as_none(text: str) -> None:
    with pytest.raises(ValueError, match="is not a price"):
        parse_price(text)
    assert read_price(text) is None


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


async def test_the_memory_ledger_never_spends_past_any_budget_that_applies() -> None:
    ledger = MemoryLedger()
    budgets = parse_budgets(["USD 0.05/day", "MyBot=USD 0.03/day"])
    taken = [await ledger.reserve(budgets, usd("0.01"), NOW) for _ in range(5)]
    assert [t is not None for t in taken] == [True, True, True, False, False]  # 0.03 for MyBot
    first = taken[0]
    assert first is not None
    await ledger.give_back(first, first.amount.micros)  # not charged after all
    assert await ledger.reserve(budgets, usd("0.01"), NOW) is not None
    assert await ledger.reserve(budgets, usd("0.01"), NOW) is None
    # A new day, a new window.
    assert await ledger.reserve(budgets, usd("0.03"), NOW + DAY) is not None


async def test_the_memory_ledger_takes_all_or_nothing() -> None:
    ledger = MemoryLedger()
    wide, narrow = parse_budgets(["USD 1/day", "site:a.example=USD 0.01/day"])
    assert await ledger.reserve([wide, narrow], usd("0.02"), NOW) is None
    assert await ledger.reserve([wide], usd("1"), NOW) is not None  # nothing was taken before


@pytest.fixture
async def ledgers(redis_url: str, redis_prefix: str):
    clients = [Redis.from_url(redis_url) for _ in range(2)]

    async def ask(call):
        return await call()

    yield [RedisLedger(client, redis_prefix, ask) for client in clients]
    for client in clients:
        await client.aclose()


async def test_two_proxies_sharing_redis_never_spend_past_the_budget_under_load(ledgers) -> None:
    budgets = parse_budgets(["USD 1/day"])
    price = usd("0.03")  # 33 fit in USD 1, not 34

    async def one(ledger: RedisLedger) -> bool:
        return await ledger.reserve(budgets, price, NOW) is not None

    results = await asyncio.gather(*(one(ledgers[i % 2]) for i in range(100)))
    assert sum(results) == 33


async def test_redis_gives_back_what_was_not_charged(ledgers) -> None:
    first, second = ledgers
    budgets = parse_budgets(["site:a.example=USD 0.02/hour"])
    taken = await first.reserve(budgets, usd("0.02"), NOW)
    assert taken is not None and await second.reserve(budgets, usd("0.01"), NOW) is None
    await first.give_back(taken, usd("0.01").micros)  # charged half
    assert await second.reserve(budgets, usd("0.01"), NOW) is not None
    assert await second.reserve(budgets, usd("0.01"), NOW) is None


async def test_with_redis_unreachable_nothing_is_paid(redis_url: str, redis_prefix: str) -> None:
    from robotsgate.state.fleet import Down

    async def down(call):
        return Down.DOWN

    client = Redis.from_url(redis_url)
    try:
        ledger = RedisLedger(client, redis_prefix, down)
        assert await ledger.reserve(parse_budgets(["USD 1/day"]), usd("0.01"), NOW) is None
    finally:
        await client.aclose()


def test_what_origins_charged_is_counted_per_currency() -> None:
    from robotsgate.metrics import Metrics

    metrics = Metrics()
    metrics.charged("USD", 10_000)
    metrics.charged("USD", 20_000)
    assert metrics.registry.get_sample_value("robotsgate_charged_micros_total",
                                             {"currency": "USD"}) == 30_000
