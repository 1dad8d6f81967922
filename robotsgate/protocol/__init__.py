"""The Robots Exclusion Protocol, pure: standard library only, no I/O, no clocks."""

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
    RobotsTxt,
    url_too_long,
)
from robotsgate.protocol.rules import Group, Rule

__all__ = ["MAX_BYTES", "MAX_URL_LENGTH", "PRODUCT_TOKEN", "SEMANTICS", "Decision", "Group",
           "ParseWarning", "Reading", "RequestRate", "RobotsTxt", "Rule", "VisitTime",
           "is_product_token", "product_token_of", "product_tokens", "seconds_until_open",
           "url_too_long"]
