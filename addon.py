"""Entry point for `mitmdump -s addon.py`: robotsgate's addons (robotsgate.mitm lists them)."""

from robotsgate.mitm import RobotsGate

addons = [RobotsGate()]
