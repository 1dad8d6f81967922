"""RFC 9309 matching and the longest-match decision, written plainly, to compare the engine
with."""


def reference_match(pattern: str, path: str) -> bool:
    """RFC 9309 pattern semantics by dynamic programming over (pattern, path) prefixes."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    # reach[j]: the pattern read so far can consume exactly path[:j]
    reach = [True] + [False] * len(path)
    for char in body:
        if char == "*":
            seen = False
            for j in range(len(path) + 1):
                seen = seen or reach[j]
                reach[j] = seen
        else:
            reach = [False] + [reach[j] and path[j] == char for j in range(len(path))]
    return reach[len(path)] if anchored else any(reach)


def reference_decision(rules: list[tuple[bool, str]], path: str) -> tuple[bool, int] | None:
    """(allowed, index of the deciding rule): longest pattern, Allow on ties, earliest line."""
    best: tuple[int, bool, int] | None = None
    for index, (allow, pattern) in enumerate(rules):
        if pattern and reference_match(pattern, path):
            key = (len(pattern), allow, -index)
            if best is None or key > best:
                best = key
    return None if best is None else (best[1], -best[2])
