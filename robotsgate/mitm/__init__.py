"""robotsgate's mitmproxy layer: the only package that imports mitmproxy.

One small addon per concern, cooperating through flow.metadata (robotsgate.mitm.keys) and
sharing the options and services that `Runtime` owns. mitmproxy calls each hook on them in the
order listed, which is the order that matters:

- `Runtime`     options -> Settings -> services; audit log, metrics server, lifecycle
- `Egress`      every origin connection dialled at the address decided, with the decided name
- `Tunnels`     CONNECT (ignore_hosts), the layer chosen for each connection, 101 cut
- `Decide`      every request, at its headers: the exchange policy's plan, applied
- `Turns`       a paced request takes its turn as it leaves; departures reported
- `Pushback`    an origin's 429/503 pauses its host; X-Robotsgate-Delay-Ms
- `PageReader`  X-Robots-Tag, nofollow links remembered, robots_strip, TDM reservation META
- `UsageCheck`  AI usage preferences of the response: X-Robotsgate-Usage, bodies withheld
"""

import httpx

from robotsgate.assemble import Clocks
from robotsgate.mitm.decide import Decide
from robotsgate.mitm.egress import Egress
from robotsgate.mitm.pages import PageReader
from robotsgate.mitm.pushback import Pushback
from robotsgate.mitm.runtime import Runtime
from robotsgate.mitm.tunnels import Tunnels
from robotsgate.mitm.turns import Turns
from robotsgate.mitm.usage import UsageCheck
from robotsgate.resolver import Lookup, system_lookup


class RobotsGate:
    """robotsgate as one mitmproxy addon: `addons = [RobotsGate()]`. It has no hooks of its
    own; mitmproxy runs those of `self.addons`, in order."""

    def __init__(self, *, clocks: Clocks | None = None,
                 transport: httpx.AsyncBaseTransport | None = None,
                 lookup: Lookup = system_lookup) -> None:
        # Injectable so that it can be driven without a network (transport: where robots.txt
        # files are fetched from; lookup: how names resolve) or real time.
        self.runtime = Runtime(clocks or Clocks(), transport, lookup)
        self.addons = [self.runtime, Egress(self.runtime), Tunnels(self.runtime),
                       Decide(self.runtime),
                       Turns(self.runtime), Pushback(self.runtime), PageReader(self.runtime),
                       UsageCheck(self.runtime)]
