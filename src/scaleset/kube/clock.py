"""Injected time: every timer in the controller runtime asks a ``Clock``, never ``time`` directly.

Production code uses ``SystemClock``. Tests use ``ManualClock``: time stands still until the test
calls ``advance()``, and sleepers wake in deadline order — so back-off, ``requeue_after`` and lease
expiry can be tested without sleeping and without timing assertions.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar

T = TypeVar("T")


class Clock(Protocol):
    """Monotonic time for intervals, wall time for timestamps written to the API server."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (intervals, deadlines)."""
        ...

    def now(self) -> datetime:
        """Current wall time, timezone-aware UTC (for timestamps stored in objects)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend the caller for ``seconds`` of this clock's time."""
        ...


async def run_with_deadline(clock: Clock, seconds: float, awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` but give up after ``seconds`` of ``clock`` time (``TimeoutError``)."""
    task = asyncio.ensure_future(awaitable)
    sleeper = asyncio.ensure_future(clock.sleep(max(0.0, seconds)))
    try:
        await asyncio.wait({task, sleeper}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        sleeper.cancel()
        raise
    sleeper.cancel()
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    raise TimeoutError(f"no answer within {seconds:.1f}s")


class SystemClock:
    """The real clock."""

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class ManualClock:
    """A clock that moves only when told to; ``advance`` wakes the sleepers it passes."""

    def __init__(self, start: float = 1000.0, wall: datetime | None = None) -> None:
        self._now = start
        self._wall0 = wall or datetime(2026, 1, 1, tzinfo=UTC)
        self._start = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        return self._now

    def now(self) -> datetime:
        return self._wall0 + timedelta(seconds=self._now - self._start)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), future))
        await future

    @property
    def sleepers(self) -> int:
        """How many coroutines are waiting on this clock (cancelled ones excluded)."""
        return sum(1 for _, _, f in self._sleepers if not f.done())

    def next_deadline(self) -> float | None:
        """The earliest pending wake-up time, if any."""
        self._drop_cancelled()
        return self._sleepers[0][0] if self._sleepers else None

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has been reached."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    def _drop_cancelled(self) -> None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)
