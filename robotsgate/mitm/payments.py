"""HTTP 402: pay-per-crawl, paid by the proxy within the operator's price policy and budgets
(robotsgate.payments.spending), and x402, recorded and refused.

Pay-per-crawl (as Cloudflare deploys it): an unpaid request is answered `402` with
`crawler-price: USD 0.01`; the crawler may send it again with `crawler-exact-price: USD 0.01`,
signed with Web Bot Auth; the origin then answers `200` with `crawler-charged: USD 0.01`, or
explains with `crawler-error`. Here:

- the price must be readable, within robots_max_price (none by default: nothing is ever paid
  unless the operator says how much), in its currency, and the request must have left signed
  (robots_signature_agent signs it): else the bot gets 402 price-refused;
- every budget that applies (robots_budget: the whole proxy or fleet, the bot, the site) must
  have room for the price, reserved before the request goes again: else 402 budget-exhausted;
- the site must not have overcharged before (robotsgate.payments.spending: checked with the budgets,
  in one step): else 402 overcharged, until robots_forgive_overcharge names it;
- the request is sent once more (robotsgate.mitm.again: decided, paced, signed, audited
  afresh), with `crawler-exact-price` set by the proxy after the decision, and the bot gets
  that answer. What the origin says it charged (`crawler-charged`) is judged against the price
  agreed (spending.judge) and the reservation settled at it, in full: recorded (event payment,
  reason crawler-charged, fields price: what the budgets counted, charged_as_written: the
  field as the site wrote it, bot) and counted in metrics. An overcharge (more than agreed,
  another currency, unreadable) is logged as an error too, and stops payments to that site.
  A bot's own crawler-exact-price, crawler-max-price or x402 payment headers never leave
  (robotsgate.decision.request): only the proxy pays.

Budgets are counted for the bot as the proxy names it (spending.bot_of), never for the
robots.txt group that matched.

x402 (`PAYMENT-REQUIRED`: base64 of a JSON object saying what to pay on which chain): decoded,
recorded in the audit record's `x402` field, and answered 402 x402-unsupported. Paying on a
chain is not something a proxy can do on a bot's behalf, and this one does not.
"""

import base64
import binascii
import json
import logging
from collections.abc import Awaitable
from dataclasses import dataclass

from mitmproxy import http

from robotsgate import outcomes
from robotsgate.audit.records import Event, timestamp
from robotsgate.escape import escaped
from robotsgate.mitm.answers import AuditUnwritable, answer
from robotsgate.mitm.flow import state
from robotsgate.mitm.runtime import Live, Runtime
from robotsgate.outcomes import Reason
from robotsgate.payments.spending import (
    OVERCHARGED_NOTE,
    Reservation,
    Stopped,
    bot_of,
    judge,
    parse_sites,
    read_price,
)

logger = logging.getLogger(__name__)

MAX_X402 = 8192  # characters of PAYMENT-REQUIRED decoded


@dataclass(frozen=True, slots=True)
class _Paying:
    """A request sent again to pay: the room reserved, and the bot whose budgets hold it."""

    reservation: Reservation
    bot: str


