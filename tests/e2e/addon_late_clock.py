"""Entry point for `mitmdump -s`, for tests: robotsgate's addons (as addon.py loads them) with a
wall clock an hour late, injected as the unit tests inject theirs. What such a proxy signs
with robots_signature_validity under an hour has expired before it arrives; with more, it is
still good, which tells a verifier's refusal for expiry from one for anything else."""

import time

from robotsgate.config.assemble import Clocks
from robotsgate.mitm import RobotsGate

LATE = 3600  # seconds

globals().update(RobotsGate(clocks=Clocks(clock=lambda: time.time() - LATE)).as_script())
