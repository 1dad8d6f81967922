"""What the exchange policy says to do with a request: answer it, or forward *this* request.

A `Forward` is the request that leaves, built from the decision: the origin's canonical
authority in Host / :authority, its host as the upstream TLS server name, the classified address
to dial, the header fields to remove, and the politeness wait and interval it keeps. The
mitmproxy layer applies a plan to its flow and writes its records; it decides nothing itself.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

from robotsgate.audit.records import Event
from robotsgate.decision.identity import Identity
from robotsgate.decision.purposes import NONE as NO_PURPOSES
from robotsgate.decision.purposes import Purposes
from robotsgate.decision.verdict import Verdict
from robotsgate.origin import Origin
from robotsgate.outcomes import Reason
from robotsgate.values import quick_init


@dataclass(frozen=True, slots=True)
class Record:
    """An audit record the plan asks for (the request's own details come from the flow)."""

    event: Event
    reason: Reason
    status: int | None
    verdict: Verdict | None = None
    page: str | None = None  # nofollow: the Referer page
    error: str | None = None


@quick_init  # made for every request (robotsgate.values)
@dataclass(frozen=True, slots=True)
class Who:
    """Whom the request was decided for, and what for: kept for the response and the audit."""

    identity: Identity
    user_agent: str | None
    purposes: Purposes = NO_PURPOSES


@dataclass(frozen=True, slots=True)
class Answer:
    """The proxy answers the request itself; nothing of it leaves."""

    reason: Reason
    text: str
    who: Who
    headers: Mapping[str, str] = field(default_factory=dict)
    verdict: Verdict | None = None
    records: tuple[Record, ...] = ()


@quick_init  # made for every request (robotsgate.values)
@dataclass(frozen=True, slots=True)
class Forward:
    """The request leaves, as this: everything that names or frames it is the proxy's."""

    origin: Origin
    who: Who
    verdict: Verdict
    # Where it is dialled: the address classified (robotsgate.egress.policy); None when an
    # upstream proxy dials, or the name did not resolve (the connection then fails closed).
    address: str | None = None
    drop: tuple[bytes, ...] = ()  # header fields never forwarded, by name as received
    unfold: bool = False  # obs-fold lines become one line each (RFC 9112 §5.2)
    drop_upgrade: bool = False  # an h2c offer, removed
    drop_range: bool = False  # the whole page is needed (strip mode, a bot's purposes)
    # Connection as the proxy writes it, in place of the bot's, when that named fields (which
    # are in `drop`): the options the proxy acts on, or b"" for none. None: left as it came.
    connection: bytes | None = None
    # Host (none for HTTP/2 and HTTP/3, where :authority says it) is as the proxy writes it
    # already: nothing to rewrite, the common case.
    host_written: bool = False
    refused: bool = False  # monitor mode: the verdict refused it; forwarded all the same
    records: tuple[Record, ...] = ()

    @property
    def wait(self) -> float:
        return self.verdict.wait

    @property
    def interval(self) -> float:
        return self.verdict.interval


Plan = Answer | Forward
