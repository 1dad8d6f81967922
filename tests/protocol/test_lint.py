"""robotsgate.protocol.lint: each kind of finding with its line, and shadowing checked against
the engine's own decisions (a rule called shadowed must never decide anything)."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robotsgate.protocol import MAX_BYTES, RobotsTxt
from robotsgate.protocol.lint import KINDS, Finding, lint


def kinds(findings: tuple[Finding, ...]) -> list[tuple[int, str]]:
    return [(f.line, f.kind) for f in findings]


def test_a_clean_file_has_no_findings() -> None:
    body = b"User-agent: *\nDisallow: /private\nAllow: /private/open\nCrawl-delay: 2\n\n" \
           b"Sitemap: https://example.com/sitemap.xml\n"
    assert lint(body) == ()


def test_the_parsers_warnings_become_findings_with_their_lines() -> None:
    body = (b"\xef\xbb\xbfDisallow: /before-any-group\n"  # 1: BOM, rule outside any group
            b"User-agent: *\n"  # 2
            b"Dissallow: /typo\n"  # 3: accepted misspelling
            b"Noindex: /x\n"  # 4: unknown directive
            b"Disallow: /caf\xe9\n"  # 5: Latin-1, not UTF-8
            b"Crawl-delay: soon\n")  # 6: a value that is not a number
    assert kinds(lint(body)) == [(1, "bom"), (1, "outside-group"), (3, "misspelling"),
                                 (4, "unknown-directive"), (5, "encoding"), (6, "syntax")]


def test_a_body_over_500_kib_is_a_finding_of_the_file() -> None:
    body = b"User-agent: *\nDisallow: /x\n" + b"# padding\n" * (MAX_BYTES // 10)
    assert (0, "size") in kinds(lint(body))
    # A body read only up to the limit, whose server announced more.
    assert (0, "size") in kinds(lint(body[:MAX_BYTES], declared_size=len(body)))
    assert (0, "size") not in kinds(lint(body[:1000], declared_size=1000))


def test_patterns_that_can_never_match() -> None:
    body = (b"User-agent: *\n"
            b"Disallow: private\n"  # 2: no leading '/'
            b"Disallow: https://example.com/secret\n"  # 3: a full URL
            b"Allow:\n"  # 4: an empty Allow does nothing
            b"Disallow: *.pdf$\n"  # 5: fine: a leading '*' matches
            b"Disallow:\n")  # 6: fine: "nothing disallowed"
    findings = lint(body)
    assert kinds(findings) == [(2, "never-matches"), (3, "never-matches"), (4, "no-effect")]
    assert "/secret" in findings[1].message


def test_wildcards_are_plain_characters_in_the_1994_reading() -> None:
    findings = lint(b"User-agent: *\nDisallow: /*.pdf\n", semantics="classic")
    assert kinds(findings) == [(2, "never-matches")]
    assert lint(b"User-agent: *\nDisallow: /*.pdf\n") == ()


def test_a_longer_starred_rule_shadows_the_rule_it_covers() -> None:
    body = b"User-agent: *\nDisallow: /a\nAllow: /a*\n"
    findings = lint(body)
    assert kinds(findings) == [(2, "shadowed")]
    assert "Allow: /a* (line 3)" in findings[0].message
    robots = RobotsTxt.parse(body)
    assert robots.allowed("x", "/a") and robots.allowed("x", "/abc")


def test_equal_patterns_allow_wins_and_later_duplicates_are_redundant() -> None:
    body = b"User-agent: *\nDisallow: /x\nAllow: /x\nDisallow: /y\nDisallow: /y\n"
    assert kinds(lint(body)) == [(2, "shadowed"), (5, "redundant")]


def test_shadowing_crosses_groups_merged_for_one_agent() -> None:
    body = b"User-agent: a\nDisallow: /p\n\nUser-agent: b\nAllow: /p\n\nUser-agent: a\nAllow: /p\n"
    assert kinds(lint(body)) == [(2, "shadowed")]


def test_first_match_in_the_1994_reading() -> None:
    body = b"User-agent: *\nDisallow: /\nAllow: /public\nDisallow: /x/y\n"
    assert kinds(lint(body, semantics="classic")) == [(3, "shadowed"), (4, "redundant")]
    # Under RFC 9309 the longer rules win: nothing is shadowed.
    assert lint(body) == ()


def test_sitemaps_must_be_full_urls() -> None:
    assert kinds(lint(b"Sitemap: /sitemap.xml\nSitemap: https://e.com/s.xml\n")) == [
        (1, "sitemap")]


def test_licenses_must_be_full_urls() -> None:
    assert kinds(lint(b"License: /license.xml\nLicense: https://rsl.example/l.xml\n"
                      b"Licence: https://e.com/l.xml\n")) == [(1, "license"), (3, "misspelling")]


def test_every_kind_is_listed() -> None:
    body = (b"\xef\xbb\xbfAllow: /x\nUser-agent: 1\nUser-agent: *\nDisalow: /\nFoo: x\n"
            b"Disallow: /\xff\nDisallow: /a\nAllow: /a*\nAllow: /a*\nAllow:\nDisallow: a\n"
            b"Crawl-delay: x\nSitemap: s\nContent-Usage: TRAIN-AI=n\nContent-Usage: foo=y\n"
            b"License: license.xml\n" + b"#" * MAX_BYTES)
    assert {f.kind for f in lint(body)} == set(KINDS)


# -- soundness: a rule said to never decide never decides ---------------------------------------

PATHS = ["/" + "".join(p) for n in range(5) for p in itertools.product("ab/$", repeat=n)]
patterns = st.text(alphabet="ab/*$", min_size=1, max_size=5).map(lambda s: "/" + s)
rules = st.lists(st.tuples(st.sampled_from(["Allow", "Disallow"]), patterns), min_size=1,
                 max_size=6)


@pytest.mark.parametrize("semantics", ["rfc9309", "google", "classic"])
@settings(max_examples=300, deadline=None)
@given(rules=rules)
def test_a_shadowed_or_redundant_rule_never_decides(semantics: str,
                                                     rules: list[tuple[str, str]]) -> None:
    body = "User-agent: *\n" + "".join(f"{d}: {p}\n" for d, p in rules)
    never = {f.line for f in lint(body.encode(), semantics=semantics)
             if f.kind in ("shadowed", "redundant")}
    robots = RobotsTxt.parse(body, semantics=semantics)
    for path in PATHS:
        decision = robots.decide("bot", path)
        assert decision.rule is None or decision.rule.line not in never, (path, decision)


def test_the_soundness_check_can_see_a_wrong_claim() -> None:
    # The property above is only worth something if a rule that does decide would be caught.
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /a\nAllow: /ab\n")
    assert {robots.decide("bot", p).rule.line for p in PATHS  # type: ignore[union-attr]
            if robots.decide("bot", p).rule} == {2, 3}


def test_licence_documents_past_those_read_are_one_finding_at_the_first() -> None:
    body = b"User-agent: *\nAllow: /\n" + b"".join(
        f"License: https://third.example/{n}.xml\n".encode() for n in range(20))
    found = [f for f in lint(body) if f.kind == "license"]
    assert [(f.line, f.kind) for f in found] == [(19, "license")]
    assert "20 licence documents named; only the first 16 are read" in found[0].message
    assert "the 3 other document(s)" in found[0].message
    assert "license-unavailable" in found[0].message
    # Naming one document many times is naming one.
    assert lint(b"User-agent: *\nAllow: /\n" + b"License: https://a.example/l.xml\n" * 40) == ()
