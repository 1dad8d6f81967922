"""The exchange policy: one request's facts in, its plan out.

Everything a request is refused or forwarded for is decided here, in this order, and nowhere
else: bytes HTTP/1.1 cannot carry; the fields Connection names (removed, or refused when the
request is named, framed or identified by them); framing and upgrades; every name of the
destination (tunnel, target, Host, TLS server name); the address it would be dialled at; which
bot it is and whether that must be known; links a page said not to follow; the target's
robots.txt, usage preferences and politeness. Monitor mode records what would have been
refused and forwards it, except what robotsgate could not forward as decided (unwritable
bytes, a Connection naming what the request is decided by, other names, refused addresses):
those are refused in every mode.

No mitmproxy here: the mitmproxy layer reads a flow into `Facts` and applies the `Plan`;
`robotsgate check` builds `Facts` from a URL and prints the plan.
"""

from dataclasses import dataclass, replace
from typing import Protocol

from robotsgate import outcomes
from robotsgate.audit.records import Event
from robotsgate.decision.gate import Gate
from robotsgate.decision.identity import AgentMap, Identity, is_product
from robotsgate.decision.names import connected_to, destination
from robotsgate.decision.plan import Answer, Forward, Plan, Record, Who
from robotsgate.decision.purposes import NONE as NO_PURPOSES
from robotsgate.decision.purposes import PurposeMap, Purposes, usage_answer
from robotsgate.decision.request import (
    Facts,
    Refusal,
    Seen,
    h2c_offered,
    hop_by_hop,
    malformed,
    unwritable,
)
from robotsgate.decision.verdict import Request, Verdict
from robotsgate.egress.policy import Refused
from robotsgate.escape import escaped
from robotsgate.licensing.judging import license_answer
from robotsgate.origin import Origin
from robotsgate.outcomes import Reason
from robotsgate.pages import Pages
from robotsgate.protocol.memo import keep

_ORIGINS_REMEMBERED = 4096


class Dialler(Protocol):
    """Resolves a destination and classifies its addresses (robotsgate.egress.resolver)."""

    async def dial(self, host: str, port: int) -> str | Refused | None:
        """The address to dial; Refused when none may be; None when the name does not
        resolve (the connection will fail: nothing to decide on)."""


class Unrestricted:
    """Every destination may be reached, and none is resolved (robotsgate check)."""

    async def dial(self, host: str, port: int) -> str | Refused | None:
        return None


@dataclass(frozen=True, slots=True)
class Rules:
    """The options the policy reads (robotsgate.config.options.Settings holds them)."""

    agent: str | None = None  # robots_agent
    require_agent: bool = False
    monitor: bool = False
    strip: bool = False


