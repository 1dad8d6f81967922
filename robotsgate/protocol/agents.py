"""Product tokens: the names robots.txt groups and User-Agent headers give robots.

RFC 9309 §2.2.1: a product token is letters, '_' and '-' ("FooBot/1.0" names FooBot), matched
case-insensitively.
"""

import re

PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]+")


def is_product_token(text: str) -> bool:
    """Whether `text` is exactly one product token (what a bot may be configured as)."""
    return PRODUCT_TOKEN.fullmatch(text) is not None


def product_token_of(text: str) -> str:
    """The product token `text` starts with, as written ("FooBot/1.0" -> "FooBot"); "" if none."""
    found = PRODUCT_TOKEN.match(text)
    return found[0] if found else ""


def product_tokens(user_agent: str) -> frozenset[str]:
    """Every product token a User-Agent header names, lower-cased: the names a group may have.

    "Mozilla/5.0 (compatible; FooBot/2.1)" names mozilla, compatible and foobot.
    """
    return frozenset(token.lower() for token in PRODUCT_TOKEN.findall(user_agent))
