"""The mitmproxy script `robotsgate serve` runs (`mitmdump -s robotsgate/addon.py`): an
installed package needs no checkout. robotsgate.mitm lists the parts; the module holds their
hooks itself, as addon.py does."""

from robotsgate.mitm import RobotsGate

globals().update(RobotsGate().as_script())
