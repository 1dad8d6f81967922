"""AI usage preferences in robots.txt: Content-Usage (draft-ietf-aipref-attach-05 with the
vocabulary of draft-ietf-aipref-vocab-07) and Content-Signal (contentsignals.org), read by
robotsgate.protocol.usage and matched by RobotsTxt.usage().

The drafts' own examples first, then each rule of matching and combining, the lint findings, and
properties: preference lines never change a crawling decision, and usage() never raises.
"""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import agents, robots_lines, semantics_, urls

from robotsgate.protocol import (
    CATEGORIES,
    SEMANTICS,
    PreferenceValue,
    RobotsTxt,
    Source,
    Usage,
    combine,
    read_statement,
)
from robotsgate.protocol.lint import lint

ALLOWED, DISALLOWED, UNKNOWN = (PreferenceValue.ALLOWED, PreferenceValue.DISALLOWED,
                                PreferenceValue.UNKNOWN)


def values(usage: Usage, *categories: str) -> tuple[PreferenceValue, ...]:
    return tuple(usage.of(category).value for category in categories)


def deciding_line(usage: Usage, category: str) -> int | None:
    statement = usage.of(category).statement
    return None if statement is None else statement.line


def warned(robots: RobotsTxt) -> list[int]:
    return [w.line for w in robots.warnings]


# -- the drafts' examples -----------------------------------------------------------------------

# draft-ietf-aipref-attach-05 §3.4, "Example robots.txt file".
ATTACH_EXAMPLE = """\
User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y

User-Agent: ExampleBot
Allow: /
Content-Usage: train-ai=y
"""


@pytest.mark.parametrize(("path", "crawl", "preference"), [
    # The draft's table, "Sample of usage preferences for different paths".
    ("/test", True, "train-ai=n"),
    ("/never/test", False, ""),  # N/A: no preferences where crawling is disallowed
    ("/ai-ok/test", True, "train-ai=y"),
])
def test_the_attach_drafts_example_for_other_crawlers(path: str, crawl: bool,
                                                      preference: str) -> None:
    robots = RobotsTxt.parse(ATTACH_EXAMPLE)
    assert robots.allowed("OtherBot", path) is crawl
    assert robots.usage("OtherBot", path).render() == preference


def test_the_attach_drafts_example_for_examplebot() -> None:
    # "ExampleBot" uses the second group: all content, train-ai=y; the '*' group's rules,
    # /never/ and train-ai=n included, are not its own.
    robots = RobotsTxt.parse(ATTACH_EXAMPLE)
    for path in ("/test", "/never/test", "/ai-ok/test"):
        usage = robots.usage("ExampleBot", path)
        assert usage.render() == "train-ai=y" and deciding_line(usage, "train-ai") == 9
    assert robots.warnings == ()


def test_the_attach_drafts_introduction() -> None:
    robots = RobotsTxt.parse("User-Agent: *\nAllow: /\nContent-Usage: train-ai=n\n")
    usage = robots.usage("AnyBot", "https://example.com/some/page")
    assert values(usage, "train-ai", "search") == (DISALLOWED, UNKNOWN)
    assert usage.explain() == "train-ai disallowed by Content-Usage: train-ai=n (line 3)"


@pytest.mark.parametrize(("preference", "train_ai", "search"), [
    # vocab -07 §6: "allow model training, disallow search, ... other categories unknown".
    ("train-ai=y, search=n", ALLOWED, DISALLOWED),
    # §6.5.1: the last of a repeated key counts, and neither last value is a Token.
    ('train-ai=y, train-ai, search=n, search="n"', UNKNOWN, UNKNOWN),
    # §6.5.2: parameters belong to the value selected, and are ignored.
    ("train-ai;allow=n, train-ai=y", ALLOWED, UNKNOWN),
    # §6.5.2 has parameters on an unknown preference. As printed it ends in ';', which RFC 9651
    # rejects; read either way, train-ai is unknown.
    ('train-ai;has;parameters="?";', UNKNOWN, UNKNOWN),
    ('train-ai;has;parameters="?"', UNKNOWN, UNKNOWN),
    # §6.5.1: a key with upper-case letters fails the whole Dictionary.
    ("search=y, Train-AI=n", UNKNOWN, UNKNOWN),
])
def test_the_vocabulary_drafts_examples(preference: str, train_ai: PreferenceValue,
                                        search: PreferenceValue) -> None:
    usage = read_statement(Source.HEADER, preference).usage()
    assert values(usage, "train-ai", "search", "ai-input") == (train_ai, search, UNKNOWN)
    robots = RobotsTxt.parse(f"User-agent: *\nContent-Usage: {preference}\n")
    assert values(robots.usage("bot", "/"), "train-ai", "search") == (train_ai, search)


