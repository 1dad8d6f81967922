"""Properties of the robots.txt engine: it never raises, it is deterministic, it parses once and
decides many times with a bounded amount of work, its matcher agrees with a reference, and the
package stays pure (standard library only).
"""

import ast
import gc
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.reference import reference_decision
from support.strategies import agents, any_text, robots_bytes, robots_text, semantics_, urls

import robotsgate.protocol
from robotsgate.protocol import SEMANTICS, RobotsTxt
from robotsgate.protocol import robots as robots_module
from robotsgate.protocol.urls import normalize

PROTOCOL_DIR = Path(robotsgate.protocol.__file__).parent

FIXED = (
    "User-agent: FooBot\nDisallow: /private\nAllow: /private/ok$\nDisallow: /*.php$\n"
    "Crawl-delay: 2\n\nUser-agent: *\nDisallow: /tmp /spool\nDisallow: /a*a*a*a*b\n"
    "Allow: /ツ\nRequest-rate: 1/5\nVisit-time: 2300-0100\n"
)

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def exercise(robots: RobotsTxt, agent: str, url: str) -> None:
    decision = robots.decide(agent, url)
    assert isinstance(decision.allowed, bool)
    assert decision.reason in ("rule", "no-rule", "no-group", "robots.txt")
    assert (decision.rule is None) == (decision.reason != "rule")
    if decision.rule is not None:
        assert decision.allowed == (decision.rule.directive == "allow")
        assert decision.group is not None and decision.rule in decision.group.rules
    assert isinstance(decision.explain(), str)
    robots.allowed(agent, url)
    robots.groups_for(agent)
    robots.crawl_delay(agent)
    robots.request_rate(agent)
    robots.visit_time(agent)
    assert isinstance(robots.agent_for(agent), str)


# --------------------------------------------------------------------------------------------
# Never raises
# --------------------------------------------------------------------------------------------


@FUZZ
@given(robots_bytes, semantics_, st.booleans())
def test_parse_never_raises_on_bytes(content: bytes, semantics: str, case_sensitive: bool) -> None:
    robots = RobotsTxt.parse(content, semantics=semantics, case_sensitive=case_sensitive)
    assert all(w.line >= 0 and isinstance(w.message, str) for w in robots.warnings)
    exercise(robots, "FooBot", "/private/x")


@FUZZ
@given(st.one_of(any_text, robots_text), semantics_, st.booleans())
def test_parse_never_raises_on_str(content: str, semantics: str, case_sensitive: bool) -> None:
    robots = RobotsTxt.parse(content, semantics=semantics, case_sensitive=case_sensitive)
    exercise(robots, "FooBot", "/")


@FUZZ
@given(robots_text, semantics_, st.booleans(), agents, urls)
def test_decide_never_raises(
    content: str, semantics: str, case_sensitive: bool, agent: str, url: str
) -> None:
    robots = RobotsTxt.parse(content, semantics=semantics, case_sensitive=case_sensitive)
    exercise(robots, agent, url)


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize("case_sensitive", [True, False])
@FUZZ
@given(agent=agents, url=urls)
def test_decide_never_raises_on_a_real_file(
    semantics: str, case_sensitive: bool, agent: str, url: str
) -> None:
    robots = RobotsTxt.parse(FIXED, semantics=semantics, case_sensitive=case_sensitive)
    exercise(robots, agent, url)


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize(
    "url",
    [
        "",
        "/",
        "//",
        "///",
        "?",
        "#",
        "%",
        "%%",
        "http://",
        "https://",
        "http:///x",
        "\ud800",
        "/\udfff",
        "/\x00",
        "\r\n",
        "*",
        "$",
        "http://h?x#y",
        "http://h#/a",
        ":",
        "/" + "%" * 1000,
        "/" + "\ud800" * 1000,
    ],
)
def test_decide_edge_urls(semantics: str, url: str) -> None:
    exercise(RobotsTxt.parse(FIXED, semantics=semantics), "FooBot", url)


# --------------------------------------------------------------------------------------------
# Deterministic, and decisions do not depend on each other
# --------------------------------------------------------------------------------------------


