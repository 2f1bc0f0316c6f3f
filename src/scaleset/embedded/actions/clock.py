"""Clocks for the fake service and the simulated runner: wall time, or a manual clock tests drive.

The fake reads time only through a ``Clock`` (a callable returning Unix seconds), so token expiry,
session expiry and timestamps follow whatever time the caller injects. ``ManualClock`` is also a
sleeper: ``await clock.sleep(30)`` returns once a test has advanced the clock by 30 seconds, which
lets the simulated runner "run a job for ten minutes" without a real sleep anywhere.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable

Clock = Callable[[], float]
"""Returns the current time as Unix seconds."""

Sleeper = Callable[[float], Awaitable[None]]
"""Waits for the given number of seconds of the matching clock's time."""


def system_clock() -> float:
    """Wall-clock Unix time."""
    return time.time()


async def system_sleep(seconds: float) -> None:
    """Real sleep (for the standalone server and the demo, never for tests)."""
    await asyncio.sleep(max(0.0, seconds))


class ManualClock:
    """A clock that moves only when told to; ``sleep`` waits for ``advance``.

    Call it to read the time. ``advance(seconds)`` moves time forward and wakes every sleeper
    whose deadline has passed, in deadline order.
    """

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` (>= 0) and wake the sleepers that are due."""
        if seconds < 0:
            raise ValueError("a clock cannot move backwards")
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    @property
    def sleepers(self) -> int:
        """How many sleeps are pending (lets a test wait until a runner is parked on the clock)."""
        return sum(1 for _, _, future in self._sleepers if not future.done())

    async def sleep(self, seconds: float) -> None:
        """Return once the clock has advanced by ``seconds`` (immediately when <= 0)."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), future))
        await future
