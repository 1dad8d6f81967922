"""HTML page signals: what a page says robots may index and follow (the robots META tag, as
the University of Cambridge's robots guide and Spiderline's crawler read it, with its section
tags; X-Robots-Tag).

Not the Robots Exclusion Protocol (robotsgate.protocol): robots.txt says what may be fetched,
pages say what may be done with what was fetched. One module per concern, each importing only
those above it in this list:

- signals: the readings as values (PageSignals, Link, Section, PageWarning)
- directives: the directive grammar of META robots, X-Robots-Tag and section tags
- tree: the page as a browser reads it, one HTML5 parse (META, base, links, section tags)
- parser: the page as source text, one tokenizer pass: where strip mode's edits go
- charset: a page's bytes as text, in the charset a browser would use
- links: links resolved as a browser resolves them (WHATWG URLs, the page's encoding)
- prefilter: the byte check that spares most pages a decode and a parse
- read: the reading of a page for an agent
- strip: strip mode, the tokenizer's edits checked against the tree
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
from robotsgate.pages.prefilter import can_have_signals
from robotsgate.pages.read import HTML_TYPES, is_html, read_page
from robotsgate.pages.signals import NO_SIGNALS, Link, PageSignals, PageWarning, Section
from robotsgate.pages.strip import strip_page
from robotsgate.pages.tree import MAX_SECTION_DEPTH

__all__ = ["CHARSET_SCAN_BYTES", "HTML_TYPES", "MAX_PAGE_BYTES", "MAX_SECTION_DEPTH",
           "NO_SIGNALS", "Annotated", "HtmlText", "Link", "Nofollow", "PageConfig",
           "PageSignals", "PageWarning", "Pages", "Remembered", "Section", "agent_key",
           "agent_tokens", "can_have_signals", "decode_html", "is_html", "read_page",
           "strip_page", "url_key"]
