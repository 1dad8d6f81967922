"""RFC 9309 (the Robots Exclusion Protocol) as `RobotsTxt` reads it by default.

Tests are grouped by the section of the RFC they pin down. Where the RFC leaves room for more than
one reading, a comment says which one is tested.
"""

from datetime import time

import pytest

from robotsgate.protocol import (
    MAX_BYTES,
    Decision,
    RequestRate,
    RobotsTxt,
    VisitTime,
)


def decide(text: str | bytes, url: str, agent: str = "foobot", **options: object) -> Decision:
    return RobotsTxt.parse(text, **options).decide(agent, url)  # type: ignore[arg-type]


def allowed(text: str | bytes, url: str, agent: str = "foobot", **options: object) -> bool:
    return decide(text, url, agent, **options).allowed


def warnings_of(text: str | bytes, **options: object) -> list[tuple[int, str]]:
    robots = RobotsTxt.parse(text, **options)  # type: ignore[arg-type]
    return [(w.line, w.message) for w in robots.warnings]


# --------------------------------------------------------------------------------------------
# §2.1 Protocol definition: groups are user-agent lines followed by rules
# --------------------------------------------------------------------------------------------

# The example of RFC 9309 §5.1 (without its trailing "EOF" marker).
RFC_EXAMPLE = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot
"""


@pytest.mark.parametrize(
    ("agent", "path", "expected"),
    [
        # foobot: everything disallowed except two files
        ("foobot", "/", False),
        ("foobot", "/example/", False),
        ("foobot", "/example/page.html", True),
        ("foobot", "/example/allowed.gif", True),
        ("foobot", "/example/page.htm", False),
        ("foobot", "/publications/", False),  # the '*' group does not apply to foobot
        # barbot and bazbot share one group
        ("barbot", "/example/page.html", False),
        ("bazbot", "/example/page.html", False),
        ("barbot", "/example/other.html", True),  # '*' rules do not apply to barbot
        ("bazbot", "/image.gif", True),
        ("barbot", "/", True),
        # quxbot: a group without rules allows everything
        ("quxbot", "/", True),
        ("quxbot", "/example/page.html", True),
        ("quxbot", "/image.gif", True),
        # anyone else: the '*' group
        ("otherbot", "/image.gif", False),
        ("otherbot", "/deep/dir/image.gif", False),
        ("otherbot", "/image.gif?size=2", True),  # '$' anchors the end of path and query
        ("otherbot", "/image.gifs", True),
        ("otherbot", "/example/", False),
        ("otherbot", "/example/page.html", False),
        ("otherbot", "/publications/", True),
        ("otherbot", "/publications/x.html", True),
        ("otherbot", "/publications/x.gif", True),  # /publications/ is longer than *.gif$
        ("otherbot", "/", True),
    ],
)
def test_2_1_rfc_example_5_1(agent: str, path: str, expected: bool) -> None:
    assert allowed(RFC_EXAMPLE, path, agent) is expected


def test_2_1_groups_are_built_in_file_order() -> None:
    robots = RobotsTxt.parse(RFC_EXAMPLE)
    assert [g.agents for g in robots.groups] == [
        ("*",),
        ("foobot",),
        ("barbot", "bazbot"),
        ("quxbot",),
    ]
    assert [g.line for g in robots.groups] == [1, 6, 11, 15]
    assert [len(g.rules) for g in robots.groups] == [3, 3, 1, 0]


def test_2_1_a_user_agent_line_after_rules_starts_a_new_group() -> None:
    robots = RobotsTxt.parse("User-agent: a\nDisallow: /a\nUser-agent: b\nDisallow: /b\n")
    assert [g.agents for g in robots.groups] == [("a",), ("b",)]
    assert allowed("User-agent: a\nDisallow: /a\nUser-agent: b\nDisallow: /b\n", "/b", "a")
    assert not allowed("User-agent: a\nDisallow: /a\nUser-agent: b\nDisallow: /b\n", "/b", "b")


def test_2_1_last_group_without_rules_allows_all() -> None:
    decision = decide("User-agent: *\nDisallow: /\n\nUser-agent: foobot\n", "/x")
    assert decision.allowed and decision.reason == "no-rule"
    assert decision.group is not None and decision.group.agents == ("foobot",)


def test_2_1_empty_file_allows_everything() -> None:
    decision = decide("", "/anything")
    assert decision.allowed and decision.reason == "no-group"
    assert decision.group is None and decision.rule is None
    assert RobotsTxt.parse(b"").groups == ()


# --------------------------------------------------------------------------------------------
# §2.2.1 The user-agent line
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "agent",
    [
        "FooBot",
        "foobot",
        "FOOBOT",
        "fOoBoT",
        "FooBot/1.0",
        "foobot/2.1b",
        " FooBot ",
        "FooBot/1.0 (+http://x)",
    ],
)
def test_2_2_1_agent_is_a_case_insensitive_product_token(agent: str) -> None:
    text = "User-agent: FooBot\nDisallow: /private\n\nUser-agent: *\nDisallow: /\n"
    decision = decide(text, "/public", agent)
    assert decision.allowed, agent
    assert decision.group is not None and decision.group.agents == ("FooBot",)
    assert not allowed(text, "/private/x", agent)


@pytest.mark.parametrize(
    "line", ["User-agent: FooBot", "user-agent: foobot", "USER-AGENT: FOOBOT", "User-Agent: fooBOT"]
)
def test_2_2_1_the_file_side_is_case_insensitive_too(line: str) -> None:
    assert not allowed(f"{line}\nDisallow: /\n", "/x", "FooBot")


@pytest.mark.parametrize(
    ("file_agent", "agent"),
    [
        ("Foo", "FooBot"),  # a prefix of the token is another token
        ("Foo", "FooBot/1.0"),
        ("Bot", "FooBot"),  # a suffix too
        ("oBo", "FooBot"),
        ("FooBot", "Foo"),
        ("FooBot", "FooBot-News"),  # '-' is part of a product token
        ("FooBot", "FooBot_news"),
        ("FooBot-News", "FooBot"),
        ("FooBot", "BarBot"),
        ("FooBot", "Mozilla/5.0 (compatible; FooBot/1.0)"),  # decide() takes a token, not a header
    ],
)
def test_2_2_1_other_tokens_do_not_match(file_agent: str, agent: str) -> None:
    text = f"User-agent: {file_agent}\nDisallow: /\n\nUser-agent: *\nDisallow: /star-only\n"
    decision = decide(text, "/x", agent)
    assert decision.allowed, (file_agent, agent)
    assert decision.group is not None and decision.group.agents == ("*",)


@pytest.mark.parametrize(
    ("file_agent", "agent"), [("Foo", "FooBot"), ("FooBot", "Foo"), ("Bot", "FooBot")]
)
def test_2_2_1_other_tokens_do_not_match_without_star_group(file_agent: str, agent: str) -> None:
    decision = decide(f"User-agent: {file_agent}\nDisallow: /\n", "/x", agent)
    assert decision.allowed and decision.reason == "no-group" and decision.group is None


def test_2_2_1_version_in_the_file_is_ignored_with_a_warning() -> None:
    # Reading tested: "User-agent: FooBot/1.0" is read as the product token FooBot (the version
    # is not part of the name), as Google's parser does, and the file gets a warning.
    text = "User-agent: FooBot/1.0\nDisallow: /\n"
    assert not allowed(text, "/x", "FooBot")
    assert not allowed(text, "/x", "foobot/2.0")
    assert any(line == 1 and "FooBot/1.0" in message for line, message in warnings_of(text))


def test_2_2_1_groups_of_the_same_agent_are_merged() -> None:
    # The RFC's own example: the two ExampleBot groups are one.
    text = (
        "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\n"
        "user-agent: ExampleBot\ndisallow: /baz\n"
    )
    for path in ("/foo", "/bar", "/baz", "/baz/x"):
        assert not allowed(text, path, "ExampleBot"), path
    assert allowed(text, "/qux", "ExampleBot")
    robots = RobotsTxt.parse(text)
    assert [g.line for g in robots.groups_for("examplebot")] == [1, 5]


def test_2_2_1_merged_groups_are_merged_for_precedence_too() -> None:
    # The Allow in the second group beats the shorter Disallow of the first group.
    text = (
        "User-agent: a\nDisallow: /shop\n\nUser-agent: *\nDisallow: /\n\n"
        "User-agent: a\nAllow: /shop/public\n"
    )
    decision = decide(text, "/shop/public/item", "a")
    assert decision.allowed and decision.rule is not None and decision.rule.line == 8
    assert decision.group is not None and decision.group.line == 7  # the group the rule is in
    decision = decide(text, "/shop/private", "a")
    assert not decision.allowed and decision.rule is not None and decision.rule.line == 2
    assert decision.group is not None and decision.group.line == 1


def test_2_2_1_star_groups_are_merged() -> None:
    text = (
        "User-agent: *\nDisallow: /a\n\nUser-agent: x\nDisallow: /\n\nUser-agent: *\nDisallow: /b\n"
    )
    assert not allowed(text, "/a", "other")
    assert not allowed(text, "/b", "other")
    assert allowed(text, "/c", "other")


def test_2_2_1_a_group_may_name_an_agent_and_star() -> None:
    text = "User-agent: a\nUser-agent: *\nDisallow: /x\n\nUser-agent: b\nDisallow: /y\n"
    assert not allowed(text, "/x", "a")
    assert not allowed(text, "/x", "zzz")
    assert allowed(text, "/x", "b")  # b has its own group: '*' does not apply to it
    assert not allowed(text, "/y", "b")


@pytest.mark.parametrize(
    ("agent", "path", "expected"),
    [
        ("foobot", "/star", True),  # the named group replaces '*' entirely
        ("foobot", "/named", False),
        ("otherbot", "/star", False),
        ("otherbot", "/named", True),
    ],
)
def test_2_2_1_star_only_when_no_named_group_matches(agent: str, path: str, expected: bool) -> None:
    text = "User-agent: *\nDisallow: /star\n\nUser-agent: FooBot\nDisallow: /named\n"
    assert allowed(text, path, agent) is expected


def test_2_2_1_empty_named_group_still_replaces_star() -> None:
    text = "User-agent: *\nDisallow: /\n\nUser-agent: foobot\nDisallow:\n"
    decision = decide(text, "/x")
    assert decision.allowed and decision.reason == "no-rule"
    assert decision.group is not None and decision.group.agents == ("foobot",)


def test_2_2_1_no_matching_group_and_no_star_means_no_rules() -> None:
    decision = decide("User-agent: a\nDisallow: /\n", "/x", "b")
    assert decision.allowed and decision.reason == "no-group"


@pytest.mark.parametrize("agent", ["", "   ", "123bot", "/1.0", "(compatible)", "*"])
def test_2_2_1_an_agent_without_product_token_gets_the_star_group(agent: str) -> None:
    # Reading tested: an empty or token-less User-agent value names no crawler (the RFC's
    # product-token is one or more of [A-Za-z_-], or '*'), so it cannot catch such agents.
    text = "User-agent:\nDisallow: /\n\nUser-agent: 123\nDisallow: /\n\nUser-agent: *\nAllow: /\n"
    decision = decide(text, "/x", agent)
    assert decision.allowed, repr(agent)
    assert decision.group is not None and decision.group.agents == ("*",)


def test_2_2_1_several_user_agent_lines_make_one_group() -> None:
    text = "User-agent: a\nUser-agent: b\nUser-agent: c\nDisallow: /x\n\nUser-agent: *\nAllow: /\n"
    robots = RobotsTxt.parse(text)
    assert robots.groups[0].agents == ("a", "b", "c")
    for agent in ("a", "B", "c/1.0"):
        decision = robots.decide(agent, "/x")
        assert not decision.allowed
        assert decision.group == robots.groups[0]
    assert robots.decide("d", "/x").allowed


@pytest.mark.parametrize(
    "between",
    [
        "Crawl-delay: 5",
        "Request-rate: 1/5",
        "Visit-time: 0600-0845",
        "Sitemap: https://example.com/sitemap.xml",
        "Host: example.com",
        "Unknown-directive: value",
        "# a comment line",
        "",  # an empty line does not end a group either (RFC 9309 has no records)
        "Crawl-delay: not-a-number",
        "this line cannot be read at all",
    ],
)
def test_2_2_1_non_group_lines_do_not_split_a_group(between: str) -> None:
    text = f"User-agent: a\n{between}\nUser-agent: b\nDisallow: /x\n\nUser-agent: *\nAllow: /\n"
    robots = RobotsTxt.parse(text)
    assert robots.groups[0].agents == ("a", "b"), between
    assert not robots.decide("a", "/x").allowed, between
    assert not robots.decide("b", "/x").allowed, between
    assert robots.decide("c", "/x").allowed, between


@pytest.mark.parametrize(
    "between",
    ["Sitemap: https://example.com/s.xml", "Crawl-delay: 3", "Foo: bar", "Host: example.com", ""],
)
def test_2_2_1_non_group_lines_do_not_end_the_rules_of_a_group(between: str) -> None:
    text = f"User-agent: a\nDisallow: /x\n{between}\nDisallow: /y\n"
    assert not allowed(text, "/x", "a")
    assert not allowed(text, "/y", "a"), between


def test_2_2_1_crawl_delay_between_user_agents_belongs_to_the_whole_group() -> None:
    robots = RobotsTxt.parse("User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /x\n")
    assert robots.crawl_delay("a") == 5
    assert robots.crawl_delay("b") == 5
    assert robots.crawl_delay("c") is None


def test_2_2_1_groups_for() -> None:
    robots = RobotsTxt.parse(RFC_EXAMPLE)
    assert [g.line for g in robots.groups_for("barbot")] == [11]
    assert [g.line for g in robots.groups_for("BazBot/1.0")] == [11]
    assert [g.line for g in robots.groups_for("nobody")] == [1]
    assert RobotsTxt.parse("User-agent: a\nDisallow: /\n").groups_for("b") == ()


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "googlebot"),
        ("Googlebot/2.1", "googlebot"),
        ("Googlebot-News", "googlebot-news"),  # its own token, and the longer name
        ("Mozilla/5.0 (compatible; Googlebot-News/1.0) Googlebot/2.1", "googlebot-news"),
        ("Mozilla/5.0 (compatible; FooBot/1.0)", "*"),  # "foo" is not a token of FooBot
        ("Mozilla/5.0 (compatible; foo/1.0)", "foo"),
        ("curl/8.5.0", "*"),
        ("", "*"),
    ],
)
def test_2_2_1_agent_for_a_user_agent_header(header: str, expected: str) -> None:
    robots = RobotsTxt.parse(
        "User-agent: Googlebot\nDisallow: /g\n\nUser-agent: Googlebot-News\n"
        "Disallow: /n\n\nUser-agent: foo\nDisallow: /f\n\nUser-agent: *\n"
        "Disallow: /s\n"
    )
    assert robots.agent_for(header).lower() == expected


# --------------------------------------------------------------------------------------------
# §2.2.2 The Allow and Disallow lines
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "path", "expected", "line"),
    [
        # the longest match wins, whatever the order in the file
        ("Allow: /p\nDisallow: /page", "/page", False, 3),
        ("Disallow: /page\nAllow: /p", "/page", False, 2),
        ("Disallow: /p\nAllow: /page", "/page", True, 3),
        ("Allow: /page\nDisallow: /p", "/page", True, 2),
        ("Allow: /folder/page\nDisallow: /folder", "/folder/page.html", True, 2),
        ("Disallow: /folder\nAllow: /folder/page", "/folder/page.html", True, 3),
        ("Disallow: /folder/\nAllow: /folder/page", "/folder/other.html", False, 2),
        # Allow wins a tie, in either order
        ("Allow: /page\nDisallow: /page", "/page", True, 2),
        ("Disallow: /page\nAllow: /page", "/page", True, 3),
        ("Disallow: /page\nAllow: /page", "/page/x", True, 3),
        ("Allow: /p*e\nDisallow: /pag", "/page", True, 2),  # both four octets
        ("Disallow: /pag\nAllow: /p*e", "/page", True, 3),
        # the RFC's §5.2 example
        (
            "Allow: /example/page/\nDisallow: /example/page/disallowed.gif",
            "/example/page/",
            True,
            2,
        ),
        (
            "Allow: /example/page/\nDisallow: /example/page/disallowed.gif",
            "/example/page/disallowed.gif",
            False,
            3,
        ),
        (
            "Allow: /example/page/\nDisallow: /example/page/disallowed.gif",
            "/example/page/disallow.gif",
            True,
            2,
        ),
        # the length of a pattern is its own length, not the length of what it matched
        ("Disallow: /*.php\nAllow: /dir/in", "/dir/index.php", True, 3),
        ("Disallow: /*/index.php\nAllow: /dir/", "/dir/index.php", False, 2),
        # the deciding rule is the longest *matching* one
        ("Disallow: /a\nAllow: /b-very-long-pattern", "/a", False, 2),
        ("Allow: /\nDisallow: /admin", "/admin/", False, 3),
        ("Allow: /\nDisallow: /admin", "/public", True, 2),
    ],
)
def test_2_2_2_longest_match_allow_wins_ties(
    rules: str, path: str, expected: bool, line: int
) -> None:
    decision = decide(f"User-agent: *\n{rules}\n", path)
    assert decision.allowed is expected
    assert decision.reason == "rule"
    assert decision.rule is not None and decision.rule.line == line


@pytest.mark.parametrize(
    ("rules", "path", "expected"),
    [
        # Longest in octets, not in characters: "/ツ" is 2 characters but 4 octets (10 once
        # percent-encoded); "/*x" is 3. Either octet count beats the 3 of the Disallow.
        ("Allow: /ツ\nDisallow: /*x", "/ツx", True),
        ("Allow: /%E3%83%84\nDisallow: /*x", "/ツx", True),
        ("Disallow: /ツ\nAllow: /*x", "/ツx", False),
        # "/é" is 2 characters, 3 octets (7 percent-encoded); "/*x" is 3: a tie (Allow wins) or
        # a longer Allow, but never the Disallow.
        ("Allow: /é\nDisallow: /*x", "/éx", True),
    ],
)
def test_2_2_2_longest_is_counted_in_octets(rules: str, path: str, expected: bool) -> None:
    assert allowed(f"User-agent: *\n{rules}\n", path) is expected


@pytest.mark.parametrize(
    "rules",
    [
        "Disallow:",
        "Disallow:   ",
        "Disallow: # nothing",
        "Disallow:\nAllow:",
    ],
)
@pytest.mark.parametrize("path", ["/", "/x", "/a/b?c"])
def test_2_2_2_empty_disallow_allows_all(rules: str, path: str) -> None:
    decision = decide(f"User-agent: *\n{rules}\n", path)
    assert decision.allowed and decision.reason == "no-rule" and decision.rule is None


@pytest.mark.parametrize(
    ("rules", "path", "expected", "line"),
    [
        # the same prefix anchored and not: the '$' makes the pattern one octet longer
        ("Allow: /x\nDisallow: /x$", "/x", False, 3),
        ("Allow: /x\nDisallow: /x$", "/xy", True, 2),
        ("Disallow: /x$\nAllow: /x", "/x", False, 2),
        ("Disallow: /x\nAllow: /x$", "/x", True, 3),
        ("Disallow: /x\nAllow: /x$", "/x/", False, 2),
        # the same pattern twice: the first line is named
        ("Disallow: /x\nDisallow: /x", "/x", False, 2),
        ("Allow: /x\nAllow: /x\nDisallow: /x", "/x", True, 2),
        # a literal and a wildcard of the same length
        ("Allow: /ab\nDisallow: /a*", "/ab", True, 2),
        ("Disallow: /ab\nAllow: /a*", "/ab", True, 3),
        ("Disallow: /ab\nAllow: /a*", "/ac", True, 3),
        # trailing wildcards count in the length, though they match nothing more
        ("Disallow: /abc\nAllow: /a***", "/abc", True, 3),
        ("Disallow: /abcde\nAllow: /a***", "/abcde", False, 2),
    ],
)
def test_2_2_2_equal_and_overlapping_patterns(
    rules: str, path: str, expected: bool, line: int
) -> None:
    decision = decide(f"User-agent: *\n{rules}\n", path)
    assert decision.allowed is expected
    assert decision.rule is not None and decision.rule.line == line


def test_2_2_2_empty_allow_does_not_override_a_disallow() -> None:
    assert not allowed("User-agent: *\nAllow:\nDisallow: /\n", "/x")


@pytest.mark.parametrize(
    ("rules", "path", "expected"),
    [
        ("Disallow: /", "/", False),
        ("Disallow: /", "/anything/at/all", False),
        ("Disallow: /fish", "/fish", False),
        ("Disallow: /fish", "/fish.html", False),
        ("Disallow: /fish", "/fish/salmon.html", False),
        ("Disallow: /fish", "/fishheads", False),
        ("Disallow: /fish", "/fish.php?id=anything", False),
        ("Disallow: /fish", "/Fish.asp", True),  # paths are case-sensitive by default
        ("Disallow: /fish", "/catfish", True),
        ("Disallow: /fish", "/?id=fish", True),
        ("Disallow: /fish/", "/fish/", False),
        ("Disallow: /fish/", "/fish/?id=anything", False),
        ("Disallow: /fish/", "/fish", True),
        ("Disallow: /fish/", "/fish.html", True),
        ("Disallow: /fish/", "/Fish/Salmon.asp", True),
        ("Disallow: fish", "/fish", True),  # a pattern not starting with '/' matches no path
    ],
)
def test_2_2_2_rules_are_prefixes_of_path_and_query(rules: str, path: str, expected: bool) -> None:
    assert allowed(f"User-agent: *\n{rules}\n", path) is expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/private/x", False),
        ("https://example.com:8443/private/x?y=1", False),
        ("HTTPS://EXAMPLE.COM/private/", False),
        ("http://user:pw@example.com/private/x", False),
        ("//example.com/private/x", False),
        ("/private/x", False),
        ("https://example.com/public/x", True),
        ("https://example.com", True),  # the path of a bare origin is "/"
        ("https://example.com/public#/private/", True),  # the fragment is not part of the path
        ("https://example.com/?q=/private/", True),
        ("https://example.com/public?/private/", True),
    ],
)
def test_2_2_2_urls_are_reduced_to_path_and_query(url: str, expected: bool) -> None:
    assert allowed("User-agent: *\nDisallow: /private/\n", url) is expected


def test_2_2_2_the_query_is_part_of_what_is_matched() -> None:
    text = "User-agent: *\nDisallow: /*?\nAllow: /search?q=\nDisallow: /search?q=secret\n"
    assert allowed(text, "/page")
    assert not allowed(text, "/page?x=1")
    assert allowed(text, "/search?q=robots")
    assert not allowed(text, "/search?q=secret-thing")
    assert not allowed(text, "/search?lang=en")


# Percent-encoding: RFC 9309 §2.2.2's table, and normalisation of both sides.
@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        # the table of §2.2.2
        ("/foo/bar?baz=quz", "/foo/bar?baz=quz"),
        ("/foo/bar/ツ", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/ツ"),
        ("/foo/bar/ツ", "/foo/bar/ツ"),
        ("/foo/bar/%62%61%7A", "/foo/bar/baz"),
        ("/foo/bar/baz", "/foo/bar/%62%61%7A"),
        # hex digits are case-insensitive
        ("/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/%e3%83%84"),
        ("/foo/bar/ツ", "/foo/bar/%e3%83%84"),
        ("/a%3cb", "/a%3Cb"),
        ("/a%3Cb", "/a<b"),
        ("/a<b", "/a%3cb"),
        ("/a%2fb", "/a%2Fb"),
        # escapes of unreserved characters are the characters
        ("/%41", "/A"),
        ("/A", "/%41"),
        ("/%61bc", "/abc"),
        ("/%7E", "/~"),
        ("/%7euser", "/~user"),
        ("/~user", "/%7Euser"),
        ("/%2D%2E%5F", "/-._"),
        ("/%30%39", "/09"),
        # raw octets outside ASCII are their UTF-8 escapes
        ("/café", "/caf%C3%A9"),
        ("/caf%C3%A9", "/café"),
        ("/Ünïcödé/€", "/%C3%9Cn%C3%AFc%C3%B6d%C3%A9/%E2%82%AC"),
        ("/😀", "/%F0%9F%98%80"),
        # other characters that must be escaped
        ("/a b", "/a%20b"),
        ("/a%20b", "/a b"),
        ('/"q"', "/%22q%22"),
        ("/a%7Cb", "/a|b"),
        ("/{x}", "/%7Bx%7D"),
    ],
)
def test_2_2_2_percent_encoding_is_normalised_on_both_sides(pattern: str, path: str) -> None:
    decision = decide(f"User-agent: *\nDisallow: {pattern}\n", path)
    assert not decision.allowed, (pattern, path)
    assert decision.rule is not None and decision.rule.pattern == pattern


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        # %2F is not '/': an escaped reserved character stays distinct from the character
        ("/a%2Fb", "/a/b"),
        ("/a/b", "/a%2Fb"),
        ("/a%2fb", "/a/b"),
        ("/a%3Fb", "/a?b"),
        ("/a?b", "/a%3Fb"),
        ("/a%3Db", "/a=b"),
        ("/a%26b", "/a&b"),
        # different characters stay different
        ("/%41", "/a"),
        ("/%E3%83%84", "/%E3%83%85"),
        ("/ツ", "/テ"),
        # an escaped '%' is a literal percent sign, not the start of an escape
        ("/%2541", "/A"),
        ("/%2541", "/%41"),
        ("/%2F", "/"),
    ],
)
def test_2_2_2_percent_encoding_keeps_distinct_things_distinct(pattern: str, path: str) -> None:
    assert allowed(f"User-agent: *\nDisallow: {pattern}\n", path), (pattern, path)


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("/a%b", "/a%25b"),
        ("/a%25b", "/a%b"),
        ("/a%", "/a%25"),
        ("/a%zz", "/a%25zz"),
        ("/100%", "/100%"),
    ],
)
def test_2_2_2_a_lone_percent_sign_is_a_literal(pattern: str, path: str) -> None:
    # '%' not followed by two hex digits is the character '%' itself, i.e. %25.
    assert not allowed(f"User-agent: *\nDisallow: {pattern}\n", path), (pattern, path)


def test_2_2_2_non_utf8_octets_in_the_file_match_their_escapes() -> None:
    text = b"User-agent: *\nDisallow: /caf\xe9\n"  # Latin-1, not UTF-8
    assert not allowed(text, "/caf%E9")
    assert not allowed(text, "/caf%e9/menu")
    assert allowed(text, "/caf%C3%A9")  # the UTF-8 é is another octet sequence
    assert allowed(text, "/cafe")


# --------------------------------------------------------------------------------------------
# §2.2.3 Special characters
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        # '$' ends the pattern (the table of §2.2.3: allow: /this/path/exactly$)
        ("/this/path/exactly$", "/this/path/exactly", True),
        ("/this/path/exactly$", "/this/path/exactly/", False),
        ("/this/path/exactly$", "/this/path/exactly?x", False),
        ("/this/path/exactly$", "/this/path/exactlyx", False),
        ("/this/path/exactly$", "/this/path/exact", False),
        # '*' is zero or more of any character (the table: allow: /this/*/exactly)
        ("/this/*/exactly", "/this/path/exactly", True),
        ("/this/*/exactly", "/this/a/b/c/exactly", True),
        ("/this/*/exactly", "/this//exactly", True),
        ("/this/*/exactly", "/this/path/exactly/more", True),
        ("/this/*/exactly", "/this/exactly", False),
        ("/this/*/exactly", "/that/path/exactly", False),
        # more wildcards
        ("/*.php$", "/index.php", True),
        ("/*.php$", "/dir/index.php", True),
        ("/*.php$", "/index.php?x=1", False),
        ("/*.php$", "/index.php5", False),
        ("/*.php$", "/.php", True),
        ("/*.php", "/index.php?x=1", True),
        ("/*.php", "/x.php5", True),
        ("/*.php", "/php", False),
        ("/fish*.php", "/fish.php", True),
        ("/fish*.php", "/fishheads/catfish.php?parameters", True),
        ("/fish*.php", "/Fish.PHP", False),
        ("/fish*", "/fish", True),  # a trailing '*' changes nothing
        ("/fish*", "/fishes", True),
        ("/fish*", "/Fish", False),
        ("/fish*$", "/fishes/x", True),  # '*$' matches everything the prefix does
        ("*", "/", True),
        ("*", "/anything", True),
        ("*.gif$", "/a/b.gif", True),
        ("*.gif$", "/a/b.gif.html", False),
        ("/*", "/", True),
        ("/$", "/", True),
        ("/$", "/x", False),
        ("/$", "/?x", False),
        ("/a**b", "/ab", True),
        ("/a**b", "/a-x-b", True),
        ("/*a*b*c$", "/xaybzc", True),
        ("/*a*b*c$", "/xaybzcd", False),
        ("/*a*b*c$", "/cba", False),
        ("/*ab$", "/abab", True),  # the anchored end needs the *last* occurrence
        ("/*ab*ab$", "/ab", False),
        ("/*ab*ab$", "/abab", True),
        ("/*aa$", "/aaa", True),
        ("/a*a$", "/a", False),  # the two 'a's cannot overlap
        ("/a*a$", "/aa", True),
        ("/*/*/*/", "/a/b/c/", True),  # four slashes needed
        ("/*/*/*/", "/a/b/", False),
        ("/*/*/*/", "https://example.com////", True),  # (a bare "////" is "//" + authority)
    ],
)
def test_2_2_3_wildcards_and_end_anchor(pattern: str, path: str, matches: bool) -> None:
    assert allowed(f"User-agent: *\nDisallow: {pattern}\n", path) is not matches


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        # §2.2.3: to match '*' and '$' themselves, the file percent-encodes them
        ("/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-*.html", True),
        ("/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-%2A.html", True),
        ("/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-%2a.html", True),
        ("/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-x.html", False),
        ("/path/file-with-a-%2a.html", "https://www.example.com/path/file-with-a-*.html", True),
        ("/path/foo-%24", "https://www.example.com/path/foo-$", True),
        ("/path/foo-%24", "https://www.example.com/path/foo-%24", True),
        ("/path/foo-%24", "https://www.example.com/path/foo-", False),
        ("/path/foo-%24", "https://www.example.com/path/foo-$bar", True),  # %24 anchors nothing
        # Reading tested: a '$' that is not the last character is a literal dollar sign.
        ("/a$b", "/a$b", True),
        ("/a$b", "/a%24b", True),
        ("/a$b", "/ab", False),
        ("/a$b$", "/a$b", True),
        ("/a$b$", "/a$bc", False),
    ],
)
def test_2_2_3_percent_encoded_special_characters_are_literals(
    pattern: str, path: str, matches: bool
) -> None:
    assert allowed(f"User-agent: *\nDisallow: {pattern}\n", path) is not matches


@pytest.mark.parametrize(
    "text",
    [
        "User-agent: * # every robot\nDisallow: / # keep them out\n",
        "# comment before\nUser-agent: *\n# comment between\nDisallow: /\n# comment after\n",
        "User-agent: *#no space\nDisallow: /#\n",
        "   # indented comment\nUser-agent: *\nDisallow: /\n",
    ],
)
def test_2_2_3_hash_starts_a_comment(text: str) -> None:
    decision = decide(text, "/anything", "otherbot")
    assert not decision.allowed
    assert decision.rule is not None and decision.rule.pattern == "/"
    assert decision.group is not None and decision.group.agents == ("*",)


def test_2_2_3_hash_in_a_rule_ends_the_pattern() -> None:
    text = "User-agent: *\nDisallow: /a#b\nAllow: /#\n"
    decision = decide(text, "/a/x")
    assert not decision.allowed and decision.rule is not None and decision.rule.pattern == "/a"
    assert allowed(text, "/b")  # "Allow: /#" is "Allow: /"


def test_2_2_3_percent_encoded_hash_is_a_literal() -> None:
    text = "User-agent: *\nDisallow: /a%23b\n"
    assert not allowed(text, "/a%23b")
    assert allowed(text, "/a#b")  # in a URL '#' starts the fragment: the path is "/a"


# --------------------------------------------------------------------------------------------
# §2.2.4 Other records
# --------------------------------------------------------------------------------------------


def test_2_2_4_sitemaps_are_collected_from_anywhere_in_order() -> None:
    robots = RobotsTxt.parse(
        "Sitemap: https://example.com/a.xml\nUser-agent: x\n"
        "sitemap: https://example.com/b.xml\nDisallow: /\n"
        "SITEMAP:https://example.com/c.xml # comment\n\n"
        "User-agent: *\nSite-map: https://example.com/d.xml\n"
    )
    assert robots.sitemaps == (
        "https://example.com/a.xml",
        "https://example.com/b.xml",
        "https://example.com/c.xml",
        "https://example.com/d.xml",
    )
    assert not robots.decide("x", "/y").allowed  # the sitemaps did not end x's group


def test_rsl_license_lines_are_global_like_sitemaps() -> None:
    # RSL 1.0: License lines name the site's licence documents, anywhere in the file, each
    # with its line; like Sitemap they end no group and start none.
    robots = RobotsTxt.parse(
        "User-agent: a\nLicense: https://example.com/license.xml\nUser-agent: b\n"
        "Disallow: /\nlicense: https://rsl.example/other.xml # second\nAllow: /open\n")
    assert [(lic.url, lic.line) for lic in robots.licenses] == [
        ("https://example.com/license.xml", 2), ("https://rsl.example/other.xml", 5)]
    assert robots.groups[0].agents == ("a", "b")
    assert not robots.decide("a", "/x").allowed and robots.decide("b", "/open").allowed


def test_2_2_4_sitemap_between_user_agents_does_not_split_the_group() -> None:
    text = "User-agent: a\nSitemap: https://example.com/s.xml\nUser-agent: b\nDisallow: /\n"
    robots = RobotsTxt.parse(text)
    assert robots.groups[0].agents == ("a", "b")
    assert not robots.decide("a", "/x").allowed


def test_2_2_4_host_is_kept_first_one_wins() -> None:
    robots = RobotsTxt.parse("Host: example.com\nUser-agent: *\nHost: other.example\n")
    assert robots.host == "example.com"
    assert RobotsTxt.parse("User-agent: *\nDisallow: /\n").host is None
    assert RobotsTxt.parse("User-agent: *\nDisallow: /\n").sitemaps == ()


def test_2_2_4_unknown_records_are_ignored_with_a_warning() -> None:
    text = "User-agent: *\nNoindex: /x\nClean-param: ref /y\nDisallow: /z\n"
    assert allowed(text, "/x") and allowed(text, "/y")
    assert not allowed(text, "/z")
    lines = [line for line, message in warnings_of(text) if "unknown" in message]
    assert lines == [2, 3]


# --------------------------------------------------------------------------------------------
# §2.3 /robots.txt is always allowed
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/robots.txt",
        "https://example.com/robots.txt",
        "http://example.com:8080/robots.txt",
        "/robots.txt?refresh=1",
        "/robots.txt#top",
        "/%72obots.txt",  # the same path, with an unreserved character escaped
    ],
)
def test_2_3_robots_txt_is_always_allowed(url: str) -> None:
    text = "User-agent: *\nDisallow: /\nDisallow: /robots.txt\n"
    decision = decide(text, url)
    assert decision.allowed and decision.reason == "robots.txt", url


@pytest.mark.parametrize(
    "url",
    [
        "/robots.txt.bak",
        "/robots.txtx",
        "/robots.txt/x",
        "/ROBOTS.TXT",
        "/dir/robots.txt",
        "/robots.text",
    ],
)
def test_2_3_only_robots_txt_itself_is_exempt(url: str) -> None:
    decision = decide("User-agent: *\nDisallow: /\n", url)
    assert not decision.allowed and decision.reason == "rule", url


# --------------------------------------------------------------------------------------------
# §2.5 Limits: the first 500 KiB (512,000 bytes) are parsed
# --------------------------------------------------------------------------------------------


def test_2_5_max_bytes_is_500_kib() -> None:
    assert MAX_BYTES == 512_000 == 500 * 1024


def test_2_5_rules_after_the_limit_are_ignored() -> None:
    head = b"User-agent: *\nDisallow: /before\n"
    padding = b"#" * (MAX_BYTES - len(head) - 1) + b"\n"
    text = head + padding + b"Disallow: /after\n"
    assert len(head + padding) == MAX_BYTES
    robots = RobotsTxt.parse(text)
    assert not robots.decide("x", "/before").allowed
    assert robots.decide("x", "/after").allowed
    assert any("512,000" in w.message for w in robots.warnings)


def test_2_5_a_rule_just_inside_the_limit_is_read() -> None:
    head = b"User-agent: *\n"
    rule = b"Disallow: /inside\n"
    padding = b"#" * (MAX_BYTES - len(head) - len(rule) - 1) + b"\n"
    text = head + padding + rule
    assert len(text) == MAX_BYTES
    robots = RobotsTxt.parse(text)
    assert not robots.decide("x", "/inside").allowed
    assert robots.warnings == ()  # exactly at the limit: nothing was cut


def test_2_5_the_limit_counts_bytes_not_characters() -> None:
    # 200,000 three-byte characters are 600,000 bytes: the rule after them is past the limit.
    text = "User-agent: *\n# " + "ツ" * 200_000 + "\nDisallow: /after\n"
    robots = RobotsTxt.parse(text)
    assert robots.decide("x", "/after").allowed
    assert robots.warnings and robots.warnings[0].line == 0


def test_2_5_a_huge_file_parses() -> None:
    text = "User-agent: *\n" + "Disallow: /dir/\n" * 100_000  # 1.6 MB
    robots = RobotsTxt.parse(text)
    assert not robots.decide("x", "/dir/a").allowed
    assert sum(len(g.rules) for g in robots.groups) == (MAX_BYTES - len("User-agent: *\n")) // 16


# --------------------------------------------------------------------------------------------
# Parsing robustness: line ends, byte order mark, encodings, syntax errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_line_ends(eol: bytes) -> None:
    text = eol.join(
        [
            b"# c",
            b"User-agent: a",
            b"Disallow: /a",
            b"",
            b"User-agent: *",
            b"Disallow: /b",
            b"Allow: /b/c",
            b"",
        ]
    )
    robots = RobotsTxt.parse(text)
    assert [g.agents for g in robots.groups] == [("a",), ("*",)]
    decision = robots.decide("a", "/a/x")
    assert not decision.allowed and decision.rule is not None and decision.rule.line == 3
    decision = robots.decide("z", "/b/c")
    assert decision.allowed and decision.rule is not None and decision.rule.line == 7
    assert robots.decide("z", "/b").rule.line == 6  # type: ignore[union-attr]


def test_mixed_line_ends_count_lines_correctly() -> None:
    text = b"User-agent: *\r\n\rDisallow: /a\n\r\nDisallow: /b\r"
    robots = RobotsTxt.parse(text)
    assert robots.decide("x", "/a").rule.line == 3  # type: ignore[union-attr]
    assert robots.decide("x", "/b").rule.line == 5  # type: ignore[union-attr]


def test_no_final_newline() -> None:
    assert not allowed(b"User-agent: *\nDisallow: /x", "/x")
    assert not allowed(b"User-agent: *\r\nDisallow: /x", "/x")


@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"])
def test_byte_order_mark_full_or_partial_is_skipped(bom: bytes) -> None:
    robots = RobotsTxt.parse(bom + b"User-agent: *\nDisallow: /private\n")
    assert robots.groups and robots.groups[0].agents == ("*",)
    decision = robots.decide("x", "/private/a")
    assert not decision.allowed and decision.rule is not None and decision.rule.line == 2
    assert robots.groups[0].line == 1


def test_byte_order_mark_in_str_input() -> None:
    robots = RobotsTxt.parse("\ufeffUser-agent: *\nDisallow: /private\n")
    assert not robots.decide("x", "/private").allowed


def test_byte_order_mark_with_crlf() -> None:
    robots = RobotsTxt.parse(b"\xef\xbb\xbfUser-agent: FooBot\r\nDisallow: /\r\n")
    assert not robots.decide("foobot", "/x").allowed


def test_byte_order_mark_followed_by_a_comment_line() -> None:
    robots = RobotsTxt.parse(b"\xef\xbb\xbf# hello\nUser-agent: *\nDisallow: /\n")
    assert not robots.decide("x", "/x").allowed


def test_non_utf8_bytes_do_not_make_the_file_unreadable() -> None:
    text = b"User-agent: *\n# Gr\xfc\xdfe \xff\xfe\nDisallow: /a\xff\nDisallow: /b\n"
    robots = RobotsTxt.parse(text)
    assert not robots.decide("x", "/b").allowed
    assert not robots.decide("x", "/a%FF").allowed
    assert {w.line for w in robots.warnings if "UTF-8" in w.message} == {2, 3}


def test_nul_and_control_bytes_do_not_stop_later_lines() -> None:
    text = b"User-agent: *\nDisallow: /a\x00garbage\n\x01\x02\x03\nDisallow: /b\n"
    robots = RobotsTxt.parse(text)
    assert not robots.decide("x", "/a").allowed
    assert not robots.decide("x", "/b").allowed


@pytest.mark.parametrize(
    "line",
    [
        "Disallow: /x",
        "Disallow:/x",
        "Disallow :/x",
        "Disallow   :   /x   ",
        "Disallow\t:\t/x\t",
        "  Disallow: /x",
        "\tDisallow: /x",
        "disallow: /x",
        "DISALLOW: /x",
        "DisAllow: /x",
    ],
)
def test_whitespace_and_case_around_the_key(line: str) -> None:
    decision = decide(f"User-agent: *\n{line}\n", "/x/y")
    assert not decision.allowed, line
    assert decision.rule is not None and decision.rule.pattern == "/x" and decision.rule.line == 2


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ("User-agent:  *  ", "/x"),
        ("User-agent:\t*", "/x"),
        ("user-agent:*", "/x"),
    ],
)
def test_whitespace_in_user_agent_lines(line: str, path: str) -> None:
    assert not allowed(f"{line}\nDisallow: /\n", path)


@pytest.mark.parametrize(
    ("line", "warned"),
    [
        ("Disallow /x", True),
        ("Disallow\t/x", True),
        ("Disallow: /x", False),
    ],
)
def test_missing_colon_is_accepted_with_a_warning(line: str, warned: bool) -> None:
    text = f"User-agent *\n{line}\n"
    assert not allowed(text, "/x")
    warned_lines = {n for n, message in warnings_of(text) if "':'" in message}
    assert warned_lines == ({1, 2} if warned else {1})


@pytest.mark.parametrize("line", ["Disallow /x /y", "just some words here", "Disallow", "x"])
def test_unreadable_lines_are_ignored_with_a_warning(line: str) -> None:
    text = f"User-agent: *\n{line}\nDisallow: /z\n"
    robots = RobotsTxt.parse(text)
    assert robots.decide("a", "/x").allowed
    assert not robots.decide("a", "/z").allowed
    assert any(w.line == 2 for w in robots.warnings)


def test_a_line_starting_with_a_colon_is_ignored_with_a_warning() -> None:
    text = "User-agent: *\n: /x\nDisallow: /z\n"
    assert allowed(text, "/x") and not allowed(text, "/z")
    assert any(line == 2 for line, _ in warnings_of(text))


@pytest.mark.parametrize(
    ("key", "read_as"),
    [
        ("disalow", "disallow"),
        ("dissallow", "disallow"),
        ("dissalow", "disallow"),
        ("disallaw", "disallow"),
        ("diasllow", "disallow"),
        ("Disalow", "disallow"),
        ("useragent", "user-agent"),
        ("user agent", "user-agent"),
        ("User Agent", "user-agent"),
        ("UserAgent", "user-agent"),
    ],
)
def test_accepted_misspellings_are_warned_about(key: str, read_as: str) -> None:
    if read_as == "user-agent":
        text = f"{key}: *\nDisallow: /x\n"
        line = 1
    else:
        text = f"User-agent: *\n{key}: /x\n"
        line = 2
    assert not allowed(text, "/x"), key
    messages = [message for n, message in warnings_of(text) if n == line]
    assert len(messages) == 1 and read_as in messages[0], messages


@pytest.mark.parametrize("key", ["crawldelay", "crawl delay", "Crawl-Delay", "CRAWL-DELAY"])
def test_crawl_delay_spellings(key: str) -> None:
    assert RobotsTxt.parse(f"User-agent: *\n{key}: 4\n").crawl_delay("x") == 4


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("Disallow: /x\nUser-agent: *\nDisallow: /y\n", 1),
        ("Allow: /x\nUser-agent: *\nDisallow: /y\n", 1),
        ("# comment\n\nDisallow: /x\nUser-agent: *\nDisallow: /y\n", 3),
    ],
)
def test_rules_before_any_user_agent_are_ignored_with_a_warning(text: str, line: int) -> None:
    robots = RobotsTxt.parse(text)
    assert robots.decide("a", "/x").allowed
    assert not robots.decide("a", "/y").allowed
    assert [w.line for w in robots.warnings] == [line]
    assert "outside" in robots.warnings[0].message


def test_warnings_are_sorted_by_line() -> None:
    text = "Disallow: /a\nUser-agent: *\nfoo: bar\nDisalow: /b\nCrawl-delay: x\n"
    lines = [w.line for w in RobotsTxt.parse(text).warnings]
    assert lines == sorted(lines) and lines == [1, 3, 4, 5]


def test_valid_files_have_no_warnings() -> None:
    assert RobotsTxt.parse(RFC_EXAMPLE).warnings == ()


def test_str_and_bytes_give_the_same_answers() -> None:
    text = "User-agent: *\nDisallow: /ツ\nAllow: /ツ/ok\n"
    from_str, from_bytes = RobotsTxt.parse(text), RobotsTxt.parse(text.encode())
    for path in ("/ツ", "/ツ/ok", "/%E3%83%84/x", "/other"):
        assert from_str.decide("a", path) == from_bytes.decide("a", path)


def test_bad_semantics_is_an_error() -> None:
    with pytest.raises(ValueError, match="semantics"):
        RobotsTxt.parse("", semantics="rfc")


# --------------------------------------------------------------------------------------------
# Crawl-delay, Request-rate, Visit-time (not in RFC 9309; kept per group)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10", 10.0),
        ("0.5", 0.5),
        ("1.25", 1.25),
        ("0", 0.0),
        (" 3 ", 3.0),
        ("2.", 2.0),
        (".5", 0.5),
    ],
)
def test_crawl_delay(value: str, expected: float) -> None:
    robots = RobotsTxt.parse(f"User-agent: *\nCrawl-delay: {value}\n")
    assert robots.crawl_delay("x") == expected
    assert robots.warnings == ()


@pytest.mark.parametrize("value", ["abc", "-1", "inf", "nan", "1e400", "1,5", "ten", ""])
def test_crawl_delay_that_is_not_a_number_is_warned_about(value: str) -> None:
    robots = RobotsTxt.parse(f"User-agent: *\nCrawl-delay: {value}\n")
    assert robots.crawl_delay("x") is None
    assert [w.line for w in robots.warnings] == [2]


def test_crawl_delay_is_per_group_and_merged_groups_take_the_largest() -> None:
    robots = RobotsTxt.parse(
        "User-agent: a\nDisallow: /a\nCrawl-delay: 2\n\n"
        "User-agent: b\nDisallow: /b\nCrawl-delay: 7\n\n"
        "User-agent: a\nDisallow: /a\nCrawl-delay: 5\n\n"
        "User-agent: *\nDisallow: /s\nCrawl-delay: 1\n"
    )
    assert [g.agents for g in robots.groups] == [("a",), ("b",), ("a",), ("*",)]
    assert robots.crawl_delay("a") == 5
    assert robots.crawl_delay("b") == 7
    assert robots.crawl_delay("c") == 1
    assert RobotsTxt.parse("User-agent: *\nDisallow: /\n").crawl_delay("x") is None


def test_crawl_delay_outside_a_group_is_ignored_with_a_warning() -> None:
    robots = RobotsTxt.parse("Crawl-delay: 5\nUser-agent: *\nDisallow: /x\n")
    assert robots.crawl_delay("x") is None
    assert [w.line for w in robots.warnings] == [1]


@pytest.mark.parametrize(
    ("value", "requests", "seconds"),
    [
        ("1/5", 1, 5.0),
        ("1/5s", 1, 5.0),
        ("1/5S", 1, 5.0),
        ("3/2m", 3, 120.0),
        ("10/1h", 10, 3600.0),
        ("10 / 1 h", 10, 3600.0),
        ("1/1.5m", 1, 90.0),
        ("100/1d", 100, 86400.0),
        ("1/10m 0600-0845", 1, 600.0),  # a visit window after the rate is allowed (and not read)
    ],
)
def test_request_rate(value: str, requests: int, seconds: float) -> None:
    robots = RobotsTxt.parse(f"User-agent: *\nRequest-rate: {value}\n")
    rate = robots.request_rate("x")
    assert rate == RequestRate(requests, seconds)
    assert rate is not None and rate.interval == seconds / requests
    assert robots.warnings == ()


@pytest.mark.parametrize("value", ["1/0", "0/5", "abc", "5", "/5", "1/", "x/5", "-1/5", ""])
def test_request_rate_that_cannot_be_read_is_warned_about(value: str) -> None:
    robots = RobotsTxt.parse(f"User-agent: *\nRequest-rate: {value}\n")
    assert robots.request_rate("x") is None
    assert [w.line for w in robots.warnings] == [2]


def test_request_rate_merged_groups_take_the_slowest() -> None:
    robots = RobotsTxt.parse(
        "User-agent: a\nAllow: /\nRequest-rate: 1/5\n\n"
        "User-agent: a\nAllow: /\nRequest-rate: 1/1m\n\n"
        "User-agent: a\nAllow: /\nRequest-rate: 10/1m\n"
    )
    assert len(robots.groups) == 3
    assert robots.request_rate("a") == RequestRate(1, 60.0)
    assert robots.request_rate("b") is None


# Blank lines mean nothing in RFC 9309 and extension lines are not rules, so this common layout
# is ONE group naming both agents (see §2.2.1 above). Reading tested: when one group carries
# several values, the most conservative one applies (the largest delay, the slowest rate), as it
# does across merged groups, so that no agent named in the group is paced faster than its line.
ONE_GROUP_TWO_DELAYS = """User-agent: FastBot
Crawl-delay: 7
Request-rate: 1/1m