class Exchange:
    """Decides requests. One per configuration; its parts are handed in, never looked up."""

    def __init__(self, rules: Rules, gate: Gate, egress: Dialler, *,
                 agents: AgentMap | None = None, purposes: PurposeMap | None = None,
                 pages: Pages | None = None) -> None:
        self.rules = rules
        self.gate = gate
        self.egress = egress
        self.agents = agents or AgentMap.parse(())
        self.purposes = purposes or PurposeMap.parse("", ())
        self._no_purposes = self.purposes.empty  # asked of every request: worked out once
        self._tokens: set[bytes] = set()  # header names and methods known to be tokens
        self.pages = pages
        self._origins: dict[tuple[str, str, int], Origin] = {}

    def identify(self, facts: Facts) -> Identity:
        return self.agents.resolve(user=facts.user, address=facts.client,
                                   agent_option=self.rules.agent)

    async def decide(self, facts: Facts) -> Plan:
        rules = self.rules
        seen = Seen.of(facts.fields, self._tokens)
        who = Who(self.identify(facts), seen.user_agent)
        refusal = unwritable(facts, seen, self._tokens)
        if refusal is not None:
            return _refused(refusal, who)
        hop = None if seen.connection is None else hop_by_hop(seen)  # mostly no Connection
        if hop is not None:
            if isinstance(hop, Refusal):
                return _refused(hop, who)
            # The fields Connection names were for the hop to the proxy: gone before the
            # decision, which is then of the request that leaves (RFC 9110 §7.6.1).
            named = hop.named
            seen = Seen.of(tuple(field for field in facts.fields
                                 if field[0].lower() not in named), self._tokens)
            seen.dropped += tuple(named)
        records: tuple[Record, ...] = ()
        refusal = malformed(facts, seen)
        if refusal is not None:
            if not rules.monitor:
                return _refused(refusal, who)
            records = (_record(refusal, "would-block"),)
        origin = self.origin(facts.scheme, facts.host, facts.port)
        refusal = destination(facts, origin, seen)
        if refusal is not None:
            return _refused(refusal, who, records)
        dial = await self.egress.dial(origin.host, origin.port)
        if isinstance(dial, Refused):
            return _refused(Refusal(Reason.DESTINATION, outcomes.text(
                Reason.DESTINATION, where=dial.where, why=dial.why)), who, records,
                error=dial.describe())
        if facts.connected is not None:  # captured: the name must be where the bot went
            refusal = connected_to(facts, origin, dial)
            if refusal is not None:
                return _refused(refusal, who, records, error=f"{origin.host} is at "
                                f"{dial or 'no address'}; the bot connected to "
                                f"{facts.connected}")
        refusal = self._unidentified(who)
        if refusal is not None:
            return _refused(refusal, who, records,
                            headers={"Proxy-Authenticate": 'Basic realm="robotsgate"'})
        path = facts.path
        nofollow = self._nofollow(origin, path, seen, who)
        if nofollow is not None:
            record = Record("would-block" if rules.monitor else "block", Reason.NOFOLLOW, 403,
                            page=nofollow.page)
            if not rules.monitor:
                return Answer(Reason.NOFOLLOW, nofollow.text, who,
                              {"X-Robotsgate-Page": escaped(nofollow.page)},
                              records=(*records, record))
            records += (record,)
        purposes = self.purposes_of(facts, who)
        if purposes:
            who = replace(who, purposes=purposes)
        verdict = await self.gate.check(Request(origin, path, seen.user_agent,
                                                who.identity.token, purposes))
        refused = False
        if verdict.action == "forward":
            if verdict.wait > 0 or verdict.asked_delay is not None:
                records += (Record("delay", verdict.reason, None, verdict),)
        elif rules.monitor:
            # Forwarded all the same, so it takes its turn in the host's schedule like any
            # other.
            records += (Record("would-block", verdict.reason, verdict.status or 503, verdict),)
            wait, interval = await self.gate.pace_regardless(origin, verdict)
            verdict = replace(verdict, action="forward", wait=wait, interval=interval)
            refused = True
        else:
            return _answer(verdict, who, (*records, Record(
                "block", verdict.reason, verdict.status or 503, verdict)))
        return Forward(origin, who, verdict, address=dial, drop=seen.dropped,
                       unfold=seen.folded, drop_upgrade=h2c_offered(seen),
                       # Strip mode and a page's TDM reservation need the whole page: a bot
                       # asking for it in pieces would get each piece unread, and could join
                       # them.
                       drop_range=seen.ranged and bool(purposes or rules.strip),
                       host_written=not seen.hosts if facts.http2 else
                       seen.hosts == 1 and seen.host == origin.authority,
                       connection=None if hop is None else hop.connection,
                       refused=refused, records=records)

    def origin(self, scheme: str, host: str, port: int) -> Origin:
        """Origin.of, remembered: a bot asks the same few origins again and again."""
        where = (scheme, host, port)
        origin = self._origins.get(where)
        if origin is None:
            origin = keep(self._origins, _ORIGINS_REMEMBERED, where, Origin.of(scheme, host, port))
        return origin

    def purposes_of(self, facts: Facts, who: Who) -> Purposes:
        """What the request is crawled for (robots_purposes, robots_purpose)."""
        if self._no_purposes:
            return NO_PURPOSES
        return self.purposes.resolve(user=facts.user, address=facts.client,
                                     agent=who.identity.token, user_agent=who.user_agent)

    def _unidentified(self, who: Who) -> Refusal | None:
        """robots_require_agent: 407 when nothing says which bot this is."""
        if not self.rules.require_agent or who.identity.token is not None or \
                is_product(who.user_agent or ""):
            return None
        return Refusal(Reason.UNIDENTIFIED, outcomes.text(Reason.UNIDENTIFIED))

    def _nofollow(self, origin: Origin, path: str, seen: Seen, who: Who
                  ) -> "_Nofollow | None":
        """A link that the page named in the Referer says not to follow."""
        pages = self.pages
        if pages is None or not seen.referer:
            return None  # no Referer, no page to have been told about: the common case
        found = pages.nofollow(url=origin.key + path, referer=seen.referer,
                               agent=who.identity.token, user_agent=who.user_agent)
        if found is None:
            return None
        where = ("is nofollow for this agent (META robots or X-Robots-Tag)" if found.why == "page"
                 else "has this link in a nofollow section")
        return _Nofollow(found.page, outcomes.text(Reason.NOFOLLOW, page=found.page,
                                                   where=where))


@dataclass(frozen=True, slots=True)
class _Nofollow:
    page: str
    text: str


def _record(refusal: Refusal, event: Event) -> Record:
    return Record(event, refusal.reason, outcomes.OUTCOMES[refusal.reason].status)


def _refused(refusal: Refusal, who: Who, records: tuple[Record, ...] = (), *,
             headers: dict[str, str] | None = None, error: str | None = None) -> Answer:
    status = outcomes.OUTCOMES[refusal.reason].status
    record = Record("block", refusal.reason, status, error=error)
    return Answer(refusal.reason, refusal.text, who, headers or {},
                  records=(*records, record))


def _answer(verdict: Verdict, who: Who, records: tuple[Record, ...]) -> Answer:
    """The proxy's answer to a request its verdict refuses."""
    refusal = verdict.usage_refusal
    if refusal is not None:
        text, headers = usage_answer(refusal, agent=verdict.agent, robots_url=verdict.robots_url)
        return Answer(Reason.USAGE_PREFERENCE, text, who, headers, verdict, records)
    licensed = verdict.license_refusal
    if licensed is not None:
        text, headers = license_answer(licensed, agent=verdict.agent,
                                       robots_url=verdict.robots_url)
        if verdict.retry_after:
            headers["Retry-After"] = str(verdict.retry_after)
        return Answer(verdict.reason, text, who, headers, verdict, records)
    decision = verdict.decision
    if verdict.action == "block" and decision is not None and decision.rule is not None:
        rule = decision.rule
        return Answer(Reason.DISALLOWED, outcomes.text(
            Reason.DISALLOWED, explain=decision.explain(), robots_url=verdict.robots_url,
            agent=verdict.agent), who,
            {"X-Robotsgate-Rule": escaped(rule.text), "X-Robotsgate-Line": str(rule.line)},
            verdict, records)
    headers = {"Retry-After": str(verdict.retry_after or 60)}
    return Answer(verdict.reason, outcomes.text(
        verdict.reason, robots_url=verdict.robots_url, retry_after=verdict.retry_after,
        asked=f"{verdict.asked_delay or 0:g}",
        error=verdict.entry.trouble if verdict.entry else None), who, headers, verdict,
        records)




