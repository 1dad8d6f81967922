"""What a bot crawls for (robotsgate.decision.purposes), the gate refusing by usage preferences, and
`robotsgate check` showing them."""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from support.clock import FakeClock
from support.gate import request_for, wire_gate
from support.origins import Origins

from robotsgate.decision.purposes import PurposeMap, parse_purposes, refused
from robotsgate.outcomes import Reason
from robotsgate.protocol import RobotsTxt
from robotsgate.protocol.usage import Source, read_statement

# -- declaring purposes ------------------------------------------------------------------------


def test_purposes_are_a_comma_separated_set_of_categories() -> None:
    assert parse_purposes(" train-ai,search ,, ai-input") == {"train-ai", "search", "ai-input"}
    assert parse_purposes("") == frozenset()


@pytest.mark.parametrize("bad", ["Train-AI", "train ai", "search;q=1", "-x", "=y"])
def test_a_purpose_that_cannot_be_a_category_is_refused_by_name(bad: str) -> None:
    with pytest.raises(ValueError, match="is not a usage category"):
        parse_purposes(bad)


def test_the_map_resolves_by_user_then_address_then_token_then_default() -> None:
    purposes = PurposeMap.parse("search", [
        "10.0.0.0/8=train-ai", "10.1.0.0/16=ai-input", "alice=search,train-ai",
        "GPTBot=train-ai", "user:bob=ai-input"])
    resolve = purposes.resolve
    assert resolve(user="alice", address="10.1.2.3", agent=None) == {"search", "train-ai"}
    assert resolve(user="bob", address=None, agent=None) == {"ai-input"}
    # The most specific network wins, and an IPv4-mapped address is its IPv4 address.
    assert resolve(user=None, address="10.1.2.3", agent="GPTBot") == {"ai-input"}
    assert resolve(user=None, address="::ffff:10.9.9.9", agent=None) == {"train-ai"}
    # The configured token, case-insensitively; else a token the User-Agent names.
    assert resolve(user=None, address="192.0.2.1", agent="gptbot") == {"train-ai"}
    assert resolve(user=None, address=None, agent=None,
                   user_agent="Mozilla/5.0 (compatible; GPTBot/1.2)") == {"train-ai"}
    # A configured token the map does not name takes the default, whatever the User-Agent says.
    assert resolve(user=None, address=None, agent="OtherBot",
                   user_agent="GPTBot/1.2") == {"search"}
    assert not purposes.empty and PurposeMap.parse("", []).empty


@pytest.mark.parametrize("entry", ["nokey", "=train-ai", "10.0.0.0/8=Train"])
def test_a_map_entry_that_cannot_be_read_is_named(entry: str) -> None:
    with pytest.raises(ValueError, match=repr(entry).replace("[", r"\[")[:10]):
        PurposeMap.parse("", [entry])


# -- every purpose refused, or not -------------------------------------------------------------

def usage(text: str) -> RobotsTxt:
    return RobotsTxt.parse(text)


def test_refused_only_when_every_purpose_is_disallowed() -> None:
    said = read_statement(Source.HEADER, "train-ai=n, search=y").usage()
    assert refused(said, frozenset({"train-ai", "search"}), unknown_refused=False) is None
    refusal = refused(said, frozenset({"train-ai"}), unknown_refused=False)
    assert refusal is not None and refusal.purposes == ("train-ai",)
    assert refusal.statement is not None and refusal.statement.source is Source.HEADER
    assert "train-ai disallowed by Content-Usage: train-ai=n" in refusal.explain()
    assert refused(said, frozenset(), unknown_refused=True) is None  # nothing declared


def test_an_unknown_purpose_is_refused_only_when_asked() -> None:
    said = read_statement(Source.HEADER, "train-ai=n").usage()
    both = frozenset({"train-ai", "ai-input"})
    assert refused(said, both, unknown_refused=False) is None
    refusal = refused(said, both, unknown_refused=True)
    assert refusal is not None
    assert refusal.explain() == ("ai-input: no preference stated (robots_usage_unknown=refuse); "
                                 "train-ai disallowed by Content-Usage: train-ai=n "
                                 "(response header)")


