"""The Robots Exclusion Protocol, pure: standard library only, no I/O, no clocks."""

from robotsgate.protocol.extensions import RequestRate, VisitTime
from robotsgate.protocol.parse import MAX_BYTES, ParseWarning
from robotsgate.protocol.robots import (
    MAX_URL_LENGTH,
    SEMANTICS,
    Decision,
    Group,
    RobotsTxt,
    Rule,
    url_too_long,
)

__all__ = ["MAX_BYTES", "MAX_URL_LENGTH", "SEMANTICS", "Decision", "Group", "ParseWarning",
           "RequestRate", "RobotsTxt", "Rule", "VisitTime", "url_too_long"]