def test_repeated_keys_and_unreadable_values_are_warned_about() -> None:
    robots = RobotsTxt.parse('User-agent: *\nContent-Usage: train-ai=y, train-ai, search=n\n'
                             'Content-Usage: /x/ Train-AI=n\nContent-Usage: /y/\n')
    assert warned(robots) == [2, 3, 4]
    assert "'train-ai' more than once" in robots.warnings[0].message
    assert "Structured Field Dictionary" in robots.warnings[1].message
    assert "no preference" in robots.warnings[2].message


# -- which rule applies to a path ---------------------------------------------------------------

def test_rules_with_the_same_path_combine_most_restrictive_first() -> None:
    robots = RobotsTxt.parse("User-agent: *\n"
                             "Content-Usage: /a/ train-ai=y, search=y\n"  # 2
                             "Content-Usage: /a/ train-ai=n\n"  # 3
                             "Content-Usage: /a/ search=y, ai-input=n\n")  # 4
    usage = robots.usage("bot", "/a/page")
    assert values(usage, "train-ai", "search", "ai-input") == (DISALLOWED, ALLOWED, DISALLOWED)
    # Each category names the statement that decided it: the restriction, or the first allowance.
    assert [deciding_line(usage, c) for c in ("train-ai", "search", "ai-input")] == [3, 2, 4]


def test_percent_encoding_makes_two_spellings_one_path() -> None:
    robots = RobotsTxt.parse("User-agent: *\nContent-Usage: /caf%C3%A9/ search=y\n"
                             "Content-Usage: /café/ search=n\n")
    assert values(robots.usage("bot", "/caf%c3%a9/menu"), "search") == (DISALLOWED,)


def test_no_path_is_every_path_and_the_same_path_as_slash() -> None:
    robots = RobotsTxt.parse("User-agent: *\nContent-Usage: train-ai=y\n"
                             "Content-Usage: / train-ai=n\nContent-Usage: /open/ search=y\n")
    assert values(robots.usage("bot", "/anything"), "train-ai") == (DISALLOWED,)
    assert values(robots.usage("bot", "/"), "train-ai") == (DISALLOWED,)


def test_the_longest_matching_path_wins() -> None:
    robots = RobotsTxt.parse("User-agent: *\n"
                             "Content-Usage: /a/ train-ai=n\n"  # 2
                             "Content-Usage: /a/b/ train-ai=y\n"  # 3
                             "Content-Usage: /a/b/c/ train-ai=n\n")  # 4
    assert [deciding_line(robots.usage("bot", p), "train-ai") for p in
            ("/a/x", "/a/b/x", "/a/b/c/x", "/z")] == [2, 3, 4, None]


def test_the_winning_rule_says_everything_for_its_paths() -> None:
    # A path's preference is its longest rule's statement (attach §3.1, as for Allow/Disallow):
    # what that statement leaves out is unknown there, not taken from a shorter rule.
    robots = RobotsTxt.parse("User-agent: *\nContent-Usage: search=y, train-ai=n\n"
                             "Content-Usage: /x/ train-ai=y\n")
    assert values(robots.usage("bot", "/x/p"), "train-ai", "search") == (ALLOWED, UNKNOWN)
    assert values(robots.usage("bot", "/p"), "train-ai", "search") == (DISALLOWED, ALLOWED)


def test_wildcards_and_the_end_anchor_match_as_in_allow_and_disallow() -> None:
    robots = RobotsTxt.parse("User-agent: *\n"
                             "Content-Usage: /docs/ train-ai=y\n"  # 2: 6 octets
                             "Content-Usage: /*.pdf$ train-ai=n\n"  # 3: 7 octets
                             "Content-Usage: /*/draft- search=n\n")  # 4: 9 octets
    assert deciding_line(robots.usage("bot", "/docs/a.pdf"), "train-ai") == 3
    assert deciding_line(robots.usage("bot", "/docs/a.pdf?page=2"), "train-ai") == 2  # not at $
    assert deciding_line(robots.usage("bot", "/docs/a.html"), "train-ai") == 2
    drafts = robots.usage("bot", "/docs/x/draft-1.pdf")
    assert values(drafts, "train-ai", "search") == (UNKNOWN, DISALLOWED)