@FUZZ
@given(robots_text, semantics_, st.lists(st.tuples(agents, urls), min_size=1, max_size=10))
def test_decide_is_deterministic(
    content: str, semantics: str, queries: list[tuple[str, str]]
) -> None:
    first = RobotsTxt.parse(content, semantics=semantics)
    forwards = [first.decide(agent, url) for agent, url in queries]
    assert forwards == [first.decide(agent, url) for agent, url in queries]
    # A second parse, asked in the opposite order, gives the same answers: no decision depends
    # on which decisions came before it (compiled policies are a cache, not state).
    second = RobotsTxt.parse(content, semantics=semantics)
    backwards = [second.decide(agent, url) for agent, url in reversed(queries)]
    assert forwards == backwards[::-1]
    assert first.warnings == second.warnings and first.groups == second.groups


@FUZZ
@given(agents, st.text(st.sampled_from("ab/?=&%ツ*$.-_~"), max_size=30))
def test_full_url_and_path_decide_alike(agent: str, tail: str) -> None:
    path = "/" + tail
    # "//host/path" alone is a network-path reference, as in Google's parser: not a path.
    assume(not path.startswith("//"))
    for semantics in SEMANTICS:
        robots = RobotsTxt.parse(FIXED, semantics=semantics)
        assert robots.decide(agent, "https://example.com:8080" + path) == robots.decide(agent, path)


# --------------------------------------------------------------------------------------------
# The matcher agrees with a reference
# --------------------------------------------------------------------------------------------


patterns = st.text(st.sampled_from("ab/*"), max_size=8).flatmap(
    lambda body: st.sampled_from(["/" + body, "/" + body + "$", body, body + "$"])
)
paths = st.text(st.sampled_from("ab/"), max_size=12).map(lambda t: "/" + t)


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), patterns), min_size=1, max_size=6),
    st.lists(paths, min_size=1, max_size=5),
)
def test_longest_match_agrees_with_reference(
    rules: list[tuple[bool, str]], queries: list[str]
) -> None:
    assert_agrees_with_reference(rules, queries)


def assert_agrees_with_reference(rules: list[tuple[bool, str]], queries: list[str]) -> None:
    text = "User-agent: *\n" + "".join(
        f"{'Allow' if allow else 'Disallow'}: {pattern}\n" for allow, pattern in rules
    )
    robots = RobotsTxt.parse(text)
    for path in queries:
        # a full URL: a bare "//a" would be read as a network-path reference ("//" + authority)
        decision = robots.decide("bot", "https://example.com" + path)
        expected = reference_decision(rules, path)
        if expected is None:
            assert decision.allowed and decision.rule is None, (rules, path)
        else:
            assert decision.allowed is expected[0], (rules, path)
            assert decision.rule is not None and decision.rule.line == expected[1] + 2


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), patterns), min_size=5, max_size=24),
    st.lists(paths, min_size=1, max_size=5),
)
def test_many_rules_agree_with_reference(rules: list[tuple[bool, str]], queries: list[str]) -> None:
    # Past the few rules matched one by one: literals in one trie, wildcards picked by their
    # first segment. Trailing '*'s are the trap: "/a**" outranks the longer literal "/ab" and
    # matches wherever "/a" does.
    assert_agrees_with_reference([*rules, (False, "/a**"), (True, "/ab")],
                                 [*queries, "/ab", "/abab"])


