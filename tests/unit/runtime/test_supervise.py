"""Supervision: crashes restart with back-off, the back-off starts over after a healthy run, and
a crash loop is reported (the manager's ``/healthz``) — all on the manual clock."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry
from tests.support import eventually

from scaleset.clock import ManualClock
from scaleset.kube.metrics import RuntimeMetrics
from scaleset.runtime.supervise import Supervisor


class Flaky:
    """A task that follows a plan: ``crash`` at once, ``healthy`` (run 90 s, then crash), or
    ``finish``."""

    def __init__(self, clock: ManualClock, plan: list[str]) -> None:
        self._clock = clock
        self._plan = iter(plan)
        self.runs = 0

    async def __call__(self) -> None:
        self.runs += 1
        step = next(self._plan)
        if step == "healthy":
            await self._clock.sleep(90.0)
        if step == "finish":
            return
        raise RuntimeError(f"crash in run {self.runs}")


async def next_restart_delay(clock: ManualClock, task: Flaky, runs: int) -> float:
    """Wait until the task has run ``runs`` times and the supervisor sleeps; return the delay."""

    def sleeping() -> bool:
        return task.runs == runs and clock.next_deadline() is not None

    await eventually(sleeping, what=f"restart wait after run {runs}")
    deadline = clock.next_deadline()
    assert deadline is not None
    return deadline - clock.monotonic()


async def test_the_backoff_starts_over_after_a_healthy_run() -> None:
    clock = ManualClock()
    supervisor = Supervisor(
        clock=clock,
        metrics=RuntimeMetrics(CollectorRegistry()),
        backoff_initial=1.0,
        backoff_max=60.0,
    )  # healthy_after: 60 s by default
    task = Flaky(clock, ["crash", "crash", "crash", "crash", "healthy", "finish"])
    running = asyncio.ensure_future(supervisor.run("flaky", task))
    delays = []
    for runs in range(1, 5):
        delay = await next_restart_delay(clock, task, runs)
        delays.append(delay)
        clock.advance(delay)
    # 1, 2, 4, 8 s (each with up to 50% jitter): the back-off grows while it crash-loops
    for delay, base in zip(delays, (1.0, 2.0, 4.0, 8.0), strict=True):
        assert base <= delay <= base * 1.5
    await eventually(lambda: task.runs == 5 and clock.sleepers == 1, what="the healthy run")
    clock.advance(90.0)  # it ran 90 s (healthy_after is 60), then crashed: back to 1 s
    delay = await next_restart_delay(clock, task, 5)
    assert 1.0 <= delay <= 1.5
    clock.advance(delay)
    await asyncio.wait_for(running, 5.0)
    assert task.runs == 6


async def test_a_crash_loop_is_reported_and_ages_out_of_the_window() -> None:
    clock = ManualClock()
    supervisor = Supervisor(
        clock=clock,
        metrics=RuntimeMetrics(CollectorRegistry()),
        max_restarts=2,
        window=600.0,
        backoff_initial=1.0,
        backoff_max=1.0,
    )
    task = Flaky(clock, ["crash", "crash", "crash", "finish"])
    running = asyncio.ensure_future(supervisor.run("loop", task))
    for runs in range(1, 4):
        clock.advance(await next_restart_delay(clock, task, runs))
    await asyncio.wait_for(running, 5.0)
    assert supervisor.failing() == ["loop"]
    clock.advance(600.0)
    assert supervisor.failing() == []


async def test_cancellation_is_not_a_crash() -> None:
    clock = ManualClock()
    supervisor = Supervisor(clock=clock, metrics=RuntimeMetrics(CollectorRegistry()))
    forever = asyncio.Event()
    running = asyncio.ensure_future(supervisor.run("waits", forever.wait))
    await asyncio.sleep(0)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert supervisor.failing() == []
