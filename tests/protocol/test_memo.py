"""keep(): a memo that starts over when full, so that endless distinct keys cost no memory."""

from robotsgate.protocol import RobotsTxt
from robotsgate.protocol.memo import keep


def test_a_full_memo_starts_over_with_the_new_key() -> None:
    memo: dict[str, int] = {}
    assert keep(memo, 2, "a", 1) == 1 and keep(memo, 2, "b", 2) == 2
    assert memo == {"a": 1, "b": 2}
    assert keep(memo, 2, "c", 3) == 3
    assert memo == {"c": 3}


def test_a_key_kept_again_replaces_its_value() -> None:
    memo: dict[str, int] = {"a": 1}
    keep(memo, 4, "a", 5)
    assert memo == {"a": 5}


def test_endless_user_agents_leave_a_bounded_memo() -> None:
    robots = RobotsTxt.parse("User-agent: a\nDisallow: /\n\nUser-agent: *\nAllow: /\n")
    for n in range(2_000):
        assert robots.agent_for(f"Mozilla/5.0 (compatible; bot{n}/1.0)") == "*"
        assert robots.allowed(f"bot{n}", "/x")
    assert robots.agent_for("a/2.0") == "a" and not robots.allowed("a", "/x")
    assert len(robots._agent_for) <= 256 and len(robots._by_agent) <= 256
