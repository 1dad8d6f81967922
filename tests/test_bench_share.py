"""scripts/bench_share.py reads py-spy's raw samples: which are robotsgate's, under which part
and in which function."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import bench_share  # noqa: E402  (scripts/ is not a package)

LOOP = "Runner.run (asyncio/runners.py:118);Handle._run (asyncio/events.py:84)"
MANAGER = "AddonManager.invoke_addon (mitmproxy/addonmanager.py:270)"
RAW = "\n".join([
    # mitmproxy alone: not robotsgate's, however deep
    f"{LOOP};Http1Server.read_headers (mitmproxy/proxy/layers/http/_http1.py:120) 7",
    # a hook passed on to a part, deciding
    f"{LOOP};{MANAGER};_in_order.<locals>.hook_of_one (robotsgate/mitm/__init__.py:113);"
    "Decide._decide_once (robotsgate/mitm/decision.py:53);"
    "Exchange.decide (robotsgate/decision/policy.py:122);"
    "Seen.of (robotsgate/decision/request.py:77) 2",
    # the same part in a checkout elsewhere (--against: a worktree), its coroutine awaited
    f"{LOOP};{MANAGER};_awaiting (/tmp/bench-share-x/then/robotsgate/mitm/__init__.py:129);"
    "Decide._decide_once (/tmp/bench-share-x/then/robotsgate/mitm/decide.py:53) 1",
    # only passing the hook on, and a library call made from robotsgate's code
    f"{LOOP};{MANAGER};_in_order.<locals>.hook_of_one (robotsgate/mitm/__init__.py:114) 3",
    f"{LOOP};{MANAGER};PageReader.response (robotsgate/mitm/pages.py:44);"
    "Headers.get (mitmproxy/http.py:150) 1",
    "",
])


def test_samples_are_robotsgates_when_its_code_is_on_the_stack() -> None:
    got = bench_share.Samples()
    got.add(RAW)
    assert (got.total, got.ours) == (14, 7)
    assert got.share(got.ours) == 0.5
    assert got.parts == {"Decide._decide_once": 3, "(passing hooks on)": 3,
                         "PageReader.response": 1}
    # The innermost robotsgate frame: library calls count for the function that makes them.
    assert got.functions == {"Seen.of": 2, "Decide._decide_once": 1,
                             "_in_order.<locals>.hook_of_one": 3, "PageReader.response": 1}


def test_runs_add_up() -> None:
    got = bench_share.Samples()
    got.add(RAW)
    got.add(RAW)
    assert (got.total, got.ours) == (28, 14)
    assert bench_share.Samples().share(0) == 0.0
