"""RSL (Really Simple Licensing 1.0): where a site says under which licence its content may be
used, and for what.

robots.txt names the site's licence documents with `License:` lines (global, like Sitemap: they
belong to no group; an absolute URL, maybe on another host; they may repeat). Pure: no I/O.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class License:
    """One robots.txt `License:` line: the URL as written, and its line."""

    url: str
    line: int  # 1-based
