"""The decision service: request -> robots.txt (cached, fetched once) -> Verdict.

No mitmproxy types here: the addon turns flows into `Request`s and Verdicts into responses, so
everything below it can be driven without a proxy, with an injected clock, store, retrieval
(robotsgate.retrieval.entries: fetcher and rules cache) and pacer.
"""

import asyncio
import math
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import Literal

from robotsgate.decision.purposes import refused
from robotsgate.decision.verdict import Request, Verdict
from robotsgate.licensing.judging import REASONS as LICENSE_REASONS
from robotsgate.licensing.licenses import Licensing
from robotsgate.licensing.tdmrep import TdmRepFiles
from robotsgate.licensing.tokens import LicenseToken
from robotsgate.metrics.prometheus import Metrics
from robotsgate.origin import Origin
from robotsgate.outcomes import Reason
from robotsgate.protocol import Decision, Pace, RobotsTxt, seconds_until_open
from robotsgate.protocol.urls import server_equivalent
from robotsgate.protocol.usage import CATEGORIES, NO_USAGE, combine
from robotsgate.retrieval.entries import Retrieval
from robotsgate.state.pacing import NoSlot, Pacer, Pacing, Slot
from robotsgate.state.store import RobotsEntry, Store

_PACED_HOSTS = 10_000  # hosts the default pacer remembers, when none is given
_CATEGORIES = frozenset(CATEGORIES)  # usage categories always reported, declared or not


def _cache_key(origin: Origin, who: str) -> str:
    return f"{origin.key} {who}"  # no space in an origin's key: the two parts stay apart


@dataclass(frozen=True, slots=True)
class GateConfig:
    """How decisions are paced. (How robots.txt is read and kept belongs to the rules cache and
    the retrieval service; which agent a request is decided for, to the request.)"""

    min_delay: float = 0.0  # seconds between requests to a host, whatever robots.txt says
    max_crawl_delay: float = 60.0  # a longer Crawl-delay is clamped to this, or refused
    on_long_delay: Literal["clamp", "refuse"] = "clamp"
    # Added to every non-zero interval: the proxy controls when it releases a request, not how
    # long forwarding takes (about a millisecond, more under load), and the origin must never
    # see two requests closer than it asked.
    pacing_margin: float = 0.0


