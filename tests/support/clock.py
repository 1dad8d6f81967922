"""Time that moves only when someone sleeps or the test moves it: nothing in the unit tests
needs to wait for real time."""

import asyncio


class FakeClock:
    """Time that moves only when someone sleeps or the test says so (`clock.now += 5`).

    One object serves as wall clock, monotonic clock and `sleep`: a test that hands it out for
    all three sees waits come out exactly, and `sleeps` says what was slept.
    """

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now
        self.sleeps: list[float] = []
        self.advance = True  # False: sleeping takes no time (every request arrives at once)
        self.broken = False  # True: reading the clock raises, as a failing dependency would

    def __call__(self) -> float:
        if self.broken:
            raise RuntimeError("clock broken")
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.advance:
            self.now += seconds
        await asyncio.sleep(0)  # a sleep gives the event loop up, as a real one does