def test_literals_nested_too_deep_for_one_regex_still_find_the_longest() -> None:
    # /a, /aa, ... : each literal ends inside the next, one nested group per rule in a trie; far
    # past what re's compiler nests, so the matcher must fall back and stay right.
    text = "User-agent: *\n" + "".join(
        f"{'Allow' if n % 2 else 'Disallow'}: /{'a' * n}\n" for n in range(1, 701))
    robots = RobotsTxt.parse(text)
    assert not robots.warnings
    for n in (1, 2, 57, 700, 900):
        decision = robots.decide("bot", "/" + "a" * n + "b")
        assert decision.rule is not None and decision.rule.line == 1 + min(n, 700)
        assert decision.allowed is (min(n, 700) % 2 == 1)
    assert robots.decide("bot", "/b").rule is None


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.text(st.sampled_from("ab/*$"), max_size=6)),
        min_size=1,
        max_size=6,
    ),
    st.lists(st.text(st.sampled_from("ab/*$"), max_size=10), min_size=1, max_size=5),
)
def test_classic_first_prefix_agrees_with_reference(
    rules: list[tuple[bool, str]], queries: list[str]
) -> None:
    rules = [(allow, "/" + pattern) for allow, pattern in rules]
    text = "User-agent: *\n" + "".join(
        f"{'Allow' if allow else 'Disallow'}: {pattern}\n" for allow, pattern in rules
    )
    robots = RobotsTxt.parse(text, semantics="classic")
    for tail in queries:
        path = "/" + tail
        decision = robots.decide("bot", "https://example.com" + path)
        first = next((i for i, (_, p) in enumerate(rules) if path.startswith(p)), None)
        if first is None:
            assert decision.allowed and decision.rule is None, (rules, path)
        else:
            assert decision.allowed is rules[first][0], (rules, path)
            assert decision.rule is not None and decision.rule.line == first + 2


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/" + "a" * 4999, True),  # no 'b' anywhere: no match
        ("/" + "a" * 4998 + "b", False),
        ("/" + "a" * 2500 + "b" + "a" * 2498, False),  # the 'b' may be followed by anything
        ("/" + "a" * 7 + "b" + "a" * 4991, True),  # only 7 'a's before the only 'b'
        ("/" + "a" * 8 + "b" + "c" * 4990, False),
        ("/" + "ab" * 2499 + "a", False),
        ("/" + "b" * 4999, True),
    ],
)
def test_pathological_wildcards_on_a_long_path(path: str, expected: bool) -> None:
    assert len(path) == 5000
    text = "User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*b\n"
    for semantics in ("rfc9309", "google"):
        decision = RobotsTxt.parse(text, semantics=semantics).decide("bot", path)
        assert decision.allowed is expected, semantics
    anchored = RobotsTxt.parse("User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*b$\n")
    assert anchored.decide("bot", path).allowed is not path.endswith("b") or expected


def test_pathological_wildcards_cost_is_linear_in_calls() -> None:
    # A backtracking matcher would make a number of calls that grows with the path; a
    # linear matcher makes a few per wildcard segment, whatever the length of the path.
    robots = RobotsTxt.parse("User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*b\n")
    robots.decide("bot", "/")
    short = count_calls(lambda: robots.decide("bot", "/" + "a" * 50))
    long = count_calls(lambda: robots.decide("bot", "/" + "a" * 50_000))
    assert long == short


# --------------------------------------------------------------------------------------------
# Normalisation properties
# --------------------------------------------------------------------------------------------

UNRESERVED_AND_MORE = "abcXYZ019-._~/ツé"


def escape_some(path: str, which: list[bool]) -> str:
    out = []
    for char, escape in zip(path, which + [False] * len(path), strict=False):
        if escape and char != "/":
            out.append(
                "".join(f"%{b:02x}" if i % 2 else f"%{b:02X}" for i, b in enumerate(char.encode()))
            )
        else:
            out.append(char)
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.sampled_from(UNRESERVED_AND_MORE), max_size=12),
    st.text(st.sampled_from(UNRESERVED_AND_MORE), max_size=12),
    st.lists(st.booleans(), max_size=12),
    st.lists(st.booleans(), max_size=12),
)
def test_escaping_unreserved_or_non_ascii_changes_nothing(
    rule: str, path: str, rule_escapes: list[bool], path_escapes: list[bool]
) -> None:
    plain = RobotsTxt.parse(f"User-agent: *\nDisallow: /{rule}\n")
    escaped = RobotsTxt.parse(f"User-agent: *\nDisallow: /{escape_some(rule, rule_escapes)}\n")
    for robots in (plain, escaped):
        for url in ("/" + path, "/" + escape_some(path, path_escapes)):
            assert robots.decide("bot", url).allowed == plain.decide("bot", "/" + path).allowed


UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
KEPT = UNRESERVED | set(":/?#[]@!&'()+,;=")


def test_every_escape_in_every_case_has_one_normal_form() -> None:
    for byte in range(256):
        high, low = f"{byte:02X}"
        expected = chr(byte) if chr(byte) in UNRESERVED else f"%{high}{low}"
        for form in (high + low, high.lower() + low, high + low.lower(), (high + low).lower()):
            for before, after in (("/a", "b"), ("/", ""), ("/%E3%83", "%AD"), ("/ツ", "é")):
                written = before + "%" + form + after
                assert normalize(written) == normalize(before) + expected + normalize(after), \
                    written


