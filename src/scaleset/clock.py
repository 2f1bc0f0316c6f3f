"""One model of time for the whole project: every timer asks a ``Clock``, never ``time`` directly.

The controller runtime, the reconcilers, the listener, the GitHub client, the embedded API server,
the fake GitHub service and the simulated runner all take a ``Clock``. Production uses
``SystemClock``. Tests pass one ``ManualClock`` to every piece, so a scenario that spans
Kubernetes and GitHub runs on one virtual time: nothing moves until the test calls
``advance()``, sleepers wake in deadline order, and back-off, ``requeue_after``, lease expiry,
token expiry and grace periods are tested without sleeping and without timing assertions.

A clock has two faces that move together: ``monotonic()`` for intervals and deadlines, and wall
time (``time()`` as Unix seconds, ``now()`` as an aware UTC datetime) for timestamps written to
the API server or compared with GitHub's.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time as _time
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar

T = TypeVar("T")

DEFAULT_MANUAL_WALL = datetime(2027, 1, 15, 8, 0, 0, tzinfo=UTC)
"""Where a ``ManualClock``'s wall time starts unless told otherwise (a fixed, recognisable date)."""


class Clock(Protocol):
    """Monotonic time for intervals, wall time for timestamps, and a sleep on the same clock."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (intervals, deadlines)."""
        ...

    def time(self) -> float:
        """Current wall time as Unix seconds."""
        ...

    def now(self) -> datetime:
        """Current wall time, timezone-aware UTC (for timestamps stored in objects)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend the caller for ``seconds`` of this clock's time."""
        ...


async def run_with_deadline(clock: Clock, seconds: float, awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` but give up after ``seconds`` of ``clock`` time (``TimeoutError``).

    Cancelling the caller cancels the awaited work and propagates ``CancelledError``: the
    caller's own cancellation is never mistaken for the deadline, nor swallowed.
    """
    task = asyncio.ensure_future(awaitable)
    sleeper = asyncio.ensure_future(clock.sleep(max(0.0, seconds)))
    try:
        await asyncio.wait({task, sleeper}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        sleeper.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise
    sleeper.cancel()
    if task.done():
        return task.result()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        # The task was cancelled by us (deadline) — unless our caller is being cancelled too,
        # in which case the cancellation is theirs and must propagate.
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
    except Exception:  # noqa: S110 - the work failed while being abandoned; the deadline wins
        pass
    raise TimeoutError(f"no answer within {seconds:.1f}s")


class SystemClock:
    """The real clock."""

    def monotonic(self) -> float:
        return _time.monotonic()

    def time(self) -> float:
        return _time.time()

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class ManualClock:
    """A clock that moves only when told to; ``advance`` wakes the sleepers it passes.

    ``monotonic()`` starts at ``start``; wall time starts at ``wall`` and moves with it.
    """

    def __init__(self, start: float = 1000.0, wall: datetime | None = None) -> None:
        self._now = start
        self._start = start
        self._wall0 = wall or DEFAULT_MANUAL_WALL
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        return self._now

    def time(self) -> float:
        return self._wall0.timestamp() + (self._now - self._start)

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
        """The earliest pending wake-up time (monotonic), if any."""
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)
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
