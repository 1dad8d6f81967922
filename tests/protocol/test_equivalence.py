"""Two spellings of one path get one decision, through both views the gate decides with.

Gate.check decides a request's path as written (RobotsTxt.decide, in match form) and as a
lenient server resolves it (urls.server_equivalent): if either view is disallowed, the request
is. `gate()` below is that logic, copied; test_the_helper_is_what_the_gate_does checks it
against the real Gate.

What must hold, for every row of RFC 9309 §2.2.2's table and in both directions (the rule
written one way, the request the other):
- a Disallow rule blocks the request (in at least one view);
- an Allow rule still allows it (in both views): an allowed path must not become blocked only
  because it is spelt another way.
"""

import asyncio
import re
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from robotsgate.protocol import Decision, RobotsTxt
from robotsgate.protocol.urls import (
    match_form,
    normal_path_of,
    normalize,
    path_of,
    server_equivalent,
)


def gate(text: str, path: str, semantics: str = "rfc9309", agent: str = "bot") -> Decision:
    """Gate.check's two views, without the proxy: the decision that blocks, if either does."""
    robots = RobotsTxt.parse(text, semantics=semantics)
    written = path if not path.startswith("//") else "http://_" + path
    decision = robots.decide(agent, written)
    if decision.allowed:
        equivalent = server_equivalent(path)
        if equivalent != path:
            other = robots.decide(agent, equivalent)
            if not other.allowed:
                decision = other
    return decision


def blocks(rule: str, path: str, semantics: str = "rfc9309") -> bool:
    decision = gate(f"User-agent: *\nDisallow: {rule}\n", path, semantics)
    if decision.allowed:
        return False
    assert decision.rule is not None and decision.rule.pattern == rule
    return True


def allows(rule: str, path: str, semantics: str = "rfc9309") -> bool:
    # Allow first: the classic reading takes the first rule that matches.
    return gate(f"User-agent: *\nAllow: {rule}\nDisallow: /\n", path, semantics).allowed


# -- RFC 9309 §2.2.2's table, both ways ------------------------------------------------------

# (written, encoded): the "Path" and "Encoded Path" columns, plus spellings of the same rows.
TABLE = [
    ("/foo/bar?baz=quz", "/foo/bar?baz=quz"),
    ("/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar"),
    ("/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https%3a%2f%2ffoo.bar"),
    ("/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https%3A//foo.bar"),
    ("/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https:%2F%2Ffoo.bar"),
    ("/foo/bar?baz=https%3A//foo.bar", "/foo/bar?baz=https:%2f%2Ffoo.bar"),
    ("/foo/bar/ツ", "/foo/bar/%E3%83%84"),
    ("/foo/bar/ツ", "/foo/bar/%e3%83%84"),
    ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"),
    ("/foo/bar/%E3%83%84", "/foo/bar/%e3%83%84"),
    ("/foo/bar/baz", "/foo/bar/%62%61%7A"),
    ("/foo/bar/baz", "/foo/bar/%62%61%7a"),
]
BOTH_WAYS = [*TABLE, *[(encoded, written) for written, encoded in TABLE]]
SEMANTICS = ["rfc9309", "classic"]


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize(("rule", "path"), BOTH_WAYS)
def test_the_table_disallow_blocks_the_other_spelling(rule: str, path: str,
                                                      semantics: str) -> None:
    assert blocks(rule, path, semantics), (rule, path)
    assert blocks(rule, path + "&more=1" if "?" in path else path + "/more", semantics)


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize(("rule", "path"), BOTH_WAYS)
def test_the_table_allow_allows_the_other_spelling(rule: str, path: str, semantics: str) -> None:
    assert allows(rule, path, semantics), (rule, path)


@pytest.mark.parametrize(("rule", "path"), BOTH_WAYS)
def test_the_table_holds_in_decide_alone(rule: str, path: str) -> None:
    # Not only the gate: the matcher itself reads the two spellings as one path.
    robots = RobotsTxt.parse(f"User-agent: *\nDisallow: {rule}\n")
    assert not robots.decide("bot", path).allowed
    assert not robots.decide("bot", "https://example.com" + path).allowed


def test_the_table_holds_with_a_longer_rule_of_the_other_kind() -> None:
    # The precedence of RFC 9309 §2.2.2 counts octets of the match form: two spellings of
    # one rule are one length, whichever is written.
    text = ("User-agent: *\nDisallow: /foo/bar?baz=https%3A%2F%2F\n"
            "Allow: /foo/bar?baz=https://foo.bar\n")
    assert gate(text, "/foo/bar?baz=https%3A%2F%2Ffoo.bar").allowed
    assert not gate(text, "/foo/bar?baz=https%3A%2F%2Fevil.example").allowed
    text = "User-agent: *\nAllow: /p?u=http://\nDisallow: /p?u=http%3A%2F%2F\n"
    assert gate(text, "/p?u=http://x").allowed  # equal: Allow wins the tie, both ways
    assert gate(text, "/p?u=http%3a%2f%2fx").allowed


