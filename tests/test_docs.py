"""The documentation site (docs/, mkdocs.yml) against the code: the references it shows are
written from the code's declarations, each page it has is in its navigation, and the README
stays the first five minutes."""

import ast
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace

import yaml

from robotsgate.audit.records import AuditRecord
from robotsgate.config import reference
from robotsgate.config.options import OPTIONS
from robotsgate.outcomes import OUTCOMES, Reason

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
sys.path.insert(0, str(REPO / "scripts"))
import docs_hooks  # noqa: E402  (scripts/ is not a package)


def rendered(page: str) -> str:
    """A page's Markdown as MkDocs gets it, after the hooks."""
    return docs_hooks.on_page_markdown((DOCS / page).read_text(), None, None, None)


def test_the_options_page_shows_every_option_with_its_own_help() -> None:
    page = rendered("operating/options.md")
    for spec in OPTIONS:
        row = next(line for line in page.splitlines() if line.startswith(f"| `{spec.name}` |"))
        assert spec.help.replace("|", "\\|") in row, spec.name


def test_the_answers_page_shows_every_answer() -> None:
    page = rendered("operating/answers.md")
    for reason, outcome in OUTCOMES.items():
        assert f"| `{reason}` | {outcome.status} | {outcome.when}" in page, reason


def test_the_audit_log_page_shows_every_field_and_every_reason() -> None:
    page = rendered("operating/audit-log.md")
    for declared in fields(AuditRecord):
        assert f"| `{declared.name}` | {declared.metadata['doc']}" in page.replace("\\|", "|")
    for reason in Reason:
        assert f"| `{reason}` |" in page, reason


def test_no_page_names_a_reference_that_is_not_there() -> None:
    names = set()
    for page in DOCS.rglob("*.md"):
        names |= set(re.findall(r"<!-- reference: ([\w-]+) -->", page.read_text()))
    assert names == set(reference.REFERENCES)


def test_every_page_is_in_the_navigation() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text().replace("!!python", "#"))

    def pages(nav: object) -> set[str]:
        if isinstance(nav, str):
            return {nav}
        if isinstance(nav, list):
            return set().union(*(pages(item) for item in nav))
        assert isinstance(nav, dict)
        return set().union(*(pages(item) for item in nav.values()))

    on_disk = {str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md")}
    assert pages(config["nav"]) == on_disk


def test_the_readme_is_the_first_five_minutes() -> None:
    readme = (REPO / "README.md").read_text()
    lines = readme.splitlines()
    assert len(lines) < 200
    # The two commands first: start the proxy, run every test.
    assert lines[3].startswith("scripts/serve.sh ") and lines[4].startswith("scripts/test.sh ")
    # Every page it links to exists.
    for target in re.findall(r"\]\(((?:docs|deploy)/[^)#]+)", readme):
        assert (REPO / target).exists(), target


def test_the_library_example_gives_the_values_it_shows() -> None:
    """The architecture page's example, run: each expression's value is the one its comment
    shows."""
    page = (DOCS / "architecture.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    lines = code.splitlines()
    namespace: dict[str, object] = {}
    shown = 0
    for statement in ast.parse(code).body:
        source = ast.get_source_segment(code, statement)
        assert source is not None
        if isinstance(statement, ast.Expr):
            comment = lines[statement.end_lineno - 1].partition("#")[2].strip()
            assert repr(eval(source, namespace)) == comment, source
            shown += 1
        else:
            exec(source, namespace)
    assert shown == 5


def _ci_docs_build() -> str:
    """The line of .ci/run that builds the documentation site."""
    [line] = [line for line in (REPO / ".ci" / "run").read_text().splitlines()
              if "mkdocs build" in line and not line.lstrip().startswith("#")]
    return line


def _build_a_copy(tmp_path: Path, change: Callable[[Path], None]
                  ) -> subprocess.CompletedProcess[str]:
    """CI's documentation build, run as .ci/run runs it, on a copy of what the site is built
    from (the pages, mkdocs.yml, the hooks and the README they include), changed by `change`."""
    copy = tmp_path / "repo"
    shutil.copytree(DOCS, copy / "docs")
    (copy / "scripts").mkdir()
    for name in ("mkdocs.yml", "README.md", "scripts/docs_hooks.py"):
        shutil.copy(REPO / name, copy / name)
    (copy / ".venv").symlink_to(Path(sys.executable).parent.parent)
    change(copy)
    return subprocess.run(["bash", "-euo", "pipefail", "-c", _ci_docs_build()], cwd=copy,
                          capture_output=True, text=True, timeout=300)


def test_the_ci_docs_build_fails_on_a_broken_link(tmp_path: Path) -> None:
    """CI's check can fail: the copy as it is builds, and one broken link fails it, naming the
    link (with --quiet the warning was never shown, so --strict had nothing to count)."""
    whole = _build_a_copy(tmp_path / "whole", lambda copy: None)
    assert whole.returncode == 0, whole.stdout + whole.stderr

    def break_a_link(copy: Path) -> None:
        page = copy / "docs" / "operating" / "fleet.md"
        page.write_text(page.read_text() + "\nSee [the pacing](nowhere-to-be-found.md).\n")

    broken = _build_a_copy(tmp_path / "broken", break_a_link)
    assert broken.returncode != 0
    assert "nowhere-to-be-found.md" in broken.stdout + broken.stderr


def test_the_walk_through_links_to_pages_of_the_site_and_names_other_files() -> None:
    """The five-minute page is the README's section: its links, written for GitHub relative to
    the README, are written relative to the page, or name a file the site does not have."""
    page = docs_hooks.on_page_markdown(
        (DOCS / "getting-started" / "five-minutes.md").read_text(),
        SimpleNamespace(file=SimpleNamespace(src_uri="getting-started/five-minutes.md")),
        None, None)
    assert "[the audit log](../operating/audit-log.md)" in page
    assert "[HTTPS and clients](https.md)" in page
    assert "(docs/" not in page and "(deploy/" not in page
    assert "`deploy/` (`deploy/README.md`)" in page
