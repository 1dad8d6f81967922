"""robotsgate with some of its parts left out, for scripts/bench_parts.py: what each costs a
request. Never run it to serve: a part left out is a guarantee gone.

    ROBOTSGATE_BENCH_WITHOUT=Pushback,PageReader mitmdump -s scripts/bench_parts_addon.py
"""

import os

from robotsgate.mitm import RobotsGate

_WITHOUT = {name for name in os.environ.get("ROBOTSGATE_BENCH_WITHOUT", "").split(",") if name}
_gate = RobotsGate()
_unknown = _WITHOUT - {type(part).__name__ for part in _gate.parts}
if _unknown:
    raise SystemExit(f"ROBOTSGATE_BENCH_WITHOUT names no part: {', '.join(sorted(_unknown))}")
_gate.wire([part for part in _gate.parts if type(part).__name__ not in _WITHOUT])

globals().update(_gate.as_script())  # as addon.py holds them