def test_every_character_has_its_normal_form() -> None:
    for char in [chr(code) for code in range(128)] + ["é", "ツ", "\U0001F916", "\ud800"]:
        if char in KEPT:
            expected = char
        else:  # '%' alone, '*', '$', controls, raw non-ASCII: escaped as UTF-8
            expected = "".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass"))
        assert normalize("/x" + char + "y") == "/x" + expected + "y", repr(char)
        assert normalize("/x" + char * 3) == "/x" + expected * 3, repr(char)


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.sampled_from("abcXYZ/*$"), max_size=10),
    st.text(st.sampled_from("abXY/"), max_size=12),
)
def test_case_insensitive_paths_ignore_case(rule: str, path: str) -> None:
    robots = RobotsTxt.parse(f"User-agent: *\nDisallow: /{rule}\n", case_sensitive=False)
    assert robots.decide("bot", "/" + path) == robots.decide("bot", "/" + path.swapcase())
    assert robots.decide("bot", "/" + path.lower()) == robots.decide("bot", "/" + path.upper())


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from("abcXYZ_-"), min_size=1, max_size=10), st.sampled_from(SEMANTICS))
def test_agent_case_never_matters(agent: str, semantics: str) -> None:
    robots = RobotsTxt.parse(
        f"User-agent: {agent}\nDisallow: /\n\nUser-agent: *\nAllow: /\n", semantics=semantics
    )
    for variant in (agent.lower(), agent.upper(), agent.swapcase()):
        assert not robots.decide(variant, "/x").allowed, (agent, variant)


# --------------------------------------------------------------------------------------------
# Parse once, decide many
# --------------------------------------------------------------------------------------------


def realistic_robots(rules: int = 200, padding: int = 0) -> str:
    """A robots.txt like those of large sites: several groups, mostly literal rules, some
    wildcards; `padding` comment and sitemap lines that a decision must never look at."""
    lines = ["# robots.txt", "Sitemap: https://example.com/sitemap.xml", ""]
    lines += [
        "User-agent: Googlebot",
        "User-agent: Bingbot",
        "Disallow: /search",
        "Allow: /search/about",
        "Disallow: /*?sessionid=",
        "",
    ]
    lines += ["User-agent: BadBot", "Disallow: /", ""]
    lines += ["User-agent: *", "Crawl-delay: 1"]
    for i in range(rules):
        if i % 10 == 0:
            lines.append(f"Disallow: /*/section-{i}/*.php$")
        elif i % 7 == 0:
            lines.append(f"Allow: /wiki/Special:Page{i}/public")
        else:
            lines.append(f"Disallow: /wiki/Special:Page{i}")
    for i in range(padding):
        lines.append(f"# padding {i}" if i % 2 else f"Sitemap: https://example.com/s{i}.xml")
    return "\n".join(lines) + "\n"


QUERIES = [
    (agent, url)
    for agent in ("FooBot", "Googlebot", "badbot")
    for url in (
        "https://example.com/",
        "https://example.com/wiki/Special:Page11",
        "https://example.com/wiki/Special:Page14/public/x",
        "https://example.com/wiki/Main_Page",
        "https://example.com/x/section-30/index.php",
        "https://example.com/x/section-30/index.php?x=1",
        "https://example.com/search?q=robots&sessionid=1",
        "https://example.com/wiki/%E3%83%84?action=edit",
    )
]


def count_calls(action: Callable[[], object]) -> int:
    """Python and C function calls made by `action` (an operation count; no clock involved)."""
    calls = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(previous)
    return calls


def decide_many(robots: RobotsTxt, times: int = 10_000) -> Callable[[], None]:
    def run() -> None:
        for i in range(times):
            agent, url = QUERIES[i % len(QUERIES)]
            robots.decide(agent, url)

    return run


def test_decide_needs_no_parsing_after_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    robots = RobotsTxt.parse(realistic_robots())

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("decide() went back to the text")

    monkeypatch.setattr(robots_module, "tokenize", forbidden)
    monkeypatch.setattr(robots_module, "_build", forbidden)
    # First decisions for each agent (compiling its policy) included.
    for agent, url in QUERIES:
        robots.decide(agent, url)
    assert not robots.decide("FooBot", "/wiki/Special:Page11").allowed


def test_decide_works_after_the_text_is_gone() -> None:
    content = bytes(bytearray(realistic_robots().encode()))
    size = len(content)
    robots = RobotsTxt.parse(content)
    del content
    gc.collect()
    # Nothing reachable from the parsed object is (a copy of) the whole text.
    for value in reachable(robots):
        if isinstance(value, bytes | str):
            assert len(value) < size // 2, f"a {type(value).__name__} of {len(value)} kept"
    assert not robots.decide("FooBot", "/wiki/Special:Page11").allowed
    assert robots.decide("FooBot", "/wiki/Special:Page14/public/x").allowed
    assert not robots.decide("Googlebot", "/search").allowed


