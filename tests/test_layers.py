"""The layers: which part of robotsgate may import which, so that the tree stays the architecture.

A part is a package of robotsgate (`decision`, `audit`, ...) or a module at its top (the shared
vocabulary: `outcomes`, `values`, `origin`, `escape`; the entry points). Every import counts:
at a module's top, inside a function, and those made for type hints only (a cycle of hints is
still a cycle for the reader). ALLOWED says what each part may import besides itself; the
test fails on any import it does not list, and on a list that would allow a cycle.
"""

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "robotsgate"

# The bottom: the Robots Exclusion Protocol itself and the words every part shares.
VOCABULARY = frozenset({"protocol", "outcomes", "values", "origin", "escape"})
SERVICES = VOCABULARY | {"rules_cache", "state", "signing", "payments", "egress", "audit",
                         "metrics", "pages", "retrieval", "licensing", "decision"}

# What each part may import besides itself, from the top down.
ALLOWED: dict[str, frozenset[str]] = {
    # entry points: `mitmdump -s addon.py`, `robotsgate run`'s script, `python -m robotsgate`
    "robotsgate": frozenset({"protocol"}),  # the package's own __init__: the protocol core
    "addon": frozenset({"mitm"}),
    "run_addon": frozenset({"mitm"}),
    "__main__": frozenset({"cli"}),
    # the commands, and the one package that imports mitmproxy
    "cli": SERVICES | {"config", "report", "sealing", "mitm"},
    "mitm": SERVICES | {"config"},
    # options -> Settings -> the services, assembled bottom up
    "config": SERVICES,
    "report": VOCABULARY | {"audit", "payments"},
    "sealing": VOCABULARY,
    # the one request policy, and what it asks
    "decision": VOCABULARY | {"rules_cache", "state", "egress", "audit", "metrics", "pages",
                              "retrieval", "licensing"},
    "licensing": VOCABULARY | {"retrieval"},
    "retrieval": VOCABULARY | {"rules_cache", "state", "egress", "audit", "metrics"},
    "pages": VOCABULARY,
    "metrics": VOCABULARY | {"payments"},
    "audit": VOCABULARY | {"signing"},
    "egress": VOCABULARY,
    "payments": VOCABULARY,
    "signing": VOCABULARY,
    "state": VOCABULARY | {"rules_cache"},
    "rules_cache": frozenset({"protocol"}),
    # the vocabulary
    "origin": frozenset({"protocol"}),
    "outcomes": frozenset(),
    "values": frozenset(),
    "escape": frozenset(),
    "protocol": frozenset(),
}

# Cycles between modules, each one to be broken: state/fleet.py builds the views of
# state/fleet_views.py, which name the Fleet they are handed in their type hints. The state
# package is left as it is while its Redis programs are being changed.
KNOWN_CYCLES = {frozenset({"robotsgate.state.fleet", "robotsgate.state.fleet_views"})}


def module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part_of(module: str) -> str:
    """`robotsgate.decision.gate` -> `decision`; `robotsgate` -> `robotsgate`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every robotsgate module `path` imports, anywhere in it."""
    here = module_of(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from robotsgate import outcomes` imports the module robotsgate.outcomes; a name
            # that is no module is the module's own
            for alias in node.names:
                named = f"{module}.{alias.name}"
                found.append((node.lineno, named if _is_module(named) else module))
    return [(line, module) for line, module in found
            if module == "robotsgate" or module.startswith("robotsgate.")]


def _is_module(name: str) -> bool:
    path = PACKAGE.parent / name.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def modules() -> dict[str, Path]:
    return {module_of(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_part_is_declared() -> None:
    parts = {part_of(module) for module in modules()}
    assert parts - ALLOWED.keys() == set(), "a new part: say in ALLOWED what it may import"
    assert ALLOWED.keys() - parts == set(), "a part that is gone: take it out of ALLOWED"


def test_the_declared_imports_are_layers() -> None:
    """No part may import, through others, a part that imports it."""
    graphlib.TopologicalSorter(ALLOWED).prepare()  # raises CycleError


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_each_part_imports_only_what_it_may(part: str) -> None:
    wrong = []
    for module, path in modules().items():
        if part_of(module) != part:
            continue
        for line, imported in imports(path):
            to = part_of(imported)
            if to != part and to not in ALLOWED[part]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {imported} "
                             f"({part} may import {', '.join(sorted(ALLOWED[part])) or 'nothing'})")
    assert wrong == []


def _module_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        graph[module] = set()
        for _, imported in imports(path):
            while imported not in known and "." in imported:
                imported = imported.rpartition(".")[0]  # a name in a module: the module
            if imported != module and imported in known:
                graph[module].add(imported)
    return graph


def test_no_module_imports_itself_through_others() -> None:
    """No cycle between modules, type hints included (but the known ones, each to be broken)."""
    graph = _module_graph()
    cycles = []
    for a, targets in graph.items():
        for b in targets:
            if a in _reachable(graph, b) and frozenset({a, b}) not in KNOWN_CYCLES \
                    and not _via_package_init(a, b):
                cycles.append((a, b))
    assert cycles == []


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _via_package_init(a: str, b: str) -> bool:
    """A package's __init__ and its own modules: importing one of them loads the package first,
    so a package that names its modules is no cycle."""
    return a.startswith(b + ".") or b.startswith(a + ".")
