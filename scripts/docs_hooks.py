"""MkDocs hooks (mkdocs.yml): what the documentation takes from the code and the README.

- `<!-- reference: NAME -->` becomes the table robotsgate.config.reference writes for NAME (options,
  answers, reasons, audit-fields), from the declarations in the code, at every build.
- `<!-- layout -->` becomes the tree of robotsgate's packages and modules (the architecture
  page's), each with the first sentence of its docstring and, for a package, the packages it
  imports, read from the source: the page cannot keep a layout the code left (the rule of what
  may import what is tests/test_layers.py's).
- `<!-- include: README.md SECTION -->` becomes that section of the README (its heading left
  out), so that the walk-through exists once, where a person looks first, and is tested there
  (tests/e2e/test_readme.py). Its links are written for GitHub, relative to the README: each
  is written again relative to the page that includes it, and one to a file the site does not
  have (deploy/README.md) becomes the file's name in the repository, as the site's pages name
  such files.
"""

import ast
import graphlib
import posixpath
import re
import textwrap
from pathlib import Path
from typing import Any

import robotsgate
from robotsgate.config.reference import REFERENCES

REPO = Path(__file__).resolve().parents[1]
DOCS = "docs"  # mkdocs.yml's docs_dir, relative to the repository
# The package the layout is read from: the checkout's that the references come from (the site
# may be built from a copy of the pages alone).
PACKAGE = Path(robotsgate.__file__).resolve().parent
_REFERENCE = re.compile(r"<!-- reference: ([\w-]+) -->")
_INCLUDE = re.compile(r"<!-- include: (\S+) (.+?) -->")
_LAYOUT = "<!-- layout -->"
_ENTRIES = ("addon.py", "run_addon.py", "__main__.py")  # robotsgate's entry points
# An inline Markdown link whose target is a path (no scheme, not only a fragment).
_LINK = re.compile(r"\[([^\]]+)\]\((?![a-z][a-z0-9+.-]*:|#|/)([^)\s#]+)(#[^)\s]*)?\)")


def section(path: Path, heading: str) -> str:
    """The text under `heading` in a Markdown file, up to the next heading of its level."""
    text = path.read_text()
    level = heading.split(" ", 1)[0]
    start = text.index(heading + "\n") + len(heading) + 1
    found = re.search(rf"^{level} ", text[start:], re.MULTILINE)
    return text[start:start + found.start()] if found else text[start:]


def relinked(text: str, source: str, page: str) -> str:
    """`text`, a part of the repository's file `source`, with its relative links written for
    the documentation page `page` (a path under docs/)."""
    here = posixpath.dirname(page)

    def link(match: re.Match[str]) -> str:
        label, target, fragment = match[1], match[2], match[3] or ""
        path = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
        if path == DOCS or path.startswith(DOCS + "/"):
            inside = posixpath.relpath(path, DOCS)
            return f"[{label}]({posixpath.relpath(inside, here or '.')}{fragment})"
        named = f"`{path}`"
        return label if label == named else f"{label} ({named})"

    return _LINK.sub(link, text)


def _reference(match: re.Match[str]) -> str:
    name = match[1]
    if name not in REFERENCES:
        raise ValueError(f"no reference named {name!r}; there are {', '.join(REFERENCES)}")
    return REFERENCES[name]()


def summary(path: Path) -> str:
    """The first sentence of a module's docstring (its first paragraph, when that is shorter)."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = " ".join(doc.split("\n\n", 1)[0].split())
    found = re.search(r"(?<=[a-z0-9)`'\"])\. ", first)
    return first[:found.start() + 1] if found else first


def _imported(path: Path, package: str) -> set[str]:
    """The other parts of robotsgate (packages, top-level modules) a module imports."""
    parts = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            bits = name.split(".")
            if len(bits) > 1 and bits[0] == "robotsgate" and bits[1] != package and (
                    (PACKAGE / bits[1]).is_dir() or (PACKAGE / f"{bits[1]}.py").exists()):
                parts.add(bits[1])
    return parts


def _row(name: str, text: str, indent: int) -> list[str]:
    """`name` in the tree's first column, `text` wrapped beside it."""
    column = 27
    head = " " * indent + name
    lines = textwrap.wrap(text, 100 - column, break_on_hyphens=False) or [""]
    rows = [head] if len(head) >= column - 1 else [head.ljust(column) + lines.pop(0)]
    return rows + [" " * column + line for line in lines]


def layout(root: Path = PACKAGE) -> str:
    """robotsgate's tree, from its source: the entry points, the packages from those that
    import most down to the protocol core, then the shared vocabulary at the top level."""
    packages = sorted(path.parent for path in root.glob("*/__init__.py"))
    top = sorted(path for path in root.glob("*.py") if path.name != "__init__.py")
    uses = {package.name: set().union(*(_imported(path, package.name)
                                        for path in package.rglob("*.py")))
            for package in packages}
    names = {package.name for package in packages}
    order = list(graphlib.TopologicalSorter(
        {name: sorted(uses[name] & names) for name in sorted(names)}).static_order())
    rows = [*_row("addon.py", summary(root.parent / "addon.py"), 0), "robotsgate/"]
    for path in top:
        if path.name in _ENTRIES:
            rows += _row(path.name, summary(path), 2)
    for name in reversed(order):
        package = root / name
        below = ", ".join(sorted(uses[name])) or "nothing of robotsgate's"
        rows += _row(f"{name}/", f"{summary(package / '__init__.py')} Imports: {below}.", 2)
        for path in sorted(package.glob("*.py")):
            if path.name != "__init__.py":
                rows += _row(path.name, summary(path), 4)
    for path in top:
        if path.name not in _ENTRIES:
            rows += _row(path.name, summary(path), 2)
    return "```\n" + "\n".join(row.rstrip() for row in rows) + "\n```"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = _REFERENCE.sub(_reference, markdown)
    if _LAYOUT in markdown:
        markdown = markdown.replace(_LAYOUT, layout())
    where = page.file.src_uri if page is not None else "index.md"
    return _INCLUDE.sub(
        lambda m: relinked(section(REPO / m[1], m[2]).strip(), m[1], where) + "\n", markdown)
