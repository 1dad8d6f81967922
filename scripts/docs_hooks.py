"""MkDocs hooks (mkdocs.yml): what the documentation takes from the code and the README.

- `<!-- reference: NAME -->` becomes the table robotsgate.reference writes for NAME (options,
  answers, reasons, audit-fields), from the declarations in the code, at every build.
- `<!-- include: README.md SECTION -->` becomes that section of the README (its heading left
  out), so that the walk-through exists once, where a person looks first, and is tested there
  (tests/e2e/test_readme.py). Its links are written for GitHub, relative to the README: each
  is written again relative to the page that includes it, and one to a file the site does not
  have (deploy/README.md) becomes the file's name in the repository, as the site's pages name
  such files.
"""

import posixpath
import re
from pathlib import Path
from typing import Any

from robotsgate.reference import REFERENCES

REPO = Path(__file__).resolve().parents[1]
DOCS = "docs"  # mkdocs.yml's docs_dir, relative to the repository
_REFERENCE = re.compile(r"<!-- reference: ([\w-]+) -->")
_INCLUDE = re.compile(r"<!-- include: (\S+) (.+?) -->")
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


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = _REFERENCE.sub(_reference, markdown)
    where = page.file.src_uri if page is not None else "index.md"
    return _INCLUDE.sub(
        lambda m: relinked(section(REPO / m[1], m[2]).strip(), m[1], where) + "\n", markdown)
