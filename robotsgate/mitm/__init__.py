"""robotsgate's mitmproxy layer: the only package that imports mitmproxy.

One small part per concern, each written as a mitmproxy addon, cooperating through one typed
state per flow (robotsgate.mitm.flow, where a flow's life, its invariants and the order of the
parts are written) and sharing the configuration that `Runtime` holds. `RobotsGate` calls each
hook on them in the order robotsgate.mitm.flow.PARTS gives:

- `Runtime`     options -> Settings -> a frozen Live (robotsgate.config.assemble), pinned per flow;
                audit log, metrics server, start-up errors, lifecycle
- `Egress`      every origin connection dialled at the address decided, with the decided name
- `Capture`     a captured bot's UDP (robotsgate run --capture): DNS answered, the rest refused
- `Tunnels`     CONNECT (ignore_hosts), the layer chosen for each connection, 101 cut
- `Decide`      every request, at its headers: the exchange policy's plan, applied
- `Pay`         HTTP 402: a price paid within the budgets (the request sent again), x402 refused
- `Turns`       a paced request waits for its slot and turn as it leaves; departures reported
- `Sign`        Web Bot Auth: the request signed as it leaves, every field final
- `Pushback`    an origin's 429/503 pauses its host; X-Robotsgate-Delay-Ms
- `PageReader`  X-Robots-Tag, nofollow links remembered, robots_strip, TDM reservation META
- `UsageCheck`  AI usage preferences of the response: X-Robotsgate-Usage, bodies withheld
- `LicenseCheck` RSL licences the response names (Link header, the page's <link>): withheld
"""

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import httpx
from mitmproxy.hooks import all_hooks
from mitmproxy.proxy import layers, server_hooks  # noqa: F401  (they declare their hooks)

from robotsgate.config.assemble import Clocks
from robotsgate.egress.resolver import Lookup, system_lookup
from robotsgate.mitm.capture import Capture
from robotsgate.mitm.decision import Decide
from robotsgate.mitm.egress import Egress
from robotsgate.mitm.flow import PARTS
from robotsgate.mitm.licensing import LicenseCheck
from robotsgate.mitm.pages import PageReader
from robotsgate.mitm.payments import Pay
from robotsgate.mitm.pushback import Pushback
from robotsgate.mitm.runtime import Runtime
from robotsgate.mitm.signing import Sign
from robotsgate.mitm.tunnels import Tunnels
from robotsgate.mitm.turns import Turns
from robotsgate.mitm.usage import UsageCheck


class RobotsGate:
    """robotsgate as one mitmproxy addon: `addons = [RobotsGate()]`, or what `as_script()`
    gives, held by a script (addon.py).

    Its hooks are its parts' hooks, called part after part in the order of `parts` (each
    awaited before the next runs), exactly as mitmproxy would call them were the parts its
    addons. They are not: mitmproxy walks every addon of the tree for every event of every
    flow, and builds each hook's arguments again for every addon that has the hook; one addon
    whose hooks are worked out once costs a request one look-up per event.
    """

    def __init__(self, *, clocks: Clocks | None = None,
                 transport: httpx.AsyncBaseTransport | None = None,
                 lookup: Lookup = system_lookup) -> None:
        # Injectable so that it can be driven without a network (transport: where robots.txt
        # files are fetched from; lookup: how names resolve) or real time.
        self.runtime = Runtime(clocks or Clocks(), transport, lookup)
        made = [self.runtime, *(part(self.runtime) for part in (
            Egress, Capture, Tunnels, Decide, Pay, Turns, Sign, Pushback, PageReader,
            UsageCheck, LicenseCheck))]
        by_name = {type(part).__name__: part for part in made}
        if set(by_name) != set(PARTS):  # a part made and not placed, or placed and not made
            raise RuntimeError(f"robotsgate.mitm.flow.PARTS names {sorted(PARTS)}; the parts "
                               f"made are {sorted(by_name)}")
        self.parts = tuple(by_name[name] for name in PARTS)  # in the order that matters
        self.wire(self.parts)

    def wire(self, parts: Sequence[object]) -> None:
        """Route each mitmproxy hook to `parts`, in their order. (scripts/bench_parts.py wires
        all but some, to measure what each costs a request.)"""
        for hook in all_hooks:
            self.__dict__.pop(hook, None)
            methods = [method for part in parts
                       if (method := getattr(part, hook, None)) is not None]
            if methods:
                setattr(self, hook, _in_order(methods, _ARITY[hook]))

    def as_script(self) -> dict[str, Any]:
        """What a script module holds to be robotsgate (addon.py): its hooks by name, and the
        name mitmproxy registers it under. Hooks the module holds itself cost each event one
        look-up fewer than `addons = [RobotsGate()]` (mitmproxy looks each event up on every
        addon of a script's tree, for every flow). The name is the one a RobotsGate addon has:
        mitmproxy refuses a second addon of that name, so one proxy never runs two gates (each
        request decided twice, two audit chains in one log)."""
        held: dict[str, Any] = {"name": NAME}
        held.update((name, hook) for name, hook in vars(self).items() if name in all_hooks)
        return held


# The addon name mitmproxy knows robotsgate by (a class's is its lower-cased name).
NAME = "robotsgate"


def _in_order(methods: list[Callable[..., Any]], arity: int = 1) -> Callable[..., Any]:
    """One hook that calls `methods` in turn, as mitmproxy calls an addon tree's: synchronous
    while they are (a hook mitmproxy runs synchronously stays so), and from the first that
    returns an awaitable, each awaited before the next is called. `arity`: how many arguments
    the hook takes (every per-request hook takes one, the flow: called without packing them)."""
    if len(methods) == 1:
        return methods[0]

    def hook(*args: Any) -> Any:
        for method in methods:
            result = method(*args)
            if result is not None and inspect.isawaitable(result):
                return _awaiting(result, methods[methods.index(method) + 1:], args)
        return None

    def hook_of_one(arg: Any) -> Any:  # the same, for a hook of one argument
        for method in methods:
            result = method(arg)
            if result is not None and inspect.isawaitable(result):
                return _awaiting(result, methods[methods.index(method) + 1:], (arg,))
        return None

    return hook_of_one if arity == 1 else hook


# How many arguments each hook takes, from the event mitmproxy declares for it.
_ARITY = {name: len(dataclasses.fields(cast(Any, event))) for name, event in all_hooks.items()}


async def _awaiting(first: Awaitable[Any], rest: list[Callable[..., Any]],
                    args: tuple[Any, ...]) -> None:
    await first
    for method in rest:
        result = method(*args)
        if result is not None and inspect.isawaitable(result):
            await result
