"""robotsgate: a forward proxy that makes every bot behind it obey robots.txt."""

from robotsgate.protocol import Decision, Group, RobotsTxt, Rule

__all__ = ["Decision", "Group", "RobotsTxt", "Rule"]
