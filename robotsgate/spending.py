"""What the proxy may pay for pages: prices, the operator's price policy and budgets, and the
ledger that keeps spending within them (HTTP 402 pay-per-crawl: robotsgate.mitm.payments).

Amounts are kept as integer micro-units of their currency (USD 0.01 is 10,000), so sums are
exact. A price is written as the deployed headers write it: `USD 0.01` (a currency code, a
decimal amount).

Budgets (robots_budget) are `SCOPE=AMOUNT/PERIOD` entries: SCOPE `*` (everything this proxy, or
its fleet, pays), a bot's product token, or `site:HOST`; PERIOD `hour`, `day` or `month` (30
days). Periods are fixed windows of the clock (a day is a UTC day), so every proxy of a fleet
counts into the same window. A payment is made only when every budget that applies to it has
room for the whole price, and that room is reserved before the paid request leaves: the check
and the reservation are one step (one Lua program in the fleet's Redis, or one synchronous step
on the event loop in memory), so concurrent requests, of one proxy or of a fleet, never spend
past a budget. What the origin did not charge is given back once its answer is in.
"""

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

MICROS = 1_000_000
PERIODS = {"hour": 3600, "day": 86_400, "month": 30 * 86_400}
_PRICE = re.compile(r"\s*([A-Za-z]{3})\s+([0-9]{1,12}(?:\.[0-9]{1,6})?)\s*")


@dataclass(frozen=True, slots=True, order=True)
class Money:
    currency: str  # ISO 4217 code, upper case
    micros: int  # millionths of one unit

    def __str__(self) -> str:
        """ "USD 0.01", "USD 10.00": at least two decimals, no trailing zeros past them."""
        value = Decimal(self.micros) / MICROS
        text = f"{value:.6f}".rstrip("0")
        if len(text.partition(".")[2]) < 2:
            text = f"{value:.2f}"
        return f"{self.currency} {text}"


def parse_price(text: str) -> Money:
    """ "USD 0.01" -> Money("USD", 10000); ValueError when it is not CODE AMOUNT."""
    found = _PRICE.fullmatch(text)
    if found is None:
        raise ValueError(f"{text.strip()[:40]!r} is not a price such as 'USD 0.05'")
    try:
        micros = int(Decimal(found[2]) * MICROS)
    except InvalidOperation:
        raise ValueError(f"{text.strip()[:40]!r} is not a price such as 'USD 0.05'") from None
    return Money(found[1].upper(), micros)


def read_price(text: str | None) -> Money | None:
    """A price header's value, or None when it has none or cannot be read."""
    if text is None:
        return None
    try:
        return parse_price(text)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Budget:
    scope: str  # "*", a product token (lower-cased), or "site:host"
    limit: Money
    period: str  # hour, day, month

    @property
    def seconds(self) -> int:
        return PERIODS[self.period]

    def applies(self, agent: str, host: str) -> bool:
        return self.scope == "*" or self.scope == agent.lower() or \
            self.scope == f"site:{host.lower()}"

    def key(self, now: float) -> str:
        """Its current window's name: the same in every proxy of a fleet."""
        return f"{self.scope}|{self.period}|{self.limit.currency}|{int(now // self.seconds)}"

    def __str__(self) -> str:
        return f"{self.scope}={self.limit}/{self.period}"


def parse_budgets(entries: Sequence[str]) -> tuple[Budget, ...]:
    """robots_budget entries; ValueError naming the one that cannot be read."""
    found = []
    for entry in entries:
        scope, sep, rest = entry.rpartition("=")
        scope = scope.strip().lower() if sep else "*"
        amount, slash, period = rest.rpartition("/")
        if not slash or period.strip().lower() not in PERIODS or not scope:
            raise ValueError(f"{entry!r} is not [SCOPE=]AMOUNT/PERIOD, such as "
                             f"'USD 10/day' or 'site:example.com=USD 1/hour' (periods: "
                             f"{', '.join(PERIODS)})")
        try:
            limit = parse_price(amount)
        except ValueError as exc:
            raise ValueError(f"{entry!r}: {exc}") from None
        found.append(Budget(scope, limit, period.strip().lower()))
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Reservation:
    """Room reserved in every budget that applies, for one payment."""

    amount: Money
    keys: tuple[tuple[str, int], ...]  # (window key, its period in seconds)