def reachable(root: object) -> Iterator[object]:
    seen: set[int] = set()
    stack = [root]
    while stack:
        value = stack.pop()
        if id(value) in seen or isinstance(value, type):
            continue
        seen.add(id(value))
        yield value
        stack.extend(gc.get_referents(value))
        for name in getattr(type(value), "__slots__", ()):
            if hasattr(value, name):
                stack.append(getattr(value, name))


def test_ten_thousand_decisions_take_a_bounded_number_of_operations() -> None:
    robots = RobotsTxt.parse(realistic_robots(200))
    assert sum(len(g.rules) for g in robots.groups) == 204
    decide_many(robots, len(QUERIES))()  # compile the policies first
    calls = count_calls(decide_many(robots))
    # 200 rules, 20 of them with wildcards: the work per decision is a constant plus a little
    # per wildcard rule. Reading the text again (a few calls per line) or trying every rule in
    # Python would need several times this.
    assert calls <= 10_000 * 250, calls / 10_000


def test_work_per_decision_does_not_grow_with_the_file() -> None:
    small = RobotsTxt.parse(realistic_robots(200))
    padded = RobotsTxt.parse(realistic_robots(200, padding=20_000))
    for robots in (small, padded):
        decide_many(robots, len(QUERIES))()
    assert count_calls(decide_many(small, 1000)) == count_calls(decide_many(padded, 1000))


def test_work_per_decision_does_not_grow_with_literal_rules() -> None:
    def literal_only(n: int) -> RobotsTxt:
        return RobotsTxt.parse(
            "User-agent: *\n"
            + "".join(f"{'Allow' if i % 5 == 0 else 'Disallow'}: /dir{i}/page\n" for i in range(n))
        )

    few, many = literal_only(20), literal_only(5000)
    run_few = decide_many(few, 1000)
    run_many = decide_many(many, 1000)
    run_few()
    run_many()
    assert count_calls(run_many) == count_calls(run_few)


def test_work_per_decision_does_not_grow_with_wildcard_rules_elsewhere() -> None:
    # Wildcard rules under other directories, whose every segment is in the path: only the
    # globs whose first segment starts the path may be tried. (Both files are past what is
    # scanned rule by rule: the index's work is compared.)
    def under_directories(n: int) -> RobotsTxt:
        return RobotsTxt.parse("User-agent: *\n" + "".join(
            f"Disallow: /d{i}/*sessionid=\nDisallow: /d{i}/*.pdf$\n" for i in range(n)))

    few, many = under_directories(60), under_directories(2000)
    path = "/d/x/" + "y" * 200 + "/file.pdf?sessionid=1&d1/"
    assert few.decide("bot", path).allowed and many.decide("bot", path).allowed
    assert not many.decide("bot", "/d1999/x/file.pdf").allowed
    assert many.decide("bot", "/d1999/x/file.pdf").rule.line == 4001  # type: ignore[union-attr]
    assert count_calls(lambda: many.decide("bot", path)) == \
        count_calls(lambda: few.decide("bot", path))


@pytest.mark.parametrize("semantics", ["rfc9309", "google", "classic"])
def test_many_literal_rules_still_decide_right(semantics: str) -> None:
    # Thousands of literal rules (a file near the 500 KiB limit has tens of thousands): the
    # first, a middle and the last one still decide, and a path none of them names is allowed.
    text = "User-agent: *\n" + "".join(
        f"Disallow: /d{i}/p\nAllow: /d{i}/p/open\nDisallow: /x{i}$\n" for i in range(5000)
    )
    robots = RobotsTxt.parse(text, semantics=semantics)
    for i in (0, 2500, 4999):
        decision = robots.decide("bot", f"/d{i}/p/x")
        assert not decision.allowed and decision.rule is not None
        assert decision.rule.line == 2 + 3 * i
        if semantics != "classic":  # the 1994 reading: the first prefix, the Disallow, wins
            opened = robots.decide("bot", f"/d{i}/p/open/x")
            assert opened.allowed and opened.rule is not None and opened.rule.line == 3 + 3 * i
            assert not robots.decide("bot", f"/x{i}").allowed
            assert robots.decide("bot", f"/x{i}/more").allowed
    assert robots.decide("bot", "/d5000/p").allowed
    assert robots.decide("bot", "/d/p").allowed


