"""The three readings side by side: each way one differs, seen through RobotsTxt and lint.

One row per difference a reading object holds (readings.py), with what each reading answers; the
readings' own test files pin each one against its sources in depth.
"""

import pytest

from robotsgate.protocol import (
    PRODUCT_TOKEN,
    SEMANTICS,
    RobotsTxt,
    Rule,
    is_product_token,
    product_token_of,
    product_tokens,
)
from robotsgate.protocol.lint import lint
from robotsgate.protocol.readings import reading_of


def test_the_readings_and_their_order() -> None:
    assert SEMANTICS == ("rfc9309", "google", "classic")


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_a_file_keeps_the_reading_it_was_parsed_with(semantics: str) -> None:
    robots = RobotsTxt.parse(b"", semantics=semantics)
    assert robots.semantics == semantics
    assert robots.reading is reading_of(semantics)


@pytest.mark.parametrize("semantics", ["", "RFC9309", "1994", "google "])
def test_an_unknown_reading_is_refused(semantics: str) -> None:
    with pytest.raises(ValueError, match="semantics must be one of rfc9309, google, classic"):
        RobotsTxt.parse(b"", semantics=semantics)


# (what differs, robots.txt, agent, URL, allowed in rfc9309, google, classic)
DIFFERENCES = [
    ("/robots.txt always allowed", "User-agent: *\nDisallow: /\n", "bot", "/robots.txt",
     (True, False, True)),
    ("escapes decoded", "User-agent: *\nDisallow: /%41\n", "bot", "/A", (False, True, False)),
    ("'*' a wildcard", "User-agent: *\nDisallow: /a*c\n", "bot", "/abc", (False, False, True)),
    ("'*' a character", "User-agent: *\nDisallow: /a*c\n", "bot", "/a*c", (False, False, False)),
    ("'$' an anchor", "User-agent: *\nDisallow: /a$\n", "bot", "/a$", (True, True, False)),
    ("several paths on one line", "User-agent: *\nDisallow: /tmp /spool\n", "bot", "/spool/x",
     (True, True, False)),
    ("longest match or first match", "User-agent: *\nDisallow: /a\nAllow: /a/b\n", "bot",
     "/a/b", (True, True, False)),
    ("Google's index.html", "User-agent: *\nAllow: /x/index.html\nDisallow: /x/\n", "bot",
     "/x/", (False, True, False)),
    ("a NUL ends Google's path", "User-agent: *\nDisallow: /a$\n", "bot", "/a\0b",
     (True, False, True)),
    ("blank lines end records", "User-agent: FooBot\n\nDisallow: /\n", "FooBot", "/x",
     (False, False, True)),
    ("groups merged or the first record alone",
     "User-agent: FooBot\nDisallow: /a\n\nUser-agent: FooBot\nDisallow: /b\n", "FooBot", "/b",
     (False, False, True)),
    ("agent names as substrings", "User-agent: foo\nDisallow: /\n", "FooBot", "/x",
     (True, True, False)),
    ("the agent's product token, or the agent as given", "User-agent: FooBot\nDisallow: /\n",
     "FooBot/1.0", "/x", (False, True, False)),
    ("ASCII case folding only", "User-agent: kbot\nDisallow: /\n", "\u212abot", "/x",
     (True, True, False)),
]


@pytest.mark.parametrize(("text", "agent", "url", "answers"),
                         [row[1:] for row in DIFFERENCES], ids=[row[0] for row in DIFFERENCES])
def test_what_each_reading_answers(text: str, agent: str, url: str,
                                   answers: tuple[bool, bool, bool]) -> None:
    for semantics, expected in zip(SEMANTICS, answers, strict=True):
        robots = RobotsTxt.parse(text, semantics=semantics)
        assert robots.allowed(agent, url) is expected, semantics
        steps = robots.decide_steps(agent, url)
        with pytest.raises(StopIteration) as done:
            while True:
                next(steps)
        assert done.value.value == robots.decide(agent, url), semantics
        assert robots.decide_at_once(agent, url) == robots.decide(agent, url), semantics


@pytest.mark.parametrize(("semantics", "agent"), [("rfc9309", "foobot"), ("google", "foobot"),
                                                  ("classic", "Mozilla/5.0 (FooBot/2.1)")])
