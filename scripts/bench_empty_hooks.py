"""A mitmproxy script whose four HTTP hooks do nothing, for scripts/bench_parts.py: what
mitmproxy itself spends to call any script's hooks (the floor under the gate's cost).

    mitmdump -s scripts/bench_empty_hooks.py
"""

from typing import Any


def requestheaders(flow: Any) -> None:
    pass


def request(flow: Any) -> None:
    pass


def responseheaders(flow: Any) -> None:
    pass


def response(flow: Any) -> None:
    pass
