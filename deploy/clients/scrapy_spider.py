"""A Scrapy spider that crawls one site through robotsgate, which obeys robots.txt for it.

    eval "$(scripts/proxy-env.sh)"      # HTTP_PROXY, HTTPS_PROXY and SSL_CERT_FILE among others
    scrapy runspider deploy/clients/scrapy_spider.py -a start=https://example.com/ -O pages.jsonl

Nothing in it names the proxy: Scrapy's HttpProxyMiddleware (on by default) reads HTTP_PROXY and
HTTPS_PROXY (and NO_PROXY) when the crawl starts. Each page becomes one item: its URL, its status
and, when the proxy answered in the site's place, robotsgate's reason (`disallowed`, ...).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse, Response


class SiteSpider(scrapy.Spider):
    name = "site"
    custom_settings = {  # noqa: RUF012  # Scrapy reads it from the class
        # robotsgate decides every request against robots.txt, with the rules, caching and
        # audit log shared by every bot behind it; Scrapy's own check would only duplicate it.
        "ROBOTSTXT_OBEY": False,
        # Scrapy accepts any certificate unless told to verify (Scrapy >= 2.15). Verified, it
        # uses OpenSSL's default trust store, which SSL_CERT_FILE replaces with the proxy's CA:
        # only robotsgate's certificates are then accepted, so no https request can go around it.
        "DOWNLOAD_VERIFY_CERTIFICATES": True,
        # The proxy's own answers reach the spider instead of being dropped as errors: 403 for
        # a disallowed page, 429 and 503 when the site's pace or robots.txt holds it back.
        "HTTPERROR_ALLOWED_CODES": [403, 429, 503],
        # The User-Agent picks the robots.txt group (unless the proxy sets robots_agent).
        "USER_AGENT": "ExampleBot/1.0 (+https://example.com/bot)",
    }

    def __init__(self, start: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        host = urlsplit(start).hostname
        if host is None:
            raise ValueError(f"start must be an absolute http(s) URL; got {start!r}")
        self.start_urls = [start]
        self.allowed_domains = [host]  # links to other sites are not followed

    def parse(self, response: Response) -> Iterator[dict[str, Any] | scrapy.Request]:
        reason = response.headers.get("X-Robotsgate-Reason")
        yield {
            "url": response.url,
            "status": response.status,
            "robotsgate_reason": reason.decode() if reason else None,
            "text": response.body.decode(errors="replace") if response.status != 200 else None,
        }
        if response.status == 200 and isinstance(response, HtmlResponse):
            # Every link is followed: the disallowed ones come back as the proxy's 403.
            yield from response.follow_all(css="a")
