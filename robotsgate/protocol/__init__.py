"""The Robots Exclusion Protocol, pure: no I/O, no clocks; the standard library only, but for
http_sf (RFC 9651 Structured Fields: the syntax of AI usage preferences, a parser)."""

from robotsgate.protocol.agents import (
    PRODUCT_TOKEN,
    is_product_token,
    product_token_of,
    product_tokens,
)
from robotsgate.protocol.extensions import RequestRate, VisitTime, seconds_until_open
from robotsgate.protocol.parse import MAX_BYTES, ParseWarning
from robotsgate.protocol.readings import SEMANTICS, Reading
from robotsgate.protocol.robots import (
    MAX_URL_LENGTH,
    Decision,
    Pace,
    RobotsTxt,
    url_too_long,
)
from robotsgate.protocol.rules import Group, Rule
from robotsgate.protocol.usage import (
    CATEGORIES,
    Preference,
    PreferenceValue,
    Source,
    Statement,
    Usage,
    combine,
    read_statement,
)

__all__ = ["CATEGORIES", "MAX_BYTES", "MAX_URL_LENGTH", "PRODUCT_TOKEN", "SEMANTICS", "Decision",
           "Group", "Pace", "ParseWarning", "Preference", "PreferenceValue", "Reading",
           "RequestRate", "RobotsTxt", "Rule", "Source", "Statement", "Usage", "VisitTime",
           "combine", "is_product_token", "product_token_of", "product_tokens", "read_statement",
           "seconds_until_open", "url_too_long"]
