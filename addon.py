"""Entry point for `mitmdump -s addon.py`: robotsgate (robotsgate.mitm lists its parts).

The module holds robotsgate's hooks itself rather than `addons = [RobotsGate()]`: mitmproxy walks
a script's addon tree for every event of every flow, and this tree is one level shorter.
"""

from robotsgate.mitm import RobotsGate

globals().update(RobotsGate().as_script())