# -- the same, for every reserved character that delimits nothing where it stands ------------

DATA = [
    # anywhere: ':' '@' '!' "'" '(' ')' '[' ']'
    ("/wiki/Special:Random", "/wiki/Special%3ARandom"),
    ("/wiki/Special:Random", "/wiki/Special%3aRandom"),
    ("/@admin", "/%40admin"),
    ("/wiki/Administrators'_noticeboard", "/wiki/Administrators%27_noticeboard"),
    ("/a(b)!", "/a%28b%29%21"),
    ("/a[1]", "/a%5B1%5D"),
    ("/q?a[]=1", "/q?a%5B%5D=1"),
    ("/q?user=me@example.com", "/q?user=me%40example.com"),
    ("/q?t=a:b", "/q?t=a%3Ab"),
    # '/' in the query
    ("/login?next=/admin", "/login?next=%2Fadmin"),
    ("/login?next=/admin/", "/login?next=%2fadmin%2F"),
    # unreserved and non-ASCII in the query, as in the path
    ("/q?s=ツ", "/q?s=%E3%83%84"),
    ("/q?s=baz", "/q?s=%62%61%7A"),
    ("/q?s=café", "/q?s=caf%C3%A9"),
]


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize(("rule", "path"), [*DATA, *[(b, a) for a, b in DATA]])
def test_data_characters_are_one_escaped_or_not(rule: str, path: str, semantics: str) -> None:
    assert blocks(rule, path, semantics), (rule, path)
    assert allows(rule, path, semantics), (rule, path)


# Escapes that stay distinct from their character, and what the gate does with them.
@pytest.mark.parametrize(("rule", "path"), [
    # delimiters of the query: a%26b=1 is one parameter, a&b=1 two
    ("/s?q=a&b=1", "/s?q=a%26b=1"),
    ("/s?q=a%26b=1", "/s?q=a&b=1"),
    ("/s?a=b", "/s?a%3Db"),
    ("/s?q=a+b", "/s?q=a%2Bb"),
    ("/s?a;b", "/s?a%3Bb"),
    # '?' ends the path (and a pattern cannot always say whether it is in the query)
    ("/s?q=a?b", "/s?q=a%3Fb"),
    ("/s?q=a%3Fb", "/s?q=a?b"),
    ("/a?b", "/a%3Fb"),
    # '/' in the path: RFC 3986 and the existing tests -- /a%2Fb is not /a/b to the matcher
    ("/a%2Fb", "/a/b"),
])
def test_delimiters_stay_distinct(rule: str, path: str) -> None:
    assert not blocks(rule, path), (rule, path)


@pytest.mark.parametrize(("rule", "path"), [
    ("/s?q=a%26b", "/s?q=a%26b"),  # the query is not decoded by the server's view
    ("/s?q=a%3Fb", "/s?q=a%3Fb"),
    ("/s?q=a%2Bb", "/s?q=a%2Bb"),
])
def test_escaped_delimiters_in_the_query_stay_allowed(rule: str, path: str) -> None:
    assert allows(rule, path)


def test_an_escaped_slash_in_the_path_is_judged_as_the_server_reads_it() -> None:
    # nginx serves /a%2Fb as /a/b: a Disallow of /a/b stops both spellings.
    assert blocks("/a/b", "/a%2Fb")
    assert blocks("/a/b", "/a%2fb")
    # The other way is not symmetric: "Disallow: /a%2Fb" names /a%2Fb only (RFC 3986, and
    # test_rfc9309's distinct-escapes table), and an "Allow: /a%2Fb" does not allow the /a/b the
    # server would serve for it when everything else is disallowed: the stricter reading.
    assert not blocks("/a%2Fb", "/a/b")
    assert not allows("/a%2Fb", "/a%2Fb")