User-agent: SlowBot
Crawl-delay: 2
Request-rate: 1/5s
"""


def test_one_group_with_two_crawl_delays_takes_the_largest() -> None:
    robots = RobotsTxt.parse(ONE_GROUP_TWO_DELAYS)
    assert robots.groups[0].agents == ("FastBot", "SlowBot")
    assert robots.crawl_delay("slowbot") == 7, (
        "several Crawl-delay lines in one group: the last one overwrites the others instead of "
        "the largest applying (robots.py _build)"
    )
    assert robots.crawl_delay("fastbot") == 7


def test_one_group_with_two_request_rates_takes_the_slowest() -> None:
    robots = RobotsTxt.parse(ONE_GROUP_TWO_DELAYS)
    assert robots.request_rate("fastbot") == RequestRate(1, 60.0), (
        "several Request-rate lines in one group: the last one overwrites the others instead of "
        "the slowest applying (robots.py _build)"
    )


@pytest.mark.parametrize(
    ("value", "start", "end"),
    [
        ("0600-0845", time(6, 0), time(8, 45)),
        ("06:00-08:45", time(6, 0), time(8, 45)),
        ("0600 - 0845", time(6, 0), time(8, 45)),
        ("0600-0845 UTC", time(6, 0), time(8, 45)),
        ("2300-0100", time(23, 0), time(1, 0)),
        ("0000-2359", time(0, 0), time(23, 59)),
    ],
)
def test_visit_time(value: str, start: time, end: time) -> None:
    robots = RobotsTxt.parse(f"User-agent: *\nVisit-time: {value}\n")
    assert robots.visit_time("x") == VisitTime(start, end)
    assert robots.warnings == ()


@pytest.mark.parametrize(
    "value", ["2400-0100", "0660-0700", "0600-2500", "abc", "600-845", "0600", "06-08", ""]
)
def test_visit_time_that_cannot_be_read_is_warned_about(value: str) -> None:
    robots = RobotsTxt.parse(f"User-agent: *\nVisit-time: {value}\n")
    assert robots.visit_time("x") is None
    assert [w.line for w in robots.warnings] == [2]


@pytest.mark.parametrize(
    ("window", "moment", "inside"),
    [
        ("0600-0845", time(6, 0), True),  # start included
        ("0600-0845", time(7, 30), True),
        ("0600-0845", time(8, 44, 59), True),
        ("0600-0845", time(8, 45), False),  # end excluded
        ("0600-0845", time(5, 59), False),
        ("0600-0845", time(23, 0), False),
        ("2300-0100", time(23, 0), True),  # across midnight
        ("2300-0100", time(23, 59, 59), True),
        ("2300-0100", time(0, 0), True),
        ("2300-0100", time(0, 59), True),
        ("2300-0100", time(1, 0), False),
        ("2300-0100", time(12, 0), False),
        ("2300-0100", time(22, 59), False),
    ],
)
def test_visit_time_contains(window: str, moment: time, inside: bool) -> None:
    visit = RobotsTxt.parse(f"User-agent: *\nVisit-time: {window}\n").visit_time("x")
    assert visit is not None and visit.contains(moment) is inside


def test_extensions_follow_the_agent_group() -> None:
    text = (
        "User-agent: *\nDisallow: /downloads/\nRequest-rate: 1/5 # one page every 5 s\n"
        "Visit-time: 0600-0845 # UTC\n\nUser-agent: fast\nCrawl-delay: 0.1\n"
    )
    robots = RobotsTxt.parse(text)
    assert robots.request_rate("any") == RequestRate(1, 5.0)
    assert robots.visit_time("any") == VisitTime(time(6), time(8, 45))
    assert robots.crawl_delay("any") is None
    assert robots.request_rate("fast") is None and robots.visit_time("fast") is None
    assert robots.crawl_delay("fast") == 0.1
    assert not robots.decide("any", "/downloads/x").allowed
    assert robots.warnings == ()


# --------------------------------------------------------------------------------------------
# Decisions explain themselves
# --------------------------------------------------------------------------------------------

EXPLAINED = """\
# Example robots.txt
Sitemap: https://example.com/sitemap.xml