class Ledger(Protocol):
    async def reserve(self, budgets: Sequence[Budget], amount: Money, now: float
                      ) -> Reservation | None:
        """Room for `amount` in every one of `budgets` (all of `amount`'s currency), reserved;
        None when one has not enough."""

    async def give_back(self, reservation: Reservation, micros: int) -> None:
        """`micros` of a reservation not spent after all."""


class MemoryLedger:
    """One proxy's spending, in memory: each reservation one synchronous step on the event
    loop, so no two can both take the last of a budget. Windows past their period are
    dropped as new ones open."""

    def __init__(self) -> None:
        self.spent: dict[str, int] = {}

    async def reserve(self, budgets: Sequence[Budget], amount: Money, now: float
                      ) -> Reservation | None:
        keys = [(budget.key(now), budget.limit.micros, budget.seconds) for budget in budgets]
        if any(self.spent.get(key, 0) + amount.micros > limit for key, limit, _ in keys):
            return None
        for key, _, _ in keys:
            self.spent[key] = self.spent.get(key, 0) + amount.micros
        self._forget_old(now)
        return Reservation(amount, tuple((key, seconds) for key, _, seconds in keys))

    async def give_back(self, reservation: Reservation, micros: int) -> None:
        for key, _ in reservation.keys:
            if key in self.spent:
                self.spent[key] = max(0, self.spent[key] - micros)

    def _forget_old(self, now: float) -> None:
        for key in [key for key in self.spent if _closed(key, now)]:
            del self.spent[key]


def _closed(key: str, now: float) -> bool:
    *_, period, _, window = key.split("|")
    return int(window) < int(now // PERIODS[period])


# KEYS: the budgets' window keys; ARGV[1]: the amount; ARGV[2..]: each key's limit, then each
# key's period. Checked whole, then taken whole: nothing is reserved unless all have room.
RESERVE = """
local amount = tonumber(ARGV[1])
local n = #KEYS
for i = 1, n do
  local spent = tonumber(redis.call('GET', KEYS[i]) or '0')
  if spent + amount > tonumber(ARGV[1 + i]) then return 0 end
end
for i = 1, n do
  redis.call('INCRBY', KEYS[i], amount)
  redis.call('EXPIRE', KEYS[i], tonumber(ARGV[1 + n + i]) * 2)
end
return 1
"""
GIVE_BACK = """
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    local left = redis.call('DECRBY', KEYS[i], tonumber(ARGV[1]))
    if left < 0 then redis.call('SET', KEYS[i], 0, 'KEEPTTL') end
  end
end
return 1
"""


class RedisLedger:
    """A fleet's spending, in its Redis: one Lua program checks and reserves, so concurrent
    requests of every proxy never spend past a budget. `ask` runs a call on Redis and says
    when Redis is unreachable (state.fleet.Fleet.ask); then nothing is paid."""

    def __init__(self, client: Any, prefix: str,
                 ask: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]) -> None:
        self._reserve = client.register_script(RESERVE)
        self._give_back = client.register_script(GIVE_BACK)
        # One hash tag for every budget key: a cluster keeps them in one slot, as one Lua
        # program over several keys needs.
        self._prefix = f"{prefix}budget:{{budgets}}:"
        self._ask = ask

    async def reserve(self, budgets: Sequence[Budget], amount: Money, now: float
                      ) -> Reservation | None:
        keys = [self._prefix + budget.key(now) for budget in budgets]
        args = [amount.micros, *(budget.limit.micros for budget in budgets),
                *(budget.seconds for budget in budgets)]
        taken = await self._ask(lambda: self._reserve(keys=keys, args=args))
        if taken != 1:
            return None  # no room, or Redis unreachable: nothing is paid
        return Reservation(amount, tuple(zip(keys, (b.seconds for b in budgets), strict=True)))

    async def give_back(self, reservation: Reservation, micros: int) -> None:
        if micros > 0:
            keys = [key for key, _ in reservation.keys]
            await self._ask(lambda: self._give_back(keys=keys, args=[micros]))