# A part of a pattern after '*' may land in the path or in the query; it is read as query, so
# that a Disallow loses nothing (the server's view catches the path side).
@pytest.mark.parametrize(("rule", "path"), [
    ("/*%2Faccount", "/x?next=%2Faccount"),
    ("/*%2Faccount", "/x?next=/account"),
    ("/*%2Faccount", "/x%2Faccount"),
    ("/*%2faccount", "/x?ReturnUrl=%2faccount"),
    ("/*https%3A%2F%2F", "/r?u=https%3A%2F%2Fx"),
    ("/*https%3A%2F%2F", "/r?u=https://x"),
    ("/*url=http://", "/r?url=http%3A%2F%2Fx"),
    ("/*?*url=http://", "/r?url=http%3A%2F%2Fx"),
    ("/*?*url=http%3A%2F%2F", "/r?a=1&url=http://x"),
    ("/*/edit", "/page/edit"),
    ("/*/edit", "/page?return=/edit"),
    ("/*/edit", "/page?return=%2Fedit"),
    ("*/a$", "/x?y=/a"),
    ("*/a$", "/x?y=%2Fa"),
])
def test_wildcard_parts_are_read_where_they_may_land(rule: str, path: str) -> None:
    assert blocks(rule, path), (rule, path)


def test_a_wildcard_part_with_an_escaped_slash_also_stops_the_plain_slash() -> None:
    # The price of reading it as query: /x/account is stopped too (stricter, never looser).
    assert blocks("/*%2Faccount", "/x/account")


# -- the same, for random paths and random spellings ------------------------------------------

PATH_CHARS = "ab:@!'()[]~ツé-"  # one segment; '/' joins segments
QUERY_CHARS = "ab/:@!'()[]~ツé=&+,?-"
# Escaping these changes nothing: unreserved, non-ASCII, and reserved characters that delimit
# nothing where they stand ('/' in the query only).
PATH_DATA = set("ab:@!'()[]~ツé-")
QUERY_DATA = PATH_DATA | {"/"}


def spell(text: str, data: set[str], choices: list[int]) -> str:
    """`text` with some of its data characters percent-encoded, in either case of hex."""
    out = []
    for index, char in enumerate(text):
        choice = choices[index] if index < len(choices) else 0
        if char in data and choice:
            escape = "".join(f"%{b:02X}" for b in char.encode())
            out.append(escape.lower() if choice == 2 else escape)
        else:
            out.append(char)
    return "".join(out)


segments = st.lists(st.text(PATH_CHARS, min_size=1, max_size=4), min_size=1, max_size=3)
queries = st.one_of(st.none(), st.text(QUERY_CHARS, max_size=10))
choices = st.lists(st.integers(0, 2), max_size=20)


def spelt(parts: list[str], query: str | None, path_choices: list[int],
          query_choices: list[int]) -> str:
    path = "/" + spell("/".join(parts), PATH_DATA, path_choices)
    return path if query is None else path + "?" + spell(query, QUERY_DATA, query_choices)


def with_wildcard(rule: str, where: int | None) -> str:
    """`rule` with a '*' put in (it matches nothing there: the path still matches), not inside
    an escape."""
    if where is None:
        return rule
    cuts = [i for i in range(1, len(rule) + 1) if rule[i - 1:i] != "%" and
            rule[i - 2:i - 1] != "%"]
    cut = cuts[where % len(cuts)]
    return rule[:cut] + "*" + rule[cut:]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments, queries, choices, choices, choices, choices, st.sampled_from(SEMANTICS),
       st.sampled_from(["", "x", "/y"]), st.one_of(st.none(), st.integers(0, 100)))
@example(["foo", "bar"], "baz=https://foo.bar", [], [], [], [0] * 9 + [1, 1, 1],
         "rfc9309", "", None)
@example(["foo", "bar"], "baz=https://foo.bar", [], [0] * 9 + [1, 1, 1], [], [],
         "rfc9309", "", None)
@example(["foo", "bar"], "baz=https://foo.bar", [], [0] * 9 + [1, 1, 1], [], [],
         "rfc9309", "", 3)
def test_every_spelling_of_a_rule_meets_every_spelling_of_its_path(
    parts: list[str], query: str | None, rule_path: list[int], rule_query: list[int],
    path_path: list[int], path_query: list[int], semantics: str, more: str,
    wildcard: int | None,
) -> None:
    rule = spelt(parts, query, rule_path, rule_query)
    path = spelt(parts, query, path_path, path_query)
    if query is None:
        path += more  # beyond the rule: still inside what it names
    else:
        path += "&" + more if more else ""
    if semantics == "rfc9309":  # the classic reading has no wildcards
        rule = with_wildcard(rule, wildcard)
    assert blocks(rule, path, semantics), (rule, path)
    assert allows(rule, path, semantics), (rule, path)


# -- the match form: its short cuts agree with its definition -----------------------------------

