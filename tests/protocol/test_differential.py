"""Differential test: the `google` semantics against Google's own C++ parser.

Hypothesis writes robots.txt bodies from a grammar of realistic, and realistically broken, lines
(misspelt and colon-less directives, comments, every line ending, byte order marks, non-ASCII,
escapes, wildcards, now and then raw bytes), and asks both parsers the same question. Google's
parser is reached through the jwm.robotstxt binding.

The binding takes the body as bytes (pybind11 hands them to std::string untouched, NULs
included), so bodies are generated as arbitrary bytes, not only UTF-8. URLs and agents are str:
the binding encodes them as UTF-8, and so does every caller of ours.

Bodies stay far below 500 KiB: past that, the google reading cuts the body as Googlebot does and
the library does not (see test_google_reference.py).
"""

import string

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jwm.robotstxt import googlebot

from robotsgate.protocol import RobotsTxt

# -- robots.txt bodies --------------------------------------------------------------------

_AGENT_NAMES = ("FooBot", "foobot", "FOOBOT", "Foo-Bot_2", "BarBot", "Foo", "x")
_UA_VALUES = (
    *_AGENT_NAMES,
    "*",
    "* x",
    "*x",
    "*\tFooBot",
    "FooBot/1.0",
    "Foo Bot",
    "Foo*",
    "/FooBot",
    "",
    "Fooé",
    "*\x0bx",
    "*\x1cx",
    "*\xa0x",
)
_PATH_PARTS = (
    "/",
    "/",
    "/",
    "a",
    "b",
    "A",
    "*",
    "*",
    "$",
    "%",
    "%2f",
    "%2F",
    "%41",
    "%61",
    "%e9",
    "%C3%A9",
    "é",
    "ツ",
    "?",
    "=",
    ".",
    "index.html",
    "index.htm",
    ";",
    "&",
    "#",
    " ",
    "\t",
    ":",
    "\x00",
)
_KEYS = {
    "agent": (
        "User-agent",
        "user-agent",
        "USER-AGENT",
        "useragent",
        "user agent",
        "User-Agentx",
        "Useragent",
    ),
    "allow": ("Allow", "allow", "ALLOW", "allowed"),
    "disallow": (
        "Disallow",
        "disallow",
        "DISALLOW",
        "disalow",
        "dissallow",
        "dissalow",
        "diasllow",
        "disallaw",
        "Disallowed",
        "dis-allow",
    ),
    "other": (
        "Sitemap",
        "site-map",
        "Crawl-delay",
        "Host",
        "Request-rate",
        "Foo",
        "Noindex",
        "Invalid-Unknown-Line",
    ),
}
_SEPARATORS = (":", ": ", ":  ", " : ", ":\t", " ", "\t", "  ", "")
_EOLS = (b"\n", b"\r\n", b"\r")
_BOMS = (b"", b"", b"", b"\xef\xbb\xbf", b"\xef\xbb", b"\xef", b"\xef\x11\xbf")

paths = st.lists(st.sampled_from(_PATH_PARTS), max_size=6).map("".join)


@st.composite
def directive(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(("agent", "agent", "allow", "disallow", "disallow", "other")))
    key = draw(st.sampled_from(_KEYS[kind]))
    if kind == "agent":
        value = draw(st.sampled_from(_UA_VALUES))
    elif kind == "other":
        value = draw(st.sampled_from(("http://example.com/sitemap.xml", "10", "1/5", "/a", "")))
    else:
        start = draw(st.sampled_from(("/", "/", "/", "", "*", "a")))
        value = start + draw(paths)
    line = key + draw(st.sampled_from(_SEPARATORS)) + value
    if draw(st.integers(0, 5)) == 0:
        line += draw(st.sampled_from((" # comment", "#c: d", "# Disallow: /")))
    if draw(st.integers(0, 7)) == 0:
        line = draw(st.sampled_from((" ", "\t", "\x0b"))) + line
    if draw(st.integers(0, 7)) == 0:
        line += draw(st.sampled_from((" ", "\t", "\x0c")))
    return line


lines = st.one_of(
    directive(),
    directive(),
    directive(),
    directive(),
    directive(),
    st.sampled_from(
        (
            "",
            "",
            " ",
            "# comment",
            "#",
            ":",
            ": /",
            "Disallow /a /b",
            "User-agent FooBot",
            "Disallow /",
        )
    ),
)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    body = bytearray(draw(st.sampled_from(_BOMS)))
    fixed_eol = draw(st.sampled_from((*_EOLS, None)))
    for line in draw(st.lists(lines, max_size=12)):
        if draw(st.integers(0, 30)) == 0:
            body += draw(st.binary(max_size=12))  # raw bytes, not necessarily UTF-8
        else:
            body += line.encode("utf-8")
        body += fixed_eol or draw(st.sampled_from(_EOLS))
    if draw(st.booleans()) and body:
        body = body[:-1]  # no final line break, or half of a CRLF
    return bytes(body)


# -- agents and URLs ------------------------------------------------------------------------

agents = st.one_of(
    st.sampled_from(_AGENT_NAMES),
    st.text(string.ascii_letters + "_-", min_size=1, max_size=8),
)

_URL_PARTS = (*tuple(p for p in _PATH_PARTS if p not in ("#", " ", "\t", "\x00")), "/robots.txt")


@st.composite
def urls(draw: st.DrawFn) -> str:
    path = "/" + "".join(draw(st.lists(st.sampled_from(_URL_PARTS), max_size=8)))
    if draw(st.integers(0, 3)) == 0:
        path += "?" + draw(st.sampled_from(("q=a", "a=/b", "x=%2F", "")))
    if draw(st.integers(0, 5)) == 0:
        path += "#" + draw(st.sampled_from(("frag", "/a", "")))
    return "http://example.com" + path


# -- the property ---------------------------------------------------------------------------


def google(body: bytes, agent: str, url: str) -> bool:
    # A fresh matcher per call: a RobotsMatcher keeps state between calls.
    allowed: bool = googlebot.RobotsMatcher().OneAgentAllowedByRobots(body, agent, url)
    return allowed


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies(), agent=agents, url=urls())
# Cases that once differed, kept whatever the generator happens to draw: a character that
# str.isspace() takes but C's isspace() does not; a NUL in the URL (the path ends there for
# Google); an agent with the Kelvin sign, which str.lower() turns into "k".
@example(body=b"User-agent: *\x1cx\nDisallow: /\n", agent="FooBot", url="http://example.com/")
@example(body=b"User-agent: *\nDisallow: /a$\n", agent="x", url="http://example.com/a\x00b")
@example(body=b"User-agent: kbot\nDisallow: /\n", agent="\u212abot", url="http://example.com/")
@example(body=b"User-agent: *\nDisallow: /a\x00b\n", agent="FooBot", url="http://example.com/a")
@example(body=b"\xef\x11\xbfUser-agent: *\nDisallow: /\n", agent="x", url="http://example.com/")
def test_google_semantics_answers_as_googles_parser(body: bytes, agent: str, url: str) -> None:
    ours = RobotsTxt.parse(body, semantics="google").decide(agent, url)
    assert ours.allowed == google(body, agent, url), ours.explain()