def test_the_compiled_policy_is_reused() -> None:
    robots = RobotsTxt.parse(realistic_robots(200))
    first = count_calls(lambda: robots.decide("FooBot", "/wiki/Main_Page"))
    again = count_calls(lambda: robots.decide("FooBot", "/wiki/Main_Page"))
    assert again * 3 < first  # the first decision compiled the policy, the second did not


# --------------------------------------------------------------------------------------------
# Purity: robotsgate.protocol imports the standard library only
# --------------------------------------------------------------------------------------------

FORBIDDEN = {
    "socket",
    "asyncio",
    "time",
    "urllib.request",
    "http.client",
    "ssl",
    "subprocess",
    "os",
    "threading",
    "multiprocessing",
    "selectors",
    "urllib3",
    "requests",
    "httpx",
}


def imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) for every import in `source`; from-imports also as module.name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.append((node.lineno, "robotsgate.protocol"))  # relative: inside the package
            else:
                assert node.module is not None
                found.append((node.lineno, node.module))
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
        ):
            found.append((node.lineno, "__import__"))
    return found


def test_import_checker_sees_every_kind_of_import() -> None:
    sample = (
        "import os\nimport urllib.request as r\nfrom http import client\nfrom . import x\n"
        "def f():\n    import socket\n    return __import__('ssl')\n"
    )
    assert [m for _, m in imported_modules(sample)] == [
        "os",
        "urllib.request",
        "http",
        "http.client",
        "robotsgate.protocol",
        "socket",
        "__import__",
    ]


PROTOCOL_FILES = sorted(PROTOCOL_DIR.glob("*.py"))


def test_protocol_package_has_modules() -> None:
    names = {path.name for path in PROTOCOL_FILES}
    assert {"__init__.py", "parse.py", "robots.py", "match.py", "urls.py"} <= names


# The one package from outside the standard library: AI usage preferences are RFC 9651
# Structured Fields, whose grammar is not worth writing again; http_sf parses bytes and does no
# I/O (the test below holds it to that too), and only usage.py may import it.
ALLOWED_OUTSIDE = {"http_sf": {"usage.py"}}


@pytest.mark.parametrize("path", PROTOCOL_FILES, ids=lambda p: p.name)
def test_protocol_imports_only_the_standard_library(path: Path) -> None:
    for line, module in imported_modules(path.read_text(encoding="utf-8")):
        assert module != "__import__", f"{path.name}:{line}: dynamic import"
        if module == "robotsgate.protocol" or module.startswith("robotsgate.protocol."):
            continue
        top = module.split(".")[0]
        if path.name in ALLOWED_OUTSIDE.get(top, ()):
            continue
        assert top in sys.stdlib_module_names, f"{path.name}:{line}: imports {module}"


def test_the_one_outside_package_does_no_io() -> None:
    # What the protocol package is held to, its one outside import is held to as well.
    import http_sf

    package = Path(http_sf.__file__).parent
    # __main__.py is its command line (python -m http_sf), which the package never imports.
    for path in sorted(p for p in package.glob("*.py") if p.name != "__main__.py"):
        for line, module in imported_modules(path.read_text(encoding="utf-8")):
            if module == "robotsgate.protocol":
                continue  # what imported_modules calls a relative import: here, within http_sf
            top = module.split(".")[0]
            assert top in sys.stdlib_module_names | {"http_sf", "typing_extensions"}, (
                f"http_sf/{path.name}:{line}: imports {module}")
            for banned in FORBIDDEN:
                assert module != banned and not module.startswith(banned + "."), (
                    f"http_sf/{path.name}:{line}: imports {module}")


@pytest.mark.parametrize("path", PROTOCOL_FILES, ids=lambda p: p.name)
def test_protocol_does_no_io_and_reads_no_clock(path: Path) -> None:
    for line, module in imported_modules(path.read_text(encoding="utf-8")):
        for banned in FORBIDDEN:
            assert module != banned and not module.startswith(banned + "."), (
                f"{path.name}:{line}: imports {module}"
            )


@pytest.mark.parametrize("path", PROTOCOL_FILES, ids=lambda p: p.name)
def test_protocol_opens_no_files(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in {"open", "exec", "eval", "input"}, (
                f"{path.name}:{node.lineno}: calls {node.func.id}()"
            )
