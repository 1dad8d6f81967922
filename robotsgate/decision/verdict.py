"""What the gate decides on and what it answers: a `Request` (origin, path, who) and its
`Verdict` (an action, a reason, the wait and interval, and what robots.txt, usage preferences,
TDMRep and licences said). Values only: the gate that makes them is robotsgate.decision.gate;
the plan (robotsgate.decision.plan) and the mitmproxy layer read them without importing it.
"""

from dataclasses import dataclass
from typing import Literal

from robotsgate.decision.purposes import NONE as NO_PURPOSES
from robotsgate.decision.purposes import Purposes, UsageRefusal
from robotsgate.licensing.judging import LicenseRefusal
from robotsgate.licensing.tokens import LicenseToken
from robotsgate.origin import Origin
from robotsgate.outcomes import Reason, status
from robotsgate.protocol import Decision
from robotsgate.protocol.usage import NO_USAGE, Statement, Usage
from robotsgate.state.store import RobotsEntry
from robotsgate.values import quick_init


@quick_init  # made for every request (robotsgate.values)
@dataclass(frozen=True, slots=True)
class Request:
    origin: Origin
    path: str  # path and query, as sent
    user_agent: str | None
    # The product token, when configuration names one (robots_agent, robots_agents, proxy-auth);
    # None: the User-Agent header picks the group.
    agent: str | None = None
    # What the bot crawls for (robotsgate.decision.purposes): refused when the site's usage
    # preferences disallow every one.
    purposes: Purposes = NO_PURPOSES


# forward: after `wait` seconds. block: 403, a rule disallows it. unavailable: 503, robots.txt
# unreachable. throttle: 429, the wait would be too long. closed: 503, outside Visit-time.
Action = Literal["forward", "block", "unavailable", "throttle", "closed"]


@quick_init  # made for every request (robotsgate.values)
@dataclass(frozen=True, slots=True)
class Verdict:
    action: Action
    # forward: allowed | robots.txt | crawl-delay | request-rate | min-delay | pushback |
    #          crawl-delay-clamped; otherwise: disallowed | robots-unavailable | wait-too-long |
    #          crawl-delay-too-long | pushback | visit-time
    reason: Reason
    agent: str  # the product token the decision was made for
    robots_url: str
    entry: RobotsEntry | None = None
    decision: Decision | None = None
    retry_after: int | None = None  # seconds, for the answers that carry Retry-After
    wait: float = 0.0  # seconds to hold the request before forwarding it
    interval: float = 0.0  # the host's spacing this request keeps (seconds between starts)
    asked_delay: float | None = None  # the site's Crawl-delay, when it was clamped or refused
    # What robots.txt says the content may be used for (allowed requests); the response's own
    # Content-Usage and TDM reservation are added to it later (robotsgate.mitm.usage).
    usage: Usage = NO_USAGE
    usage_refusal: UsageRefusal | None = None  # reason usage-preference: why
    # TDMRep: the rule of the origin's /.well-known/tdmrep.json for this path (a bot with
    # declared purposes; robotsgate.licensing.tdmrep), joined with the answer's own at the response.
    tdm: Statement | None = None
    # license-prohibited, license-required, license-unavailable: why (robotsgate.licensing.licenses)
    license_refusal: LicenseRefusal | None = None
    # A licence obtained from the licence server the site's RSL names: the request leaves with
    # `Authorization: License <token>` (robotsgate.mitm.decision).
    license_token: LicenseToken | None = None

    @property
    def status(self) -> int | None:
        """What the proxy answers, when it does not forward (robotsgate.outcomes)."""
        return None if self.action == "forward" else status(self.reason)
