"""Hypothesis strategies of robots.txt inputs: text with what real inputs rarely have, files
(text and bytes), their lines, user agents, URLs, semantics."""

from hypothesis import strategies as st

from robotsgate.protocol import SEMANTICS

# Text that includes what real inputs rarely have: lone surrogates, NUL and other controls,
# every kind of line break, and the characters that mean something in robots.txt and in URLs.
SPECIAL = [
    "\ud800",
    "\udfff",
    "\x00",
    "\x01",
    "\x7f",
    "\r",
    "\n",
    "\r\n",
    "\t",
    " ",
    "%",
    "%2",
    "%2F",
    "%e3",
    "*",
    "$",
    "#",
    "/",
    "?",
    ":",
    "ツ",
    "\ufeff",
    "\u2028",
    "\x85",
    "é",
    "//",
    "://",
    "http://",
    "/robots.txt",
]
any_char = st.characters(codec=None, exclude_categories=())
any_text = st.lists(st.one_of(any_char, st.sampled_from(SPECIAL)), max_size=60).map("".join)

DIRECTIVES = [
    "User-agent: *",
    "User-agent: FooBot",
    "user-agent: foobot/1.0",
    "Useragent: bar",
    "User-agent:",
    "Disallow: /",
    "Disallow:",
    "Allow: /a*",
    "Disallow: /*$",
    "Disallow: *",
    "Allow: $",
    "Disallow: /a*a*a*b$",
    "Disallow: /%2A%24%",
    "Allow: /ツ",
    "Disallow: /tmp /spool",
    "Crawl-delay: 1.5",
    "Crawl-delay: x",
    "Request-rate: 1/5m",
    "Request-rate: 0/0",
    "Visit-time: 2300-0100",
    "Visit-time: 9999-0000",
    "Sitemap: http://x/s.xml",
    "Host: x",
    "# comment",
    "",
    "   ",
    "Disallow /x",
    ":",
    "Disallow: /a#b",
    "\ufeffUser-agent: *",
]
robots_lines = st.lists(st.one_of(st.sampled_from(DIRECTIVES), any_text), max_size=25)
robots_text = robots_lines.map("\n".join)
robots_bytes = st.one_of(
    st.binary(max_size=400),
    robots_lines.map(lambda lines: "\r\n".join(lines).encode("utf-8", "surrogatepass")),
    st.tuples(
        st.sampled_from([b"", b"\xef", b"\xef\xbb", b"\xef\xbb\xbf", b"\xff\xfe"]),
        robots_text.map(lambda t: t.encode("utf-8", "surrogatepass")),
    ).map(b"".join),
)
semantics_ = st.sampled_from(SEMANTICS)
agents = st.one_of(
    any_text,
    st.sampled_from(
        ["FooBot", "foobot/1.0", "*", "", "bar", "Mozilla/5.0 (compatible; FooBot/1.0)", " FOOBOT "]
    ),
)
urls = st.one_of(
    any_text, any_text.map(lambda t: "https://example.com/" + t), any_text.map(lambda t: "/" + t)
)
