"""MkDocs hooks (mkdocs.yml): what the documentation takes from the code and the README.

- `<!-- reference: NAME -->` becomes the table robotsgate.reference writes for NAME (options,
  answers, reasons, audit-fields), from the declarations in the code, at every build.
- `<!-- include: README.md SECTION -->` becomes that section of the README (its heading left
  out), so that the walk-through exists once, where a person looks first, and is tested there
  (tests/e2e/test_readme.py).
"""

import re
from pathlib import Path
from typing import Any

from robotsgate.reference import REFERENCES

REPO = Path(__file__).resolve().parents[1]
_REFERENCE = re.compile(r"<!-- reference: ([\w-]+) -->")
_INCLUDE = re.compile(r"<!-- include: (\S+) (.+?) -->")


def section(path: Path, heading: str) -> str:
    """The text under `heading` in a Markdown file, up to the next heading of its level."""
    text = path.read_text()
    level = heading.split(" ", 1)[0]
    start = text.index(heading + "\n") + len(heading) + 1
    found = re.search(rf"^{level} ", text[start:], re.MULTILINE)
    return text[start:start + found.start()] if found else text[start:]


def _reference(match: re.Match[str]) -> str:
    name = match[1]
    if name not in REFERENCES:
        raise ValueError(f"no reference named {name!r}; there are {', '.join(REFERENCES)}")
    return REFERENCES[name]()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = _REFERENCE.sub(_reference, markdown)
    return _INCLUDE.sub(lambda m: section(REPO / m[1], m[2]).strip() + "\n", markdown)