User-agent: FooBot   # line 4
User-agent: BarBot
Disallow: /private   # line 6
Allow: /private/ok
Crawl-delay: 2

# everyone else
User-agent: *
Disallow: /
Allow: /$
"""


@pytest.mark.parametrize(
    ("agent", "path", "allowed_", "directive", "line", "group_line", "reason"),
    [
        ("FooBot", "/private/x", False, "disallow", 6, 4, "rule"),
        ("barbot", "/private/ok/y", True, "allow", 7, 4, "rule"),
        ("FooBot", "/public", True, None, None, 4, "no-rule"),
        ("other", "/x", False, "disallow", 12, 11, "rule"),
        ("other", "/", True, "allow", 13, 11, "rule"),
        ("other", "/robots.txt", True, None, None, None, "robots.txt"),
    ],
)
def test_decision_names_rule_line_and_group(
    agent: str,
    path: str,
    allowed_: bool,
    directive: str | None,
    line: int | None,
    group_line: int | None,
    reason: str,
) -> None:
    robots = RobotsTxt.parse(EXPLAINED)
    decision = robots.decide(agent, path)
    assert decision.allowed is allowed_
    assert decision.reason == reason
    if directive is None:
        assert decision.rule is None
    else:
        assert decision.rule is not None
        assert (decision.rule.directive, decision.rule.line) == (directive, line)
        text_line = EXPLAINED.splitlines()[decision.rule.line - 1]
        assert decision.rule.pattern in text_line
        assert text_line.lower().startswith(directive)
    if group_line is None:
        assert decision.group is None
    else:
        assert decision.group is not None and decision.group.line == group_line
        assert decision.group in robots.groups


def test_decision_group_lists_its_agents() -> None:
    decision = RobotsTxt.parse(EXPLAINED).decide("barbot/3.0", "/private")
    assert decision.group is not None and decision.group.agents == ("FooBot", "BarBot")


def test_rule_line_numbers_count_blank_and_comment_lines_and_bom() -> None:
    text = b"\xef\xbb\xbf\n# one\n\n   \n\tUser-agent: *\n#\nDisallow: /x\n"
    decision = RobotsTxt.parse(text).decide("a", "/x")
    assert decision.rule is not None and decision.rule.line == 7
    assert decision.group is not None and decision.group.line == 5


def test_rule_keeps_the_pattern_as_written() -> None:
    decision = decide("User-agent: *\nDisallow: /%e3%83%84*.PDF$\n", "/ツ/x.PDF")
    assert not decision.allowed
    assert decision.rule is not None and decision.rule.pattern == "/%e3%83%84*.PDF$"


@pytest.mark.parametrize(
    ("agent", "path", "words"),
    [
        ("FooBot", "/private/x", ["disallowed", "Disallow", "/private", "line 6", "FooBot"]),
        ("other", "/", ["allowed", "Allow", "/$", "line 13", "*"]),
        ("FooBot", "/public", ["allowed", "no rule", "line 4"]),
        ("other", "/robots.txt", ["allowed", "/robots.txt"]),
    ],
)
def test_decision_explain(agent: str, path: str, words: list[str]) -> None:
    explanation = RobotsTxt.parse(EXPLAINED).decide(agent, path).explain()
    for word in words:
        assert word in explanation, (word, explanation)


def test_explain_without_group() -> None:
    explanation = decide("User-agent: a\nDisallow: /\n", "/x", "b").explain()
    assert explanation.startswith("allowed") and "no group" in explanation


# --------------------------------------------------------------------------------------------
# Case-insensitive paths (an option; RFC 9309 paths are case-sensitive)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("/Admin", "/admin"),
        ("/admin", "/ADMIN/x"),
        ("/admin", "/aDmIn"),
        ("/*.PDF$", "/files/report.pdf"),
        ("/*.pdf$", "/files/REPORT.PDF"),
        ("/Foo/*/Bar", "/foo/X/bar"),
        ("/%e3%83%84", "/%E3%83%84"),
        ("/ツ", "/%e3%83%84"),
        ("/%41", "/a"),
        ("/path/FILE-%2a", "/path/file-*"),
        ("/CGI-BIN/", "/cgi-bin/x?Q=1"),
    ],
)
def test_case_insensitive_paths(pattern: str, path: str) -> None:
    text = f"User-agent: *\nDisallow: {pattern}\n"
    assert not allowed(text, path, case_sensitive=False), (pattern, path)


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("/Admin", "/admin"),
        ("/admin", "/ADMIN/x"),
        ("/*.PDF$", "/files/report.pdf"),
        ("/Foo/*/Bar", "/foo/X/bar"),
    ],
)
def test_case_sensitive_paths_by_default(pattern: str, path: str) -> None:
    text = f"User-agent: *\nDisallow: {pattern}\n"
    assert allowed(text, path)
    assert allowed(text, path, case_sensitive=True)


def test_case_insensitive_still_longest_match() -> None:
    text = "User-agent: *\nDisallow: /Docs\nAllow: /docs/PUBLIC\n"
    assert allowed(text, "/DOCS/public/x", case_sensitive=False)
    assert not allowed(text, "/docs/private", case_sensitive=False)
    decision = decide(text, "/DOCS/public/x", case_sensitive=False)
    assert decision.rule is not None and decision.rule.pattern == "/docs/PUBLIC"


def test_case_insensitive_does_not_change_agent_matching() -> None:
    text = "User-agent: FooBot\nDisallow: /\n"
    assert not allowed(text, "/x", "FOOBOT", case_sensitive=False)
    assert not allowed(text, "/x", "foobot", case_sensitive=True)