def test_of_two_different_patterns_of_one_length_the_first_in_the_file_wins() -> None:
    robots = RobotsTxt.parse("User-agent: *\nContent-Usage: /ab* train-ai=n\n"
                             "Content-Usage: /abc train-ai=y\n")
    assert deciding_line(robots.usage("bot", "/abcd"), "train-ai") == 2
    flipped = RobotsTxt.parse("User-agent: *\nContent-Usage: /abc train-ai=y\n"
                              "Content-Usage: /ab* train-ai=n\n")
    assert deciding_line(flipped.usage("bot", "/abcd"), "train-ai") == 2


def test_paths_are_matched_without_case_when_the_site_asks_for_it() -> None:
    body = "User-agent: *\nContent-Usage: /Private/ train-ai=n\n"
    assert RobotsTxt.parse(body).usage("bot", "/private/x") == Usage()
    insensitive = RobotsTxt.parse(body, case_sensitive=False).usage("bot", "/PRIVATE/x")
    assert values(insensitive, "train-ai") == (DISALLOWED,)


def test_a_path_that_may_not_be_crawled_has_no_preferences() -> None:
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /private/\nContent-Usage: train-ai=n\n"
                             "Content-Usage: /private/ search=n\n")
    assert robots.usage("bot", "/private/x") == Usage()
    assert values(robots.usage("bot", "/public"), "train-ai") == (DISALLOWED,)
    # /robots.txt is always allowed, and has the preferences of its path like any other.
    assert values(robots.usage("bot", "/robots.txt"), "train-ai") == (DISALLOWED,)


def test_a_file_says_whether_it_states_any_preference() -> None:
    assert RobotsTxt.parse(ATTACH_EXAMPLE).states_usage
    assert RobotsTxt.parse("User-agent: *\nContent-Signal: search=yes\n").states_usage
    assert not RobotsTxt.parse("User-agent: *\nDisallow: /x\n# Content-Usage: train-ai=n\n"
                               ).states_usage
    # A line outside any group states nothing.
    assert not RobotsTxt.parse("Content-Usage: train-ai=n\nUser-agent: *\n").states_usage


def test_an_agent_no_group_applies_to_has_no_preferences() -> None:
    robots = RobotsTxt.parse("User-agent: FooBot\nContent-Usage: train-ai=n\n")
    assert robots.usage("BarBot", "/") == Usage()
    assert values(robots.usage("FooBot", "/"), "train-ai") == (DISALLOWED,)


# -- groups ---------------------------------------------------------------------------------------

def test_the_star_group_applies_when_no_group_names_the_agent() -> None:
    robots = RobotsTxt.parse("User-agent: *\nAllow: /\nContent-Usage: train-ai=n\n\n"
                             "User-agent: FooBot\nDisallow: /x\n")
    assert values(robots.usage("BarBot", "/"), "train-ai") == (DISALLOWED,)
    # A named group replaces '*' entirely, its preferences included.
    assert robots.usage("FooBot", "/") == Usage()


def test_groups_of_one_agent_merge_their_preferences() -> None:
    robots = RobotsTxt.parse("User-agent: FooBot\nAllow: /\nContent-Usage: /a/ train-ai=y\n\n"
                             "User-agent: BarBot\nAllow: /\nContent-Usage: /a/ train-ai=n\n\n"
                             "User-agent: foobot\nDisallow: /z\nContent-Usage: /a/ search=n\n"
                             "Content-Usage: /a/b/ train-ai=n\n")
    usage = robots.usage("FooBot/2.0", "/a/x")
    assert values(usage, "train-ai", "search") == (ALLOWED, DISALLOWED)
    assert deciding_line(robots.usage("FooBot", "/a/b/x"), "train-ai") == 12
    assert values(robots.usage("BarBot", "/a/x"), "train-ai", "search") == (DISALLOWED, UNKNOWN)


def test_preference_lines_end_no_group_and_start_none() -> None:
    # As Crawl-delay: only Allow and Disallow end a group's User-agent lines (so a group that has
    # nothing but preference lines takes in the User-agent lines after it).
    body = ("User-agent: a\nContent-Usage: train-ai=n\nContent-Signal: search=yes\n"
            "User-agent: b\nDisallow: /x\n")
    robots = RobotsTxt.parse(body)
    assert len(robots.groups) == 1 and robots.groups[0].agents == ("a", "b")
    for agent in ("a", "b"):
        assert not robots.allowed(agent, "/x")
        assert robots.usage(agent, "/y").render() == "train-ai=n, search=y"


