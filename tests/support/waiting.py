"""``eventually``: wait for a condition with a bound — the one waiting helper of the suites.

Tests never ``sleep`` to let something happen: they state the condition and give a bound. The
bound is a failure limit, never a measurement (no test asserts how long something took).

With ``clock`` (a ``ManualClock``), virtual time is let pass while waiting: each time the
condition is still false after the event loop had a chance to run, the clock advances to its
next pending deadline (at most ``max_step`` seconds ahead). That drives back-offs, retry periods
and watchdogs without real waiting; tests that need exact instants advance the clock themselves.

``eventually_sync`` is the same wait for synchronous tests (a server in a thread, a blocking HTTP
client): it polls with a real-time bound and no clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from scaleset.clock import ManualClock

Condition = Callable[[], bool] | Callable[[], Awaitable[bool]]


async def eventually(
    condition: Condition,
    *,
    within: float = 20.0,
    what: str = "condition",
    clock: ManualClock | None = None,
    max_step: float = 60.0,
    interval: float = 0.01,
) -> None:
    """Return once ``condition()`` is true; ``AssertionError`` after ``within`` real seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(interval)  # let real I/O (the API server) answer
        if clock is not None:
            wake = clock.next_deadline()
            if wake is not None:  # (+1 ns: now + (wake - now) can fall a float step short)
                clock.advance(min(max_step, max(0.0, wake - clock.monotonic()) + 1e-9))


def eventually_sync(
    condition: Callable[[], bool],
    *,
    within: float = 20.0,
    what: str = "condition",
    interval: float = 0.01,
) -> None:
    """``eventually`` for synchronous code: return once ``condition()`` is true;
    ``AssertionError`` after ``within`` real seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        time.sleep(interval)  # let the server's thread answer
