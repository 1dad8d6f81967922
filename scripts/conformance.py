"""Scorecard: how many of Google's own robots.txt checks each reading answers as Google does.

The cases are the allow/disallow checks of robots_test.cc (google/robotstxt), ported in
tests/protocol/test_google_reference.py. Run from anywhere:

    .venv/bin/python scripts/conformance.py        # the scorecard
    .venv/bin/python scripts/conformance.py -v     # and every case a reader gets wrong
"""

import argparse
import sys
import urllib.robotparser
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protego import Protego  # noqa: E402

from robotsgate.protocol import RobotsTxt  # noqa: E402
from tests.protocol.test_google_reference import (  # noqa: E402
    CASE_IDS,
    CASES,
    RFC9309_DIFFERENCES,
    reference,
)

Reader = Callable[[str, str, str], bool]


def _ours(semantics: str) -> Reader:
    def read(body: str, agent: str, url: str) -> bool:
        return RobotsTxt.parse(body, semantics=semantics).decide(agent, url).allowed
    return read


def _protego(body: str, agent: str, url: str) -> bool:
    return bool(Protego.parse(body).can_fetch(url, agent))


def _urllib(body: str, agent: str, url: str) -> bool:
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(body.splitlines())
    return parser.can_fetch(agent, url)


READERS: dict[str, Reader] = {
    "Google's C++ parser (jwm.robotstxt)": reference,
    "robotsgate google": _ours("google"),
    "robotsgate rfc9309": _ours("rfc9309"),
    "robotsgate classic": _ours("classic"),
    f"Protego {version('protego')}": _protego,
    "urllib.robotparser": _urllib,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list the misses")
    verbose = parser.parse_args().verbose
    total = len(CASES)
    print(f"Google's robots_test.cc: {total} allow/disallow checks\n")
    for name, read in READERS.items():
        misses: list[str] = []
        for case_id, case in zip(CASE_IDS, CASES, strict=True):
            assert isinstance(case.body, str)
            try:
                answer = read(case.body, case.agent, case.url)
            except Exception as error:  # a reader that crashes gets the case wrong
                misses.append(f"{case_id} (raised {type(error).__name__})")
                continue
            if answer is not case.allowed:
                misses.append(case_id)
        passed = total - len(misses)
        print(f"  {name:<38} {passed:>4}/{total}  ({100 * passed / total:5.1f}%)")
        if name == "robotsgate rfc9309":
            intended = sum(1 for miss in misses if miss in RFC9309_DIFFERENCES)
            print(f"  {'':<38} {intended} of the misses are RFC 9309 answers on purpose")
        if verbose:
            for miss in misses:
                print(f"      - {miss}")
    print("\nThe rfc9309 differences are explained in tests/protocol/test_google_reference.py.")


if __name__ == "__main__":
    main()