def test_preference_lines_before_any_group_are_ignored_with_a_warning() -> None:
    robots = RobotsTxt.parse("Content-Usage: train-ai=n\nContent-Signal: ai-train=no\n"
                             "User-agent: *\nDisallow: /x\n")
    assert warned(robots) == [1, 2]
    assert robots.usage("bot", "/") == Usage()


def test_a_blank_line_ends_a_record_in_the_1994_reading() -> None:
    body = "User-agent: *\nDisallow: /x\n\nContent-Usage: train-ai=n\n"
    assert robots_usage(body, "classic") == ""
    assert robots_usage(body, "rfc9309") == "train-ai=n"


def robots_usage(body: str, semantics: str) -> str:
    return RobotsTxt.parse(body, semantics=semantics).usage("bot", "/").render()


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_every_reading_finds_the_preferences(semantics: str) -> None:
    robots = RobotsTxt.parse(ATTACH_EXAMPLE, semantics=semantics)
    assert robots.usage("OtherBot", "/ai-ok/test").render() == "train-ai=y"
    assert robots.usage("OtherBot", "/test").render() == "train-ai=n"


def test_wildcards_are_plain_characters_in_the_1994_reading() -> None:
    body = "User-agent: *\nContent-Usage: /*.pdf train-ai=n\n"
    assert robots_usage(body, "rfc9309") == ""
    assert RobotsTxt.parse(body).usage("bot", "/a.pdf").render() == "train-ai=n"
    assert RobotsTxt.parse(body, semantics="classic").usage("bot", "/a.pdf") == Usage()
    assert RobotsTxt.parse(body, semantics="classic").usage("bot", "/*.pdf").render() \
        == "train-ai=n"


# -- Content-Signal -------------------------------------------------------------------------------

def test_content_signals_map_to_the_categories() -> None:
    # contentsignals.org's example, as Cloudflare's managed robots.txt writes it.
    robots = RobotsTxt.parse("User-Agent: *\nContent-Signal: ai-train=no, search=yes, "
                             "ai-input=yes\nAllow: /\n")
    usage = robots.usage("bot", "/")
    assert values(usage, "train-ai", "search", "ai-input") == (DISALLOWED, ALLOWED, ALLOWED)
    assert usage.render() == "train-ai=n, search=y, ai-input=y"
    statement = usage.of("search").statement
    assert statement is not None and statement.source is Source.CONTENT_SIGNAL
    assert robots.warnings == ()


def test_each_syntax_has_its_own_words() -> None:
    # Content-Signal says yes / no and ai-train; Content-Usage says y / n and train-ai.
    assert robots_usage("User-agent: *\nContent-Signal: ai-train=n, search=y, "
                        "train-ai=no\n", "rfc9309") == ""
    assert robots_usage("User-agent: *\nContent-Usage: train-ai=no, ai-train=n\n",
                        "rfc9309") == ""
    # Cloudflare's use=... and other keys state nothing.
    assert robots_usage("User-agent: *\nContent-Signal: search=yes,ai-train=no,use=reference\n",
                        "rfc9309") == "search=y, train-ai=n"


def test_content_signal_and_content_usage_combine_after_each_is_matched() -> None:
    # Two ways of stating: each is matched to the path, then the most restrictive holds.
    robots = RobotsTxt.parse("User-agent: *\nContent-Signal: ai-train=no, search=yes\n"
                             "Content-Usage: /open/ train-ai=y, search=n\n")
    usage = robots.usage("bot", "/open/x")
    assert values(usage, "train-ai", "search") == (DISALLOWED, DISALLOWED)
    assert [deciding_line(usage, c) for c in ("train-ai", "search")] == [2, 3]


# -- categories, combining, rendering -------------------------------------------------------------

def test_unknown_labels_and_parameters_are_ignored_unless_asked_about() -> None:
    robots = RobotsTxt.parse('User-agent: *\nContent-Usage: train-ai=n;reason="x", '
                             "train-genai=y, x-archive=n\n")
    assert robots.usage("bot", "/").render() == "train-ai=n"
    # An operator's category set may name labels the vocabulary does not.
    archive = robots.usage("bot", "/", categories={"x-archive"})
    assert values(archive, "x-archive", "train-ai") == (DISALLOWED, UNKNOWN)
    assert robots.usage("bot", "/", categories=None).render() == \
        "train-ai=n, train-genai=y, x-archive=n"
    assert CATEGORIES == ("train-ai", "search", "ai-input")


