"""The work per decision and per request, counted (lines of robotsgate's Python run, no clock),
within its stored budget: a change that makes the hot path do markedly more work fails here on
any machine. scripts/work_budget.py measures and, with --write, stores a new budget."""

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import work_budget  # noqa: E402  (scripts/ is not a package)

BUDGET = json.loads(work_budget.BUDGET.read_text())


@pytest.fixture(scope="module")
def measured() -> dict[str, float]:
    return work_budget.measure()


@pytest.mark.parametrize("name", sorted(BUDGET))
def test_the_work_is_within_its_budget(name: str, measured: dict[str, float]) -> None:
    allowed = BUDGET[name] * work_budget.TOLERANCE
    assert measured[name] <= allowed, (
        f"{name}: {measured[name]:.1f} lines of robotsgate's Python, budget {BUDGET[name]} "
        f"(x{work_budget.TOLERANCE} allowed): the hot path does more work than it did; if that "
        f"is intended, say what it buys and store the new figure (scripts/work_budget.py "
        f"--write)")


def test_every_measure_has_a_budget(measured: dict[str, float]) -> None:
    assert set(measured) == set(BUDGET)
