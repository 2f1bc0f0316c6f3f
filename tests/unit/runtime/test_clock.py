"""The one clock as the runtime uses it: the manual clock, and ``run_with_deadline`` — the
deadline behind every runtime timeout (lease attempts, release, graceful stop, resync)."""

from __future__ import annotations

import asyncio

import pytest
from tests.support import eventually

from scaleset.clock import ManualClock, run_with_deadline


async def test_manual_clock_wakes_sleepers_in_deadline_order() -> None:
    clock = ManualClock()
    woke: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    tasks = [asyncio.ensure_future(sleeper(n, s)) for n, s in (("b", 2.0), ("a", 1.0))]
    await asyncio.sleep(0)
    assert clock.sleepers == 2
    clock.advance(1.5)
    await asyncio.sleep(0)
    assert woke == ["a"]
    clock.advance(0.5)
    await asyncio.gather(*tasks)
    assert woke == ["a", "b"]
    assert (clock.now() - ManualClock().now()).total_seconds() == 2.0


async def test_run_with_deadline_times_out_on_the_injected_clock() -> None:
    clock = ManualClock()
    never = asyncio.Event()
    attempt = asyncio.ensure_future(run_with_deadline(clock, 5.0, never.wait()))
    for _ in range(5):
        await asyncio.sleep(0)
    assert clock.sleepers == 1
    clock.advance(5.0)
    with pytest.raises(TimeoutError):
        await attempt


class Work:
    """Awaitable work that runs until released and records how it ended; on cancellation it
    can take a while to clean up (until ``cleanup_done`` is set)."""

    def __init__(self, *, slow_cleanup: bool = False, swallow: bool = False) -> None:
        self.started = asyncio.Event()
        self.cleaning = asyncio.Event()
        self.cleanup_done = asyncio.Event()
        self.ended: list[str] = []
        self._slow_cleanup = slow_cleanup
        self._swallow = swallow
        if not slow_cleanup:
            self.cleanup_done.set()

    async def run(self) -> str:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cleaning.set()
            await self.cleanup_done.wait()
            self.ended.append("cancelled")
            if self._swallow:
                return "swallowed"
            raise
        return "finished"


async def test_cancelling_the_caller_while_the_work_runs_cancels_both() -> None:
    clock = ManualClock()
    work = Work()
    inner = asyncio.ensure_future(work.run())
    caller = asyncio.ensure_future(run_with_deadline(clock, 5.0, inner))
    await work.started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert inner.done()
    assert work.ended == ["cancelled"]
    assert clock.sleepers == 0  # the deadline's sleeper went with it


@pytest.mark.parametrize("swallow", [False, True], ids=["work-reraises", "work-swallows"])
async def test_cancelling_the_caller_while_late_work_is_abandoned_propagates(
    swallow: bool,
) -> None:
    # The deadline passed; the work is being cancelled and takes its time to clean up. The
    # caller is cancelled meanwhile (shutdown, lost leadership): that cancellation is the
    # caller's own and must reach it — not a TimeoutError, not a return value — and the work
    # has ended by the time it does (nothing is left running behind the caller's back).
    clock = ManualClock()
    work = Work(slow_cleanup=True, swallow=swallow)
    inner = asyncio.ensure_future(work.run())
    caller = asyncio.ensure_future(run_with_deadline(clock, 5.0, inner))
    await eventually(lambda: work.started.is_set() and clock.sleepers == 1, what="both waiting")
    clock.advance(5.0)
    await work.cleaning.wait()  # abandoned after the deadline, still cleaning up
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert inner.done()


async def test_late_work_that_fails_while_abandoned_is_still_a_timeout() -> None:
    clock = ManualClock()

    async def fails_when_cancelled() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("cleanup failed") from None

    caller = asyncio.ensure_future(run_with_deadline(clock, 1.0, fails_when_cancelled()))
    await eventually(lambda: clock.sleepers == 1, what="the deadline armed")
    clock.advance(1.0)
    with pytest.raises(TimeoutError):
        await caller


async def test_work_that_ends_in_time_returns_or_raises_its_own_result() -> None:
    clock = ManualClock()

    async def answer() -> int:
        return 42

    async def broken() -> int:
        raise ValueError("bad")

    assert await run_with_deadline(clock, 1.0, answer()) == 42
    with pytest.raises(ValueError, match="bad"):
        await run_with_deadline(clock, 1.0, broken())
    assert clock.sleepers == 0