ESCAPES = [f"%{byte:02X}" for byte in range(256)] + [f"%{byte:02x}" for byte in range(256)]
URL_PIECES = ["/", "a", "?", "?", "=", "&", "%", "%2", ":", "@", "ツ", "é", " ", "*", "$", "#",
              "%2F", "%2f", "%3A", "%E3%83%84", "%41", "%25", "%3F", "\x00", "\ud800"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(URL_PIECES), st.sampled_from(ESCAPES)), max_size=14)
       .map("".join), st.sampled_from(["", "https://example.com", "http://a.b:8080"]))
def test_normal_path_of_is_match_form_of_normalize(tail: str, prefix: str) -> None:
    url = prefix + "/" + tail
    assert normal_path_of(url) == match_form(normalize(path_of(url))), url


# -- the server's view: what nginx, Apache and the frameworks route --------------------------

@pytest.mark.parametrize(("path", "equivalent"), [
    # every escape in the path is decoded, once
    ("/wiki/Special%3ARandom", "/wiki/Special:Random"),
    ("/%40admin", "/@admin"),
    ("/%41%42", "/AB"),
    ("/a%3Bb", "/a;b"),  # an escaped ';' is part of the segment, not a parameter
    ("/a%2Bb", "/a+b"),
    ("/a+b", "/a+b"),  # '+' is a plus sign in a path
    ("/a%26b%3Dc%2C%21%27%28%29", "/a&b=c,!'()"),
    ("/a%5B1%5D", "/a[1]"),
    # octets that cannot stand as they are are escaped again, in upper-case hex
    ("/caf%c3%a9/%41", "/caf%C3%A9/A"),
    ("/café/%2e%2e/x", "/x"),
    ("/café/x/", "/café/x/"),  # nothing to resolve: as it is (decide() escapes it)
    ("/café/./x", "/caf%C3%A9/x"),
    ("/%41%20%e3%83%84", "/A%20%E3%83%84"),
    ("/%41%3Fb", "/A%3Fb"),  # a '?' in a segment, not the query
    ("/%41%23b", "/A%23b"),
    ("/%41%2Ab%24*$", "/A%2Ab%24%2A%24"),  # '*' and '$' are compared escaped
    ("/%41%00b%7F%1F", "/A%00b%7F%1F"),
    ("/%41%22b%3C%3E%60%7B%7D%7C%5E", "/A%22b%3C%3E%60%7B%7D%7C%5E"),
    # %25 is '%' once decoded, and stays the text it was: no double decoding
    ("/%2541/%41", "/%2541/A"),
    ("/%252e%252e/%2e%2e/private", "/private"),
    ("/%252e%252e/private/%2E", "/%252e%252e/private/"),
    ("/100%/%41", "/100%25/A"),
    ("/a%zz/%41", "/a%25zz/A"),
    # decoded before the path is resolved
    ("/%2e%2e/private", "/private"),
    ("/x/%2E%2e/private", "/private"),
    ("/x/..%2Fprivate", "/private"),
    ("/x/..%5cprivate", "/private"),
    ("/x%2F%2Fprivate", "/x/private"),
    ("/a\\b", "/a/b"),
    ("/pub;x%2F..%2Fprivate", "/private"),
    # overlong UTF-8 is not a dot (nor anything): the octets stay
    ("/%C0%AE%C0%AE/%70rivate", "/%C0%AE%C0%AE/private"),
    ("/%ff/%41", "/%FF/A"),
    # the query is the application's: kept as it is
    ("/a/../b?x=%2e%2e/../%3A", "/b?x=%2e%2e/../%3A"),
    ("/a%2e%2e?x#/../y", "/a..?x#/../y"),
    ("/x/..#/../y?z", "/#/../y?z"),
])
def test_server_equivalent(path: str, equivalent: str) -> None:
    assert server_equivalent(path) == equivalent


@pytest.mark.parametrize("semantics", ["rfc9309", "google", "classic"])
@pytest.mark.parametrize(("rule", "path"), [
    ("/wiki/Special:", "/wiki/Special%3ARandom"),
    ("/wiki/Special:", "/wiki/Special%3arandom"),
    ("/@admin", "/%40admin"),
    ("/a;b", "/a%3Bb"),
    ("/a+b", "/a%2Bb"),
    ("/a&b", "/a%26b"),
    ("/a=b", "/a%3Db"),
    ("/private", "/%2Fprivate"),
    ("/private", "/x/..%2fprivate"),
    ("/private", "/%2e%2e/private"),
    ("/private", "/%2570rivate/../private"),
    ("/private", "/x/..%5Cprivate"),
])
def test_the_server_view_blocks_escaped_reserved_characters(rule: str, path: str,
                                                            semantics: str) -> None:
    assert blocks(rule, path, semantics), (rule, path)


