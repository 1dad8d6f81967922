"""What the proxy may pay for pages: prices, the operator's price policy and budgets, and the
ledger that keeps spending within them (HTTP 402 pay-per-crawl: robotsgate.mitm.payments).

Amounts are kept as integer micro-units of their currency (USD 0.01 is 10,000), so sums are
exact. One grammar reads every price: what a site asks (crawler-price), what it says it charged
(crawler-charged), robots_max_price and the amounts of robots_budget:

    price    = [WS] currency 1*WS amount [WS]     WS: spaces and tabs only
    currency = 3 ASCII letters, any case          usd 0.01 is USD 0.01
    amount   = 1*12 DIGIT ["." 1*6 DIGIT]         ASCII digits

So `USD 0` (and `USD 0.00`) is a price of nothing; leading zeros are allowed and mean nothing
(`USD 007.5` is USD 7.50); at most six decimals, even when the rest are zeros (`USD 0.0100000`
is refused: micro-units are the finest the ledger counts); no sign (`+1`, `-1`), no exponent,
no separator other than one decimal point (`USD 1,00`, `USD 1 000`, `USD 1_000` are refused), a
point always between digits (`USD 1.`, `USD .5` are refused), the code first (`0.01 USD` is
refused), nothing but spaces and tabs around and between (no line break, no NO-BREAK SPACE).
A price is always written back as `CODE AMOUNT` with at least two decimals (str(Money)).

Budgets (robots_budget) are `SCOPE=AMOUNT/PERIOD` entries: SCOPE `*` (everything this proxy, or
its fleet, pays), a bot's product token, or `site:HOST`; PERIOD `hour`, `day` or `month` (30
days). Periods are fixed windows of the clock (a day is a UTC day), so every proxy of a fleet
counts into the same window. A payment is made only when every budget that applies to it has
room for the whole price, and that room is reserved before the paid request leaves: the check
and the reservation are one step (one Lua program in the fleet's Redis, or one synchronous step
on the event loop in memory), so concurrent requests, of one proxy or of a fleet, never spend
past a budget.

A bot's budget applies to the bot as the proxy names it (bot_of): the operator's name for it
(robots_agents, the proxy-auth user, robots_agent), or, for a bot named by nothing but its
User-Agent, the first of the header's product tokens that a budget names (`RedBot=` applies to
`RedBot/1.0` and to `Mozilla/5.0 (compatible; RedBot/1.0)`), never the robots.txt group that
matched. A bot that names itself chooses that name, so its budget holds it only as long as it
names itself honestly; the `*` and `site:` budgets hold whatever it sends.

What a site says it charged is counted in full (judge): once its answer is in, the reservation
is settled at the amount charged, what was not charged given back and what was charged beyond
the price counted too, past the budget if it must be. A site that charged more than the price
agreed, in another currency, or in words the proxy cannot read (it cannot know what that cost)
is overcharging: the budgets count the claim (or the price agreed, when the claim cannot be
counted in its currency), and that site is paid no more (reason overcharged) until the operator
forgives it (robots_forgive_overcharge). The mark is kept where the budgets' counts are: in
this proxy's memory (as long as those counts: until the proxy stops or its services are
rebuilt) or in the fleet's Redis (until forgiven: no expiry), and checked in the same step as
the reservation.
"""

import ipaddress
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, Protocol

from robotsgate.protocol import PRODUCT_TOKEN

MICROS = 1_000_000
PERIODS = {"hour": 3600, "day": 86_400, "month": 30 * 86_400}
_PRICE = re.compile(r"[ \t]*([A-Za-z]{3})[ \t]+([0-9]{1,12})(?:\.([0-9]{1,6}))?[ \t]*")
WRITTEN_CHARS = 200  # of a crawler-charged value kept as written (in the audit record)


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
    """ "USD 0.01" -> Money("USD", 10000) by the grammar above; ValueError when it is not."""
    found = _PRICE.fullmatch(text)
    if found is None:
        raise ValueError(f"{text.strip()[:40]!r} is not a price such as 'USD 0.05' "
                         f"(a currency code, a space, digits with at most 6 decimals)")
    whole, fraction = found[2], found[3] or ""
    return Money(found[1].upper(), int(whole) * MICROS + int(fraction.ljust(6, "0")))


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

    def applies(self, bot: str, host: str) -> bool:
        """Whether it counts a payment by `bot` (as bot_of names it) to `host`."""
        return self.scope == "*" or self.scope == bot.lower() or \
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


_SITE = re.compile(r"[a-z0-9_.:-]+")


def parse_sites(entries: Sequence[str]) -> frozenset[str]:
    """robots_forgive_overcharge: hosts (names or addresses, no port), lower-cased;
    ValueError naming an entry that is not one."""
    found = set()
    for entry in entries:
        site = entry.strip().lower().removeprefix("[").removesuffix("]")
        if not _SITE.fullmatch(site) or (":" in site and not _ipv6(site)):
            raise ValueError(f"{entry!r} is not a host such as news.example (no scheme, port "
                             f"or path)")
        found.add(site)
    return frozenset(found)


