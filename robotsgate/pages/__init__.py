"""HTML page signals: what a page says robots may index and follow (seeds 002 and 004).

Not the Robots Exclusion Protocol (robotsgate.protocol): robots.txt says what may be fetched,
pages say what may be done with what was fetched. One module per concern, each importing only
those above it in this list:

- signals: the readings as values (PageSignals, Link, Section, PageWarning)
- directives: the directive grammar of META robots, X-Robots-Tag and section tags
- parser: one pass of the HTML parser (META, base, links, section tags, strip edits)
- charset: a page's bytes as text, in the charset a browser would use
- read: the reading of a page for an agent, the byte check that skips most pages, strip mode
- memory: the proxy's side: annotate responses, remember and refuse nofollow links
"""

from robotsgate.pages.charset import CHARSET_SCAN_BYTES, MAX_PAGE_BYTES, HtmlText, decode_html
from robotsgate.pages.directives import agent_tokens
from robotsgate.pages.memory import (
    Annotated,
    Nofollow,
    PageConfig,
    Pages,
    Remembered,
    agent_key,
    url_key,
)
from robotsgate.pages.parser import MAX_SECTION_DEPTH
from robotsgate.pages.read import HTML_TYPES, can_have_signals, is_html, read_page, strip_page
from robotsgate.pages.signals import NO_SIGNALS, Link, PageSignals, PageWarning, Section

__all__ = ["CHARSET_SCAN_BYTES", "HTML_TYPES", "MAX_PAGE_BYTES", "MAX_SECTION_DEPTH",
           "NO_SIGNALS", "Annotated", "HtmlText", "Link", "Nofollow", "PageConfig",
           "PageSignals", "PageWarning", "Pages", "Remembered", "Section", "agent_key",
           "agent_tokens", "can_have_signals", "decode_html", "is_html", "read_page",
           "strip_page", "url_key"]
