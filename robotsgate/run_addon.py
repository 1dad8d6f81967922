"""The mitmproxy script `robotsgate run` adds to the proxy it starts, after robotsgate's own
(robotsgate/addon.py): it counts what the bot's requests came to, for the run's summary
(robotsgate.mitm.tally)."""

from robotsgate.mitm.tally import from_environment

addons = from_environment()