def _ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def bot_of(named: str | None, user_agent: str | None, budgets: Sequence[Budget]) -> str:
    """The bot a payment is counted for: `named`, the operator's name for it (robots_agents,
    proxy-auth, robots_agent), when there is one; else the first product token of its
    User-Agent that a budget names, else its User-Agent's first product token (* when it
    names none). Never the robots.txt group that matched."""
    if named:
        return named
    tokens = PRODUCT_TOKEN.findall(user_agent or "")
    scopes = {budget.scope for budget in budgets}
    return next((token for token in tokens if token.lower() in scopes),
                tokens[0] if tokens else "*")


Overcharge = Literal["more", "currency", "unreadable"]
# How a payment's audit record begins its error when the site overcharged (robotsgate report
# reads it so).
OVERCHARGED_NOTE = "overcharged: "


@dataclass(frozen=True, slots=True)
class Charge:
    """What the answer to a paid request said it charged, and what the budgets count."""

    written: str | None  # crawler-charged as the site wrote it (cut); None: it said nothing
    counted: Money  # what every budget that held the price counts for it
    overcharge: Overcharge | None  # more than agreed, another currency, unreadable; or None

    def why(self, agreed: Money) -> str:
        """The overcharge in words (what the record and the refusals that follow say)."""
        claim = self.written or ""  # shown by repr: every control character escaped
        if self.overcharge == "more":
            return f"it charged {self.counted}, more than the {agreed} agreed"
        if self.overcharge == "currency":
            return (f"it charged {claim!r}, in another currency than the {agreed} agreed "
                    f"(counted as {self.counted})")
        return (f"it charged {claim!r}, which cannot be read as a price, for the {agreed} "
                f"agreed (counted as {self.counted})")


def judge(agreed: Money, written: str | None) -> Charge:
    """The site's crawler-charged (`written`; None when absent) against the price agreed.

    Nothing said: nothing charged. Readable in the agreed currency: counted as said, in full
    (an overcharge when above the price). In another currency, or unreadable: the proxy cannot
    know what it cost, so the price agreed stays counted, and it is an overcharge."""
    if written is None:
        return Charge(None, Money(agreed.currency, 0), None)
    kept = written[:WRITTEN_CHARS]
    charged = read_price(written)
    if charged is None:
        return Charge(kept, agreed, "unreadable")
    if charged.currency != agreed.currency:
        return Charge(kept, agreed, "currency")
    return Charge(kept, charged, "more" if charged.micros > agreed.micros else None)


@dataclass(frozen=True, slots=True)
class Reservation:
    """Room reserved in every budget that applies, for one payment to `site`."""

    amount: Money
    keys: tuple[tuple[str, int], ...]  # (window key, its period in seconds)
    site: str  # the host paid, lower case


@dataclass(frozen=True, slots=True)
class Stopped:
    """A site paid no more: it overcharged (`why`, as recorded when it did)."""

    site: str
    why: str


class Ledger(Protocol):
    async def reserve(self, site: str, budgets: Sequence[Budget], amount: Money, now: float,
                      *, forgiven: bool = False) -> Reservation | Stopped | None:
        """Room for `amount` in every one of `budgets` (all of `amount`'s currency), reserved
        for a payment to `site`; Stopped when `site` overcharged before (unless `forgiven`,
        which also forgets that it did); None when a budget has not enough room."""

    async def settle(self, reservation: Reservation, micros: int, *,
                     stop: str | None = None) -> None:
        """The reservation counted as `micros` spent in each of its budgets: the rest given
        back, or what is beyond it counted too (past a budget's limit if it must be); with
        `stop`, its site is paid no more (`stop` says why)."""


class MemoryLedger:
    """One proxy's spending, in memory: each reservation one synchronous step on the event
    loop, so no two can both take the last of a budget. Windows past their period are
    dropped as new ones open."""

    def __init__(self) -> None:
        self.spent: dict[str, int] = {}
        self.stopped: dict[str, str] = {}  # site -> why

    async def reserve(self, site: str, budgets: Sequence[Budget], amount: Money, now: float,
                      *, forgiven: bool = False) -> Reservation | Stopped | None:
        site = site.lower()
        if forgiven:
            self.stopped.pop(site, None)
        elif site in self.stopped:
            return Stopped(site, self.stopped[site])
        keys = [(budget.key(now), budget.limit.micros, budget.seconds) for budget in budgets]
        if any(self.spent.get(key, 0) + amount.micros > limit for key, limit, _ in keys):
            return None
        for key, _, _ in keys:
            self.spent[key] = self.spent.get(key, 0) + amount.micros
        self._forget_old(now)
        return Reservation(amount, tuple((key, seconds) for key, _, seconds in keys), site)

    async def settle(self, reservation: Reservation, micros: int, *,
                     stop: str | None = None) -> None:
        change = micros - reservation.amount.micros
        for key, _ in reservation.keys:
            if key in self.spent or change > 0:
                self.spent[key] = max(0, self.spent.get(key, 0) + change)
        if stop is not None:
            self.stopped[reservation.site] = stop

    def _forget_old(self, now: float) -> None:
        for key in [key for key in self.spent if _closed(key, now)]:
            del self.spent[key]