class Pay:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        # A copy sent to pay has the room reserved as its note (_Paying). The price it carries
        # (crawler-exact-price) is written on the copy alone, after its decision: no request
        # sent again ever carries one from before, so there is nothing to declare.
        self.resends = runtime.resends
        self._settled: set[int] = set()  # reservations their answer settled (by id)

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        if self.resends.in_flight:  # one test per request: nearly always none is on its way
            self._stamp(flow)

    def _stamp(self, flow: http.HTTPFlow) -> None:
        paying = self.resends.note(flow, _Paying)
        if paying is not None and flow.response is None:
            # After the decision (which drops any a bot wrote), before the signature.
            flow.request.headers["crawler-exact-price"] = str(paying.reservation.amount)

    def response(self, flow: http.HTTPFlow) -> Awaitable[None] | None:
        response = flow.response
        if response is None or (response.status_code != 402 and not self.resends.in_flight):
            return None
        # First: a paid copy is settled whatever answered it (the proxy itself, decided again).
        paying = self.resends.note(flow, _Paying)
        if paying is not None:
            return self._settle(flow, response, paying)
        known = state(flow)
        if response.status_code != 402 or known.verdict is None or known.refused or \
                not self.resends.may_send(flow):
            # Never paid: one monitor mode forwards though refused, or one the resend policy
            # would not send again (robotsgate.mitm.again: the proxy's own answer, a copy, a
            # body streamed: a 402 already streaming to the bot cannot be replaced by the paid
            # answer).
            return None
        return self._asked(flow, response)

    async def _asked(self, flow: http.HTTPFlow, response: http.Response) -> None:
        live = self.runtime.of(flow)
        headers = response.headers
        asked = headers.get("crawler-price")
        if asked is None:
            required = headers.get("payment-required")
            if required is not None:
                self._refuse(flow, live, Reason.X402_UNSUPPORTED, x402=_x402(required))
            return  # a 402 that asks nothing the proxy reads: the bot gets it as it came
        price = read_price(asked)
        limit = live.services.max_price
        why = None
        if price is None:
            why = f"its price ({asked[:60]!r}) cannot be read"
        elif limit is None:
            why = "this proxy pays nothing (robots_max_price is not set)"
        elif price.currency != limit.currency or price > limit:
            why = f"it asks {price}, more than robots_max_price ({limit})"
        elif state(flow).signed is not True:
            why = "a paid request must be signed (Web Bot Auth: robots_signature_agent)"
        if why is not None or price is None:
            self._refuse(flow, live, Reason.PRICE_REFUSED, why=why, price=asked)
            return
        identity = state(flow).identity
        # The bot as the proxy names it (robots_agents, proxy-auth, robots_agent, else its
        # User-Agent's product token), never the group a site's robots.txt happened to match.
        bot = bot_of(identity.token if identity is not None else None,
                     flow.request.headers.get("user-agent"), live.services.budgets)
        site = flow.request.host.lower()
        budgets = [budget for budget in live.services.budgets
                   if budget.limit.currency == price.currency and budget.applies(bot, site)]
        now = self.runtime.clocks.clock()
        forgiven = site in parse_sites(live.settings.forgive_overcharge)
        reservation = await live.services.ledger.reserve(site, budgets, price, now,
                                                         forgiven=forgiven)
        if isinstance(reservation, Stopped):
            self._refuse(flow, live, Reason.OVERCHARGED, price=str(price), bot=bot,
                         why=f"{reservation.why}; robots_forgive_overcharge={site} pays it "
                             f"again")
            return
        if reservation is None:
            self._refuse(flow, live, Reason.BUDGET_EXHAUSTED, price=str(price), bot=bot,
                         why=", ".join(str(budget) for budget in budgets))
            return
        paying = _Paying(reservation, bot)
        try:
            _, trouble = await self.resends.send(flow, paying)
        finally:
            if id(paying) not in self._settled:  # no answer came to settle it
                self._settled.add(id(paying))
                await live.services.ledger.settle(reservation, 0)
        self._settled.discard(id(paying))
        if trouble is not None:
            self._record(flow, live, "payment", Reason.CRAWLER_CHARGED, None, price=None,
                         bot=bot, error=f"sent again to pay {price}, it got no answer "
                                        f"({trouble}): nothing was paid; the bot got the first "
                                        f"answer")

    async def _settle(self, flow: http.HTTPFlow, response: http.Response,
                      paying: _Paying) -> None:
        """The paid request's answer: what the site says it charged is counted, in full, and
        recorded as it wrote it; an overcharge stops payments to the site."""
        live = self.runtime.of(flow)
        self._settled.add(id(paying))
        reservation = paying.reservation
        agreed, site = reservation.amount, reservation.site
        charge = judge(agreed, response.headers.get("crawler-charged"))
        stop = None
        if charge.overcharge is not None:
            forgiven = site in parse_sites(live.settings.forgive_overcharge)
            why = charge.why(agreed)
            stop = None if forgiven else f"{why} (at {timestamp(self.runtime.clocks.clock())})"
            logger.error("robotsgate: %s overcharged for %s: %s; %s", site,
                         escaped(flow.request.pretty_url), why,
                         "forgiven (robots_forgive_overcharge)" if forgiven else
                         "it is paid no more until robots_forgive_overcharge names it")
            self.runtime.metrics.overcharged(charge.overcharge)
        await live.services.ledger.settle(reservation, charge.counted.micros, stop=stop)
        if charge.written is not None:
            self.runtime.metrics.charged(charge.counted.currency, charge.counted.micros)
        error = response.headers.get("crawler-error")
        said = f", crawler-error: {escaped(error[:200])}" if error else ""
        if charge.overcharge is not None:
            note = f"{OVERCHARGED_NOTE}{charge.why(agreed)}; " + \
                (f"{site} is paid no more until robots_forgive_overcharge names it"
                 if stop is not None else "forgiven (robots_forgive_overcharge)")
        elif charge.written is None:
            note = f"nothing charged (HTTP {response.status_code}{said}); {agreed} given back"
        elif charge.counted.micros < agreed.micros:
            note = f"charged less than the {agreed} agreed{said}; the rest given back"
        else:
            note = None
        self._record(flow, live, "payment", Reason.CRAWLER_CHARGED, None,
                     price=None if charge.written is None else str(charge.counted),
                     charged_as_written=charge.written, bot=paying.bot,
                     origin_status=response.status_code, error=note)

    def _refuse(self, flow: http.HTTPFlow, live: Live, reason: Reason, *, why: str | None = None,
                price: str | None = None, x402: str | None = None,
                bot: str | None = None) -> None:
        """The origin's 402 withheld: the proxy's own 402, saying why it did not pay."""
        verdict = state(flow).verdict
        self._record(flow, live, "would-block" if live.settings.monitor else "withheld",
                     reason, 402, price=price, x402=x402, origin_status=402, error=why, bot=bot)
        if live.settings.monitor:
            return
        text = outcomes.text(reason, why=why, price=price, x402=x402 or "unreadable")
        extra = {"crawler-price": price} if price and reason is not Reason.X402_UNSUPPORTED \
            else {}
        answer(flow, reason, text, extra, verdict)

    def _record(self, flow: http.HTTPFlow, live: Live, event: Event, reason: Reason,
                status: int | None, *, price: str | None = None, x402: str | None = None,
                origin_status: int | None = None, error: str | None = None,
                charged_as_written: str | None = None, bot: str | None = None) -> None:
        try:
            live.recorder.flow(flow, event, reason, status, state(flow).verdict,
                               price=price, x402=x402, origin_status=origin_status, error=error,
                               charged_as_written=charged_as_written, bot=bot)
        except AuditUnwritable:
            logger.error("robotsgate: a payment of %s could not be recorded",
                         flow.request.pretty_url)


def _x402(value: str) -> str:
    """What an x402 PAYMENT-REQUIRED asks, in words: version, and per accepted way to pay its
    scheme, network, amount, asset and payee; "unreadable: ..." when it cannot be decoded."""
    try:
        decoded = json.loads(base64.b64decode(value.strip()[:MAX_X402 * 2], validate=True))
    except (binascii.Error, ValueError, RecursionError) as exc:
        return f"unreadable: {type(exc).__name__}"
    if not isinstance(decoded, dict):
        return "unreadable: not a JSON object"
    accepts = decoded.get("accepts")
    ways = []
    for way in accepts[:4] if isinstance(accepts, list) else []:
        if isinstance(way, dict):
            ways.append(" ".join(f"{name}={escaped(str(way.get(name)))[:80]}"
                                 for name in ("scheme", "network", "amount", "asset", "payTo")
                                 if way.get(name) is not None))
    version = decoded.get("x402Version")
    return f"x402 v{escaped(str(version))[:8]}: " + ("; ".join(ways) or "no accepts")