def test_a_label_counts_for_its_own_category_only() -> None:
    # The vocabulary has no hierarchy: train-genai (a child of train-ai in earlier drafts)
    # says nothing of train-ai, and train-ai nothing of it.
    usage = read_statement(Source.HEADER, "train-ai=n").usage()
    assert values(usage, "train-genai") == (UNKNOWN,)
    usage = read_statement(Source.HEADER, "train-genai=n").usage()
    assert values(usage, "train-ai") == (UNKNOWN,)


def test_a_header_statement_combines_with_robots_txt() -> None:
    robots = RobotsTxt.parse("User-agent: *\nContent-Usage: train-ai=n, search=y\n")
    header = read_statement(Source.HEADER, "train-ai=y, search=n, ai-input=y")
    usage = combine(robots.usage("bot", "/"), header.usage())
    assert usage.render() == "train-ai=n, search=n, ai-input=y"
    assert deciding_line(usage, "train-ai") == 2
    assert usage.explain().endswith("search disallowed by Content-Usage: train-ai=y, search=n, "
                                    "ai-input=y (response header); ai-input allowed by "
                                    "Content-Usage: train-ai=y, search=n, ai-input=y "
                                    "(response header)")


def test_an_unreadable_header_states_nothing_and_says_why() -> None:
    header = read_statement(Source.HEADER, "train-ai=n,")
    assert header.usage() == Usage() and header.problems
    assert read_statement(Source.HEADER, "train-ai=n\udcff").usage() == Usage()
    assert read_statement(Source.HEADER, b"train-ai=n, search=\xff").usage() == Usage()


def test_nothing_known_renders_as_nothing() -> None:
    assert Usage().render() == "" and Usage().explain() == "no usage preference known"
    assert combine() == Usage()
    assert values(Usage(), *CATEGORIES) == (UNKNOWN, UNKNOWN, UNKNOWN)


preferences = st.lists(st.tuples(st.sampled_from(["train-ai", "search", "ai-input", "x"]),
                                 st.sampled_from(["y", "n", "maybe"])), max_size=4).map(
    lambda pairs: ", ".join(f"{k}={v}" for k, v in pairs))


@settings(max_examples=200, deadline=None)
@given(st.lists(preferences, max_size=4), st.randoms(use_true_random=False))
def test_combining_is_most_restrictive_whatever_the_order(statements: list[str],
                                                          rng: random.Random) -> None:
    usages = [read_statement(Source.HEADER, text).usage() for text in statements]
    shuffled = list(usages)
    rng.shuffle(shuffled)
    together, again = combine(*usages), combine(*shuffled)
    for category in ("train-ai", "search", "ai-input", "x"):
        said = {u.of(category).value for u in usages}
        expected = DISALLOWED if DISALLOWED in said else ALLOWED if ALLOWED in said else UNKNOWN
        assert together.of(category).value == again.of(category).value == expected


# -- many rules -----------------------------------------------------------------------------------

@pytest.mark.parametrize("semantics", SEMANTICS)
def test_many_preference_rules_still_match_right(semantics: str) -> None:
    text = "User-agent: *\nContent-Usage: train-ai=n\n" + "".join(
        f"Content-Usage: /d{i}/ search=y\nContent-Usage: /d{i}/*.pdf$ search=n\n"
        for i in range(3000))
    robots = RobotsTxt.parse(text, semantics=semantics)
    for i in (0, 1500, 2999):
        assert deciding_line(robots.usage("bot", f"/d{i}/x"), "search") == 3 + 2 * i
        if semantics != "classic":  # where '*' is the wildcard
            assert deciding_line(robots.usage("bot", f"/d{i}/x.pdf"), "search") == 4 + 2 * i
    assert deciding_line(robots.usage("bot", "/d3000/x"), "train-ai") == 2


# -- lint -----------------------------------------------------------------------------------------