@pytest.mark.parametrize(("rule", "path"), [
    ("/private", "/%252e%252e/private"),  # the server reads %2e%2e as text: not a dot segment
    ("/private", "/%C0%AE%C0%AE/private"),
    ("/A", "/%2541"),
])
def test_the_server_view_does_not_decode_twice(rule: str, path: str) -> None:
    assert not blocks(rule, path)


_HAS_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
PIECES = ["/", "/", "a", "%2e", "%2E", ".", "..", "%2F", "%2f", "%5C", "\\", ";", "%3B", "%25",
          "%", "%3A", "%3f", "%23", "%20", " ", "%00", "%C3%A9", "é", "ツ", "+", "%2B", "*",
          "%2A", "$", "%41", "%zz", "//", "?", "=", "&"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16).map("".join))
def test_the_server_view_is_in_match_form(tail: str) -> None:
    path = "/" + tail
    equivalent = server_equivalent(path)
    target = equivalent.split("?", 1)[0].split("#", 1)[0]
    if equivalent == path:
        return  # nothing to resolve: decide() reads it as it is
    # decide() changes nothing more in the path: no escape left to decode, no dot segment, no
    # parameter, no doubled slash.
    assert normal_path_of(target) == target, (path, equivalent)
    assert target.startswith("/")
    assert "//" not in target and "\\" not in target
    assert not re.search(r"(^|/)\.\.?(/|$)", target), (path, equivalent)


@pytest.mark.parametrize("path", [
    "/", "/wiki/Main_Page", "/a/b.c/d?x=%41", "/a.b", "/ツ", "/x?u=https%3A%2F%2Fx.example%2F",
    # escapes that decode to octets match form escapes again: decide() reads them alike
    "/caf%C3%A9", "/caf%c3%a9", "/%E3%83%84", "/a%20b", "/a%3Fb", "/a%23b", "/a%2Ab%24",
    "/a%00b", "/%2541", "/%252e%252e/private", "/100%", "/a%zz", "/%C0%AE%C0%AE/private",
    "/a%22b%3C%3E%60%7B%7D%7C%5E%7F",
])
def test_the_server_view_returns_plain_paths_as_they_are(path: str) -> None:
    assert server_equivalent(path) is path


def _best_time(path: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        server_equivalent(path)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("piece", ["%2e%2e/", "a/../", "%41", "%2F", ";x/", "\\", "/",
                                   "%E3%83%84", "é%41", "%3B", "/."])
def test_the_server_view_is_linear(piece: str) -> None:
    short = _best_time("/" + piece * 2_000)
    long = _best_time("/" + piece * 20_000)
    assert long < max(short, 1e-4) * 40, piece  # 10x the input, not 100x the time


# -- the helper is the gate ----------------------------------------------------------------------

CROSS_CHECK = [
    *[(f"User-agent: *\nDisallow: {rule}\n", path, False) for rule, path in BOTH_WAYS[:8]],
    *[(f"User-agent: *\nDisallow: /\nAllow: {rule}\n", path, True) for rule, path in BOTH_WAYS],
    ("User-agent: *\nDisallow: /wiki/Special:\n", "/wiki/Special%3ARandom", False),
    ("User-agent: *\nDisallow: /@admin\n", "/%40admin", False),
    ("User-agent: *\nDisallow: /private\n", "/x/..%2Fprivate", False),
    ("User-agent: *\nDisallow: /private\n", "/%252e%252e/private", True),
]


@pytest.mark.parametrize(("text", "path", "allowed"), CROSS_CHECK)
def test_the_helper_is_what_the_gate_does(text: str, path: str, allowed: bool) -> None:
    from robotsgate.decision.gate import Gate, GateConfig
    from robotsgate.decision.verdict import Request
    from robotsgate.origin import Origin
    from robotsgate.retrieval.entries import Retrieval
    from robotsgate.retrieval.fetch import FetchResult
    from robotsgate.rules_cache import RulesCache
    from robotsgate.state.store import MemoryStore

    class Fetcher:
        async def fetch(self, robots_url: str, user_agent: str) -> FetchResult:
            return FetchResult("ok", robots_url, robots_url, 200, text.encode())

    store = MemoryStore(10)
    retrieval = Retrieval(Fetcher(), RulesCache(10), store, lambda: 1_000_000.0)
    real = Gate(GateConfig(), store, retrieval, lambda: 1_000_000.0)
    verdict = asyncio.run(real.check(Request(Origin.of("http", "example.com", None), path,
                                             "bot", "bot")))
    assert (verdict.action != "block") is allowed is gate(text, path).allowed, verdict
