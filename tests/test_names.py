"""One meaning per name: no public class or type alias is defined twice in the package, and
every name of the architecture page's glossary is defined where the glossary says."""

import ast
import collections
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "robotsgate"


def defined(path: Path) -> set[str]:
    """The classes and type aliases a module defines at its top level."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.TypeAlias):
            names.add(node.name.id)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                # CamelCase on the left: a type alias (UPPER_CASE is a constant)
                if isinstance(target, ast.Name) and re.fullmatch(r"[A-Z][a-z]\w*", target.id):
                    names.add(target.id)
    return names


def test_no_public_name_is_defined_twice() -> None:
    where = collections.defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in defined(path):
            if not name.startswith("_"):
                where[name].append(str(path.relative_to(ROOT)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert twice == {}


def glossary() -> list[tuple[str, str]]:
    """(name, module) of each row of the architecture page's glossary."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Glossary", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) != 3 or not cells[2].startswith("`"):
            continue
        module = cells[2].strip("`")
        for name in re.split(r"[,:] ", cells[0]):
            rows.append((re.sub(r"\s*\(.*\)", "", name).strip(), module))
    return rows


def test_every_name_of_the_glossary_is_defined_where_it_says() -> None:
    rows = glossary()
    assert len(rows) >= 20
    # lower-case rows ("turn, departure") are words for what a module does, not names in it
    missing = [(name, module) for name, module in rows
               if re.fullmatch(r"[A-Z]\w*", name) and name not in defined(PACKAGE / module)]
    assert missing == []