# -- the gate ----------------------------------------------------------------------------------

ROBOTS = ("User-Agent: *\n"
          "Allow: /\n"
          "Disallow: /private/\n"
          "Content-Usage: train-ai=n\n"
          "Content-Usage: /open/ train-ai=y\n")
EX = "http://example.com/robots.txt"


def gate_for(robots: str = ROBOTS):  # type: ignore[no-untyped-def]
    origins = Origins(**{EX: httpx.Response(200, text=robots)})
    return wire_gate(origins.fetcher(), FakeClock(1_000_000.0)).gate


async def test_the_gate_refuses_when_robots_txt_disallows_every_purpose() -> None:
    request = replace(request_for("http://example.com/page"),
                      purposes=frozenset({"train-ai"}))
    verdict = await gate_for().check(request)
    assert (verdict.action, verdict.reason, verdict.status) == \
        ("block", Reason.USAGE_PREFERENCE, 403)
    assert verdict.usage_refusal is not None
    statement = verdict.usage_refusal.statement
    assert statement is not None and (statement.text, statement.line) == \
        ("Content-Usage: train-ai=n", 4)


async def test_the_gate_forwards_when_a_purpose_is_allowed_or_unknown() -> None:
    gate = gate_for()
    for url, purposes in [("http://example.com/open/x", {"train-ai"}),  # the longer path says y
                          ("http://example.com/page", {"train-ai", "search"}),  # search unknown
                          ("http://example.com/page", set())]:  # nothing declared
        verdict = await gate.check(replace(request_for(url), purposes=frozenset(purposes)))
        assert verdict.action == "forward", (url, purposes)
    # The preferences ride on the verdict for the response's X-Robotsgate-Usage.
    verdict = await gate.check(request_for("http://example.com/open/x"))
    assert verdict.usage.render() == "train-ai=y"


async def test_a_disallowed_path_stays_disallowed_not_usage() -> None:
    verdict = await gate_for().check(replace(request_for("http://example.com/private/x"),
                                             purposes=frozenset({"train-ai"})))
    assert verdict.reason == Reason.DISALLOWED


async def test_a_file_without_preferences_refuses_no_purpose() -> None:
    gate = gate_for("User-agent: *\nDisallow: /private/\n")
    verdict = await gate.check(replace(request_for("http://example.com/page"),
                                       purposes=frozenset({"train-ai"})))
    assert verdict.action == "forward" and not verdict.usage


# -- robotsgate check --------------------------------------------------------------------------

def check(robots: Path, url: str, *args: str) -> tuple[int, str]:
    done = subprocess.run([str(Path(sys.executable).parent / "robotsgate"), "check", "--agent",
                           "ExampleBot", "--robots", str(robots), url, *args],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr


def test_check_shows_the_usage_and_refuses_by_purpose(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text(ROBOTS + "Content-Signal: search=yes\n")
    code, out = check(robots, "https://example.com/page", "--purpose", "train-ai")
    assert code == 1, out
    assert "usage:      train-ai disallowed by Content-Usage: train-ai=n (line 4); search " \
           "allowed by Content-Signal: search=yes (line 6)" in out
    assert "proxy:      answers 403 (usage-preference)" in out

    code, out = check(robots, "https://example.com/page", "--purpose", "train-ai,search")
    assert code == 0 and "proxy:      forwards it" in out, out

    code, out = check(robots, "https://example.com/open/x", "--json")
    facts = json.loads(out)
    assert facts["usage_header"] == "train-ai=y, search=y"
    assert facts["usage"]["train-ai"] == {"value": "allowed", "line": 5,
                                          "rule": "Content-Usage: /open/ train-ai=y"}


def test_check_refuses_a_purpose_that_is_no_category(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text(ROBOTS)
    code, out = check(robots, "https://example.com/page", "--purpose", "Train AI")
    assert code == 2 and "argument --purpose: 'Train AI' is not a usage category" in out