def test_agent_for_a_user_agent_header(semantics: str, agent: str) -> None:
    robots = RobotsTxt.parse("User-agent: FooBot\nDisallow: /\n", semantics=semantics)
    assert robots.agent_for("Mozilla/5.0 (FooBot/2.1)") == agent
    assert not robots.allowed(robots.agent_for("Mozilla/5.0 (FooBot/2.1)"), "/x")


@pytest.mark.parametrize(("semantics", "warned"),
                         [("rfc9309", True), ("google", True), ("classic", False)])
def test_a_user_agent_that_is_not_a_product_token_is_a_warning(semantics: str,
                                                               warned: bool) -> None:
    robots = RobotsTxt.parse("User-agent: FooBot/1.0\nDisallow: /\n", semantics=semantics)
    expected = ["User-agent 'FooBot/1.0' is read as 'foobot'"] if warned else []
    assert [w.message for w in robots.warnings] == expected


@pytest.mark.parametrize(("semantics", "kept"),
                         [("rfc9309", 17_001), ("google", 16_663 - 10), ("classic", 17_001)])
def test_only_google_cuts_long_lines(semantics: str, kept: int) -> None:
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /" + "a" * 17_000 + "\n",
                             semantics=semantics)
    assert len(robots.groups[0].rules[0].pattern) == kept


@pytest.mark.parametrize(("pattern", "rfc9309", "classic"), [
    ("private", "Disallow: private never matches: paths start with '/' (a pattern starts with "
                "'/' or '*')", "Disallow: private never matches: paths start with '/'"),
    ("*.pdf", None, "Disallow: *.pdf never matches: paths start with '/'"),
    ("/*.pdf$", None, "Disallow: /*.pdf$: in the 1994 reading '*' and '$' are plain characters, "
                      "so it only matches paths that contain them"),
])
def test_what_lint_says_of_a_pattern_in_each_reading(pattern: str, rfc9309: str | None,
                                                     classic: str | None) -> None:
    text = f"User-agent: *\nDisallow: {pattern}\n".encode()
    for semantics, expected in (("rfc9309", rfc9309), ("google", rfc9309), ("classic", classic)):
        found = [f.message for f in lint(text, semantics=semantics) if f.kind == "never-matches"]
        assert found == ([expected] if expected else []), semantics


@pytest.mark.parametrize(("semantics", "kind"),
                         [("rfc9309", None), ("google", None), ("classic", "shadowed")])
def test_lint_shadowing_follows_the_readings_precedence(semantics: str, kind: str | None) -> None:
    found = lint(b"User-agent: *\nDisallow: /a\nAllow: /a/b\n", semantics=semantics)
    assert [f.kind for f in found if f.kind in ("shadowed", "redundant")] == (
        [kind] if kind else [])


# -- product tokens -----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "token"), [
    ("FooBot", True), ("foo-bot_2", False), ("foo-bot_", True), ("", False), ("*", False),
    ("FooBot/1.0", False), (" FooBot", False), ("Føøbot", False)])
def test_is_product_token(text: str, token: bool) -> None:
    assert is_product_token(text) is token


@pytest.mark.parametrize(("text", "token"), [
    ("FooBot/1.0", "FooBot"), ("FooBot", "FooBot"), ("123bot", ""), ("", ""), (" FooBot", ""),
    ("Foo Bot", "Foo")])
def test_product_token_of(text: str, token: str) -> None:
    assert product_token_of(text) == token


def test_product_tokens_of_a_user_agent_header() -> None:
    header = "Mozilla/5.0 (compatible; FooBot/2.1; +http://example.com/bot)"
    assert product_tokens(header) == {"mozilla", "compatible", "foobot", "http", "example",
                                      "com", "bot"}
    assert product_tokens("") == frozenset()
    assert PRODUCT_TOKEN.search("1.0 (2)") is None


# -- rules --------------------------------------------------------------------------------------


def test_a_rule_as_text() -> None:
    assert Rule("disallow", "/private", 4).text == "Disallow: /private"
    assert Rule("allow", "", 1).text == "Allow: "
