"""One flow's life in robotsgate: what its parts know of it (`FlowState`), in which order they
run, and what holds at each step.

The parts (robotsgate.mitm's addons) never talk to each other: each reads and writes the
flow's state, one typed object per flow (`state(flow)`), in the order `PARTS` gives.

The life of a request, and what is true once each step is done:

    arrived -> identified -> decided -> (answered | forwarded -> paced -> signed -> sent)
            -> answered by the origin -> judged -> (sent again -> ...) -> settled

- identified (Decide): `identity` and `user_agent` say who the bot is (`identified`), `live`
  is the configuration the flow is decided with, pinned at its first hook for its whole life.
- decided (Decide): `decided` names this process. Either `answered` (the proxy's own answer:
  no later part sends or judges anything of it), or forwarded with a `verdict`, `host` (the
  origin's host, as the pacer knows it), `delay_ms`, and `paced` while a slot awaits its turn.
  `refused`: monitor mode forwards a request its verdict refused; nothing is paid for it.
- paced (Turns): `paced` is None again once the turn is taken; the departure is reported by
  host and flow id.
- signed (Sign): `signed` is None until signing was decided for the request, then False, or
  True when the proxy wrote the signature fields (so that a copy has them taken off).
- judged (PageReader, UsageCheck, LicenseCheck): the page's signals (`tdm_meta`, `tdm_policy`,
  `no_ai`, `license_links`, `license_inline`), the usage preferences judged at the headers
  (`usage_judged`, `usage_stated`, `usage_refusal`) and the licences (`license_refusal`); an
  answer refused is withheld and recorded once (`usage_recorded`, `license_recorded`).
- sent again (robotsgate.mitm.again): a copy starts its life over with a state of its own;
  the first flow gets the copy's answer and is `answered` from then on.

Invariants:

1. A flow is decided at most once per process; a copy, or a flow read back from a file, is
   decided again (it has no state of this process's, or its `decided` names another).
2. Nothing leaves undecided: a flow that reaches its request hook undecided is decided there.
3. Once `answered`, no part forwards, paces, signs, pays for, judges or sends again the flow.
4. `verdict` is set on every flow that leaves: what the parts judging its answer know of the
   decision (the robots.txt group, the agent, the licence presented) is read from it.
5. The state is shared by a flow's copies until the copy is decided again (mitmproxy copies a
   flow's metadata deeply; this object is not copied: it holds live services), and it is
   never written with a flow but for its plain values (`SAVED`), which a flow read back keeps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from mitmproxy import flow as flows

if TYPE_CHECKING:
    from robotsgate.decision.identity import Identity
    from robotsgate.decision.purposes import Purposes, UsageRefusal
    from robotsgate.decision.stated import Stated
    from robotsgate.decision.verdict import Verdict
    from robotsgate.licensing.judging import LicenseRefusal

KEY: Final = "robotsgate"  # where the state is in flow.metadata

# The parts, in the order each hook is called on them (robotsgate.mitm.RobotsGate), and why
# each is where it is. The order is this list; a part missing from it is an error at start.
PARTS: Final = (
    "Runtime",  # the configuration each flow is pinned to, before any part reads it
    "Egress",  # the address dialled: decided before any connection opens
    "Capture",  # a captured bot's UDP, before Tunnels chooses a layer for it
    "Tunnels",  # CONNECT decided, and the layer chosen, before any request inside
    "Decide",  # every request, at its headers: nothing after it runs undecided
    "Pay",  # writes crawler-exact-price on a paid copy, after its decision and before Sign
    "Turns",  # the request waits for its slot as it leaves: after every field is decided
    "Sign",  # signs what leaves, every field final (the price included), at its turn
    "Pushback",  # an origin's 429/503 pauses its host, before the response is judged
    "PageReader",  # the page's signals, read before usage and licences judge the answer
    "UsageCheck",  # usage preferences: headers and the page's META
    "LicenseCheck",  # RSL licences the answer names, last: it may withhold what passed
)


class FlowState(dict[str, Any]):
    """What robotsgate knows of one flow (see the module's docstring for when each is set).

    A dictionary to mitmproxy, an object to robotsgate: mitmproxy deep-copies and writes a
    flow's metadata, and this is kept in it. Deep-copied, it is itself (invariant 5); written,
    it is its plain values only (`items`)."""

    # Written with a flow (mitmproxy's -w), and kept by a flow read back: plain values.
    SAVED: Final = ("decided", "answered", "host", "user_agent", "delay_ms", "refused",
                    "signed")

    __slots__ = (
        "answered", "decided", "delay_ms", "host", "identified", "identity", "license_inline",
        "license_links", "license_recorded", "license_refusal", "live", "no_ai", "paced",
        "purposes", "refused", "signed", "tdm_meta", "tdm_policy", "usage_judged",
        "usage_recorded", "usage_refusal", "usage_stated", "user_agent", "verdict",
    )  # slots: a flow's state is read a few dozen times per request

    # The configuration the flow is decided with (robotsgate.mitm.runtime.Live), typed where it
    # is read (Runtime.of): that module sits above this one, which every part imports.
    live: Any
    identity: Identity | None
    identified: bool  # identity and user_agent are set (user_agent None: none sent)
    user_agent: str | None
    purposes: Purposes | None  # what the bot crawls for; None when it declared nothing
    decided: str | None  # the process that decided it
    answered: bool  # the response is robotsgate's own (or a copy's, given to it)
    verdict: Verdict | None
    host: str | None
    delay_ms: int | None
    paced: tuple[float, float] | None  # (start, interval) of its slot, until its turn
    refused: bool
    signed: bool | None
    tdm_meta: str | None  # the page's META tdm-reservation, "1" or "0"
    tdm_policy: str | None  # the page's META tdm-policy, a URL
    no_ai: tuple[str, ...]  # noai, noimageai of the page's META
    license_links: tuple[str, ...]  # the page's RSL <link>s, resolved
    license_inline: tuple[str, ...]  # the page's RSL <script>s, their XML
    usage_stated: Stated | None
    usage_judged: bool  # usage was judged at the headers, finding usage_refusal
    usage_refusal: UsageRefusal | None
    usage_recorded: bool
    license_refusal: LicenseRefusal | None  # found on the Link header
    license_recorded: bool

    def __init__(self) -> None:
        super().__init__()
        self.live = self.identity = self.user_agent = self.purposes = self.decided = None
        self.verdict = self.host = self.delay_ms = self.paced = self.signed = None
        self.tdm_meta = self.tdm_policy = self.usage_stated = self.usage_refusal = None
        self.license_refusal = None
        self.identified = self.answered = self.refused = self.usage_judged = False
        self.usage_recorded = self.license_recorded = False
        self.no_ai = self.license_links = self.license_inline = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> FlowState:
        return self

    def __bool__(self) -> bool:
        return True  # a dictionary that is empty to mitmproxy, but a state all the same

    def items(self) -> Any:  # what mitmproxy's writer reads of a dictionary
        return {name: value for name in self.SAVED
                if (value := getattr(self, name)) not in (None, False)}.items()

    @classmethod
    def read_back(cls, saved: Any) -> FlowState:
        """The state of a flow read back from a file: its plain values, as they were saved."""
        state = cls()
        if isinstance(saved, dict):
            for name in cls.SAVED:
                if name in saved:
                    setattr(state, name, saved[name])
        return state


def state(flow: flows.Flow) -> FlowState:
    """The flow's state, made on first use. Asked for a dozen times per request: one look-up
    and one test once it is made."""
    # One line: the hot path counts them (tests/test_work_budget.py).
    return found if (found := flow.metadata.get(KEY)).__class__ is FlowState else \
        _made(flow, found)


def _made(flow: flows.Flow, found: object) -> FlowState:
    made = FlowState() if found is None else FlowState.read_back(found)
    flow.metadata[KEY] = made
    return made


def forget(flow: flows.Flow) -> None:
    """A flow sent again starts its life over: what robotsgate knew of it is gone."""
    flow.metadata.pop(KEY, None)
