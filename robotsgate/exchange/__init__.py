"""The one request policy, pure (no mitmproxy): a request's facts in, a plan out.

- `request`: `Facts`, one pass over the header fields (`Seen`), and what a request must look
  like to be decided at all (bytes, framing, upgrades);
- `names`: every name of the destination agrees with the origin decided (which addresses
  may be dialled is robotsgate.egress's, below the fetcher that also obeys it);
- `plan`: `Answer` or `Forward` (the request that leaves, built from the decision);
- `policy`: `Exchange.decide`, the order in which all of it is decided.
"""

from robotsgate.exchange.plan import Answer, Forward, Plan, Record, Who
from robotsgate.exchange.policy import Dialler, Exchange, Rules, Unrestricted
from robotsgate.exchange.request import Facts

__all__ = ["Answer", "Dialler", "Exchange", "Facts", "Forward", "Plan", "Record", "Rules",
           "Unrestricted", "Who"]
