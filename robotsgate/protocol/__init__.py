"""The Robots Exclusion Protocol, pure: standard library only, no I/O, no clocks."""

from robotsgate.protocol.extensions import RequestRate, VisitTime
from robotsgate.protocol.parse import MAX_BYTES, ParseWarning
from robotsgate.protocol.robots import SEMANTICS, Decision, Group, RobotsTxt, Rule

__all__ = ["MAX_BYTES", "SEMANTICS", "Decision", "Group", "ParseWarning", "RequestRate",
           "RobotsTxt", "Rule", "VisitTime"]
