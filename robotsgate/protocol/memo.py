"""keep(): remember in a plain dict that forgets everything when it is full.

The package remembers what it computed for values bots repeat (User-Agents, origins, host
names, addresses) and must not grow without bound when a bot sends endless distinct ones. An
LRU would keep the hot entries through such a flood, but costs a Python call on every hit, and
a hit is the common case, on the hot path of every request. A plain dict keeps its look-ups on
the interpreter's fast path for `memo[key]`, which a dict subclass loses, and starting over is
cheap when the values are quick to compute again. It lives in the protocol package so that the
pure core depends on nothing outside it.
"""


def keep[K, V](memo: dict[K, V], size: int, key: K, value: V) -> V:
    """Remember value for key in memo, forgetting everything first when it holds size; the
    value."""
    if len(memo) >= size:
        memo.clear()  # endless distinct keys: start over
    memo[key] = value
    return value
