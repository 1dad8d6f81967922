"""The mitmproxy script `robotsgate serve` runs (`mitmdump -s robotsgate/addon.py`): an
installed package needs no checkout. robotsgate.mitm lists the addons."""

from robotsgate.mitm import RobotsGate

addons = [RobotsGate()]