def _closed(key: str, now: float) -> bool:
    *_, period, _, window = key.split("|")
    return int(window) < int(now // PERIODS[period])


# KEYS[1]: the site's overcharge mark; KEYS[2..]: the budgets' window keys. ARGV[1]: the
# amount; ARGV[2]: 1 when the site is forgiven; ARGV[3..]: each window's limit, then each
# window's period. The mark first, then every budget checked whole and taken whole: nothing is
# reserved unless all have room. Returns the mark (why the site is paid no more), 0 (no room)
# or 1 (reserved).
RESERVE = """
local amount = tonumber(ARGV[1])
if ARGV[2] == '1' then
  redis.call('DEL', KEYS[1])
else
  local why = redis.call('GET', KEYS[1])
  if why then return why end
end
local n = #KEYS - 1
for i = 1, n do
  local spent = tonumber(redis.call('GET', KEYS[1 + i]) or '0')
  if spent + amount > tonumber(ARGV[2 + i]) then return 0 end
end
for i = 1, n do
  redis.call('INCRBY', KEYS[1 + i], amount)
  redis.call('EXPIRE', KEYS[1 + i], tonumber(ARGV[2 + n + i]) * 2)
end
return 1
"""
# KEYS as RESERVE's. ARGV[1]: what was spent less what was reserved (below 0: given back, not
# below nothing; above: counted too, past the limit); ARGV[2]: why the site is paid no more,
# or empty; ARGV[3..]: each window's period (a window that expired meanwhile is made again).
SETTLE = """
local change = tonumber(ARGV[1])
for i = 2, #KEYS do
  if change > 0 then
    redis.call('INCRBY', KEYS[i], change)
    if redis.call('TTL', KEYS[i]) < 0 then
      redis.call('EXPIRE', KEYS[i], tonumber(ARGV[1 + i]) * 2)
    end
  elseif change < 0 and redis.call('EXISTS', KEYS[i]) == 1 then
    local left = redis.call('DECRBY', KEYS[i], -change)
    if left < 0 then redis.call('SET', KEYS[i], 0, 'KEEPTTL') end
  end
end
if ARGV[2] ~= '' then redis.call('SET', KEYS[1], ARGV[2]) end
return 1
"""


class RedisLedger:
    """A fleet's spending, in its Redis: one Lua program checks a site's overcharge mark and
    reserves, so concurrent requests of every proxy never spend past a budget nor pay a site
    after its overcharge is settled. `ask` runs a call on Redis and says when Redis is
    unreachable (state.fleet.Fleet.ask); then nothing is paid."""

    def __init__(self, client: Any, prefix: str,
                 ask: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]) -> None:
        self._reserve = client.register_script(RESERVE)
        self._settle = client.register_script(SETTLE)
        # One hash tag for every budget key and mark: a cluster keeps them in one slot, as one
        # Lua program over several keys needs.
        self._prefix = f"{prefix}budget:{{budgets}}:"
        self._ask = ask

    def mark(self, site: str) -> str:
        """The key of a site's overcharge mark."""
        return f"{self._prefix}overcharged:{site.lower()}"

    async def reserve(self, site: str, budgets: Sequence[Budget], amount: Money, now: float,
                      *, forgiven: bool = False) -> Reservation | Stopped | None:
        site = site.lower()
        keys = [self.mark(site), *(self._prefix + budget.key(now) for budget in budgets)]
        args = [amount.micros, int(forgiven), *(budget.limit.micros for budget in budgets),
                *(budget.seconds for budget in budgets)]
        taken = await self._ask(lambda: self._reserve(keys=keys, args=args))
        if isinstance(taken, bytes | str):
            return Stopped(site, taken.decode("utf-8", "replace")
                           if isinstance(taken, bytes) else taken)
        if taken != 1:
            return None  # no room, or Redis unreachable: nothing is paid
        return Reservation(amount, tuple(zip(keys[1:], (b.seconds for b in budgets),
                                             strict=True)), site)

    async def settle(self, reservation: Reservation, micros: int, *,
                     stop: str | None = None) -> None:
        change = micros - reservation.amount.micros
        if change == 0 and stop is None:
            return
        keys = [self.mark(reservation.site), *(key for key, _ in reservation.keys)]
        args = [change, stop or "", *(seconds for _, seconds in reservation.keys)]
        await self._ask(lambda: self._settle(keys=keys, args=args))
