"""Entry point for `mitmdump -s addon.py`."""

from robotsgate.addon import RobotsGate

addons = [RobotsGate()]
