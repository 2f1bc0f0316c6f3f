"""The one clock as the runtime uses it: the manual clock, and ``run_with_deadline`` — the
deadline behind every runtime timeout (lease attempts, release, graceful stop, resync)."""

from __future__ import annotations

import asyncio

import pytest

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