class Gate:
    """Decides requests. One instance owns its in-flight lookups.

    `retrieval` must publish into `store`: the gate reads entries from the store, and hands the
    store the retrieval's fetch to run when one is missing or expired.
    """

    def __init__(self, config: GateConfig, store: Store, retrieval: Retrieval,
                 clock: Callable[[], float], pacer: Pacing | None = None, *,
                 metrics: Metrics | None = None, licensing: Licensing | None = None,
                 tdmrep: TdmRepFiles | None = None) -> None:
        self.config = config
        self.metrics = metrics or Metrics()
        self.pacer: Pacing = pacer or Pacer(clock, max_wait=60, max_hosts=_PACED_HOSTS)
        self._store = store
        self._retrieval = retrieval
        self._licensing = licensing  # RSL licences: None, not read (robots_licenses=off)
        self._tdmrep = tdmrep  # TDMRep's /.well-known/tdmrep.json: None, not read
        self._clock = clock
        self._inflight: dict[str, asyncio.Task[RobotsEntry]] = {}
        self._long_decisions = asyncio.Lock()  # decisions that take more than one slice

    async def check(self, request: Request) -> Verdict:
        origin = request.origin
        if request.path == "/robots.txt" or request.path.startswith("/robots.txt?"):
            # The bot's own robots.txt request goes through untouched (no fetch of ours first).
            return Verdict("forward", Reason.ROBOTS_TXT, request.agent or "*", origin.robots_url)
        entry = await self.entry(origin, request.user_agent, request.agent)
        if entry.robots is None:
            retry = max(1, math.ceil(entry.expires_at - self._clock()))
            return Verdict("unavailable", Reason.ROBOTS_UNAVAILABLE, request.agent or "*",
                           origin.robots_url, entry, retry_after=retry)
        robots = entry.robots
        agent = request.agent or robots.agent_for(request.user_agent or "")
        # decide() reads "//x/y" as a network-path reference (host x); a request's path is a path.
        path = request.path if not request.path.startswith("//") else "http://_" + request.path
        decision = robots.decide_at_once(agent, path) or \
            _in_one_slice(steps := robots.decide_steps(agent, path)) or \
            await self._in_slices(steps)
        # What the server will really serve may be another path (/a/../private, /%70rivate):
        # when it is, deny if either reading is denied, and its usage preferences count too.
        equivalent = server_equivalent(request.path)
        if decision.allowed and equivalent != request.path:
            other = robots.decide_at_once(agent, equivalent) or \
                _in_one_slice(steps := robots.decide_steps(agent, equivalent)) or \
                await self._in_slices(steps)
            if not other.allowed:
                decision = other
        if not decision.allowed:
            return Verdict("block", Reason.DISALLOWED, agent, origin.robots_url, entry, decision)
        usage = NO_USAGE
        if robots.states_usage:
            categories = _CATEGORIES | request.purposes
            usage = robots.usage(agent, path, categories, allowed=True)
            if equivalent != request.path:
                usage = combine(usage, robots.usage(agent, equivalent, categories,
                                                    allowed=True))
        verdict = Verdict("forward", Reason.ALLOWED, agent, origin.robots_url, entry, decision,
                          usage=usage)
        # Only what robots.txt disallows outright refuses here: an unknown preference may still
        # be stated by the response (Content-Usage header), where robots_usage_unknown applies.
        refusal = refused(usage, request.purposes, unknown_refused=False)
        if refusal is not None:
            return replace(verdict, action="block", reason=Reason.USAGE_PREFERENCE,
                           usage_refusal=refusal)
        if request.purposes:
            # Only a bot that declared what it crawls for can be refused for it: the others
            # never wait for a licence or a tdmrep.json.
            judged = await self._for_purposes(request, robots, verdict, equivalent)
            if judged.action != "forward":
                return judged
            verdict = judged
        return await self._pace(origin, robots, verdict)

    async def _for_purposes(self, request: Request, robots: RobotsTxt, verdict: Verdict,
                            equivalent: str) -> Verdict:
        """The verdict with the origin's tdmrep.json rule for the path, and its licences
        judged: refused by them, or carrying the licence obtained."""
        origin = request.origin
        urls = [origin.key + request.path]
        if equivalent != request.path:
            urls.append(origin.key + equivalent)
        if self._tdmrep is not None:
            # Not decided here: the answer's own tdm-reservation supersedes the file's.
            tdm = await self._tdmrep.statement(origin, tuple(urls))
            if tdm is not None:
                verdict = replace(verdict, tdm=tdm)
        if (robots.licenses or robots.unread_licenses) and self._licensing is not None:
            found = await self._licensing.judge(robots.licenses, urls, request.purposes,
                                                site=origin.key,
                                                unread=robots.unread_licenses)
            if isinstance(found, LicenseToken):
                return replace(verdict, license_token=found)
            if found is not None:
                unavailable = found.kind == "unavailable"
                return replace(verdict, action="unavailable" if unavailable else "block",
                               reason=LICENSE_REASONS[found.kind], license_refusal=found,
                               retry_after=self._licensing.error_ttl if unavailable else None)
        return verdict

    async def _pace(self, origin: Origin, robots: RobotsTxt, verdict: Verdict) -> Verdict:
        pace = robots.pace(verdict.agent)
        window = pace.visit_time
        if window is not None:
            closed_for = seconds_until_open(window, self._clock())
            if closed_for:
                return replace(verdict, action="closed", reason=Reason.VISIT_TIME,
                               retry_after=int(closed_for))
        interval, reason, asked = self._interval(pace)
        if reason == Reason.CRAWL_DELAY_TOO_LONG:
            return replace(verdict, action="throttle", reason=reason, asked_delay=asked,
                           retry_after=math.ceil(asked or 0))
        slot = await self.pacer.reserve(origin.host, interval)
        if isinstance(slot, NoSlot):
            return replace(verdict, action="throttle",
                           reason=Reason.PUSHBACK if slot.paused else Reason.WAIT_TOO_LONG,
                           retry_after=max(1, math.ceil(slot.retry_after)), asked_delay=asked)
        if slot.wait <= 0 and reason != Reason.CRAWL_DELAY_CLAMPED:
            return verdict if interval <= 0 else replace(verdict, interval=interval)
        return replace(verdict, reason=Reason.PUSHBACK if slot.paused else reason, wait=slot.wait,
                       asked_delay=asked, interval=interval)

    async def pace_regardless(self, origin: Origin, verdict: Verdict) -> tuple[float, float]:
        """(seconds to hold, interval kept) for a request that goes out whatever its verdict
        (monitor mode).

        It takes its turn in the host's schedule like an allowed request, at the agent's
        interval when robots.txt is known (a long Crawl-delay clamped), else at the least
        interval; never refused, since it is forwarded anyway.
        """
        entry = verdict.entry
        if entry is not None and entry.robots is not None:
            interval = self._interval(entry.robots.pace(verdict.agent), clamp=True)[0]
        else:
            interval = self.config.min_delay
            if interval > 0:
                interval += self.config.pacing_margin
        slot = await self.pacer.reserve(origin.host, interval, max_wait=math.inf)
        return (slot.wait if isinstance(slot, Slot) else 0.0), interval

    async def _in_slices(self, steps: Generator[None, None, Decision]) -> Decision:
        """Run the rest of a decision that comes in slices of bounded work
        (RobotsTxt.decide_steps), its first slice done (_in_one_slice).

        Ordinary decisions come in one slice and never give the event loop up. A long one
        (a hostile robots.txt, a long path) lets the loop serve other requests between its
        slices, and long ones take turns: however many there are, each turn of the loop does
        at most one slice of them, so one site cannot stall the others.
        """
        async with self._long_decisions:
            try:
                while True:
                    await asyncio.sleep(0)
                    next(steps)
            except StopIteration as done:
                decision: Decision = done.value
                return decision

    def _interval(self, pace: Pace, *, clamp: bool = False
                  ) -> tuple[float, Reason, float | None]:
        """(seconds between request starts, what sets it, the Crawl-delay asked if cut down)."""
        config = self.config
        delay = pace.crawl_delay or 0.0
        asked = None
        reason = Reason.CRAWL_DELAY
        if delay > config.max_crawl_delay:
            asked = delay
            if config.on_long_delay == "refuse" and not clamp:
                return 0.0, Reason.CRAWL_DELAY_TOO_LONG, asked
            delay, reason = config.max_crawl_delay, Reason.CRAWL_DELAY_CLAMPED
        rate = pace.request_rate
        interval, why = delay, reason  # the largest of the three; on a tie, the first named
        if rate is not None and rate.interval > interval:
            interval, why = rate.interval, Reason.REQUEST_RATE
        if config.min_delay > interval:
            interval, why = config.min_delay, Reason.MIN_DELAY
        if asked is not None and interval == delay:
            why = Reason.CRAWL_DELAY_CLAMPED
        if interval > 0:
            interval += config.pacing_margin
        return interval, why, asked

    async def check_host(self, origin: Origin, user_agent: str | None,
                         agent: str | None) -> Verdict:
        """For a tunnel the proxy cannot see into: the host alone decides.

        Refused when robots.txt disallows everything for the agent, or cannot be fetched.
        """
        entry = await self.entry(origin, user_agent, agent)
        if entry.robots is None:
            retry = max(1, math.ceil(entry.expires_at - self._clock()))
            return Verdict("unavailable", Reason.ROBOTS_UNAVAILABLE, agent or "*",
                           origin.robots_url, entry, retry_after=retry)
        agent = agent or entry.robots.agent_for(user_agent or "")
        if entry.robots.disallows_all(agent):
            return Verdict("block", Reason.DISALLOWED_HOST, agent, origin.robots_url, entry,
                           entry.robots.decide(agent, "/"))
        return Verdict("forward", Reason.TUNNEL, agent, origin.robots_url, entry)

    async def entry(self, origin: Origin, user_agent: str | None,
                    agent: str | None = None) -> RobotsEntry:
        """The origin's robots.txt as served to this bot, fetched when missing or expired; one
        fetch per origin and bot.

        A site may serve each bot its own file, so a copy is fetched as the product token it
        decides for (robots_agent, robots_agents, a proxy-auth user: the operator's names for
        its bots) and kept for that token only. A bot named by nothing but its User-Agent
        header shares one copy per origin, fetched as the proxy itself: a User-Agent is the
        bot's to choose, and one that earned a 4xx for robots.txt (too long for the site, or
        tripping its firewall) would otherwise read as "no rules" (RFC 9309 §2.3.1.3).
        """
        key = self.cache_key(origin, user_agent, agent)
        cached = await self._store.get(key)
        if cached is not None and cached.expires_at > self._clock():
            self.metrics.cache(hit=True)
            return cached
        self.metrics.cache(hit=False)
        task = self._inflight.get(key)
        if task is None:
            # The store decides who fetches: this gate, or (shared store) one proxy of a fleet.
            task = asyncio.create_task(self._store.refresh(
                key, cached, lambda: self._retrieval.retrieve(origin, key, agent, cached)))
            self._inflight[key] = task
            task.add_done_callback(lambda _: self._inflight.pop(key, None))
        # shield: a client that goes away must not cancel the fetch the others wait for.
        return await asyncio.shield(task)

    @staticmethod
    def cache_key(origin: Origin, user_agent: str | None, agent: str | None = None) -> str:
        """The store's key for the copy of `origin`'s robots.txt kept for this bot: its
        product token, or "*" for bots named by their User-Agent alone."""
        return _cache_key(origin, agent.lower() if agent else "*")


def _in_one_slice(steps: Generator[None, None, Decision]) -> Decision | None:
    """The decision, when it comes in its first slice (nearly every one: no coroutine for it);
    None when there are more slices to run (Gate._in_slices)."""
    try:
        next(steps)
    except StopIteration as done:
        decision: Decision = done.value
        return decision
    return None