def test_lint_reports_unreadable_preferences_and_ignored_labels() -> None:
    body = (b"User-agent: *\n"
            b"Content-Usage: train-ai=n, search=y\n"  # 2: fine
            b"Content-Usage: *.pdf$ train-ai=n\n"  # 3: a path must start with '/'
            b"Content-Usage: train-ai=no, ai-train=n\n"  # 4: Content-Signal's words
            b"Content-Usage: /x/ train-genai=n\n"  # 5: a label of an earlier draft
            b"Content-Signal: search=yes, use=reference, ai-train=n, robots=no\n"  # 6
            b"Content-Signal: search=yes,\n")  # 7: a trailing comma
    findings = lint(body)
    assert [(f.line, f.kind) for f in findings] == [
        (3, "usage-syntax"), (4, "usage-label"), (4, "usage-label"), (5, "usage-label"),
        (6, "usage-label"), (6, "usage-label"), (7, "usage-syntax")]
    messages = " | ".join(f.message for f in findings)
    assert "a path starts with '/'" in messages
    assert "train-ai=no is not y or n" in messages
    assert "ai-train is Content-Signal's name" in messages
    assert "earlier drafts" in messages
    assert "ai-train=n is not yes or no" in messages and "'robots'" in messages
    assert "'use'" not in messages  # Cloudflare's own key is fine


def test_lint_finds_nothing_in_the_drafts_example() -> None:
    assert lint(ATTACH_EXAMPLE.encode()) == ()


# -- properties -----------------------------------------------------------------------------------

USAGE_LINES = [
    "Content-Usage: train-ai=n",
    "Content-Usage: /private/ train-ai=y, search=n",
    "Content-Usage: /*.pdf$ search=n",
    "Content-Usage: /",
    "Content-Usage:",
    "Content-Usage: TRAIN-AI=n",
    "Content-Usage: *.pdf train-ai=n",
    "content-usage : /a search=y # comment",
    "Content-Signal: search=yes, ai-input=yes, ai-train=no",
    "Content-Signal: /x/ ai-train=yes",
    "Content-Signals: search=no",
    "Content-Signal: search=yes,,",
    "Content-Usage: train-ai=y\x00Disallow: /",
]


@settings(max_examples=300, deadline=None)
@given(robots_lines, st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(USAGE_LINES)),
                              min_size=1, max_size=6), semantics_, st.booleans(),
       st.lists(st.tuples(agents, urls), min_size=1, max_size=4))
def test_preference_lines_never_change_a_crawling_decision(
        lines: list[str], inserted: list[tuple[int, str]], semantics: str,
        case_sensitive: bool, questions: list[tuple[str, str]]) -> None:
    with_usage = list(lines)
    # Any line put before a byte order mark moves it off the start of the file, where alone it
    # is skipped: that is about the mark, not about what the line says.
    first = 1 if lines and lines[0].startswith("\ufeff") else 0
    for position, line in inserted:
        with_usage.insert(first + position % (len(with_usage) + 1 - first), line)
    plain = RobotsTxt.parse("\n".join(lines), semantics=semantics, case_sensitive=case_sensitive)
    more = RobotsTxt.parse("\n".join(with_usage), semantics=semantics,
                           case_sensitive=case_sensitive)
    # Line numbers move; what the groups are, and what decides, may not.
    assert [(g.agents, [r.text for r in g.rules]) for g in plain.groups] == \
        [(g.agents, [r.text for r in g.rules]) for g in more.groups]
    for agent, url in [*questions, ("FooBot", "/private/x"), ("*", "/a.pdf")]:
        before, after = plain.decide(agent, url), more.decide(agent, url)
        assert (before.allowed, before.reason) == (after.allowed, after.reason)
        assert (before.rule and before.rule.text) == (after.rule and after.rule.text)
        assert (before.group and before.group.agents) == (after.group and after.group.agents)
        assert plain.crawl_delay(agent) == more.crawl_delay(agent)
        usage = more.usage(agent, url)
        assert set(usage) <= set(CATEGORIES)
        if not after.allowed:
            assert usage == Usage()


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=80), st.text(max_size=80)),
       st.sampled_from(list(Source)))
def test_reading_a_statement_never_raises(value: bytes | str, source: Source) -> None:
    statement = read_statement(source, value)
    usage = statement.usage()
    assert all(p.statement is statement for p in usage.values())
    assert not (statement.problems and statement.labels and not any(
        "more than once" in problem for problem in statement.problems))
    assert isinstance(usage.render(), str) and isinstance(statement.text, str)


def test_the_property_would_see_a_preference_line_that_ended_a_group() -> None:
    # If a Content-Usage line counted as a rule that ends the user-agent lines above it, "b"
    # would get a group of its own and lose a's Disallow: the property compares exactly that.
    plain = RobotsTxt.parse("User-agent: a\nUser-agent: b\nDisallow: /x\n")
    broken = RobotsTxt.parse("User-agent: a\nAllow: /none\nUser-agent: b\nDisallow: /x\n")
    assert [g.agents for g in plain.groups] != [g.agents for g in broken.groups]
