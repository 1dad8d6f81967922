"""A long decision shares the event loop: other requests are decided while it runs."""

import asyncio

from protocol.hostile_files import CASES, WORST
from support.gate import make_gate, req
from support.origins import Origins, ok

from robotsgate.protocol import MAX_URL_LENGTH


async def test_other_sites_are_decided_while_a_hostile_file_is_read() -> None:
    case = CASES[WORST]
    gate = make_gate(Origins(**{"hostile.example": ok(case.build().encode()),
                                "plain.example": ok(b"User-agent: *\nDisallow: /private\n")}))
    # Both files fetched and compiled first: what is left is deciding.
    await gate.check(req("http://hostile.example/warm-up"))
    await gate.check(req("http://plain.example/warm-up"))
    finished: list[str] = []

    async def one(url: str, name: str) -> None:
        await gate.check(req(url))
        finished.append(name)

    await asyncio.gather(*(one(f"http://hostile.example{case.path(MAX_URL_LENGTH - 100, i)}",
                                f"hostile{i}") for i in range(3)),
                         one("http://plain.example/page", "plain"))
    # Started last, decided first: the hostile decisions gave the loop up between slices.
    assert finished[0] == "plain", finished
    assert sorted(finished[1:]) == ["hostile0", "hostile1", "hostile2"]


async def test_an_ordinary_decision_never_gives_the_loop_up() -> None:
    gate = make_gate(Origins(**{"plain.example": ok(b"User-agent: *\nDisallow: /private\n")}))
    await gate.check(req("http://plain.example/warm-up"))
    other_ran = False

    async def other() -> None:
        nonlocal other_ran
        other_ran = True

    task = asyncio.ensure_future(other())
    verdict = await gate.check(req("http://plain.example/private/x"))
    assert verdict.action == "block" and not other_ran  # decided without a pause
    await task
