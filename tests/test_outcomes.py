"""robotsgate.outcomes: one vocabulary of reasons, each refusal's answer defined once."""

from pathlib import Path

import pytest

from robotsgate import outcomes
from robotsgate.outcomes import OUTCOMES, Reason

REPO = Path(__file__).resolve().parents[1]


def test_every_refusal_has_a_status_and_a_message() -> None:
    for reason, outcome in OUTCOMES.items():
        assert 400 <= outcome.status < 600, reason
        assert outcome.message.endswith("\n"), reason


@pytest.mark.parametrize("reason", [Reason.ALLOWED, Reason.CRAWL_DELAY, Reason.TUNNEL])
def test_forwarding_reasons_have_no_answer(reason: Reason) -> None:
    assert outcomes.status(reason) is None


def test_reasons_are_their_names_in_records_and_metrics() -> None:
    assert Reason.DISALLOWED == "disallowed" and f"{Reason.URL_TOO_LONG}" == "url-too-long"
    assert {"disallowed": 1}[Reason.DISALLOWED] == 1  # the same key as the plain string


def test_a_tunnel_is_told_it_is_a_tunnel() -> None:
    text = outcomes.text(Reason.ROBOTS_UNAVAILABLE, tunnel=True, host="a.example",
                         robots_url="https://a.example/robots.txt", error="HTTP 503")
    assert "this tunnel" in text and "https://a.example/robots.txt (HTTP 503)" not in text
    assert "could not be fetched (HTTP 503)" in text
    assert "this tunnel" not in outcomes.text(Reason.ROBOTS_UNAVAILABLE, robots_url="x",
                                              error="HTTP 503")


def test_every_reason_says_what_it_means() -> None:
    # The documentation's reasons table is written from these (robotsgate.config.reference).
    undocumented = set(Reason) - set(outcomes.OUTCOMES) - set(outcomes.FORWARDED)
    assert not undocumented
    assert all(outcome.when for outcome in outcomes.OUTCOMES.values())

